"""The training call path of a converted forward (``d2s.jit.concrete.TrainingRunner``): the
split halves it runs, what it precomputes at preparation (constant used-flags, the residual
pick) and that its gradients equal eager ones exactly."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import nn
from d2s.jit import concrete


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(6, 8), nn.Linear(8, 3)

    def forward(self, x, y):
        return F.cross_entropy(self.l2(F.relu(self.l1(x))), y)


class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.wx, self.wh, self.out = nn.Linear(4, 5), nn.Linear(5, 5), nn.Linear(5, 1)

    def forward(self, xs):
        h = d2s.zeros([xs.shape[1], 5])
        for t in range(xs.shape[0]):  # unrolled: the recurrent weight is used T times
            h = d2s.tanh(self.wx(xs[t]) + self.wh(h))
        return (self.out(h) ** 2).mean()


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x):
        if x.sum() > 0:
            y = self.a(x)
        else:
            y = self.b(x)
        return (y * y).sum()


def _pair(make):
    d2s.manual_seed(0)
    eager = make()
    static = make()
    static.load_state_dict(eager.state_dict())
    return eager, d2s.jit.to_static(static)


def _grads(model, *args):
    params = list(model.parameters())
    for p in params:
        p.grad = None
    loss = model(*args)
    loss.backward()
    return loss.numpy(), [None if p.grad is None else p.grad.numpy() for p in params]


def _assert_same(eager, static, *args):
    le, ge = _grads(eager, *args)
    ls, gs = _grads(static, *args)
    np.testing.assert_array_equal(ls, le)
    assert [g is None for g in gs] == [g is None for g in ge]
    for a, b in zip(gs, ge):
        if a is not None:
            np.testing.assert_array_equal(a, b)


def _runners(static):
    return [r for e in {id(e): e for e in static.forward._cache.by_key.values()}.values()
            for r in e._trainers.values() if r is not None]


def _trainer_of(static, *args):
    before = {id(r) for r in _runners(static)}
    _grads(static, *args)
    new = [r for r in _runners(static) if id(r) not in before]
    assert len(new) == 1
    return new[0]


@pytest.mark.parametrize("batch", [1, 3, 7])
def test_mlp_gradients_equal_eager_exactly(batch):
    rng = np.random.default_rng(batch)
    eager, static = _pair(MLP)
    for _ in range(4):  # built, optimized, then the steady state
        x = d2s.tensor(rng.standard_normal((batch, 6)).astype(np.float32))
        y = d2s.tensor(rng.integers(0, 3, batch))
        _assert_same(eager, static, x, y)


@pytest.mark.parametrize("steps", [1, 2, 6])
def test_unrolled_rnn_gradients_equal_eager_exactly(steps):
    rng = np.random.default_rng(steps)
    eager, static = _pair(RNN)
    for _ in range(4):
        xs = d2s.tensor(rng.standard_normal((steps, 2, 4)).astype(np.float32))
        _assert_same(eager, static, xs)


def test_flags_known_at_preparation_and_the_backward_does_not_recompute():
    rng = np.random.default_rng(0)
    eager, static = _pair(RNN)
    xs = d2s.tensor(rng.standard_normal((6, 2, 4)).astype(np.float32))
    r = _trainer_of(static, xs)
    assert r.static_used == [[True]] * 6 and r.static_differentiable == [True]
    _grads(static, xs), _grads(static, xs)  # the optimized halves from the second call on
    fwd, bwd = r.forward.program, r._backward.program
    fwd_ops = [op.type for op in fwd.block.ops]
    bwd_ops = [op.type for op in bwd.block.ops]
    assert fwd_ops.count("tanh") == 6 and "tanh" not in bwd_ops  # residuals, no recomputation
    # the recurrent weights' gradients are summed untransposed, one transpose at the end
    producer = {o: op.type for op in bwd.block.ops for o in op.outputs}
    adds = [op for op in bwd.block.ops if op.type == "add" and len(bwd.block.vars[op.outputs[0]].type.shape) == 2]
    assert adds and all(producer.get(i) != "transpose" for op in adds for i in op.inputs)


def test_branch_dependent_flags_are_read_per_call():
    rng = np.random.default_rng(0)
    eager, static = _pair(Branchy)
    x = d2s.tensor(np.abs(rng.standard_normal((2, 3))).astype(np.float32))
    r = _trainer_of(static, x)
    assert r.static_used is None  # which layer is used depends on the branch taken
    for sign in (1, -1, 1, -1, -1, 1):
        _assert_same(eager, static, d2s.tensor(sign * np.abs(rng.standard_normal((2, 3))).astype(np.float32)))


def test_residual_pick_matches_the_split():
    rng = np.random.default_rng(0)
    eager, static = _pair(MLP)
    x = d2s.tensor(rng.standard_normal((3, 6)).astype(np.float32))
    y = d2s.tensor(rng.integers(0, 3, 3))
    r = _trainer_of(static, x, y)
    inputs = [np.zeros(1) + k for k in range(2)]
    params = [np.zeros(1) + 10 + k for k in range(4)]
    outs = [np.zeros(1) + 100 + k for k in range(len(r.forward.program.outputs))]
    picked = r.gather(inputs, params, outs)
    assert len(picked) == len(r._backward.program.inputs) - 1  # every backward input but the cotangent
    src = {"input": inputs, "param": params, "output": outs}
    want = [src[kind][i] for kind, i in r.residuals]
    assert len(picked) == len(want) and all(a is b for a, b in zip(picked, want))
    assert {"param", "output"} <= {kind for kind, _ in r.residuals}


def test_retained_graph_backward_twice_and_an_output_without_gradient():
    rng = np.random.default_rng(0)
    w_e = d2s.tensor(rng.standard_normal((3, 3)).astype(np.float32), requires_grad=True)
    w_s = d2s.tensor(w_e.numpy().copy(), requires_grad=True)

    def two(x, w):
        h = d2s.tanh(x @ w)
        return h.sum(), (h * h).mean()

    f = d2s.jit.to_static(two)
    for k in range(3):
        x = d2s.tensor(rng.standard_normal((2, 3)).astype(np.float32))
        w_e.grad = w_s.grad = None
        a_e, _ = two(x, w_e)
        a_s, _ = f(x, w_s)  # the second output gets no gradient
        a_e.backward(retain_graph=True)
        a_e.backward()
        a_s.backward(retain_graph=True)
        a_s.backward()
        np.testing.assert_array_equal(w_s.grad.numpy(), w_e.grad.numpy())
