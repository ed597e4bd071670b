"""Which values the split forward keeps for its backward (``partial_eval.move_to_backward``):
ops computed only for the backward run in the backward when that keeps fewer bytes alive
between the halves, and the halves still compute what the joint program computes."""
import numpy as np
import pytest

import d2s
from d2s.static.backward import append_backward
from d2s.static.partial_eval import split_training
from d2s_runtime import Executor


def tanh_chain(x, w1, w2):
    h = d2s.tanh(x @ w1)
    return (d2s.tanh(h @ w2) ** 2).sum()


def relu_mlp(x, w1, w2):
    return (d2s.relu(x @ w1) @ w2).sum()


def _program(fn, *args):
    return d2s.jit.to_static(fn).get_program(*args)


def _run(program, inputs, params=()):
    return Executor(program.verify()).run(*inputs, params=dict(zip(program.params, params)) or None)


def _producers(program):
    return {o: op.type for op in program.block.ops for o in op.outputs}


def _kept(split):
    """The op types producing the residuals the forward returns for the backward."""
    fwd = split.forward
    prod = _producers(fwd)
    return [prod.get(fwd.outputs[i], "feed") for kind, i in split.residuals if kind == "output"]


def _arrays(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("fn", [tanh_chain, relu_mlp])
def test_split_halves_compute_the_joint_program(fn, seed):
    x, w1, w2 = _arrays(seed, (4, 3), (3, 5), (5, 2))
    p = _program(fn, *(d2s.tensor(a) for a in (x, w1, w2)))
    split = split_training(p, list(p.inputs))
    joint = append_backward(p, list(p.inputs))
    cot = np.float64(1.5)
    want = _run(joint, [x, w1, w2, cot])
    outs = _run(split.forward, [x, w1, w2])
    grads = _run(split.backward, split.gather([x, w1, w2], [], outs) + [cot])
    np.testing.assert_array_equal(outs[0], want[0])
    for g, w in zip(grads, want[1:]):
        np.testing.assert_array_equal(g, w)


def test_tanh_keeps_its_output_not_one_minus_its_square():
    x, w1, w2 = _arrays(0, (4, 3), (3, 5), (5, 2))
    p = _program(tanh_chain, *(d2s.tensor(a.astype(np.float32)) for a in (x, w1, w2)))
    split = split_training(p, list(p.inputs))
    kept = _kept(split)
    # tanh's gradient g * (1 - y*y) is computed in the backward from y, which the weight
    # gradient's matmul needs anyway: 1 - y*y is not kept as well
    assert "sub" not in kept and "mul" not in kept and "pow" not in kept
    assert kept.count("tanh") == 2
    assert "sub" in [op.type for op in split.backward.block.ops]


def test_relu_keeps_its_output_and_no_mask_and_no_transpose_copies():
    x, w1, w2 = _arrays(0, (4, 3), (3, 5), (5, 2))
    p = _program(relu_mlp, *(d2s.tensor(a.astype(np.float32)) for a in (x, w1, w2)))
    split = split_training(p, list(p.inputs))
    assert _kept(split) == ["relu"]  # x, w1 and w2 come from the call's own arrays
    assert sorted(k for k, _ in split.residuals) == ["input", "input", "input", "output"]
    bwd_ops = [op.type for op in split.backward.block.ops]
    assert "gt" in bwd_ops and "relu" not in bwd_ops and "matmul" in bwd_ops


def test_a_value_the_forward_also_returns_is_kept_and_not_recomputed():
    def f(x, w):
        y = d2s.tanh(x @ w)
        return y.sum(), 1 - y * y  # 1 - y*y is an output: the forward computes it

    x, w = _arrays(3, (2, 3), (3, 4))
    p = _program(f, d2s.tensor(x), d2s.tensor(w))
    split = split_training(p, list(p.inputs))
    assert [op.type for op in split.backward.block.ops].count("tanh") == 0
    joint = append_backward(p, list(p.inputs))
    cots = [np.float64(2.0), np.full((2, 4), 0.5)]
    want = _run(joint, [x, w, *cots])
    outs = _run(split.forward, [x, w])
    grads = _run(split.backward, split.gather([x, w], [], outs) + cots)
    for a, b in zip(list(outs[:2]) + list(grads), want):
        np.testing.assert_array_equal(a, b)


def test_random_draws_stay_in_the_forward():
    def f(x, w):
        h = x @ w
        mask = d2s.rand(h.shape) > 0.5  # read only by the gradient rule and the product
        return (h * mask.float()).sum()

    x, w = _arrays(4, (2, 3), (3, 4))
    p = _program(f, d2s.tensor(x), d2s.tensor(w))
    split = split_training(p, list(p.inputs))
    assert "rand" in [op.type for op in split.forward.block.ops]
    assert not any(op.type.startswith("rand") for op in split.backward.block.ops)
