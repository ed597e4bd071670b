"""Volumes (d2s/nn/_f_volume.py, nn.Conv3d, ConvTranspose3d and the 3-d pooling layers) against
PyTorch: conv3d (stride, padding ints / 'same' / 'valid', dilation, groups, bias, unbatched),
conv_transpose3d (stride, padding, output_padding, groups, dilation), max_pool3d
(padding, dilation, ceil_mode), avg_pool3d (count_include_pad, ceil_mode, divisor_override),
adaptive_avg_pool3d and adaptive_max_pool3d (dividing and not, None), the layers: values,
dtypes, float64 gradients, then converted, saved and ONNX (tests/torch_parity.py); errors."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
import torch_parity
from torch_parity import Case

R = np.random.default_rng(77)
VOL = R.standard_normal((2, 4, 4, 5, 6))
W = R.standard_normal((6, 2, 2, 3, 2))
B = R.standard_normal(6)
SHAPES = "the channel and spatial sizes are read when the program is built"


def distinct(*shape):
    """Values without ties (a maximum's gradient then has one place to go)."""
    n = int(np.prod(shape))
    return (R.permutation(n) * 0.37 - n * 0.15).reshape(shape) + 0.05


def _convs(t, x, w, b):
    f = t.nn.functional
    return (f.conv3d(x, w, b, groups=2), f.conv3d(x, w, None, 2, 1, groups=2),
            f.conv3d(x, w, b, padding="same", dilation=(1, 2, 1), groups=2),
            f.conv3d(x, w, b, (1, 2, 3), (0, 1, 2), 2, 2), f.conv3d(x[0], w, b, padding="valid", groups=2),
            f.conv3d(x, w.reshape(3, 4, 2, 3, 2), b[:3]))


def _max_pools(t, x):
    f = t.nn.functional
    return (f.max_pool3d(x, 2), f.max_pool3d(x, 3, 2, 1), f.max_pool3d(x, (2, 3, 2), (1, 2, 2), dilation=(1, 1, 2)),
            f.max_pool3d(x, 2, 2, ceil_mode=True), f.max_pool3d(x[0], 3, 2, 1, ceil_mode=True),
            t.nn.MaxPool3d(2, stride=1)(x), t.max_pool3d(x, (1, 2, 2)))


def _avg_pools(t, x):
    f = t.nn.functional
    return (f.avg_pool3d(x, 2), f.avg_pool3d(x, 3, 2, 1), f.avg_pool3d(x, 3, 2, 1, count_include_pad=False),
            f.avg_pool3d(x, 2, 2, ceil_mode=True), f.avg_pool3d(x, 3, 2, 1, True, False),
            f.avg_pool3d(x, 3, 2, 1, ceil_mode=True), f.avg_pool3d(x, 2, divisor_override=3),
            t.nn.AvgPool3d((1, 2, 3), count_include_pad=False, padding=(0, 1, 1))(x),
            f.lp_pool3d(x.abs() + 0.1, 2, 2), f.lp_pool3d(x.abs() + 0.1, 3, (1, 2, 2), stride=1))


def _adaptive(t, x):
    f = t.nn.functional
    return (f.adaptive_avg_pool3d(x, 1), f.adaptive_avg_pool3d(x, (2, 3, 4)), f.adaptive_avg_pool3d(x, (None, 4, 3)),
            f.adaptive_max_pool3d(x, (3, 2, 4)), f.adaptive_max_pool3d(x[0], 2), t.nn.AdaptiveAvgPool3d((1, 1, 1))(x),
            t.nn.AdaptiveMaxPool3d((4, 5, 6))(x))


def _transposed(t, x, w, b):
    f = t.nn.functional
    b2 = b[:2]  # (C_out = w.shape[1] * groups)
    return (f.conv_transpose3d(x, w, b2), f.conv_transpose3d(x, w, None, 2),
            f.conv_transpose3d(x, w, b2, (1, 2, 3), (0, 1, 1), (0, 1, 2)),
            f.conv_transpose3d(x, w, b, groups=2, dilation=2, padding=1),
            t.conv_transpose3d(x[0], w, b2, stride=2, padding=2, output_padding=1),
            t.conv3d(x, w.transpose(0, 1)))


TORCH_CASES = [
    Case("conv3d", _convs, VOL, W, B, rtol=1e-10, atol=1e-12, dynamic=SHAPES),
    Case("conv3d_float32", lambda t, x, w: t.nn.functional.conv3d(x, w, stride=2, padding=1),
         VOL.astype(np.float32), R.standard_normal((3, 4, 3, 3, 3)).astype(np.float32), rtol=1e-5, atol=1e-5,
         dynamic=SHAPES),
    Case("conv_transpose3d", _transposed, VOL[:, :, :3, :4, :3], R.standard_normal((4, 2, 2, 3, 3)), B[:4],
         rtol=1e-10, atol=1e-12, dynamic=SHAPES),
    Case("max_pool3d", _max_pools, distinct(2, 3, 4, 5, 6), dynamic=SHAPES),
    Case("avg_pool3d", _avg_pools, VOL, rtol=1e-10, atol=1e-12, dynamic=SHAPES),
    Case("adaptive_pool3d", _adaptive, distinct(2, 3, 4, 5, 6), rtol=1e-10, atol=1e-12, dynamic=SHAPES),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_conv3d_layer_loads_pytorch_weights_and_matches_functional():
    layer = d2s.nn.Conv3d(4, 6, (2, 3, 2), stride=(1, 2, 1), padding=1, groups=2)
    assert tuple(layer.weight.shape) == (6, 2, 2, 3, 2) and tuple(layer.bias.shape) == (6,)
    layer.load_state_dict({"weight": d2s.tensor(W.astype(np.float32)), "bias": d2s.tensor(B.astype(np.float32))})
    x = d2s.tensor(VOL.astype(np.float32))
    np.testing.assert_allclose(layer(x).numpy(), F.conv3d(x, layer.weight, layer.bias, (1, 2, 1), 1, 1, 2).numpy())


@pytest.mark.parametrize("call, error, match", [
    (lambda x: F.conv3d(x, d2s.zeros(2, 3, 1, 1, 1, dtype=d2s.float64)), ValueError, "do not match groups"),
    (lambda x: F.conv3d(x, d2s.zeros(2, 4, 1, 1, 1, dtype=d2s.float64), stride=2, padding="same"), ValueError,
     "not supported for strided"),
    (lambda x: F.max_pool3d(x, 2, return_indices=True), NotImplementedError, "return_indices"),
    (lambda x: F.avg_pool3d(x, 2, padding=2), ValueError, "at most half"),
    (lambda x: F.max_pool3d(x[0, 0], 2), ValueError, "4-d .unbatched. or 5-d"),
])
def test_errors_say_what_is_wrong(call, error, match):
    with pytest.raises(error, match=match):
        call(d2s.tensor(VOL))


def test_conv_transpose3d_layer_takes_an_output_size():
    layer = d2s.nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, groups=2)
    assert tuple(layer.weight.shape) == (4, 3, 3, 3, 3)
    x = d2s.tensor(VOL.astype(np.float32))
    assert tuple(layer(x).shape) == (2, 6, 7, 9, 11)
    assert tuple(layer(x, output_size=[8, 10, 12]).shape) == (2, 6, 8, 10, 12)
