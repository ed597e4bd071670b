"""Pooling layers and functions (d2s/nn/pooling.py, d2s/ops/pooling.py) against PyTorch: values,
indices and float64 gradients over kernel sizes, strides, paddings, dilations, ceil_mode,
count_include_pad, divisor_override and adaptive output sizes that do and do not divide."""
import numpy as np
import pytest

import d2s
import torch_parity
from device_helpers import matches_cpu
from d2s import nn
from torch_parity import Case

R = np.random.default_rng(1)


def distinct(*shape):
    """Values without ties (a maximum's gradient then has one place to go)."""
    n = int(np.prod(shape))
    return (R.permutation(n) * 0.37 - n * 0.15).reshape(shape) + 0.05


def rn(*shape):
    return R.standard_normal(shape)


def r32(*shape):
    """float32: onnxruntime has no float64 AveragePool, Conv or global pooling kernels."""
    return rn(*shape).astype("float32")


def d32(*shape):
    return distinct(*shape).astype("float32")


def _with_nans():
    """Ties and NaNs (two in one window: PyTorch's gradient and index go to the last NaN)."""
    x = np.round(R.standard_normal((2, 3, 7, 6)) * 2).astype("float32")
    x[0, 0, 2, 2] = x[1, 1, 3, 3] = x[1, 1, 3, 4] = np.nan
    return x


def F(t):
    return t.nn.functional


def maxpool(*args, **kw):
    return lambda t, x: F(t).max_pool2d(x, *args, **kw)


def avgpool(*args, **kw):
    return lambda t, x: F(t).avg_pool2d(x, *args, **kw)


def _pool_then_unpool(t, x, v):
    """SegNet's decoder: max-pool with indices, then put each maximum back (sizes default,
    given, unbatched, 1-d with padding, the layers)."""
    F = t.nn.functional
    y, i = F.max_pool2d(x, 2, return_indices=True)
    y3, i3 = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    v1, j = F.max_pool1d(v, 3, 2, 1, return_indices=True)
    return (F.max_unpool2d(y, i, 2), F.max_unpool2d(y, i, 2, output_size=(5, 7)), F.max_unpool2d(y[0], i[0], (2, 2)),
            F.max_unpool2d(y3, i3, 3, 2, 1, output_size=[2, 3, 5, 6]), F.max_unpool1d(v1, j, 3, 2, 1),
            t.nn.MaxUnpool2d(2)(y * 2, i), t.nn.MaxUnpool1d(3, stride=2, padding=1)(v1, j, output_size=[7]))


