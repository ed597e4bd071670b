"""dce: unused ops removed, effects kept, unused constants dropped."""
import numpy as np

import d2s
from d2s.static import build_program
from d2s_runtime.passes import dce

from _pass_helpers import assert_same_outputs, check_pure, op_types

X = d2s.tensor(np.zeros((20,), "float32"))


def test_unused_ops_are_removed():
    def f(x):
        d2s.exp(x) * 3.0  # never used
        return d2s.tanh(x)

    p = build_program(f, X)
    q = check_pure(dce, p)
    assert op_types(q) == ["tanh"]
    assert_same_outputs(p, q)


def test_effects_are_kept():
    p = build_program(lambda x: (d2s.rand(20), x + 1.0)[1], X)
    q = check_pure(dce, p)
    assert "rand" in op_types(q)


def test_unused_program_constants_are_dropped():
    c = np.arange(20, dtype="float32")
    p = build_program(lambda x: (x + c, x * 2.0)[1], X)
    assert p.constants
    q = check_pure(dce, p)
    assert not q.constants and op_types(q) == ["constant", "mul"]
    assert_same_outputs(p, q)
