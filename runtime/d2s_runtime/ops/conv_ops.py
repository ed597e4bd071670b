"""Convolution primitives on NCHW inputs: ``conv2d`` (stride, per-side padding, dilation,
groups) with its two gradient primitives, ``conv_transpose2d``, and ``im2col``/``col2im``
(``F.unfold``/``F.fold``). One-dimensional convolutions are these with a height of 1.

Every kernel is im2col + GEMM: the kernel windows of the padded input are an ``as_strided``
view (N, G, C/G, kH, kW, Ho, Wo), copied once into a (G, C/G*kH*kW, N*Ho*Wo) matrix, and each
group is ONE matrix product with its (O/G, C/G*kH*kW) weight (``xp.matmul`` over the group
axis: numpy's BLAS). The transposed direction (an input gradient, a transposed convolution,
col2im) is one GEMM per group followed by a scatter-add of the kH*kW window taps, each tap
one strided slice of the whole batch (no loop over pixels, channels or the batch).

Ungrouped layers with 16+ channels, a kernel larger than 1x1 and images up to 16x16 (the
deeper half of a CNN; see :func:`channels_last`) build and scatter those columns channels-last:
the im2col matrix is (N*Ho*Wo, C*kH*kW), written by one strided copy per kernel tap (or
kernel row) whose inner runs are the channels, and the input gradient scatters its taps into
an (N, Hp, Wp, C) buffer the same way. The NCHW forms copy runs of only Wo elements (2 in a
2x2 layer), which numpy's per-run overhead dominates: at ResNet-18's shapes the channels-last
forms cut the non-GEMM time of each kernel by 0.1-1.2 ms (1 thread).
"""
import numpy as np

from .. import blas
from ..dtypes import result_type
from .registry import ShapeError, TensorType, defop
from .rules import fmt_shape