TORCH_CASES = [
    Case("max_pool2d_2", maxpool(2), distinct(2, 3, 6, 6)),
    Case("max_pool2d_odd_sizes", maxpool(2), distinct(2, 2, 7, 5)),
    Case("max_pool2d_3s2p1", maxpool(3, 2, 1), distinct(2, 3, 7, 6)),
    Case("max_pool2d_ceil", maxpool(3, 2, ceil_mode=True), distinct(1, 2, 8, 7)),
    Case("max_pool2d_ceil_padding", maxpool(3, 2, 1, ceil_mode=True), distinct(1, 2, 6, 5)),
    Case("max_pool2d_ceil_drops_window_in_padding", maxpool(2, 2, 1, ceil_mode=True), distinct(1, 1, 4, 5)),
    Case("max_pool2d_ceil_only_window_reaches_past", maxpool(3, 3, (1, 0), ceil_mode=True), distinct(1, 2, 4, 2)),
    Case("max_pool2d_dilation", maxpool(3, 1, 1, dilation=2), distinct(1, 2, 6, 7),
         onnx="onnxruntime's MaxPool with dilations and pads differs; exported without dilation in tests/onnx"),
    Case("max_pool2d_per_dim", maxpool((3, 2), (2, 1), (1, 0)), distinct(2, 2, 7, 5)),
    Case("max_pool2d_indices", maxpool(3, 2, 1, ceil_mode=True, return_indices=True), distinct(2, 2, 7, 6)),
    Case("max_pool2d_unbatched", maxpool(2, 1), distinct(2, 5, 4)),
    Case("max_pool2d_float32_ties", maxpool(2), np.round(rn(2, 2, 6, 6)).astype("float32")),
    Case("max_pool2d_nan_windows", maxpool(3, 2, 1, ceil_mode=True, return_indices=True), _with_nans(),
         onnx="onnxruntime's MaxPool does not propagate NaN as PyTorch does"),
    Case("max_pool1d", lambda t, x: F(t).max_pool1d(x, 3, 2, 1, ceil_mode=True), distinct(2, 3, 10)),
    Case("max_pool1d_indices", lambda t, x: F(t).max_pool1d(x, 2, return_indices=True), distinct(2, 2, 9)),
    Case("avg_pool2d_2", avgpool(2), r32(2, 3, 6, 6)),
    Case("avg_pool2d_3s2p1", avgpool(3, 2, 1), r32(2, 3, 7, 6)),
    Case("avg_pool2d_exclude_pad", avgpool(3, 2, 1, count_include_pad=False), r32(2, 2, 7, 6)),
    Case("avg_pool2d_ceil", avgpool(3, 2, ceil_mode=True), r32(1, 2, 8, 7)),
    Case("avg_pool2d_ceil_padding", avgpool(3, 2, 1, ceil_mode=True), r32(1, 2, 6, 5)),
    Case("avg_pool2d_ceil_exclude_pad", avgpool((3, 2), (2, 2), (1, 1), ceil_mode=True, count_include_pad=False),
         r32(1, 2, 6, 5)),
    Case("avg_pool2d_ceil_only_window_reaches_past", avgpool(3, 3, (1, 0), ceil_mode=True), r32(1, 2, 4, 2)),
    Case("avg_pool2d_ceil_only_window_exclude_pad", avgpool(3, 3, (1, 0), ceil_mode=True, count_include_pad=False),
         r32(1, 2, 4, 2)),
    Case("avg_pool2d_divisor_override", avgpool(3, 2, 1, divisor_override=5), r32(2, 2, 6, 6)),
    Case("avg_pool2d_ceil_divides_past_padding", avgpool(2, ceil_mode=True), r32(2, 3, 5, 5)),
    Case("avg_pool1d", lambda t, x: F(t).avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
         r32(2, 3, 10)),
    Case("adaptive_avg_pool2d_global", lambda t, x: F(t).adaptive_avg_pool2d(x, 1), r32(2, 3, 5, 6)),
    Case("adaptive_avg_pool2d_divides", lambda t, x: F(t).adaptive_avg_pool2d(x, (2, 3)), r32(2, 3, 6, 6)),
    Case("adaptive_avg_pool2d_does_not_divide", lambda t, x: F(t).adaptive_avg_pool2d(x, (3, 4)), r32(2, 2, 7, 5)),
    Case("adaptive_avg_pool2d_upsamples", lambda t, x: F(t).adaptive_avg_pool2d(x, (5, 7)), r32(1, 2, 3, 4)),
    Case("adaptive_avg_pool2d_none", lambda t, x: F(t).adaptive_avg_pool2d(x, (None, 2)), r32(2, 2, 5, 6)),
    Case("adaptive_avg_pool1d", lambda t, x: F(t).adaptive_avg_pool1d(x, 4), r32(2, 3, 9)),
    Case("adaptive_max_pool2d_global", lambda t, x: F(t).adaptive_max_pool2d(x, 1), d32(2, 3, 5, 6)),
    Case("adaptive_max_pool2d_divides", lambda t, x: F(t).adaptive_max_pool2d(x, (3, 2)), distinct(2, 2, 6, 6)),
    Case("adaptive_max_pool2d_does_not_divide", lambda t, x: F(t).adaptive_max_pool2d(x, (3, 4), return_indices=True),
         distinct(2, 2, 7, 5), onnx="ONNX has no overlapping adaptive windows (refused with a clear error)"),
    Case("adaptive_max_pool1d", lambda t, x: F(t).adaptive_max_pool1d(x, 3), distinct(2, 3, 8),
         onnx="ONNX has no overlapping adaptive windows (refused with a clear error)"),
    # layers
    Case("MaxPool2d_layer", lambda t, x: t.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)(x),
         distinct(2, 3, 6, 7)),
    Case("AvgPool2d_layer", lambda t, x: t.nn.AvgPool2d(3, 2, 1, count_include_pad=False)(x), r32(2, 3, 6, 7)),
    Case("AvgPool1d_layer", lambda t, x: t.nn.AvgPool1d(2, ceil_mode=True)(x), r32(2, 3, 7)),
    Case("MaxPool1d_layer", lambda t, x: t.nn.MaxPool1d(2, 1, dilation=2)(x), distinct(2, 3, 7)),
    Case("AdaptiveAvgPool2d_layer", lambda t, x: t.nn.AdaptiveAvgPool2d((1, 1))(x), r32(2, 4, 3, 3)),
    Case("AdaptiveAvgPool1d_layer", lambda t, x: t.nn.AdaptiveAvgPool1d(2)(x), r32(2, 4, 4)),
    Case("AdaptiveMaxPool2d_layer", lambda t, x: t.nn.AdaptiveMaxPool2d(2, return_indices=True)(x),
         distinct(2, 2, 4, 6), onnx="ONNX has no adaptive max pooling indices (refused with a clear error)"),
    Case("AdaptiveMaxPool1d_layer", lambda t, x: t.nn.AdaptiveMaxPool1d(2)(x), distinct(2, 2, 6)),
    # power-average pooling: (sum of x ** p over the window) ** (1 / p); with an odd p a negative
    # sum is clamped to 0, with a fractional p negative inputs give NaN (PyTorch's too)
    Case("lp_pool", lambda t, x, a: (t.nn.functional.lp_pool2d(x, 2, 2), t.nn.functional.lp_pool2d(a, 3, (2, 3), 1),
                                     t.nn.functional.lp_pool2d(a, 1.5, 3, stride=(1, 2), ceil_mode=True),
                                     t.nn.functional.lp_pool1d(x[0], 2, 3, 2), t.nn.LPPool2d(2, 3, 2)(a),
                                     t.nn.LPPool1d(3, 2)(x[:, :, 0])),
         r32(2, 3, 5, 6), np.abs(r32(2, 3, 5, 6)) + 0.1, rtol=1e-5, atol=1e-6),
    Case("max_unpool", _pool_then_unpool, distinct(2, 3, 5, 6), distinct(2, 3, 7),
         dynamic="the unpooled size is computed from the input's spatial sizes when the program is built"),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def _grad_norm(a, create_graph):
    """||d/da sum(avg_pool2d(a)^3)||^2 (a first derivative, squared and summed)."""
    g, = d2s.grad((nn.functional.avg_pool2d(a, 3, 2, 1, ceil_mode=True) ** 3).sum(), [a], create_graph=create_graph)
    return (g * g).sum()


