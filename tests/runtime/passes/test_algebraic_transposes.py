"""algebraic_simplify: an element-wise op of two equally transposed operands runs untransposed
(``f(x.T, y.T) -> f(x, y).T``), with exactly the same values."""
import numpy as np
import pytest

import d2s
from d2s.static import build_program
from d2s_runtime.passes import algebraic_simplify, dce, optimize

from _pass_helpers import assert_same_outputs, check_pure, op_types

A = d2s.tensor(np.zeros((3, 4), "float32"))
B = d2s.tensor(np.zeros((3, 4), "float32"))


def _simplify(fn, *args):
    p = build_program(fn, *args)
    q = dce(check_pure(algebraic_simplify, p))
    assert_same_outputs(p, q, seeds=(0, 1, 2, 3), rtol=0, atol=0)  # bit-identical
    return p, q


def _reads_of(program, op_type):
    return [op.inputs for op in program.block.ops if op.type == op_type]


@pytest.mark.parametrize("fn,op", [(lambda a, b: a.T + b.T, "add"), (lambda a, b: a.T - b.T, "sub"),
                                   (lambda a, b: a.T * b.T, "mul")])
def test_elementwise_of_transposes_runs_untransposed(fn, op):
    p, q = _simplify(lambda a, b: d2s.exp(fn(a, b)), A, B)
    assert op_types(q) == [op, "transpose", "exp"]
    assert _reads_of(q, op) == [list(q.inputs)]  # the inputs themselves, not their transposes


def test_sum_of_transposed_matmuls_is_one_transpose():
    # a weight's gradient summed over its uses (a recurrent weight): (h_t.T @ g_t).T summed over t
    hs = [d2s.tensor(np.zeros((5, 3), "float32")) for _ in range(4)]
    gs = [d2s.tensor(np.zeros((5, 4), "float32")) for _ in range(4)]

    def acc(*xs):
        h, g = xs[:4], xs[4:]
        total = (h[0].T @ g[0]).T
        for t in range(1, 4):
            total = total + (h[t].T @ g[t]).T
        return total

    p, q = _simplify(acc, *hs, *gs)
    assert op_types(q).count("transpose") == 4 + 1  # the matmuls' h.T views, one final transpose
    adds = [op for op in q.block.ops if op.type == "add"]
    mm = {op.outputs[0] for op in q.block.ops if op.type == "matmul"}
    assert len(adds) == 3 and all(i in mm or i in {a.outputs[0] for a in adds} for a in adds for i in a.inputs)


@pytest.mark.parametrize("fn", [
    lambda a, b, c: a.T + c.T,                            # operands of different shapes (broadcast)
    lambda a, b, c: a.T + d2s.exp(b.T),                   # one operand not a transpose
])
def test_not_rewritten(fn):
    c = d2s.tensor(np.zeros((1, 4), "float32"))
    p, q = _simplify(lambda a, b, c: d2s.exp(fn(a, b, c)), A, B, c)
    assert op_types(q).index("add") > 0 and all(op.type != "add" or op.inputs[0] not in q.inputs
                                                  for op in q.block.ops)


def test_different_permutations_not_rewritten():
    x = d2s.tensor(np.zeros((3, 3, 3), "float32"))
    p, q = _simplify(lambda a, b: d2s.permute(a, 1, 0, 2) + d2s.permute(b, 2, 1, 0), x, x)
    assert op_types(q) == ["transpose", "transpose", "add"]


def test_weight_gradient_of_unrolled_rnn_equals_eager():
    """The static backward of a recurrent weight, after the whole pipeline: the same gradient
    as eager autograd, exactly."""
    rng = np.random.default_rng(0)
    w = d2s.tensor(rng.standard_normal((6, 6)).astype("float32") * 0.3, requires_grad=True)
    xs = d2s.tensor(rng.standard_normal((5, 2, 6)).astype("float32"))

    def loss(w, xs):
        h = d2s.zeros([2, 6])
        for t in range(5):
            h = d2s.tanh(xs[t] + h @ w.T)
        return (h ** 2).sum()

    eager = d2s.grad(loss(w, xs), w)[0].numpy()
    f = d2s.jit.to_static(d2s.func.grad(loss))
    for _ in range(3):  # built, then optimized from the second call on
        got = f(w.detach(), xs).numpy()
        np.testing.assert_array_equal(got, eager)


def test_stop_gradient_on_both_operands_wraps_the_result():
    p, q = _simplify(lambda a, b: d2s.exp(a.T.detach() + b.T.detach()), A, B)
    assert op_types(q) == ["add", "transpose", "stop_gradient", "exp"]


def test_stop_gradient_on_one_operand_stays_on_it():
    p, q = _simplify(lambda a, b: d2s.exp(a.T.detach() + b.T), A, B)
    assert op_types(q) == ["stop_gradient", "add", "transpose", "exp"]
    sg = q.block.ops[0]
    assert sg.inputs == [q.inputs[0]]


def test_stop_gradient_chains_collapse():
    p, q = _simplify(lambda a: d2s.exp(a.detach().detach().detach()), A)
    assert op_types(q) == ["stop_gradient", "exp"]


@pytest.mark.parametrize("detach", ["none", "left", "both"])
def test_gradients_through_rewritten_transposes_equal_eager(detach):
    rng = np.random.default_rng(1)
    w = d2s.tensor(rng.standard_normal((4, 3)).astype("float32"), requires_grad=True)
    v = d2s.tensor(rng.standard_normal((4, 3)).astype("float32"), requires_grad=True)

    def loss(w, v):
        a, b = (w * 2).T, (v * 3).T
        if detach in ("left", "both"):
            a = a.detach()
        if detach == "both":
            b = b.detach()
        # the detached operands still get gradients through the undetached terms
        return (d2s.tanh(a * b + a + (w * v).T) ** 2).sum()

    eager = [g.numpy() for g in d2s.grad(loss(w, v), [w, v])]
    f = d2s.jit.to_static(d2s.func.grad(loss, argnums=(0, 1)))
    for _ in range(3):
        got = f(w.detach(), v.detach())
        for g, e in zip(got, eager):
            np.testing.assert_array_equal(g.numpy(), e)
