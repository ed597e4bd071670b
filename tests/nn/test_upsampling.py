"""Resampling layers and functions (d2s/nn/upsampling.py, F.interpolate, F.pixel_shuffle) against
PyTorch: nearest (PyTorch's floor rule), nearest-exact, linear/bilinear/trilinear with and without
align_corners, by size and by scale factor (non-integer ones included), with float gradients."""
import numpy as np
import pytest

import d2s
import torch_parity
from device_helpers import matches_cpu
from d2s import nn
from torch_parity import Case

R = np.random.default_rng(4)


def r32(*shape):
    return R.standard_normal(shape).astype("float32")


def rn(*shape):
    return R.standard_normal(shape)


def interp(**kw):
    return lambda t, x: t.nn.functional.interpolate(x, **kw)


F32 = dict(rtol=1e-5, atol=1e-6)
_TAPS = "bicubic taps (and area with scale_factor) are computed from the input size when the program is built"

TORCH_CASES = [
    Case("nearest_scale2", interp(scale_factor=2), r32(2, 3, 3, 4), **F32),
    Case("nearest_scale_1_5", interp(scale_factor=1.5), r32(1, 2, 5, 3), **F32),
    Case("nearest_size_down", interp(size=(4, 3)), r32(2, 2, 9, 7), **F32),
    Case("nearest_size_up_odd", interp(size=(7, 5)), r32(1, 2, 3, 4), **F32),
    Case("nearest_1d", interp(scale_factor=3), r32(2, 3, 4), **F32),
    Case("nearest_exact", interp(size=(7, 13), mode="nearest-exact"), r32(1, 2, 9, 7), **F32),
    Case("nearest_exact_scale", interp(scale_factor=0.6, mode="nearest-exact"), r32(1, 2, 10, 7), **F32),
    Case("bilinear_size", interp(size=(8, 12), mode="bilinear"), r32(2, 3, 5, 7), **F32),
    Case("bilinear_align_corners", interp(size=(8, 12), mode="bilinear", align_corners=True), r32(2, 3, 5, 7), **F32),
    # onnxruntime's Resize computes the coordinates of a non-integer scale in another order (1e-6 apart)
    Case("bilinear_scale_1_7", interp(scale_factor=1.7, mode="bilinear"), r32(1, 2, 5, 6), rtol=1e-5, atol=5e-6),
    Case("bilinear_down", interp(size=(3, 2), mode="bilinear"), r32(1, 2, 7, 5), **F32),
    Case("bilinear_per_dim_scales", interp(scale_factor=(2.0, 0.5), mode="bilinear"), r32(1, 2, 3, 6), **F32),
    Case("bilinear_recompute_scale", interp(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
         r32(1, 2, 5, 6), **F32, dynamic="recompute_scale_factor needs the input size when the program is built"),
    Case("bilinear_float64", interp(scale_factor=2, mode="bilinear", align_corners=False), rn(2, 2, 3, 3),
         onnx="onnxruntime has no float64 Resize kernel (the float32 cases export)"),
    Case("linear_1d", interp(scale_factor=2.5, mode="linear"), r32(2, 3, 6), **F32),
    Case("linear_1d_align", interp(size=9, mode="linear", align_corners=True), r32(2, 3, 4), **F32),
    Case("trilinear", interp(scale_factor=2, mode="trilinear"), r32(1, 2, 2, 3, 2), **F32),
    Case("bicubic_size_up", interp(size=(9, 11), mode="bicubic"), r32(2, 3, 4, 5), **F32, dynamic=_TAPS),
    Case("bicubic_align_corners", interp(size=(7, 4), mode="bicubic", align_corners=True), r32(1, 2, 5, 6), **F32, dynamic=_TAPS),
    Case("bicubic_scale_down", interp(scale_factor=0.6, mode="bicubic"), r32(1, 2, 9, 8), **F32, dynamic=_TAPS),
    Case("bicubic_scale_3_float64", interp(scale_factor=3.0, mode="bicubic"), rn(1, 2, 3, 4), rtol=1e-12, atol=1e-12,
         dynamic=_TAPS),
    Case("bicubic_one_pixel_rows", interp(size=(3, 5), mode="bicubic"), r32(1, 1, 1, 2), **F32, dynamic=_TAPS),
    Case("area_size", interp(size=(3, 4), mode="area"), r32(2, 3, 7, 9), **F32),
    Case("area_scale", interp(scale_factor=0.5, mode="area"), r32(1, 2, 6, 5), **F32, dynamic=_TAPS),
    Case("area_1d_and_3d", lambda t, x, v: (t.nn.functional.interpolate(x, size=4, mode="area"),
                                            t.nn.functional.interpolate(v, size=(2, 3, 2), mode="area")),
         r32(2, 3, 9), r32(1, 2, 4, 5, 3), **F32, dynamic="adaptive_avg_pool3d needs its sizes when the program is built"),
    Case("Upsample_bicubic", lambda t, x: t.nn.Upsample(scale_factor=2, mode="bicubic")(x), r32(1, 2, 3, 3), **F32, dynamic=_TAPS),
    Case("Upsample_nearest", lambda t, x: t.nn.Upsample(scale_factor=2)(x), r32(2, 3, 2, 3), **F32),
    Case("Upsample_bilinear", lambda t, x: t.nn.Upsample(size=(5, 4), mode="bilinear", align_corners=True)(x),
         r32(2, 3, 2, 3), **F32),
    Case("UpsamplingNearest2d", lambda t, x: t.nn.UpsamplingNearest2d(scale_factor=3)(x), r32(1, 2, 2, 2), **F32),
    Case("UpsamplingBilinear2d", lambda t, x: t.nn.UpsamplingBilinear2d(size=(4, 5))(x), r32(1, 2, 2, 3), **F32),
    Case("F_upsample_aliases", lambda t, x: (t.nn.functional.upsample(x, scale_factor=2, mode="bilinear"),
                                             t.nn.functional.upsample_nearest(x, size=(3, 5)),
                                             t.nn.functional.upsample_bilinear(x, scale_factor=2)), r32(1, 2, 2, 3),
         **F32),
    Case("pixel_shuffle", lambda t, x: t.nn.functional.pixel_shuffle(x, 3), r32(2, 18, 2, 3), **F32),
    Case("pixel_unshuffle", lambda t, x: t.nn.functional.pixel_unshuffle(x, 2), r32(2, 3, 4, 6), **F32),
    Case("PixelShuffle_layer", lambda t, x: t.nn.PixelShuffle(2)(x), r32(1, 8, 3, 2), **F32),
    Case("PixelUnshuffle_layer", lambda t, x: t.nn.PixelUnshuffle(3)(x), r32(2, 2, 6, 3), **F32),
    Case("channel_shuffle", lambda t, x, v, i: (t.nn.functional.channel_shuffle(x, 3), t.channel_shuffle(x, 2),
                                                t.nn.ChannelShuffle(2)(v), t.nn.functional.channel_shuffle(i, 4)),
         r32(2, 6, 2, 3), r32(1, 4, 2, 2, 3), np.arange(48).reshape(2, 8, 1, 1, 3), **F32),
    Case("pixel_shuffle_5d", lambda t, x: t.nn.functional.pixel_shuffle(x, 2), r32(2, 2, 4, 2, 3), **F32,
         onnx="ONNX's DepthToSpace takes 4-d inputs (refused with a clear error)"),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_reprs_are_pytorchs():
    assert nn.Upsample(scale_factor=2).extra_repr() == "scale_factor=2.0, mode='nearest'"
    assert nn.PixelShuffle(2).extra_repr() == "upscale_factor=2"
    assert nn.ChannelShuffle(3).extra_repr() == "groups=3"


@pytest.mark.parametrize("make,msg,exc", [
    (lambda: nn.functional.interpolate(d2s.zeros(1, 1, 4, 4), scale_factor=2, mode="linear"), "needs 3-d input",
     ValueError),
    (lambda: nn.functional.interpolate(d2s.zeros(1, 1, 4, 4), scale_factor=2, align_corners=True),
     "align_corners option can only be set", ValueError),
    (lambda: nn.functional.interpolate(d2s.zeros(1, 1, 4, 4)), "exactly one of size and scale_factor", ValueError),
    (lambda: nn.functional.interpolate(d2s.zeros(1, 1, 4, 4), scale_factor=2, mode="bicubic", antialias=True),
     "antialias=True is not supported", NotImplementedError),
    (lambda: nn.functional.interpolate(d2s.zeros(1, 1, 4), scale_factor=2, mode="bicubic"),
     "bicubic mode needs 4D input", NotImplementedError),
    (lambda: nn.functional.interpolate(d2s.zeros(1, 1, 4, 4), size=3, mode="area", align_corners=True),
     "align_corners option can only be set", ValueError),
    (lambda: nn.functional.pixel_shuffle(d2s.zeros(1, 5, 2, 2), 2), "not divisible by upscale_factor", ValueError),
    (lambda: nn.functional.channel_shuffle(d2s.zeros(1, 5, 2), 3), "Got 5 channels and 3 groups", ValueError),
    (lambda: nn.functional.channel_shuffle(d2s.zeros(2, 6), 3), "expects input with > 2 dims", ValueError),
    (lambda: nn.functional.channel_shuffle(d2s.zeros(1, 6, 2), 0), "must be positive", ValueError),
])
def test_bad_arguments_are_clear_errors(make, msg, exc):
    with pytest.raises(exc, match=msg):
        make()


@pytest.mark.parametrize("fn", [
    lambda x: nn.functional.interpolate(x, scale_factor=1.5, mode="bilinear"),
    lambda x: nn.functional.interpolate(x, size=(9, 4)),
    lambda x: nn.functional.interpolate(x, size=(5, 5), mode="nearest-exact"),
    lambda x: nn.functional.pixel_unshuffle(nn.functional.pixel_shuffle(x, 2) * 2.0, 2),
], ids=["bilinear", "nearest", "nearest_exact", "pixel_shuffle"])
def test_runs_on_every_device(device, fn):
    matches_cpu(fn, [r32(2, 4, 6, 6)], device)