def test_second_derivatives_of_average_pools():
    """avg pooling is linear: its gradient primitive's gradient is the pooling again, so double
    backward works; checked against central differences of the first derivative."""
    x0 = rn(1, 2, 5, 5)
    x = d2s.tensor(x0, requires_grad=True)
    analytic, = d2s.grad(_grad_norm(x, True), [x])
    numeric = np.zeros_like(x0)
    eps = 1e-6
    for i in np.ndindex(x0.shape):
        hi, lo = x0.copy(), x0.copy()
        hi[i] += eps
        lo[i] -= eps
        numeric[i] = (_grad_norm(d2s.tensor(hi, requires_grad=True), False).item()
                      - _grad_norm(d2s.tensor(lo, requires_grad=True), False).item()) / (2 * eps)
    np.testing.assert_allclose(analytic.numpy(), numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make,msg", [
    (lambda: nn.functional.max_pool2d(d2s.zeros(1, 1, 4, 4), 2, padding=2), "padding .* at most half the kernel"),
    (lambda: nn.functional.max_pool2d(d2s.zeros(1, 1, 2, 2), 3), "input size 2 .* smaller than the kernel size 3"),
    (lambda: nn.functional.avg_pool2d(d2s.zeros(4, 4), 2), "expected a 3-d .* or 4-d .* input"),
    (lambda: nn.functional.avg_pool2d(d2s.zeros(1, 1, 4, 4), 2, divisor_override=0), "divisor_override"),
])
def test_bad_arguments_are_clear_errors(make, msg):
    with pytest.raises(ValueError, match=msg):
        make()


@pytest.mark.parametrize("fn", [
    lambda x: nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
    lambda x: nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    lambda x: nn.functional.avg_pool2d(x, 2, divisor_override=3),
    lambda x: nn.functional.adaptive_avg_pool2d(x, (3, 4)),
    lambda x: nn.functional.adaptive_max_pool2d(x, (3, 4), return_indices=True),
], ids=["max", "avg", "avg_divisor", "adaptive_avg", "adaptive_max"])
def test_runs_on_every_device(device, fn):
    matches_cpu(fn, [distinct(2, 4, 7, 6).astype("float32")], device)


@pytest.mark.parametrize("call, match", [
    (lambda y, i: nn.functional.max_unpool2d(y, i, 2, output_size=(7, 5)), r"dim 0 must be between 2 and 6"),
    (lambda y, i: nn.functional.max_unpool2d(y, i, 2, output_size=(4, 4, 4)), "2 or 4 elements"),
    (lambda y, i: nn.functional.max_unpool2d(y, i[..., :1], 2), "indices must have the input's shape"),
])
def test_max_unpool_refuses_what_pytorch_refuses(call, match):
    y, i = nn.functional.max_pool2d(d2s.tensor(distinct(1, 1, 4, 5)), 2, return_indices=True)
    with pytest.raises(ValueError, match=match):
        call(y, i)
