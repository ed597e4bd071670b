"""``loss.backward()`` on a converted forward takes the engine's short paths (the seed gradient
made directly, leaf sinks filled inline, no hook calls without hooks) and the split forward
keeps only what its backward needs: every observable of eager autograd stays the same
(values, ``.grad`` of every parameter, accumulation, hooks, unused parameters)."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(5, 7), nn.Linear(7, 6), nn.Linear(6, 3)
        self.unused = nn.Linear(2, 2)

    def forward(self, x, y):
        h = F.relu(self.l1(x))
        h = d2s.tanh(self.l2(h))
        return F.cross_entropy(self.l3(h), y)


def _pair(make, dtype=np.float32):
    d2s.manual_seed(0)
    eager = make()
    static = make()
    static.load_state_dict(eager.state_dict())
    if dtype == np.float64:
        eager, static = eager.double(), static.double()
    return eager, d2s.jit.to_static(static)


def _data(rng, batch, dtype=np.float32):
    x = d2s.tensor(rng.standard_normal((batch, 5)).astype(dtype))
    y = d2s.tensor(rng.integers(0, 3, batch))
    return x, y


def _grads(model):
    return [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]


def _same(a, b):
    assert [g is None for g in a] == [g is None for g in b]
    for u, v in zip(a, b):
        if u is not None:
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("batch", [1, 4, 9])
def test_losses_and_every_grad_equal_eager_over_calls(batch):
    rng = np.random.default_rng(batch)
    eager, static = _pair(Net)
    for _ in range(4):  # first build, optimized program, steady state
        x, y = _data(rng, batch)
        for m in (eager, static):
            for p in m.parameters():
                p.grad = None
        le, ls = eager(x, y), static(x, y)
        le.backward()
        ls.backward()
        np.testing.assert_array_equal(ls.numpy(), le.numpy())
        _same(_grads(static), _grads(eager))
        assert static.unused.weight.grad is None and static.unused.bias.grad is None


def test_two_backward_calls_accumulate_as_eager():
    rng = np.random.default_rng(1)
    eager, static = _pair(Net)
    for m in (eager, static):
        for _ in range(3):
            m(*_data(np.random.default_rng(5), 4)).backward()  # same data each time
    _same(_grads(static), _grads(eager))
    x, y = _data(rng, 3)  # and a different batch on top
    eager(x, y).backward()
    static(x, y).backward()
    _same(_grads(static), _grads(eager))


def test_hooks_retain_grad_and_post_accumulate_hooks_as_eager():
    rng = np.random.default_rng(2)
    eager, static = _pair(Net)
    seen = {}
    for name, m in (("eager", eager), ("static", static)):
        log = seen[name] = []
        w = m.l1.weight
        h1 = w.register_hook(lambda g: g * 2)  # doubles the gradient written into .grad
        h2 = w.register_post_accumulate_grad_hook(lambda p, log=log: log.append(p.grad.numpy().copy()))
        x, y = _data(rng if name == "eager" else np.random.default_rng(2), 4)
        loss = m(x, y)
        loss.retain_grad()
        loss.backward()
        log.append(loss.grad.numpy().copy())
        h1.remove(), h2.remove()
    assert len(seen["static"]) == len(seen["eager"]) == 2
    for a, b in zip(seen["static"], seen["eager"]):
        np.testing.assert_array_equal(a, b)
    _same(_grads(static), _grads(eager))


def test_explicit_seed_gradient_and_errors_are_unchanged():
    rng = np.random.default_rng(3)
    eager, static = _pair(Net)
    x, y = _data(rng, 4)
    eager(x, y).backward(d2s.tensor(np.float32(0.5)))
    static(x, y).backward(d2s.tensor(np.float32(0.5)))
    _same(_grads(static), _grads(eager))
    with pytest.raises(RuntimeError, match="does not require grad"):
        with d2s.no_grad():
            out = static(x, y)
        out.backward()


def test_a_loss_computed_further_eagerly_from_the_output():
    rng = np.random.default_rng(4)
    eager, static = _pair(Net)
    x, y = _data(rng, 4)
    for m in (eager, static):
        loss = m(x, y)
        (loss * 3 + m.l3.bias.sum()).backward()  # l3.bias reached by two paths: summed once
    _same(_grads(static), _grads(eager))


def test_float64_gradients_match_finite_differences():
    rng = np.random.default_rng(6)
    _, static = _pair(Net, np.float64)
    x, y = _data(rng, 3, np.float64)
    w = static.l1.weight
    loss = static(x, y)
    loss.backward()
    analytic = w.grad.numpy()
    numeric = np.zeros_like(analytic)
    eps = 1e-6
    with d2s.no_grad():
        for i in np.ndindex(*analytic.shape):
            old = w._data[i]
            w._data[i] = old + eps
            up = float(static(x, y).numpy())
            w._data[i] = old - eps
            down = float(static(x, y).numpy())
            w._data[i] = old
            numeric[i] = (up - down) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


def test_relu_gradient_from_its_output_as_pytorch():
    x64 = np.array([[-1.5, 0.0, 2.0], [3.0, -0.25, 0.5]])
    x = d2s.tensor(x64, requires_grad=True)
    assert d2s.autograd.gradcheck(lambda t: (d2s.relu(t * 1.3 - 0.1) ** 2).sum(), [x])
    # the rule reads relu's output: changing it in place afterwards is refused; changing
    # its input is not (PyTorch's relu saves its result the same way)
    a = d2s.tensor(x64, requires_grad=True)
    b = a * 1.0
    out = d2s.relu(b)
    b.add_(1.0)
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), (x64 > 0).astype(np.float64))
    c = d2s.tensor(x64, requires_grad=True)
    out = d2s.relu(c * 1.0)
    out.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


@pytest.mark.parametrize("create_graph", [False, True])
def test_one_node_path_equals_the_general_engine(monkeypatch, create_graph):
    from d2s.autograd import engine
    rng = np.random.default_rng(7)
    x, y = _data(rng, 4)
    results, calls = [], []
    real = engine._run_flat
    monkeypatch.setattr(engine, "_run_flat", lambda *a: (calls.append(1), real(*a))[1])
    for flat in (True, False):
        if not flat:
            monkeypatch.setattr(engine, "_flat", lambda node: False)
        _, static = _pair(Net)
        order = []
        for name, p in static.named_parameters():
            p.register_post_accumulate_grad_hook(lambda t, name=name: order.append(name))
        for _ in range(2):  # the second call accumulates into .grad
            static(x, y).backward(create_graph=create_graph)
        grads = [None if p.grad is None else p.grad.numpy().copy() for p in static.parameters()]
        results.append((order, grads))
    assert len(calls) == 2  # the first model took the one-node path, the second did not
    (order_flat, grads_flat), (order_general, grads_general) = results
    assert order_flat == order_general and len(order_flat) == 12
    _same(grads_flat, grads_general)
