"""d2s.autograd.Function: user-defined forward/backward pairs."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s.autograd.function import Function, once_differentiable
from torch_parity import Case


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class ScaleBoth(Function):
    @staticmethod
    def forward(ctx, a, b, k):
        ctx.k = k
        return a * k, b * k

    @staticmethod
    def backward(ctx, ga, gb):
        return ga * ctx.k, gb * ctx.k, None


@pytest.mark.parametrize("xv", [[1.0, 2.0], [-0.5, 3.0, 0.1]])
def test_custom_function_forward_backward(xv):
    x = d2s.tensor(np.asarray(xv), requires_grad=True)
    y = Cube.apply(x)
    assert y.grad_fn.name() == "CubeBackward"
    assert y.grad_fn.next_functions[0][0].name() == "AccumulateGrad"
    np.testing.assert_allclose(y.numpy(), np.asarray(xv) ** 3)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.asarray(xv) ** 2)


def test_custom_backward_in_d2s_ops_supports_higher_order():
    x = d2s.tensor(2.0, dtype="float64", requires_grad=True)
    (g,) = d2s.grad(Cube.apply(x), x, create_graph=True)
    (g2,) = d2s.grad(g, x)
    assert g.item() == 12.0 and g2.item() == 12.0


def test_multiple_outputs_and_non_tensor_argument():
    a = d2s.tensor([1.0, 2.0], requires_grad=True)
    b = d2s.tensor([3.0], requires_grad=True)
    pa, pb = ScaleBoth.apply(a, b, 5.0)
    (pa.sum() * 2 + pb.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), [10, 10])
    np.testing.assert_allclose(b.grad.numpy(), [5])


def test_wrong_number_of_gradients_is_a_clear_error():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    x = d2s.tensor(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned 1 gradients.*took 2"):
        Bad.apply(x, x).backward()


def test_saved_tensors_freed_after_backward():
    x = d2s.tensor(1.0, requires_grad=True)
    y = Cube.apply(x)
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_forward_returning_its_input_keeps_input_history():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = d2s.tensor(1.0, requires_grad=True)
    y = Identity.apply(x)
    assert x.is_leaf and not y.is_leaf
    y.backward()
    assert x.grad.item() == 2.0


def test_exported_from_d2s_autograd():
    assert d2s.autograd.Function is Function


# ------------------------------------------------------------------ in programs (to_static)
class ClipBackward(Function):
    """Doubles forward; its backward clips the gradient (not the derivative of forward)."""

    @staticmethod
    def forward(ctx, x, limit):
        ctx.limit = limit
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return (g * 2).clip(-ctx.limit, ctx.limit), None


class StraightThrough(Function):
    @staticmethod
    def forward(ctx, x):
        return (x > 0).float() * 1.0

    @staticmethod
    def backward(ctx, g):
        return g


class SplitScale(Function):
    """Two outputs, a mask kept on ctx, a non-differentiable index output."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.mask = x > 0
        idx = (x > 0).long()
        ctx.mark_non_differentiable(idx)
        return x * k, x * x, idx

    @staticmethod
    def backward(ctx, ga, gb, gi):
        x_pos = ctx.mask.float()
        return ga * 3.0 * x_pos + gb, None


W1 = d2s.tensor(np.random.default_rng(1).standard_normal((4, 4)) * 3, requires_grad=True)
W2 = d2s.tensor(np.random.default_rng(2).standard_normal((4, 2)) * 3, requires_grad=True)


def uses_functions(x):
    h = ClipBackward.apply(x @ W1, 0.5)   # parameters upstream
    if h.sum() > 0:                      # under a tensor if
        h = StraightThrough.apply(h) * h
    else:
        a, b, idx = SplitScale.apply(h, 2.0)
        h = a + b * idx
    i = 0
    while i < (x > 0).sum():             # inside a tensor loop
        h = ClipBackward.apply(h, 1.0) * 0.25
        i += 1
    return (h @ W2).sum()                # parameters downstream


def _grads(fn, x):
    W1.grad = W2.grad = None
    out = fn(x)
    out.backward()
    return out.item(), W1.grad.numpy().copy(), W2.grad.numpy().copy()


