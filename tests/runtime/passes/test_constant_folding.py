"""constant_folding: constant subexpressions computed once; constant chains regrouped where that
is exact (integers), never for floats."""
import copy

import numpy as np

import d2s
from d2s.static import build_program
from d2s_runtime.passes import constant_folding, dce

from _pass_helpers import assert_same_outputs, check_pure, op_types

X = d2s.tensor(np.zeros((5, 4), "float32"))  # 20 elements: above the small-constant size


def _fold(fn):
    p = build_program(fn, X)
    q = dce(check_pure(constant_folding, p))
    assert_same_outputs(p, q)
    return q


def test_constant_subexpression_leaves_one_multiply():
    q = _fold(lambda x: x * (d2s.ones(1) * 2.0 + 1.0))
    assert op_types(q) == ["constant", "mul"]
    assert q.block.ops[0].attrs["value"] == [3.0]


def test_integer_mul_and_add_chains_are_regrouped():
    i = d2s.tensor(np.arange(20, dtype="int64").reshape(5, 4))
    q = dce(check_pure(constant_folding, build_program(lambda x: x * 2 * 3, i)))
    assert op_types(q) == ["constant", "mul"] and q.block.ops[0].attrs["value"] == 6
    q = dce(check_pure(constant_folding, build_program(lambda x: x + 2 + 3 + 4, i)))
    assert op_types(q) == ["constant", "add"] and q.block.ops[0].attrs["value"] == 9


def test_float_chains_keep_their_grouping():
    """``(x * c1) * c2`` and ``x * (c1 * c2)`` round differently: a BatchNorm's running variance
    ``var * (n / (n - 1)) * momentum`` regrouped differed from eager code's in its last bits."""
    for fn in (lambda x: x * 2.0 * 3.0, lambda x: x + 2.0 + 3.0 + 4.0, lambda x: x * (4.0 / 3.0) * 0.1):
        p = build_program(fn, X)
        q = dce(check_pure(constant_folding, p))
        assert op_types(q) == op_types(p)
    rng = np.random.default_rng(0)
    for _ in range(10):
        m = d2s.nn.BatchNorm2d(8)
        m2 = copy.deepcopy(m)
        static = d2s.jit.to_static(m2)
        x = d2s.tensor(rng.standard_normal((2, 8, 2, 2)).astype("float32"))
        for _ in range(2):
            m(x)
            static(x)
        np.testing.assert_array_equal(m2.running_var.numpy(), m.running_var.numpy())
        np.testing.assert_array_equal(m2.running_mean.numpy(), m.running_mean.numpy())


def test_large_folded_results_become_program_constants():
    c = np.arange(20, dtype="float32").reshape(5, 4)
    q = _fold(lambda x: x + d2s.exp(d2s.tensor(c) / 10.0))
    assert op_types(q) == ["add"]
    (name,) = q.constants
    np.testing.assert_allclose(q.constants[name], np.exp(c / 10.0), rtol=1e-6)


def test_expansions_stay_lazy():
    q = _fold(lambda x: x + d2s.broadcast_to(d2s.ones(1, 1) * 2.0, (5, 4)))
    assert "broadcast_to" in op_types(q) and not q.constants


def test_effects_are_never_folded():
    d2s.manual_seed(0)
    q = _fold(lambda x: x * 0.0 + d2s.rand(5, 4) * 0.0)
    assert "rand" in op_types(q)


def test_scalar_results_keep_their_shape():
    q = _fold(lambda x: x * (d2s.full((), 2.0) / 4.0))
    (c,) = [op for op in q.block.ops if op.type == "constant"]
    assert c.attrs["shape"] == [] and c.attrs["value"] == 0.5
