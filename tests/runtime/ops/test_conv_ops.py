"""The convolution kernels (d2s_runtime/ops/conv_ops.py) give the same numbers whichever layout
they build their columns in: NCHW, channels-last with the weight's (c, i, j) order, or
channels-last with (i, j, c) order. Each layout is forced on every configuration (strides,
asymmetric padding, dilation, groups, a transposed convolution's output_padding, images smaller
than the kernel's reach) and checked in float64 against a direct sum over the kernel taps, its
two gradient kernels against the same sums taken backwards (a transposed convolution through
the adjoint identity <conv_transpose(x), r> = <x, conv(r)>)."""
import numpy as np
import pytest

from d2s_runtime.ops import conv_ops

R = np.random.default_rng(0)

LAYOUTS = {"nchw": (False, False), "last_cij": (True, False), "last_ijc": (True, True)}

# (x shape, w shape, stride, padding ((top, bottom), (left, right)), dilation, groups)
CONFIGS = [
    ((2, 5, 6, 7), (3, 5, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 4, 2, 2), (6, 4, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # a ResNet deep layer in small
    ((1, 3, 9, 8), (4, 3, 3, 2), (2, 1), ((2, 0), (1, 2)), (1, 1), 1),
    ((2, 4, 9, 9), (4, 2, 3, 3), (2, 2), ((1, 1), (1, 1)), (2, 1), 2),
    ((1, 6, 7, 6), (6, 2, 2, 3), (1, 3), ((0, 1), (2, 1)), (1, 2), 3),
    ((2, 3, 5, 5), (2, 3, 5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((1, 2, 1, 9), (3, 2, 1, 4), (1, 2), ((0, 0), (1, 1)), (1, 1), 1),  # conv1d as a height of 1
]


def _taps(x, w, stride, pads, dil, groups):
    """(padded x, out spatial size, and per group and kernel tap: the group's slices and the
    tap's window view of padded x), the pieces of a direct float64 convolution."""
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dil
    xp = np.pad(x, ((0, 0), (0, 0), pads[0], pads[1]))
    ho = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    wo = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    taps = [(slice(gi * og, (gi + 1) * og), slice(gi * cg, (gi + 1) * cg), i, j,
             (slice(i * dh, i * dh + (ho - 1) * sh + 1, sh), slice(j * dw, j * dw + (wo - 1) * sw + 1, sw)))
            for gi in range(groups) for i in range(kh) for j in range(kw)]
    return xp, (ho, wo), taps


def _direct(x, w, stride, pads, dil, groups):
    """conv2d as a sum over kernel taps of channel products."""
    xp, (ho, wo), taps = _taps(x, w, stride, pads, dil, groups)
    out = np.zeros((x.shape[0], w.shape[0], ho, wo))
    for os_, cs, i, j, (rs, qs) in taps:
        out[:, os_] += np.einsum("nchw,oc->nohw", xp[:, cs, rs, qs], w[os_, :, i, j])
    return out


def _direct_grads(g, x, w, stride, pads, dil, groups):
    """(d/dx, d/dw) of <conv2d(x, w), g>, tap by tap."""
    xp, _, taps = _taps(x, w, stride, pads, dil, groups)
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for os_, cs, i, j, (rs, qs) in taps:
        dxp[:, cs, rs, qs] += np.einsum("nohw,oc->nchw", g[:, os_], w[os_, :, i, j])
        dw[os_, :, i, j] = np.einsum("nohw,nchw->oc", g[:, os_], xp[:, cs, rs, qs])
    (t, _), (left, _) = pads
    return dxp[:, :, t:t + x.shape[2], left:left + x.shape[3]], dw


@pytest.fixture(params=list(LAYOUTS))
def layout(request, monkeypatch):
    last, first = LAYOUTS[request.param]
    monkeypatch.setattr(conv_ops, "channels_last", lambda cg, kh, kw, groups, hw: last)
    monkeypatch.setattr(conv_ops, "taps_first", lambda og, npix: first)
    return request.param


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "x{}w{}s{}p{}d{}g{}".format(*c))
def test_conv2d_and_its_gradients_agree_with_a_direct_sum_in_every_layout(layout, config):
    xs, ws, stride, pads, dil, groups = config
    x, w = R.standard_normal(xs), R.standard_normal(ws)
    y = conv_ops._conv2d(np, x, w, stride, pads, dil, groups)
    want = _direct(x, w, stride, pads, dil, groups)
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)
    assert y.flags.c_contiguous and y.dtype == np.float64
    g = R.standard_normal(y.shape)
    dx = conv_ops._conv2d_grad_input(np, g, w, x, stride, pads, dil, groups)
    dw = conv_ops._conv2d_grad_weight(np, g, x, w, stride, pads, dil, groups)
    assert dx.shape == x.shape and dw.shape == w.shape
    want_dx, want_dw = _direct_grads(g, x, w, stride, pads, dil, groups)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-12, atol=1e-12)
    assert dx.flags.c_contiguous and dw.flags.c_contiguous


@pytest.mark.parametrize("output_padding", [(0, 0), (1, 1), (1, 0)])
def test_conv_transpose2d_is_the_adjoint_in_every_layout(layout, output_padding):
    """A transposed convolution with output_padding reaches rows past the convolution's windows."""
    x, w = R.standard_normal((2, 4, 3, 4)), R.standard_normal((4, 3, 3, 2))
    y = conv_ops._conv_transpose2d(np, x, w, stride=2, padding=1, output_padding=output_padding, groups=2)
    assert y.shape == (2, 6, 5 + output_padding[0], 6 + output_padding[1])
    r = R.standard_normal(y.shape)
    # <conv_transpose(x), r> = <x, conv(r)>, the convolution ignoring the extra rows
    back = _direct(r, w, (2, 2), ((1, 1), (1, 1)), (1, 1), 2)
    assert back.shape == x.shape
    assert np.sum(y * r) == pytest.approx(np.sum(x * back), rel=1e-12)
    # its weight gradient: the convolution's, with the roles of input and output swapped
    dw = conv_ops._conv2d_grad_weight(np, x, r, w, 2, 1, 1, 2)
    np.testing.assert_allclose(dw, _direct_grads(x, r, w, (2, 2), ((1, 1), (1, 1)), (1, 1), 2)[1], rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_resnet_shapes_take_the_channels_last_paths_and_keep_the_dtype(dtype):
    """ResNet-18's 3x3 layers (16x16 images and smaller) use both channels-last orders unpatched."""
    assert conv_ops.channels_last(64, 3, 3, 1, 16 * 16) and not conv_ops.channels_last(64, 1, 1, 1, 16 * 16)
    assert not conv_ops.channels_last(3, 7, 7, 1, 64 * 64) and not conv_ops.channels_last(64, 3, 3, 1, 32 * 32)
    assert not conv_ops.channels_last(16, 3, 3, 2, 8 * 8)
    assert conv_ops.taps_first(64, 8 * 16 * 16) and not conv_ops.taps_first(512, 8 * 2 * 2)
    for c, hw in [(32, 2), (16, 5)]:
        x, w = R.standard_normal((3, c, hw, hw)).astype(dtype), R.standard_normal((c, c, 3, 3)).astype(dtype)
        y = conv_ops._conv2d(np, x, w, 1, 1)
        tol = 1e-4 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(y, _direct(x.astype(float), w.astype(float), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
                                   rtol=tol, atol=tol)
        g = R.standard_normal(y.shape).astype(dtype)
        dx = conv_ops._conv2d_grad_input(np, g, w, x, 1, 1)
        dw = conv_ops._conv2d_grad_weight(np, g, x, w, 1, 1)
        assert y.dtype == dx.dtype == dw.dtype == np.dtype(dtype)
        assert float(np.sum(y * g)) == pytest.approx(float(np.sum(x * dx)), rel=tol)
        assert float(np.sum(y * g)) == pytest.approx(float(np.sum(w * dw)), rel=tol)
