"""optimize(): the default pipeline, as d2s.passes too."""
import numpy as np
import pytest

import d2s
import d2s.passes
from d2s.static import build_program

from _pass_helpers import assert_same_outputs, check_pure, op_types


def test_default_pipeline_keeps_outputs_and_shrinks_the_program():
    def f(x, y):
        a = x * y + 0.0
        b = y * x
        unused = d2s.exp(a)  # noqa: F841
        return d2s.tanh(a * 1.0) + b * (d2s.ones(1) * 2.0)

    z = d2s.tensor(np.zeros((4, 5), "float32"))
    p = build_program(f, z, z)
    q = check_pure(d2s.passes.optimize, p)
    assert op_types(q).count("mul") == 2 and "exp" not in op_types(q)
    assert "memory_plan" in q.annotations
    assert_same_outputs(p, q)


def test_passes_by_name_and_unknown_names():
    p = build_program(lambda x: x * 1.0, d2s.tensor(np.zeros(3, "float32")))
    q = d2s.passes.optimize(p, passes=["algebraic", "dce"])
    assert op_types(q) == []
    assert_same_outputs(p, q)
    with pytest.raises(KeyError, match="unknown pass 'nope'"):
        d2s.passes.optimize(p, passes=["nope"])