# ------------------------------------------------------------------ attributes
def pair(v, name="value"):
    """(a, b) from an int or a pair of ints."""
    if isinstance(v, (list, tuple)):
        if len(v) != 2:
            raise ShapeError(f"{name} needs one int or two, got {v!r}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


def pads2(padding, name="padding"):
    """((top, bottom), (left, right)) from an int, a pair (symmetric per dim) or two pairs."""
    if isinstance(padding, (list, tuple)) and len(padding) == 2 and all(isinstance(p, (list, tuple)) for p in padding):
        (a, b), (c, d) = padding
        return (int(a), int(b)), (int(c), int(d))
    ph, pw = pair(padding, name)
    return (ph, ph), (pw, pw)


def conv_out(op, n, k, s, p0, p1, d):
    """Output length of a convolution along one dim (None if ``n`` or ``k`` is unknown)."""
    if n is None or k is None:
        return None
    span = d * (k - 1) + 1
    if n + p0 + p1 < span:
        raise ShapeError(f"{op}: input size {n} (padded to {n + p0 + p1}) is smaller than the kernel size {k}"
                         + (f" (dilated to {span})" if d != 1 else ""))
    return (n + p0 + p1 - span) // s + 1


def out_size(hw, kh, kw, stride, pads, dil):
    """(Ho, Wo) of a convolution of an (H, W) image."""
    return (conv_out("conv2d", hw[0], kh, stride[0], pads[0][0], pads[0][1], dil[0]),
            conv_out("conv2d", hw[1], kw, stride[1], pads[1][0], pads[1][1], dil[1]))


def _conv_attrs(stride, padding, dilation, name="conv2d"):
    (sh, sw), (ph, pw), (dh, dw) = (pair(stride, f"{name} stride"), pads2(padding, f"{name} padding"),
                                    pair(dilation, f"{name} dilation"))
    if min(sh, sw) < 1 or min(dh, dw) < 1 or min(ph + pw) < 0:
        raise ShapeError(f"{name}: stride and dilation must be positive and padding non-negative, got stride "
                         f"{stride}, padding {padding}, dilation {dilation}")
    return (sh, sw), (ph, pw), (dh, dw)


def _zero_pad(xp, x, ph, pw, value=0):
    """x (N, C, H, W) padded by ((top, bottom), (left, right)) with ``value``."""
    if not (ph[0] or ph[1] or pw[0] or pw[1]):
        return x
    return xp.pad(x, ((0, 0), (0, 0), ph, pw), constant_values=value)


def windows(xp, x, groups, kh, kw, sh, sw, dh, dw, ho, wo):
    """(N, G, C/G, kh, kw, Ho, Wo) view of the kernel windows of padded x (N, C, Hp, Wp)."""
    n, c = x.shape[:2]
    s0, s1, s2, s3 = x.strides
    cg = c // groups
    return xp.lib.stride_tricks.as_strided(
        x, (n, groups, cg, kh, kw, ho, wo), (s0, s1 * cg, s1, s2 * dh, s3 * dw, s2 * sh, s3 * sw))


def _cols(xp, x, groups, kh, kw, stride, pads, dil):
    """im2col of x (N, C, H, W): the (G, C/G*kh*kw, N*Ho*Wo) matrix and (Ho, Wo)."""
    (sh, sw), (ph, pw), (dh, dw) = stride, pads, dil
    xpad = _zero_pad(xp, x, ph, pw)
    ho = conv_out("conv2d", x.shape[2], kh, sh, ph[0], ph[1], dh)
    wo = conv_out("conv2d", x.shape[3], kw, sw, pw[0], pw[1], dw)
    win = windows(xp, xpad, groups, kh, kw, sh, sw, dh, dw, ho, wo)
    n, cg = x.shape[0], x.shape[1] // groups
    cols = win.transpose(1, 2, 3, 4, 0, 5, 6).reshape(groups, cg * kh * kw, n * ho * wo)
    return cols, ho, wo


def channels_last(cg, kh, kw, groups, hw):
    """Whether a convolution with ``cg`` channels per group and a (kh, kw) kernel over an image
    of ``hw`` = H*W pixels (the input's; the input gradient's for the transposed direction)
    builds its columns channels-last. Measured (1 thread, A/B in one process): it wins from 2x2
    to 16x16 images at 16-512 channels (the NCHW copies there run over 2-16 elements); from
    32x32 up NCHW runs are long enough and the two layout transposes (input and output) plus
    the other GEMM orientation lose up to 25% (64 channels at 32x32: 9.3 -> 11.6 ms forward);
    with several groups the strided per-group products lose 2x. A 1x1 kernel copies no windows."""
    return groups == 1 and cg >= 16 and kh * kw > 1 and hw <= 256


def taps_first(og, npix):
    """Whether channels-last columns order each row (i, j, c) rather than the weight's (c, i, j):
    the copies then run over contiguous channels in both arrays, at the price of one reordered
    copy of the weight (or of the weight gradient), worth it when the weight (``og`` rows per
    group) is small beside the columns (``npix`` = N*Ho*Wo rows): at 256 channels, batch 2, 16x16,
    the (c, i, j) order measured faster in all three kernels; at 64 channels, batch 8, (i, j, c)."""
    return 4 * og <= npix


def _taps(i, j, stride, dil, ho, wo):
    """The (rows, cols) slices of a padded image that kernel tap (i, j) reads for all outputs."""
    (sh, sw), (dh, dw) = stride, dil
    return (slice(i * dh, i * dh + (ho - 1) * sh + 1, sh), slice(j * dw, j * dw + (wo - 1) * sw + 1, sw))


def weight_rows(xp, w, groups, first):
    """The weight (O, C/G, kh, kw) as (G, O/G, K), K ordered (i, j, c) if ``first`` else (c, i, j)."""
    o, cg, kh, kw = w.shape
    if first:
        w = xp.ascontiguousarray(w.transpose(0, 2, 3, 1))
    return w.reshape(groups, o // groups, cg * kh * kw)


def _cols_last(xp, x, groups, kh, kw, stride, pads, dil, ho, wo, first):
    """im2col of x (N, C, H, W) channels-last: the (N*Ho*Wo, G, K) matrix, rows (n, y, x),
    K = C/G*kh*kw ordered as :func:`weight_rows` orders the weight's."""
    (sh, sw), (ph, pw), (dh, dw) = stride, pads, dil
    n, c, h, w = x.shape
    cg = c // groups
    xpad = xp.zeros((n, h + ph[0] + ph[1], w + pw[0] + pw[1], groups, cg), dtype=x.dtype)
    xpad[:, ph[0]:ph[0] + h, pw[0]:pw[0] + w] = x.reshape(n, groups, cg, h, w).transpose(0, 3, 4, 1, 2)
    if not first:
        cols = xp.empty((n, ho, wo, groups, cg, kh, kw), dtype=x.dtype)
        for i in range(kh):
            for j in range(kw):
                cols[..., i, j] = xpad[(slice(None),) + _taps(i, j, stride, dil, ho, wo)]
        return cols.reshape(n * ho * wo, groups, cg * kh * kw)
    cols = xp.empty((n, ho, wo, groups, kh, kw, cg), dtype=x.dtype)
    if groups == 1 and dw == 1:
        # one copy per kernel row: with one group the kw taps of a row are kw*C contiguous
        # elements of the padded NHWC image
        s0, s1, s2 = xpad.strides[:3]
        for i in range(kh):
            rows = xpad[:, i * dh:]
            win = xp.lib.stride_tricks.as_strided(rows, (n, ho, wo, kw * cg), (s0, s1 * sh, s2 * sw, xpad.itemsize))
            cols[:, :, :, 0, i] = win.reshape(n, ho, wo, kw, cg)
    else:
        for i in range(kh):
            for j in range(kw):
                cols[:, :, :, :, i, j] = xpad[(slice(None),) + _taps(i, j, stride, dil, ho, wo)]
    return cols.reshape(n * ho * wo, groups, kh * kw * cg)


def _scatter_last(xp, dcols, out_shape, kh, kw, stride, pads, dil, ho, wo, first):
    """col2im channels-last: the (N, C, H, W) sum of window columns ``dcols`` (N*Ho*Wo, G, K),
    K ordered as by :func:`weight_rows`, placed back at their input positions. Each tap's add
    runs over the channels, into an (N, Hp, Wp, G, C/G) buffer; one transpose gives NCHW."""
    (sh, sw), (ph, pw), (dh, dw) = stride, pads, dil
    n, c, h, w = out_shape
    groups = dcols.shape[1]
    cg = c // groups
    if first:
        dcols = dcols.reshape(n, ho, wo, groups, kh, kw, cg)
    else:
        dcols = dcols.reshape(n, ho, wo, groups, cg, kh, kw).transpose(0, 1, 2, 3, 5, 6, 4)
    hp_need = max(h + ph[0] + ph[1], (ho - 1) * sh + (kh - 1) * dh + 1)
    wp_need = max(w + pw[0] + pw[1], (wo - 1) * sw + (kw - 1) * dw + 1)
    dx = xp.zeros((n, hp_need, wp_need, groups, cg), dtype=dcols.dtype)
    for i in range(kh):
        for j in range(kw):
            dx[(slice(None),) + _taps(i, j, stride, dil, ho, wo)] += dcols[:, :, :, :, i, j]
    dx = dx.reshape(n, hp_need, wp_need, c)[:, ph[0]:ph[0] + h, pw[0]:pw[0] + w]
    return xp.ascontiguousarray(dx.transpose(0, 3, 1, 2))


def _scatter_taps(xp, dcols, out_shape, kh, kw, stride, pads, dil, ho, wo):
    """col2im: the (N, C, H, W) sum of window columns ``dcols`` (C, kh, kw, N, Ho, Wo) placed
    back at their input positions (the adjoint of taking the windows). The taps accumulate in a
    (C, N, Hp, Wp) buffer, the layout the columns come in, so each tap's add streams through
    both arrays; one transpose at the end gives NCHW."""
    (sh, sw), (ph, pw), (dh, dw) = stride, pads, dil
    n, c, h, w = out_shape
    hp, wp = h + ph[0] + ph[1], w + pw[0] + pw[1]
    # rows the windows reach; a transposed convolution's output_padding may add more
    hp_need = max(hp, (ho - 1) * sh + (kh - 1) * dh + 1)
    wp_need = max(wp, (wo - 1) * sw + (kw - 1) * dw + 1)
    dx = xp.zeros((c, n, hp_need, wp_need), dtype=dcols.dtype)
    for i in range(kh):
        for j in range(kw):
            dx[:, :, i * dh:i * dh + (ho - 1) * sh + 1:sh, j * dw:j * dw + (wo - 1) * sw + 1:sw] += dcols[:, i, j]
    return xp.ascontiguousarray(dx[:, :, ph[0]:ph[0] + h, pw[0]:pw[0] + w].transpose(1, 0, 2, 3))


def _matmul_groups(xp, a, b):
    """``a @ b`` over a leading group axis; one group is a plain 2-d product (numpy's faster path).
    On numpy through ``blas.matmul`` (fewer threads on a busy machine, where the bits stay)."""
    product = blas.matmul if xp is np else xp.matmul
    if a.shape[0] == 1:
        return product(a[0], b[0])[None]
    return product(a, b)


def _transpose_conv(xp, g, w, out_hw, groups, stride, pads, dil):
    """The adjoint of conv2d in its input: g (N, O, Ho, Wo), w (O, C/G, kh, kw) -> (N, C, H, W)
    with (H, W) = ``out_hw`` (the input gradient of a convolution, or a transposed convolution)."""
    n, o, ho, wo = g.shape
    _, cg, kh, kw = w.shape
    og = o // groups
    (sh, sw), (ph, pw), (dh, dw) = stride, pads, dil
    full = (dh * (kh - 1) - ph[0], dh * (kh - 1) - ph[1], dw * (kw - 1) - pw[0], dw * (kw - 1) - pw[1])
    last = channels_last(cg, kh, kw, groups, out_hw[0] * out_hw[1])
    if (sh, sw) == (1, 1) and min(full) >= 0 and ho * wo >= (64 if last else 16) and \
            (ho + full[0] + full[1] - dh * (kh - 1), wo + full[2] + full[3] - dw * (kw - 1)) == tuple(out_hw):
        # stride 1: the adjoint is the full correlation of g with the flipped kernel, which is
        # one more im2col + GEMM; it streams memory better than scattering taps (not for small
        # images, whose padded columns outgrow the scatter; with channels-last columns the
        # scatter is as fast up to 8x8 and 0.3 ms slower at 64 channels, batch 8, 16x16)
        wf = w.reshape(groups, og, cg, kh, kw).transpose(0, 2, 1, 3, 4)[..., ::-1, ::-1]
        wf = wf.reshape(groups * cg, og, kh, kw)
        return _conv2d(xp, g, xp.ascontiguousarray(wf), stride=1, padding=((full[0], full[1]), (full[2], full[3])),
                       dilation=(dh, dw), groups=groups)
    if last:
        first = taps_first(og, n * ho * wo)
        gt = xp.ascontiguousarray(g.transpose(0, 2, 3, 1)).reshape(n * ho * wo, groups, og)
        dcols = _matmul_groups(xp, gt.transpose(1, 0, 2), weight_rows(xp, w, groups, first))  # (G, N*Ho*Wo, K)
        return _scatter_last(xp, dcols.transpose(1, 0, 2), (n, groups * cg) + tuple(out_hw), kh, kw, stride, pads,
                             dil, ho, wo, first)
    wm = w.reshape(groups, og, cg * kh * kw)
    gm = g.reshape(n, groups, og, ho * wo).transpose(1, 2, 0, 3).reshape(groups, og, n * ho * wo)
    dcols = _matmul_groups(xp, wm.transpose(0, 2, 1), gm)  # (G, Cg*kh*kw, N*Ho*Wo): one GEMM per group
    dcols = dcols.reshape(groups * cg, kh, kw, n, ho, wo)
    return _scatter_taps(xp, dcols, (n, groups * cg) + tuple(out_hw), kh, kw, stride, pads, dil, ho, wo)


# ------------------------------------------------------------------ conv2d
def _check_conv(op, x, w, groups):
    if x.ndim != 4 or w.ndim != 4:
        raise ShapeError(f"{op}: needs input (N, C, H, W) and weight (O, C/groups, kH, kW), got "
                         f"{fmt_shape(x.shape)} and {fmt_shape(w.shape)}")
    groups = int(groups)
    if groups < 1:
        raise ShapeError(f"{op}: groups must be positive, got {groups}")
    c, o, cg = x.shape[1], w.shape[0], w.shape[1]
    if o is not None and o % groups:
        raise ShapeError(f"{op}: groups={groups} must divide the weight's output channels ({o}), weight "
                         f"{fmt_shape(w.shape)}")
    if c is not None and cg is not None and c != cg * groups:
        raise ShapeError(f"{op}: input {fmt_shape(x.shape)} has {c} channels but weight {fmt_shape(w.shape)} "
                         f"with groups={groups} expects {cg * groups}")
    return groups


def _conv2d_infer(x, w, stride=1, padding=0, dilation=1, groups=1):
    _check_conv("conv2d", x, w, groups)
    (sh, sw), (ph, pw), (dh, dw) = _conv_attrs(stride, padding, dilation)
    kh, kw = w.shape[2], w.shape[3]
    return TensorType((x.shape[0], w.shape[0], conv_out("conv2d", x.shape[2], kh, sh, ph[0], ph[1], dh),
                       conv_out("conv2d", x.shape[3], kw, sw, pw[0], pw[1], dw)), result_type(x.dtype, w.dtype))


def _check_runtime(op, x, w, groups):
    _check_conv(op, x, w, groups)  # (the checks read only ndim and shape, which arrays have)


@defop("conv2d", _conv2d_infer)
def _conv2d(xp, x, w, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation of NCHW ``x`` with (O, C/groups, kH, kW) ``w`` (no bias): ``padding`` is
    an int, a pair, or ((top, bottom), (left, right)); one GEMM per group over im2col windows."""
    _check_runtime("conv2d", x, w, groups)
    if x.dtype != w.dtype:
        dtype = result_type(x.dtype.name, w.dtype.name)
        x, w = x.astype(dtype, copy=False), w.astype(dtype, copy=False)
    stride, pads, dil = _conv_attrs(stride, padding, dilation)
    o, cg, kh, kw = w.shape
    n = x.shape[0]
    if channels_last(cg, kh, kw, groups, x.shape[2] * x.shape[3]):
        ho, wo = out_size(x.shape[2:], kh, kw, stride, pads, dil)
        first = taps_first(o // groups, n * ho * wo)
        wm = weight_rows(xp, w, groups, first)
        cols = _cols_last(xp, x, groups, kh, kw, stride, pads, dil, ho, wo, first)
        if n * ho * wo >= o // groups:
            # (N*Ho*Wo, G, O/G): the rows are NHWC; BLAS reads both operands in place
            out = _matmul_groups(xp, cols.transpose(1, 0, 2), wm.transpose(0, 2, 1)).transpose(1, 0, 2)
            return xp.ascontiguousarray(out.reshape(n, ho, wo, o).transpose(0, 3, 1, 2))
        # fewer output pixels than channels (a deep layer): the weight as the left operand is
        # faster (512 channels at 2x2, batch 8: 1.8 ms, against 2.7 ms the other way round)
        out = _matmul_groups(xp, wm, cols.transpose(1, 2, 0))  # (G, O/G, N*Ho*Wo)
        return xp.ascontiguousarray(out.reshape(o, n, ho, wo).transpose(1, 0, 2, 3))
    wm = w.reshape(groups, o // groups, -1)
    cols, ho, wo = _cols(xp, x, groups, kh, kw, stride, pads, dil)
    out = _matmul_groups(xp, wm, cols)  # (G, O/G, N*Ho*Wo)
    out = out.reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
    return xp.ascontiguousarray(out)


def _conv2d_grad_input_infer(g, w, x, stride=1, padding=0, dilation=1, groups=1):
    return TensorType(x.shape, g.dtype)


@defop("conv2d_grad_input", _conv2d_grad_input_infer)
def _conv2d_grad_input(xp, g, w, x, stride=1, padding=0, dilation=1, groups=1):
    """d conv2d / d x for output gradient ``g``; ``x`` gives only the input's shape."""
    stride, pads, dil = _conv_attrs(stride, padding, dilation)
    return _transpose_conv(xp, g, w.astype(g.dtype, copy=False), x.shape[2:], int(groups), stride, pads, dil)


def _conv2d_grad_weight_infer(g, x, w, stride=1, padding=0, dilation=1, groups=1):
    return TensorType(w.shape, g.dtype)


@defop("conv2d_grad_weight", _conv2d_grad_weight_infer)
def _conv2d_grad_weight(xp, g, x, w, stride=1, padding=0, dilation=1, groups=1):
    """d conv2d / d w for output gradient ``g``; ``w`` gives only the weight's shape. The rows of
    ``g`` past the windows of ``x`` (a transposed convolution's output_padding) are not read."""
    stride, pads, dil = _conv_attrs(stride, padding, dilation)
    groups = int(groups)
    o, cg, kh, kw = w.shape
    n = x.shape[0]
    x = x.astype(g.dtype, copy=False)
    if channels_last(cg, kh, kw, groups, x.shape[2] * x.shape[3]):
        ho, wo = out_size(x.shape[2:], kh, kw, stride, pads, dil)
        first = taps_first(o // groups, n * ho * wo)
        cols = _cols_last(xp, x, groups, kh, kw, stride, pads, dil, ho, wo, first)  # (N*Ho*Wo, G, K)
        gm = xp.ascontiguousarray(g[:, :, :ho, :wo].transpose(1, 0, 2, 3)).reshape(groups, o // groups, n * ho * wo)
        gw = _matmul_groups(xp, gm, cols.transpose(1, 0, 2))  # (G, O/G, K)
        if first:
            return xp.ascontiguousarray(gw.reshape(o, kh, kw, cg).transpose(0, 3, 1, 2))
        return gw.reshape(o, cg, kh, kw)
    cols, ho, wo = _cols(xp, x, groups, kh, kw, stride, pads, dil)
    g = g[:, :, :ho, :wo]
    gm = g.reshape(n, groups, o // groups, ho * wo).transpose(1, 2, 0, 3).reshape(groups, o // groups, n * ho * wo)
    gw = _matmul_groups(xp, gm, cols.transpose(0, 2, 1))  # (G, O/G, Cg*kh*kw): one GEMM per group
    return gw.reshape(o, cg, kh, kw)


# ------------------------------------------------------------------ conv_transpose2d
def transpose_out(n, k, s, p0, p1, d, op_):
    """Output length of a transposed convolution along one dim (None if ``n`` or ``k`` is unknown)."""
    if n is None or k is None:
        return None
    return (n - 1) * s - p0 - p1 + d * (k - 1) + op_ + 1


def _conv_transpose2d_infer(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    if x.ndim != 4 or w.ndim != 4:
        raise ShapeError(f"conv_transpose2d: needs input (N, C, H, W) and weight (C, O/groups, kH, kW), got "
                         f"{fmt_shape(x.shape)} and {fmt_shape(w.shape)}")
    groups = int(groups)
    if x.shape[1] is not None and w.shape[0] is not None and x.shape[1] != w.shape[0]:
        raise ShapeError(f"conv_transpose2d: input {fmt_shape(x.shape)} has {x.shape[1]} channels but weight "
                         f"{fmt_shape(w.shape)} expects {w.shape[0]}")
    if w.shape[0] is not None and w.shape[0] % groups:
        raise ShapeError(f"conv_transpose2d: groups={groups} must divide the input channels ({w.shape[0]})")
    (sh, sw), (ph, pw), (dh, dw) = _conv_attrs(stride, padding, dilation, "conv_transpose2d")
    oph, opw = pair(output_padding, "conv_transpose2d output_padding")
    if not (0 <= oph < max(sh, dh) and 0 <= opw < max(sw, dw)):
        raise ShapeError(f"conv_transpose2d: output_padding {output_padding} must be smaller than the stride "
                         f"or the dilation (stride {stride}, dilation {dilation})")
    kh, kw = w.shape[2], w.shape[3]
    ho = transpose_out(x.shape[2], kh, sh, ph[0], ph[1], dh, oph)
    wo = transpose_out(x.shape[3], kw, sw, pw[0], pw[1], dw, opw)
    if (ho is not None and ho <= 0) or (wo is not None and wo <= 0):
        raise ShapeError(f"conv_transpose2d: input {fmt_shape(x.shape)} with padding {padding} gives an empty "
                         f"output ({ho}, {wo})")
    c_out = None if w.shape[1] is None else w.shape[1] * groups
    return TensorType((x.shape[0], c_out, ho, wo), result_type(x.dtype, w.dtype))


@defop("conv_transpose2d", _conv_transpose2d_infer)
def _conv_transpose2d(xp, x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    """Transposed convolution of NCHW ``x`` with (C, O/groups, kH, kW) ``w`` (no bias): the
    input gradient of the conv2d with the same attributes, output_padding rows added at the
    bottom and right."""
    t = _conv_transpose2d_infer(TensorType(x.shape, x.dtype.name), TensorType(w.shape, w.dtype.name), stride,
                                padding, output_padding, dilation, groups)
    dtype = result_type(x.dtype.name, w.dtype.name)
    stride, pads, dil = _conv_attrs(stride, padding, dilation, "conv_transpose2d")
    return _transpose_conv(xp, x.astype(dtype, copy=False), w.astype(dtype, copy=False), t.shape[2:], int(groups),
                           stride, pads, dil)


# ------------------------------------------------------------------ im2col / col2im (unfold / fold)
def _fold_attrs(kernel_size, stride, padding, dilation, op):
    (kh, kw) = pair(kernel_size, f"{op} kernel_size")
    stride, pads, dil = _conv_attrs(stride, padding, dilation, op)
    return kh, kw, stride, pads, dil


def _im2col_infer(x, kernel_size, stride=1, padding=0, dilation=1):
    if x.ndim != 4:
        raise ShapeError(f"unfold: needs input (N, C, H, W), got {fmt_shape(x.shape)}")
    kh, kw, (sh, sw), (ph, pw), (dh, dw) = _fold_attrs(kernel_size, stride, padding, dilation, "unfold")
    ho = conv_out("unfold", x.shape[2], kh, sh, ph[0], ph[1], dh)
    wo = conv_out("unfold", x.shape[3], kw, sw, pw[0], pw[1], dw)
    c = None if x.shape[1] is None else x.shape[1] * kh * kw
    return TensorType((x.shape[0], c, None if ho is None or wo is None else ho * wo), x.dtype)


@defop("im2col", _im2col_infer)
def _im2col(xp, x, kernel_size, stride=1, padding=0, dilation=1):
    """The sliding windows of NCHW ``x`` as columns: (N, C*kH*kW, L), L windows (F.unfold)."""
    kh, kw, stride, pads, dil = _fold_attrs(kernel_size, stride, padding, dilation, "unfold")
    n, c = x.shape[:2]
    xpad = _zero_pad(xp, x, *pads)
    ho = conv_out("unfold", x.shape[2], kh, stride[0], pads[0][0], pads[0][1], dil[0])
    wo = conv_out("unfold", x.shape[3], kw, stride[1], pads[1][0], pads[1][1], dil[1])
    win = windows(xp, xpad, 1, kh, kw, stride[0], stride[1], dil[0], dil[1], ho, wo)
    return win.reshape(n, c * kh * kw, ho * wo)


def _fold_blocks(op, output_size, kh, kw, stride, pads, dil):
    oh, ow = pair(output_size, f"{op} output_size")
    ho = conv_out(op, oh, kh, stride[0], pads[0][0], pads[0][1], dil[0])
    wo = conv_out(op, ow, kw, stride[1], pads[1][0], pads[1][1], dil[1])
    return oh, ow, ho, wo


def _col2im_infer(x, output_size, kernel_size, stride=1, padding=0, dilation=1):
    kh, kw, stride_, pads, dil = _fold_attrs(kernel_size, stride, padding, dilation, "fold")
    oh, ow, ho, wo = _fold_blocks("fold", output_size, kh, kw, stride_, pads, dil)
    if x.ndim != 3:
        raise ShapeError(f"fold: needs input (N, C*kH*kW, L), got {fmt_shape(x.shape)}")
    if x.shape[1] is not None and x.shape[1] % (kh * kw):
        raise ShapeError(f"fold: input {fmt_shape(x.shape)} has {x.shape[1]} rows, not a multiple of the kernel's "
                         f"{kh}*{kw}")
    if x.shape[2] is not None and x.shape[2] != ho * wo:
        raise ShapeError(f"fold: input {fmt_shape(x.shape)} has {x.shape[2]} blocks but output_size "
                         f"{output_size} with kernel {(kh, kw)} has {ho}*{wo} = {ho * wo}")
    c = None if x.shape[1] is None else x.shape[1] // (kh * kw)
    return TensorType((x.shape[0], c, oh, ow), x.dtype)


@defop("col2im", _col2im_infer)
def _col2im(xp, x, output_size, kernel_size, stride=1, padding=0, dilation=1):
    """Columns (N, C*kH*kW, L) summed back into an (N, C, H, W) image (F.fold, the adjoint of unfold)."""
    _col2im_infer(TensorType(x.shape, x.dtype.name), output_size, kernel_size, stride, padding, dilation)
    kh, kw, stride, pads, dil = _fold_attrs(kernel_size, stride, padding, dilation, "fold")
    oh, ow, ho, wo = _fold_blocks("fold", output_size, kh, kw, stride, pads, dil)
    n, ck = x.shape[:2]
    c = ck // (kh * kw)
    cols = x.reshape(n, c, kh, kw, ho, wo).transpose(1, 2, 3, 0, 4, 5)
    return _scatter_taps(xp, cols, (n, c, oh, ow), kh, kw, stride, pads, dil, ho, wo)
