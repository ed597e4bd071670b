"""Host synchronizations per run, counted on the "strict" device (tests/strict_device.py), as
budgets: on a GPU each one stalls the host until the device catches up.

* a program without control flow makes none;
* a ``cond`` makes one (reading its predicate), a ``while`` one per predicate reading, that is
  iterations + 1;
* an eager training step (forward, backward, optimizer step) makes none until the loss is
  read (``.item()``, ``print``); a converted one none without control flow;
* with ``backend="graph"`` (the program replayed as a graph, ``d2s_runtime/gpu``; here on the
  strict device's fake capture), a converted ``while`` makes none at all, and so does its
  gradient where the loop's trip count has a static bound (its device stacks then need no
  check: d2s_runtime/gpu/counts.py); a program with checks (asserts, guards) or stacks whose
  size is known only when it runs (a trip count read from the data) makes one: the device
  error word.

None of these runs copies data to the device either (program constants are uploaded once).
"""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
import strict_device as sd
from d2s import nn, optim
from d2s.static import build_program
from d2s_runtime import Executor
from d2s_runtime.device import to_host

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _on_strict():
    prev = d2s.set_default_device("strict")
    yield
    d2s.set_default_device(prev)


def _x(*shape, scale=1.0):
    return d2s.tensor((RNG.standard_normal(shape) * scale).astype("float32"))


def _on_cpu(t):
    return d2s.tensor(to_host(t._data), device="cpu")


@pytest.mark.parametrize("mode", ["interp", "codegen"])
def test_a_program_without_control_flow_makes_no_sync(mode):
    def f(x, w):
        h = d2s.tanh(x @ w) * 2.0 + x.sum()
        return d2s.softmax(h, 1).mean(0), h.max()

    x, w = _x(4, 3), _x(3, 3)
    ex = Executor(build_program(f, x, w), device="strict", mode=mode)
    assert ex.mode == mode
    for _ in range(2):
        with sd.counting() as c:
            outs = ex.run(x._data, w._data)
        assert c.syncs == 0 and c.to_device == 0, c.sync_kinds  # constants were uploaded once
    for got, want in zip(outs, f(_on_cpu(x), _on_cpu(w))):
        np.testing.assert_allclose(to_host(got), want.numpy(), rtol=1e-6)


def test_a_converted_function_without_control_flow_makes_no_sync():
    @d2s.jit.to_static
    def f(x):
        return (x * 2.0).relu().sum(1) - x.mean()

    x = _x(5, 3)
    f(x)  # builds the program
    with sd.counting() as c:
        out = f(x)
    assert c.syncs == 0 and c.to_device == 0, c.sync_kinds
    xc = _on_cpu(x)
    np.testing.assert_allclose(to_host(out._data), ((xc * 2.0).relu().sum(1) - xc.mean()).numpy(), rtol=1e-6)


def _branchy(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = x.exp()
    return y


def test_a_cond_makes_one_sync_its_predicate():
    f = d2s.jit.to_static(_branchy)
    for x in (_x(3, 2).abs() + 0.1, -(_x(3, 2).abs() + 0.1)):  # each branch
        f(x)
        with sd.counting() as c:
            out = f(x)
        assert c.sync_kinds == ["bool"] and c.to_device == 0
        np.testing.assert_allclose(to_host(out._data), _branchy(_on_cpu(x)).numpy(), rtol=1e-6)


def _halve(x):
    while x.abs().max() > 1.0:
        x = x * 0.5
    return x


@pytest.mark.parametrize("scale,iterations", [(0.5, 0), (3.0, 2), (100.0, 7)])
def test_a_while_makes_one_sync_per_predicate_reading(scale, iterations):
    f = d2s.jit.to_static(_halve)
    x = d2s.tensor(np.array([[scale * 0.9, -0.2]], "float32"))
    assert int(np.ceil(np.log2(max(scale * 0.9, 1.0)))) == iterations  # halvings to reach <= 1
    f(x)
    with sd.counting() as c:
        out = f(x)
    assert c.sync_kinds == ["bool"] * (iterations + 1) and c.to_device == 0  # the last reading ends the loop
    np.testing.assert_allclose(to_host(out._data), _halve(_on_cpu(x)).numpy(), rtol=1e-6)


def _mlp():
    d2s.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))


