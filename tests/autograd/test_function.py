"""d2s.autograd.Function: user-defined forward/backward pairs."""
import numpy as np
import pytest

import d2s
from d2s.autograd.function import Function


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