@pytest.mark.parametrize("seed", [5, 6, 7, 8])
def test_functions_in_a_converted_function_equal_eager(seed):
    x = d2s.tensor(np.random.default_rng(seed).standard_normal((3, 4)))
    static = d2s.jit.to_static(uses_functions)
    want, got = _grads(uses_functions, x), _grads(static, x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6, atol=1e-9)


def test_the_program_uses_the_users_backward():
    """The clipping backward gives a gradient the derivative of x * 2 would not: the backward
    program must hold the user's backward."""
    w = d2s.tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)

    def f(x):
        return (ClipBackward.apply(x * w, 0.5) * 10).sum()

    f(d2s.ones(3)).backward()
    np.testing.assert_allclose(w.grad.numpy(), [0.5, 0.5, 0.5])  # clip(2 * 10) = 0.5, times x = 1
    w.grad = None
    d2s.jit.to_static(f)(d2s.ones(3)).backward()
    np.testing.assert_allclose(w.grad.numpy(), [0.5, 0.5, 0.5])


def test_straight_through_estimator_trains_through_a_threshold():
    w = d2s.tensor(np.array([0.5, -1.0]), requires_grad=True)

    def f(x):
        return (StraightThrough.apply(x * w) * 3.0).sum()

    for fn in (f, d2s.jit.to_static(f)):
        w.grad = None
        fn(d2s.tensor([2.0, 4.0])).backward()
        np.testing.assert_allclose(w.grad.numpy(), [6.0, 12.0])


def test_a_forward_reading_data_is_refused_at_the_users_line():
    class NumpyExp(Function):
        @staticmethod
        def forward(ctx, x):
            y = d2s.tensor(np.exp(x.numpy()))
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0]

    w = d2s.tensor(np.ones(3), requires_grad=True)

    def f(x):
        return NumpyExp.apply(x * w).sum()

    with pytest.raises(TypeError, match=r"(?s)test_function.py.*NumpyExp.forward reads a tensor's value"):
        d2s.jit.to_static(f)(d2s.ones(3))
    f(d2s.ones(3)).backward()  # eagerly it works
    np.testing.assert_allclose(w.grad.numpy(), np.e * np.ones(3))


def test_ctx_options_eagerly():
    class Options(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        @once_differentiable
        def backward(ctx, ga, gb):
            assert gb is None  # not materialized: the second output got no gradient
            return ga * 2

    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    a, b = Options.apply(x)
    (g,) = d2s.grad(a.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0])
    assert not g.requires_grad  # once_differentiable: no graph through the backward


def test_mark_dirty_returns_the_input_with_the_functions_history():
    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = AddOneInPlace.apply(y)
    assert z is y and y.grad_fn.name() == "AddOneInPlaceBackward"
    z.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), [2.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


# ------------------------------------------------------------------ against PyTorch
def _functions(lib):
    """The same two custom Functions written against ``lib`` (torch or d2s)."""

    class Clip(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, limit):
            ctx.limit = limit
            ctx.save_for_backward(x)
            return x * x, x + 1

        @staticmethod
        def backward(ctx, ga, gb):
            (x,) = ctx.saved_tensors
            return (ga * 2 * x).clip(-ctx.limit, ctx.limit) + gb, None

    class Ste(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x > 0).to(x.dtype)

        @staticmethod
        def backward(ctx, g):
            return g

    return Clip, Ste


_FNS = {}


def _fns(lib):
    if lib.__name__ not in _FNS:
        _FNS[lib.__name__] = _functions(lib)
    return _FNS[lib.__name__]


def clipped_square(t, x):
    clip, _ = _fns(t)
    a, b = clip.apply(x * 3, 1.5)
    return a * b


def straight_through(t, x):
    _, ste = _fns(t)
    return ste.apply(x) * x.exp()


_X = np.random.default_rng(3).standard_normal((3, 4))
TORCH_CASES = [Case("clipped_square", clipped_square, _X), Case("straight_through", straight_through, _X)]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)