@pytest.mark.parametrize("make_opt", [lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
                                      lambda p: optim.Adam(p, lr=0.01)], ids=["sgd", "adam"])
def test_an_eager_training_step_makes_no_sync_until_the_loss_is_read(make_opt):
    model = _mlp()
    cpu_model = _mlp().to("cpu")
    opt, cpu_opt = make_opt(model.parameters()), make_opt(cpu_model.parameters())
    x, y = _x(8, 6), d2s.tensor(RNG.integers(0, 3, size=8))
    for step in range(3):
        with sd.counting() as c:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        assert c.syncs == 0 and c.to_device == 0, c.sync_kinds
        with sd.counting() as c:
            value = loss.item()
        assert c.sync_kinds == ["item"]
        cpu_opt.zero_grad()
        cpu_loss = F.cross_entropy(cpu_model(_on_cpu(x)), _on_cpu(y))
        cpu_loss.backward()
        cpu_opt.step()
        assert value == pytest.approx(cpu_loss.item(), rel=1e-5)


def test_printing_the_loss_is_the_sync():
    model = _mlp()
    loss = F.mse_loss(model(_x(4, 6)), _x(4, 3))
    with sd.counting() as c:
        text = f"loss {loss.item():.4f}"
    assert c.syncs == 1 and text.startswith("loss ")


class _Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.gate, self.out = nn.Linear(6, 8), nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        h = F.relu(self.fc(x))
        if h.mean() > 0.3:
            h = F.tanh(self.gate(h)) + h
        return self.out(h)


def _static_steps(make, xs, y):
    """Syncs of each converted training step on "strict", and the losses of strict and cpu."""
    d2s.manual_seed(0)
    model = d2s.jit.to_static(make())
    d2s.manual_seed(0)
    cpu_model = d2s.jit.to_static(make().to("cpu"))
    opt, cpu_opt = optim.SGD(model.parameters(), lr=0.1), optim.SGD(cpu_model.parameters(), lr=0.1)
    kinds, losses = [], []
    for x in xs:
        for m, o, xv, yv in ((model, opt, x, y), (cpu_model, cpu_opt, _on_cpu(x), _on_cpu(y))):
            with sd.counting() as c:
                o.zero_grad()
                loss = F.cross_entropy(m(xv), yv)
                loss.backward()
                o.step()
            if m is model:
                kinds.append(list(c.sync_kinds))
                assert c.to_device == 0
            losses.append(loss.item())
    return kinds, losses


def test_a_converted_training_step_without_control_flow_makes_no_sync():
    # the forward's reach flags (which parameters reached the loss) are known when the program
    # is built, so none is read back per call
    x, y = _x(8, 6), d2s.tensor(RNG.integers(0, 3, size=8))
    kinds, losses = _static_steps(_mlp, [x, x, x], y)
    assert kinds == [[], [], []]
    np.testing.assert_allclose(losses[0::2], losses[1::2], rtol=1e-5)


def test_a_converted_training_step_with_a_cond_makes_three_syncs():
    # forward: the predicate, then the reach flags (known only on this call's path) in one
    # copy; backward: the saved predicate again
    x, y = _x(8, 6), d2s.tensor(RNG.integers(0, 3, size=8))
    kinds, losses = _static_steps(_Gated, [x, x * 4.0, x - 3.0], y)
    assert kinds == [["bool", "asnumpy", "bool"]] * 3
    np.testing.assert_allclose(losses[0::2], losses[1::2], rtol=1e-5)


def _rnn_loss(params, xs, h0, n):
    W, U = params
    h, loss = h0, (h0 * 0.0).sum()
    t = d2s.zeros([], dtype="int64")
    while t < n:
        h = d2s.tanh(xs[t] @ W + h @ U)
        loss = loss + (h * h).sum()
        t = t + 1
    return loss


