"""Bad input gets a clear error naming the op, the shapes and what to do."""
import numpy as np
import pytest

import d2s
from d2s.ops.nn import conv2d, max_pool2d
from d2s.static import InputSpec, build_program


@pytest.mark.parametrize("fn,pattern", [
    (lambda: d2s.zeros(2, 3) + d2s.zeros(4), r"add: shapes \(2, 3\) and \(4,\) cannot be broadcast.*reshape or unsqueeze"),
    (lambda: d2s.mul(np.zeros((2, 3)), d2s.zeros(3, 2)), r"mul: shapes \(2, 3\) and \(3, 2\)"),
    (lambda: d2s.zeros(2, 3) @ d2s.zeros(4, 2), r"matmul: shapes \(2, 3\) and \(4, 2\) do not align"),
    (lambda: d2s.reshape(d2s.zeros(2, 3), [4, 2]), r"reshape: cannot reshape \(2, 3\).*into \(4, 2\)"),
    (lambda: d2s.concat([d2s.zeros(2, 3), d2s.zeros(3, 2)]), r"concat: shapes \(2, 3\), \(3, 2\) differ in dim 1"),
    (lambda: d2s.stack([d2s.zeros(2), d2s.zeros(3)]), r"stack: .*\(2,\), \(3,\)"),
    (lambda: d2s.where(d2s.zeros(2) > 0, d2s.zeros(3), 0.0), r"where: shapes \(2,\) and \(3,\)"),
    (lambda: conv2d(d2s.zeros(1, 3, 5, 5), d2s.zeros(2, 4, 3, 3)), r"conv2d: input \(1, 3, 5, 5\) has 3 channels.*\(2, 4, 3, 3\)"),
    (lambda: max_pool2d(d2s.zeros(5, 5), 2), r"max_pool2d: expected a 3-d \(unbatched\) or 4-d \(batched\) input, got shape \(5, 5\)"),
    (lambda: d2s.gather(d2s.zeros(2, 3), 1, [1]), r"gather: index needs as many dims.*\(1,\).*\(2, 3\)"),
    (lambda: d2s.sum(d2s.zeros(2, 3), axis=2), r"reduce_sum: axis 2 is out of range"),
])
def test_shape_mismatch_names_op_and_shapes(fn, pattern):
    with pytest.raises(ValueError, match=pattern):
        fn()


def test_symbolic_shape_mismatch_names_op_shapes_and_line():
    with pytest.raises(ValueError, match=r"(?s)add: shapes \(\?, 3\) and \(4,\).*test_errors\.py"):
        build_program(lambda a, b: a + b, InputSpec([None, 3]), InputSpec([4]))


def test_index_out_of_range_is_an_index_error():
    with pytest.raises(IndexError, match=r"getitem: index 5 is out of range for dim 0 of size 2"):
        d2s.zeros(2, 3)[5]


def test_backward_from_an_integer_tensor():
    x = d2s.tensor([1.0, -2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="backward needs a floating point tensor, got int64"):
        d2s.argmax(x).backward()
    with pytest.raises(RuntimeError, match="floating point tensor, got bool"):
        (x > 0).backward()
    with pytest.raises(RuntimeError, match="only floating point tensors can require gradients"):
        d2s.tensor([1, 2], requires_grad=True)


def test_non_scalar_backward_needs_gradient():
    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"only for scalar outputs.*shape \(2,\).*gradient="):
        (x * 2).backward()
    (x * 2).backward(d2s.ones(2))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


@pytest.mark.parametrize("make", [
    lambda: d2s.tensor([1.0], dtype="uint32"),
    lambda: d2s.zeros(2, dtype="complex64"),
    lambda: d2s.cast(d2s.zeros(2), "uint16"),
])
def test_unknown_dtype(make):
    with pytest.raises(TypeError, match=r"unknown dtype .*d2s supports float32, float64, int32, int64, bool"):
        make()


def test_bfloat16_says_numpy_cannot_hold_it():
    with pytest.raises(TypeError, match="no bfloat16"):
        d2s.tensor([1.0]).to(dtype="bfloat16")


@pytest.mark.parametrize("make", [
    lambda: d2s.tensor([1.0], device="tpu"),
    lambda: d2s.zeros(2, device="tpu"),
    lambda: d2s.tensor([1.0]).to("tpu"),
])
def test_unknown_device(make):
    with pytest.raises(ValueError, match=r"unknown device 'tpu': d2s supports 'cpu' \(numpy\) and 'gpu' \(cupy\)"):
        make()


def _has_cupy():
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(_has_cupy(), reason="cupy is installed here: the missing-cupy message cannot appear")
@pytest.mark.parametrize("make", [
    lambda: d2s.tensor([1.0], device="gpu"),
    lambda: d2s.randn(2, device="gpu"),
    lambda: d2s.tensor([1.0]).to("gpu"),
    lambda: d2s.tensor([1.0]).gpu(),
])
def test_gpu_without_cupy_says_cupy_is_missing(make):
    with pytest.raises(RuntimeError, match=r"device 'gpu' needs cupy, which is not installed"):
        make()


def test_bad_arguments_of_nn_ops():
    with pytest.raises(ValueError, match="dropout: p must lie in"):
        d2s.ops.nn.dropout(d2s.zeros(3), 1.5)
    with pytest.raises(ValueError, match=r"one_hot: class ids must lie in \[0, 3\)"):
        d2s.one_hot(d2s.tensor([0, 3]), 3)
    with pytest.raises(TypeError, match="index must hold integers"):
        d2s.gather(d2s.zeros(2, 2), 0, [[0.5, 1.0]])
    with pytest.raises(ValueError, match="conv2d: input size 2 .* smaller than the kernel size 3"):
        conv2d(d2s.zeros(1, 1, 2, 2), d2s.zeros(1, 1, 3, 3))
