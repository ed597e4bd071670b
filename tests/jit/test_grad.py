"""Gradients through StaticFunction outputs (the program's backward program) vs eager."""
import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.jit import InputSpec, to_static

from jit_helpers import check

# each test runs on the python and the native backend (tests/backend_fixture.py)
pytestmark = pytest.mark.usefixtures("backend")


W = nn.Parameter(d2s.tensor([[0.5, -1.0], [2.0, 0.25]]))


def uses_global_parameter(x):
    return (x @ W).tanh().sum()


def test_gradient_reaches_a_parameter_read_from_globals():
    sf = to_static(uses_global_parameter)
    x = d2s.tensor([[1.0, 2.0], [0.5, -1.0]], requires_grad=True)
    W.grad = None
    sf(x).backward()
    gs_w, gs_x = W.grad.numpy().copy(), x.grad.numpy().copy()
    W.grad, x.grad = None, None
    uses_global_parameter(x).backward()
    np.testing.assert_allclose(gs_w, W.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(gs_x, x.grad.numpy(), rtol=1e-5)
    assert sf.programs[0].params and not sf.programs[0].constants


def two_inputs(a, b):
    return (a * b + a.exp()).sum()


def test_only_inputs_that_require_grad_get_gradients():
    sf = to_static(two_inputs)
    a = d2s.tensor([0.1, 0.2], requires_grad=True)
    b = d2s.tensor([1.0, 2.0])
    out = sf(a, b)
    assert len(out.grad_fn.next_functions) == 1
    out.backward()
    np.testing.assert_allclose(a.grad.numpy(), b.numpy() + np.exp(a.numpy()), rtol=1e-6)
    assert b.grad is None
    b.requires_grad_()
    a.grad = None
    sf(a, b).backward()  # another set of inputs needing grad: another program (it sees b.requires_grad)
    np.testing.assert_allclose(b.grad.numpy(), a.numpy(), rtol=1e-6)
    assert len(sf.programs) == 2


def multi_out(x):
    return x * 2.0, x.sin(), x.sum()


def test_outputs_used_downstream_and_unused_outputs():
    sf = to_static(multi_out)
    x = d2s.tensor([0.3, -0.7], requires_grad=True)
    a, b, c = sf(x)
    (a * b).sum().backward()  # c unused: its gradient is zero
    xe = x.detach().requires_grad_()
    ae, be, _ = multi_out(xe)
    (ae * be).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-5)


def test_gradients_accumulate_over_calls_and_inputs_with_history():
    def f(x):
        return (x * x).sum()

    sf = to_static(f)
    x = d2s.tensor([1.0, -2.0], requires_grad=True)
    y = x * 3.0
    (sf(x) + sf(y)).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy() + 18 * x.numpy(), rtol=1e-6)


def test_backward_twice_needs_retain_graph():
    def f(x):
        return x.exp().sum()

    sf = to_static(f)
    x = d2s.tensor([0.5], requires_grad=True)
    out = sf(x)
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.5]), rtol=1e-6)
    with pytest.raises(RuntimeError, match="second time"):
        out.backward()


def test_d2s_grad_and_hooks_through_a_static_output():
    def f(x):
        return (x ** 3).sum()

    sf = to_static(f)
    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    (g,) = d2s.grad(sf(x), [x])
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    seen = []
    x.register_hook(lambda grad: seen.append(grad.numpy().copy()))
    sf(x).backward()
    np.testing.assert_allclose(seen[0], 3 * x.numpy() ** 2)


def test_double_backward_through_a_program_matches_eager():
    from d2s import nn

    lin = nn.Linear(2, 1)

    def f(x):
        y = x ** 3
        if y.sum() > 0:  # a cond in the program: its replay is differentiated twice too
            y = y * 2
        return (lin(y) ** 2).sum()

    sf = to_static(f)
    for v in ([[1.0, 2.0]], [[-1.0, -2.0]]):
        grads = []
        for fn in (f, sf):
            x = d2s.tensor(v, dtype="float64", requires_grad=True)
            g, = d2s.grad(fn(x), [x], create_graph=True)
            h = d2s.grad(g.sum(), [x, lin.weight])
            grads.append([g.numpy(), h[0].numpy(), h[1].numpy()])
        for a, b in zip(*grads):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_frozen_parameters_get_no_gradient():
    lin = to_static(nn.Linear(3, 2))
    lin.weight.requires_grad_(False)
    x = d2s.randn(4, 3)
    lin(x).sum().backward()
    assert lin.weight.grad is None
    np.testing.assert_allclose(lin.bias.grad.numpy(), [4.0, 4.0])