@pytest.mark.parametrize("steps", [0, 1, 4])
def test_a_while_gradient_syncs_only_on_its_predicates(steps):
    """A converted training call through a tensor ``while``: its forward reads its predicate
    steps + 1 times, its backward loop steps + 1 times; popping the per-step values (static
    shapes) reads no shape back from the device."""
    f = d2s.jit.to_static(d2s.func.value_and_grad(_rnn_loss))
    params = [_x(3, 5) * 0.3, _x(5, 5) * 0.3]
    args = (params, _x(4, 2, 3), _x(2, 5), d2s.tensor(steps))
    f(*args)
    f(*args)
    with sd.counting() as c:
        value, grads = f(*args)
    assert c.sync_kinds == ["bool"] * (2 * (steps + 1)), c.sync_kinds
    assert c.to_device == 0
    cpu_value, cpu_grads = d2s.func.value_and_grad(_rnn_loss)([_on_cpu(p) for p in params], *(
        _on_cpu(a) for a in args[1:]))
    np.testing.assert_allclose(to_host(value._data), cpu_value.numpy(), rtol=1e-5)
    for g, w in zip(grads, cpu_grads):
        np.testing.assert_allclose(to_host(g._data), w.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("scale", [0.5, 3.0, 100.0])
def test_a_converted_while_in_graph_mode_makes_no_sync(scale):
    f = d2s.jit.to_static(_halve, backend="graph")
    for _ in range(3):  # the quick rung, the optimized rung's warm-up call, the capture
        f(_x(1, 2, scale=2.0))
    assert f.backend_report() == "graph"
    x = d2s.tensor(np.array([[scale * 0.9, -0.2]], "float32"))
    with sd.counting() as c:
        out = f(x)
    assert c.syncs == 0 and c.to_device == 0, c.sync_kinds
    np.testing.assert_allclose(to_host(out._data), _halve(_on_cpu(x)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("steps", [0, 1, 4])
def test_a_while_gradient_in_graph_mode_makes_one_sync_its_error_word(steps):
    """The gradient's stacks live on the device with a device count; the one read per call is
    the error word (which says whether a stack outgrew the capacity the calls before needed)."""
    f = d2s.jit.to_static(d2s.func.value_and_grad(_rnn_loss), backend="graph")
    params = [_x(3, 5) * 0.3, _x(5, 5) * 0.3]
    args = (params, _x(4, 2, 3), _x(2, 5), d2s.tensor(steps))
    for _ in range(4):  # the last one replays with the stacks sized for these calls
        f(*args)
    assert f.backend_report() == "graph"
    with sd.counting() as c:
        value, grads = f(*args)
    assert c.sync_kinds == ["int"] and c.to_device == 0
    cpu_value, cpu_grads = d2s.func.value_and_grad(_rnn_loss)([_on_cpu(p) for p in params], *(
        _on_cpu(a) for a in args[1:]))
    np.testing.assert_allclose(to_host(value._data), cpu_value.numpy(), rtol=1e-5)
    for g, w in zip(grads, cpu_grads):
        np.testing.assert_allclose(to_host(g._data), w.numpy(), rtol=1e-5, atol=1e-6)


def _rnn_to_the_end(params, xs, h0):
    W, U = params
    h, loss = h0, (h0 * 0.0).sum()
    t = d2s.zeros([], dtype="int64")
    while t < xs.shape[0]:
        h = d2s.tanh(xs[t] @ W + h @ U)
        loss = loss + (h * h).sum()
        t = t + 1
    return loss


def test_a_while_gradient_with_a_static_trip_bound_in_graph_mode_makes_no_sync():
    """Its stacks' capacity, its pops and its full reads are proven when captured: the call
    reads no error word."""
    f = d2s.jit.to_static(d2s.func.value_and_grad(_rnn_to_the_end), backend="graph")
    params = [_x(3, 5) * 0.3, _x(5, 5) * 0.3]
    for _ in range(3):
        f(params, _x(5, 2, 3), _x(2, 5))
    assert f.backend_report() == "graph"
    for _ in range(2):  # new inputs each call
        args = (params, _x(5, 2, 3), _x(2, 5))
        with sd.counting() as c:
            value, grads = f(*args)
        assert c.syncs == 0 and c.to_device == 0, c.sync_kinds
        cpu_value, cpu_grads = d2s.func.value_and_grad(_rnn_to_the_end)([_on_cpu(p) for p in params], *(
            _on_cpu(a) for a in args[1:]))
        np.testing.assert_allclose(to_host(value._data), cpu_value.numpy(), rtol=1e-5)
        for g, w in zip(grads, cpu_grads):
            np.testing.assert_allclose(to_host(g._data), w.numpy(), rtol=1e-5, atol=1e-6)
