"""Splitting a joint forward+backward program into a forward that keeps residuals and a
backward that reads them (``d2s.static.partial_eval``), and its use by to_static training."""
import warnings

import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import nn
from d2s.static.backward import append_backward
from d2s.static.partial_eval import split_training
from d2s_runtime import Executor


def mlp(x, w1, w2):
    return (d2s.tanh(x @ w1) @ w2).sum()


def branchy(x, n):
    if x.sum() > 0:
        y = x * x
    else:
        y = x.exp()
    i = d2s.tensor(0)
    while i < n:
        y = y.sin() + x
        i = i + 1
    return y.sum()


def _program(fn, *args):
    return d2s.jit.to_static(fn).get_program(*args)


def _run(program, inputs, params=()):
    return Executor(program.verify()).run(*inputs, params=dict(zip(program.params, params)) or None)


def _ops(program):
    return [op.type for b in program.blocks for op in b.ops]


def test_backward_reads_residuals_instead_of_recomputing_the_forward():
    rng = np.random.default_rng(0)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (3, 5), (5, 2)))
    p = _program(mlp, d2s.tensor(x), d2s.tensor(w1), d2s.tensor(w2))
    split = split_training(p, list(p.inputs))
    fwd, bwd = split.forward.verify(), split.backward.verify()
    assert _ops(fwd).count("tanh") == 1 and _ops(fwd).count("matmul") == 2
    # the backward has the gradient matmuls only (2 per matmul of the forward) and no tanh
    assert "tanh" not in _ops(bwd)
    assert _ops(bwd).count("matmul") == 4
    assert bwd.params == [] and len(bwd.inputs) == len(split.residuals) + 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_split_halves_compute_what_the_joint_program_computes(seed):
    rng = np.random.default_rng(seed)
    x, w1, w2 = (rng.standard_normal(s) for s in ((4, 3), (3, 5), (5, 2)))
    p = _program(mlp, d2s.tensor(x), d2s.tensor(w1), d2s.tensor(w2))
    cot = np.float64(rng.standard_normal())
    joint = _run(append_backward(p, list(p.inputs)), [x, w1, w2, cot])
    split = split_training(p, list(p.inputs))
    outs = _run(split.forward, [x, w1, w2])
    np.testing.assert_allclose(outs[0], joint[0], rtol=1e-12)
    grads = _run(split.backward, split.gather([x, w1, w2], [], outs) + [cot])
    for g, want in zip(grads, joint[1:]):
        np.testing.assert_allclose(g, want, rtol=1e-12)