def cond_and_while(x, n):
    if x.sum() > 0:
        y = x * x
    else:
        y = x.exp()
    i = d2s.tensor(0)
    while i < n:
        y = y.sin() + x
        i = i + 1
    return y.sum()


def test_gradients_through_cond_and_while_including_zero_trips():
    for v in ([0.5, 0.2], [-0.5, -1.0]):
        for n in (0, 1, 3):
            check(cond_and_while, d2s.tensor(v), d2s.tensor(n))


def data_dependent_trip_count(x):
    while x.abs().sum() < 4.0:
        x = x * 1.7 + 0.1
    return x


def test_gradient_of_loop_with_data_dependent_trip_count():
    for v in ([0.1, 0.2], [1.0, 1.5], [5.0, 1.0]):
        check(data_dependent_trip_count, d2s.tensor(v))


def test_gradients_with_dynamic_batch():
    def f(x, w):
        return ((x @ w).relu() ** 2).mean()

    sf = to_static(f, input_spec=[InputSpec([None, 3]), InputSpec([3, 2])])
    w = d2s.randn(3, 2)
    for n in (1, 5):
        check(f, d2s.randn(n, 3), w, static=sf)
    assert len(sf.programs) == 1


def test_gradcheck_in_float64():
    def f(x):
        if x.sum() > 0:
            return (x * x.sin()).sum()
        return x.exp().sum()

    sf = to_static(f)
    for v in ([0.3, 0.7], [-0.4, -0.9]):
        x = d2s.tensor(np.array(v), requires_grad=True)
        assert d2s.autograd.gradcheck(sf, (x,))


def _no_grad_region(x, w):
    y = x * w
    with d2s.no_grad():
        scale = (y * y).sum() + 1.0  # a statistic the gradient must not flow through
        target = d2s.tanh(y)
    return (((y - target) ** 2) / scale).sum() + (y.detach() * x).sum()


def test_no_grad_regions_inside_the_function_are_cut_from_the_gradient():
    # regression: the program recorded no_grad() ops as ordinary ones, so the backward
    # differentiated through them
    from d2s.jit import to_static
    f = to_static(_no_grad_region)
    rng = np.random.default_rng(0)
    for _ in range(3):  # the first call runs the program as built, later ones optimized
        x0, w0 = rng.standard_normal(3), rng.standard_normal(3)
        xs, ws = d2s.tensor(x0, requires_grad=True), d2s.tensor(w0, requires_grad=True)
        xe, we = d2s.tensor(x0, requires_grad=True), d2s.tensor(w0, requires_grad=True)
        out, ref = f(xs, ws), _no_grad_region(xe, we)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
        out.backward()
        ref.backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(ws.grad.numpy(), we.grad.numpy(), rtol=1e-10)


def test_dropout_gradients_and_random_stream_match_eager():
    """The backward program recomputes the forward: it must reuse the forward's dropout masks
    and leave the random stream where eager leaves it."""
    from d2s import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 6)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return (self.drop(self.lin(x)) ** 2).sum()

    d2s.manual_seed(0)
    eager = Net()
    static = to_static(Net())
    static.load_state_dict(eager.state_dict())
    x = d2s.randn(4, 6)
    for step in range(3):
        results = []
        for model in (eager, static):
            d2s.manual_seed(10 + step)
            loss = model(x)
            loss.backward()
            after = d2s.rand(3).numpy()  # the next draw after forward and backward
            results.append((loss.item(), model.lin.weight.grad.numpy().copy(), after))
            model.lin.weight.grad = model.lin.bias.grad = None
        (le, ge, ae), (ls, gs, as_) = results
        np.testing.assert_allclose(ls, le, rtol=1e-6)
        np.testing.assert_allclose(gs, ge, rtol=1e-6)
        np.testing.assert_array_equal(as_, ae)