@pytest.mark.parametrize("v", [[0.5, 0.2], [-0.5, -1.0]])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_split_through_cond_and_while_stacks(v, n):
    x, nn_ = np.array(v), np.array(n)
    p = _program(branchy, d2s.tensor(x), d2s.tensor(nn_))
    split = split_training(p, [p.inputs[0]])
    assert "stack_push" in _ops(split.forward) and "stack_push" not in _ops(split.backward)
    joint = _run(append_backward(p, [p.inputs[0]]), [x, nn_, np.float64(1.0)])
    outs = _run(split.forward, [x, nn_])
    (g,) = _run(split.backward, split.gather([x, nn_], [], outs) + [np.float64(1.0)])
    np.testing.assert_allclose(outs[0], joint[0], rtol=1e-12)
    np.testing.assert_allclose(g, joint[1], rtol=1e-12)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(6, 8), nn.Linear(8, 3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        h = self.drop(F.tanh(self.l1(x)))
        if h.mean() > 0:
            h = h * 2.0
        return self.l2(h).sum()


def _grads(model, x):
    for p in model.parameters():
        p.grad = None
    d2s.manual_seed(3)
    loss = model(x)
    loss.backward()
    return float(loss), [p.grad.numpy().copy() for p in model.parameters()], x.grad.numpy().copy()


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_to_static_training_uses_the_split_and_equals_eager(sign):
    d2s.manual_seed(0)
    eager = Net().double()
    static = Net().double()
    static.load_state_dict(eager.state_dict())
    static = d2s.jit.to_static(static)
    rng = np.random.default_rng(1)
    for _ in range(3):  # the second and third calls run the optimized halves
        xe = d2s.tensor(sign * np.abs(rng.standard_normal((5, 6))), dtype="float64", requires_grad=True)
        xs = d2s.tensor(xe.numpy(), requires_grad=True)
        le, ge, gxe = _grads(eager, xe)
        ls, gs, gxs = _grads(static, xs)
        assert ls == pytest.approx(le, rel=1e-6)
        for a, b in zip(gs, ge):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(gxs, gxe, rtol=1e-5, atol=1e-7)
    (entry,) = static.forward.concrete_programs
    trainers = [t for t in entry._trainers.values() if t is not None]
    assert trainers, "the training call did not use a split forward/backward"


def test_training_falls_back_to_recomputation_when_the_split_fails(monkeypatch):
    import d2s.static.partial_eval as pe

    def broken(*a, **k):
        raise RuntimeError("no split")

    monkeypatch.setattr(pe, "split_training", broken)
    w = d2s.tensor([1.0, -2.0, 3.0], dtype="float64", requires_grad=True)

    @d2s.jit.to_static
    def f(x):
        return (d2s.sin(x * w)).sum()

    x = d2s.tensor([0.3, 0.1, -0.2], dtype="float64")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(x).backward()
    assert any("recomputes the forward" in str(c.message) for c in caught)
    np.testing.assert_allclose(w.grad.numpy(), np.cos(x.numpy() * w.numpy()) * x.numpy(), rtol=1e-12)


def test_residuals_are_released_after_backward():
    w = d2s.tensor(np.ones(3), requires_grad=True)

    @d2s.jit.to_static
    def f(x):
        return d2s.tanh(x * w).sum()

    y = f(d2s.tensor(np.arange(3.0)))
    node = y.grad_fn
    assert node.saved[4] is not None  # the residuals the forward kept
    y.backward()
    assert node.saved is None


def _loops(program):
    return [op for op in program.block.ops if op.type == "while"]


@pytest.mark.parametrize("n", [0, 1, 3])
def test_the_training_forward_runs_each_while_once(n):
    # the gradient rule replays the loop pushing its carries; that replay replaces the loop
    x, nn_ = np.array([0.5, 0.2]), np.array(n)
    p = _program(branchy, d2s.tensor(x), d2s.tensor(nn_))
    assert len(_loops(p)) == 1
    split = split_training(p, [p.inputs[0]])
    assert len(_loops(split.forward.verify())) == 1
    assert _ops(split.forward).count("sin") == 1
    joint = _run(append_backward(p, [p.inputs[0]]), [x, nn_, np.float64(1.0)])
    outs = _run(split.forward, [x, nn_])
    (g,) = _run(split.backward.verify(), split.gather([x, nn_], [], outs) + [np.float64(1.0)])
    np.testing.assert_allclose(outs[0], joint[0], rtol=1e-12)
    np.testing.assert_allclose(g, joint[1], rtol=1e-12)


def two_loops(x, n):
    i, y = d2s.tensor(0), x
    while i < n:
        y = y * 1.5
        i = i + 1
    j, z = d2s.tensor(0), x
    while j < n:
        z = z * 2.5  # same shape of loop, another body: not the replay of the first
        j = j + 1
    return (y * z).sum()


@pytest.mark.parametrize("n", [0, 2])
def test_loops_that_only_look_alike_are_not_merged(n):
    x, nn_ = np.array([0.5, -0.2]), np.array(n)
    p = _program(two_loops, d2s.tensor(x), d2s.tensor(nn_))
    split = split_training(p, [p.inputs[0]])
    assert len(_loops(split.forward)) == 2
    joint = _run(append_backward(p, [p.inputs[0]]), [x, nn_, np.float64(1.0)])
    outs = _run(split.forward.verify(), [x, nn_])
    (g,) = _run(split.backward, split.gather([x, nn_], [], outs) + [np.float64(1.0)])
    np.testing.assert_allclose(outs[0], joint[0], rtol=1e-12)
    np.testing.assert_allclose(g, joint[1], rtol=1e-12)
