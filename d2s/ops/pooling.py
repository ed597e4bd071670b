"""Pooling and resampling: max/avg pooling (1-d and 2-d), adaptive pooling, ``interpolate``,
``pixel_shuffle``/``pixel_unshuffle`` (runtime: ``d2s_runtime/ops/pool_ops.py``): for each op
its public wrapper, its gradient rule and its ONNX converter.

Signatures are ``torch.nn.functional``'s. One-dimensional forms run the 2-d primitives on a
height of 1; ``return_indices=True`` adds the indices from their own (non-differentiable) op.
"""
import math

import numpy as np

from ..autograd.registry import grad_rule, non_differentiable, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter, onnx_unsupported
from .shape import flatten, stop_gradient, transpose, unflatten
from ._util import _as_tensor, _is_diff, _shape, _static_shape


_GRAD_OP = "gradient ops belong to backward programs; export the forward program"
onnx_unsupported("max_pool2d_grad", "avg_pool2d_grad", "adaptive_avg_pool2d_grad", "adaptive_max_pool2d_grad",
                 "interpolate_grad", reason=_GRAD_OP)
non_differentiable("max_pool2d_indices", "adaptive_max_pool2d_indices", reason="indices are integers")
for _name in ("avg_pool2d_grad", "adaptive_avg_pool2d_grad", "interpolate_grad"):
    shape_only(_name, 1)


def _tuple(v, n, name, op):
    if isinstance(v, (list, tuple)):
        if len(v) != n:
            raise ValueError(f"{op}: {name} needs one int or {n}, got {v!r}")
        return [int(a) for a in v]
    return [int(v)] * n


def _batched(x, n_spatial, op):
    """(x as (N, C, H, W), how to undo it): 1-d inputs get a height of 1, unbatched ones a batch."""
    x = _as_tensor(x)
    nd = len(_shape(x))
    if nd not in (n_spatial + 1, n_spatial + 2):
        raise ValueError(f"{op}: expected a {n_spatial + 1}-d (unbatched) or {n_spatial + 2}-d (batched) input, "
                         f"got shape {tuple(_shape(x))}")
    added = nd == n_spatial + 1
    if added:
        x = apply("expand_dims", x, axis=0)
    if n_spatial == 1:
        x = apply("expand_dims", x, axis=2)

    def undo(out):
        if n_spatial == 1:
            out = apply("squeeze", out, axes=[2])
        return apply("squeeze", out, axes=[0]) if added else out
    return x, undo


def _with_indices(values, indices, return_indices):
    return (values, indices) if return_indices else values


# ------------------------------------------------------------------ max pooling
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over ``kernel_size`` windows of (N, C, H, W) or (C, H, W) ``input``, as
    ``torch.nn.functional.max_pool2d``: ``stride`` defaults to ``kernel_size``, padding counts
    as -inf, ``ceil_mode`` keeps a last partial window that starts inside the input.
    ``return_indices=True`` also returns each maximum's flat ``h * W + w`` position."""
    x, undo = _batched(input, 2, "max_pool2d")
    attrs = dict(kernel_size=_tuple(kernel_size, 2, "kernel_size", "max_pool2d"),
                 stride=None if stride is None or stride == [] else _tuple(stride, 2, "stride", "max_pool2d"),
                 padding=_tuple(padding, 2, "padding", "max_pool2d"),
                 dilation=_tuple(dilation, 2, "dilation", "max_pool2d"), ceil_mode=bool(ceil_mode))
    values = undo(apply("max_pool2d", x, **attrs))
    return _with_indices(values, return_indices and undo(apply("max_pool2d_indices", x, **attrs)), return_indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over ``kernel_size`` windows of (N, C, L) or (C, L) ``input``, as
    ``torch.nn.functional.max_pool1d`` (indices are positions along L)."""
    x, undo = _batched(input, 1, "max_pool1d")
    attrs = dict(kernel_size=[1] + _tuple(kernel_size, 1, "kernel_size", "max_pool1d"),
                 stride=None if stride is None or stride == [] else [1] + _tuple(stride, 1, "stride", "max_pool1d"),
                 padding=[0] + _tuple(padding, 1, "padding", "max_pool1d"),
                 dilation=[1] + _tuple(dilation, 1, "dilation", "max_pool1d"), ceil_mode=bool(ceil_mode))
    if attrs["stride"] is None:
        attrs["stride"] = list(attrs["kernel_size"])
    values = undo(apply("max_pool2d", x, **attrs))
    return _with_indices(values, return_indices and undo(apply("max_pool2d_indices", x, **attrs)), return_indices)


@grad_rule("max_pool2d")
def _max_pool2d_grad(ctx, g):
    return (apply("max_pool2d_grad", g, stop_gradient(ctx.inputs[0]), **ctx.attrs),)


@grad_rule("max_pool2d_grad")
def _max_pool2d_grad_grad(ctx, h):
    raise NotImplementedError("max_pool2d: second derivatives are not supported "
                              "(its gradient primitive max_pool2d_grad has no gradient rule)")


# ------------------------------------------------------------------ average pooling
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over ``kernel_size`` windows of (N, C, H, W) or (C, H, W) ``input``, as
    ``torch.nn.functional.avg_pool2d``: ``count_include_pad`` counts the zero padding in each
    window's divisor, ``divisor_override`` replaces the divisor."""
    x, undo = _batched(input, 2, "avg_pool2d")
    if divisor_override is not None and int(divisor_override) == 0:
        raise ValueError("avg_pool2d: divisor_override must not be zero")
    return undo(apply("avg_pool2d", x, kernel_size=_tuple(kernel_size, 2, "kernel_size", "avg_pool2d"),
                      stride=None if stride is None or stride == [] else _tuple(stride, 2, "stride", "avg_pool2d"),
                      padding=_tuple(padding, 2, "padding", "avg_pool2d"), ceil_mode=bool(ceil_mode),
                      count_include_pad=bool(count_include_pad),
                      divisor_override=None if divisor_override is None else int(divisor_override)))


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over ``kernel_size`` windows of (N, C, L) or (C, L) ``input``, as
    ``torch.nn.functional.avg_pool1d``."""
    x, undo = _batched(input, 1, "avg_pool1d")
    k = _tuple(kernel_size, 1, "kernel_size", "avg_pool1d")
    s = k if stride is None or stride == [] else _tuple(stride, 1, "stride", "avg_pool1d")
    return undo(apply("avg_pool2d", x, kernel_size=[1] + k, stride=[1] + s,
                      padding=[0] + _tuple(padding, 1, "padding", "avg_pool1d"), ceil_mode=bool(ceil_mode),
                      count_include_pad=bool(count_include_pad), divisor_override=None))


@grad_rule("avg_pool2d")
def _avg_pool2d_grad(ctx, g):
    return (apply("avg_pool2d_grad", g, stop_gradient(ctx.inputs[0]), **ctx.attrs),)


@grad_rule("avg_pool2d_grad")
def _avg_pool2d_grad_grad(ctx, h):
    return (apply("avg_pool2d", h, **ctx.attrs) if _is_diff(ctx.inputs[0]) else None, None)


# ------------------------------------------------------------------ adaptive pooling
def _out_size(output_size, n, op):
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != n:
            raise ValueError(f"{op}: output_size needs one int or {n}, got {output_size!r}")
        return [None if s is None else int(s) for s in output_size]
    return [int(output_size)] * n


def adaptive_avg_pool2d(input, output_size):
    """Mean over PyTorch's adaptive windows of (N, C, H, W) or (C, H, W) ``input``, giving
    ``output_size`` (an int, or a pair whose ``None`` keeps that input size); window i of a dim
    of n spans ``[floor(i*n/out), ceil((i+1)*n/out))``."""
    x, undo = _batched(input, 2, "adaptive_avg_pool2d")
    return undo(apply("adaptive_avg_pool2d", x, output_size=_out_size(output_size, 2, "adaptive_avg_pool2d")))


def adaptive_avg_pool1d(input, output_size):
    """Mean over adaptive windows of (N, C, L) or (C, L) ``input``, giving ``output_size`` positions."""
    x, undo = _batched(input, 1, "adaptive_avg_pool1d")
    return undo(apply("adaptive_avg_pool2d", x, output_size=[1] + _out_size(output_size, 1, "adaptive_avg_pool1d")))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over PyTorch's adaptive windows of (N, C, H, W) or (C, H, W) ``input`` (see
    :func:`adaptive_avg_pool2d`); ``return_indices=True`` also returns flat ``h * W + w`` positions."""
    x, undo = _batched(input, 2, "adaptive_max_pool2d")
    size = _out_size(output_size, 2, "adaptive_max_pool2d")
    values = undo(apply("adaptive_max_pool2d", x, output_size=size))
    return _with_indices(values, return_indices and undo(apply("adaptive_max_pool2d_indices", x, output_size=size)),
                         return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over adaptive windows of (N, C, L) or (C, L) ``input``, giving ``output_size`` positions."""
    x, undo = _batched(input, 1, "adaptive_max_pool1d")
    size = [1] + _out_size(output_size, 1, "adaptive_max_pool1d")
    values = undo(apply("adaptive_max_pool2d", x, output_size=size))
    return _with_indices(values, return_indices and undo(apply("adaptive_max_pool2d_indices", x, output_size=size)),
                         return_indices)


@grad_rule("adaptive_avg_pool2d")
def _adaptive_avg_pool2d_grad(ctx, g):
    return (apply("adaptive_avg_pool2d_grad", g, stop_gradient(ctx.inputs[0]), **ctx.attrs),)


@grad_rule("adaptive_avg_pool2d_grad")
def _adaptive_avg_pool2d_grad_grad(ctx, h):
    g = ctx.inputs[0]
    return (apply("adaptive_avg_pool2d", h, output_size=list(_shape(g)[2:])) if _is_diff(g) else None, None)


@grad_rule("adaptive_max_pool2d")
def _adaptive_max_pool2d_grad(ctx, g):
    return (apply("adaptive_max_pool2d_grad", g, stop_gradient(ctx.inputs[0]), **ctx.attrs),)


@grad_rule("adaptive_max_pool2d_grad")
def _adaptive_max_pool2d_grad_grad(ctx, h):
    raise NotImplementedError("adaptive_max_pool2d: second derivatives are not supported")


# ------------------------------------------------------------------ interpolate
_MODES = {"nearest": "nearest", "nearest-exact": "nearest-exact", "linear": "linear", "bilinear": "linear",
          "trilinear": "linear"}
_MODE_DIMS = {"linear": 1, "bilinear": 2, "trilinear": 3}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample (N, C, *spatial) ``input`` (1 to 3 spatial dims) to ``size`` or by
    ``scale_factor``, as ``torch.nn.functional.interpolate``.

    Args:
        mode: ``'nearest'`` (PyTorch's floor rule), ``'nearest-exact'``, ``'linear'`` (3-d input),
            ``'bilinear'`` or ``'bicubic'`` (4-d), ``'trilinear'`` (5-d), or ``'area'`` (adaptive
            average pooling to the output size).
        align_corners: linear modes only: map the corner pixels' centres onto each other.
        recompute_scale_factor: with ``scale_factor``, compute the coordinates from the output
            size (True) or from the factor itself (the default, as PyTorch).

    Returns:
        The resampled tensor; integer inputs come back as float32.
    """
    x = _as_tensor(input)
    nsp = len(_shape(x)) - 2
    if mode not in _MODES and mode not in _COMPOSED:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported; use one of "
                                  f"{sorted(_MODES) + sorted(_COMPOSED)}")
    if nsp not in (1, 2, 3):
        raise ValueError(f"interpolate: expected a 3-d to 5-d input (N, C, *spatial), got shape {tuple(_shape(x))}")
    if mode in _MODE_DIMS and _MODE_DIMS[mode] != nsp:
        raise ValueError(f"interpolate: mode {mode!r} needs {_MODE_DIMS[mode] + 2}-d input, got {nsp + 2}-d "
                         f"(shape {tuple(_shape(x))})")
    if mode == "bicubic" and nsp != 2:
        raise NotImplementedError(f"interpolate: got {nsp + 2}D input, but bicubic mode needs 4D input")
    if align_corners is not None and mode != "bicubic" and _MODES.get(mode) != "linear":
        raise ValueError("interpolate: align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    scales = None
    if size is not None:
        size = _tuple(size, nsp, "size", "interpolate")
    else:
        per_dim = isinstance(scale_factor, (list, tuple))
        scales = [float(s) for s in scale_factor] if per_dim else [float(scale_factor)] * nsp
        if len(scales) != nsp:
            raise ValueError(f"interpolate: scale_factor needs one number or {nsp}, got {scale_factor!r}")
        if recompute_scale_factor:
            in_sizes = _shape(x)[2:]
            if None in in_sizes:
                raise ValueError("interpolate: recompute_scale_factor=True needs the input size known when the program "
                                 "is built")
            size, scales = [int(math.floor(n * s)) for n, s in zip(in_sizes, scales)], None
    if mode in _COMPOSED:
        return _area_or_bicubic(x, size, scales, mode, bool(align_corners))
    return apply("interpolate", x, size=size, scales=scales, mode=_MODES[mode], align_corners=bool(align_corners))


_COMPOSED = ("area", "bicubic")  # modes composed of existing ops, not the interpolate op


def _area_or_bicubic(x, size, scales, mode, align_corners):
    """``interpolate``'s ``'area'`` (PyTorch: adaptive average pooling to the output size) and
    ``'bicubic'`` modes, as compositions of existing ops; ``size`` or ``scales`` as
    ``interpolate`` read them."""
    shape = _static_shape(x)
    nsp = len(shape) - 2
    in_sizes = list(shape[2:])
    if None in in_sizes and (mode == "bicubic" or size is None):
        raise ValueError(f"interpolate: mode {mode!r}{'' if mode == 'bicubic' else ' with scale_factor'} needs the "
                         f"spatial size known when the program is built, got shape {tuple(shape)}")
    if size is not None:
        out = list(size)
    else:
        out = [int(math.floor(n * f)) for n, f in zip(in_sizes, scales)]
    scales = scales or [None] * nsp
    if min(out) <= 0:
        raise ValueError(f"interpolate: output size {out} must be positive (input {tuple(shape)})")
    if mode == "area":
        if nsp == 1:
            return adaptive_avg_pool1d(x, out[0])
        if nsp == 2:
            return adaptive_avg_pool2d(x, out)
        # a box's mean is the mean over depth of its (height, width) means: two 2-d poolings
        n, c, d = shape[:3]
        if None in (n, c, d):
            raise ValueError(f"interpolate: mode 'area' on a 5-d input needs its sizes known when the program is "
                             f"built, got shape {tuple(shape)}")
        hw = adaptive_avg_pool2d(x.reshape([n, c * d] + in_sizes[1:]), out[1:])
        return adaptive_avg_pool2d(hw.reshape([n, c, d, out[1] * out[2]]), [out[0], out[1] * out[2]]).reshape(
            [n, c] + out)
    if str(x.dtype) not in ("float16", "float32", "float64"):
        raise NotImplementedError(f"interpolate: bicubic needs a floating point input, got {x.dtype}")
    for axis in (3, 2):  # the width first, then the height, as PyTorch's kernel nests them
        x = _cubic_along(x, axis, in_sizes[axis - 2], out[axis - 2], scales[axis - 2], align_corners)
    return x


_CUBIC_A = -0.75


def _cubic_taps(n, out, scale, align_corners, dtype):
    """PyTorch's bicubic source taps along one dim: 4 index rows (clamped to [0, n-1]) and their
    weights (4, out), computed in ``dtype`` with PyTorch's source coordinates."""
    t = np.dtype(dtype).type
    if align_corners:
        ratio = t(n - 1) / t(out - 1) if out > 1 else t(0)
        real = ratio * np.arange(out).astype(dtype)
    else:
        ratio = t(1.0 / scale) if scale is not None and scale > 0 else t(n) / t(out)
        real = ratio * (np.arange(out).astype(dtype) + t(0.5)) - t(0.5)
    base = np.minimum(np.floor(real).astype(np.int64), n - 1)
    frac = np.clip(real - base.astype(dtype), t(0), t(1)).astype(dtype)
    a = t(_CUBIC_A)

    def near(v):  # |v| <= 1
        return ((a + t(2)) * v - (a + t(3))) * v * v + t(1)

    def far(v):  # 1 < |v| < 2
        return ((a * v - t(5) * a) * v + t(8) * a) * v - t(4) * a

    weights = [far(frac + t(1)), near(frac), near(t(1) - frac), far((t(1) - frac) + t(1))]
    index = [np.clip(base - 1 + k, 0, n - 1) for k in range(4)]
    return index, [np.asarray(w, dtype) for w in weights]


def _cubic_along(x, axis, n, out, scale, align_corners):
    index, weights = _cubic_taps(n, out, scale, align_corners, str(x.dtype).replace("float16", "float32"))
    view = [1] * 4
    view[axis] = out
    from .indexing import index_select  # (indexing imports this module's neighbours)
    total = None
    for idx, w in zip(index, weights):
        term = index_select(x, axis, _as_tensor(idx)) * _as_tensor(w.astype(str(x.dtype)).reshape(view))
        total = term if total is None else total + term
    return total


@grad_rule("interpolate")
def _interpolate_grad(ctx, g):
    return (apply("interpolate_grad", g, stop_gradient(ctx.inputs[0]), **ctx.attrs),)


@grad_rule("interpolate_grad")
def _interpolate_grad_grad(ctx, h):
    return (apply("interpolate", h, **ctx.attrs) if _is_diff(ctx.inputs[0]) else None, None)


# ------------------------------------------------------------------ pixel shuffle
def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r) with r = ``upscale_factor``, as
    ``torch.nn.functional.pixel_shuffle``."""
    return apply("pixel_shuffle", _as_tensor(input), upscale_factor=int(upscale_factor))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of :func:`pixel_shuffle`."""
    return apply("pixel_unshuffle", _as_tensor(input), downscale_factor=int(downscale_factor))


@grad_rule("pixel_shuffle")
def _pixel_shuffle_grad(ctx, g):
    return (apply("pixel_unshuffle", g, downscale_factor=ctx.attrs["upscale_factor"]),)


@grad_rule("pixel_unshuffle")
def _pixel_unshuffle_grad(ctx, g):
    return (apply("pixel_shuffle", g, upscale_factor=ctx.attrs["downscale_factor"]),)


def channel_shuffle(input, groups):
    """The channels (dim 1) of (N, C, *) ``input`` regrouped: viewed as (groups, C / groups),
    transposed and flattened back, as ``torch.nn.functional.channel_shuffle`` (ShuffleNet)."""
    x = _as_tensor(input)
    shape = _static_shape(x)
    if len(shape) <= 2:
        raise ValueError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(shape)}")
    groups = int(groups)
    if groups <= 0:
        raise ValueError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = shape[1]
    if c is not None and c % groups:
        raise ValueError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    return flatten(transpose(unflatten(x, 1, (groups, -1)), 1, 2), 1, 2)


# ------------------------------------------------------------------ ONNX
def _pool_geometry(op, x_shape):
    a = op.attrs
    k = list(a["kernel_size"])
    s = list(k if a.get("stride") in (None, []) else a["stride"])
    p = list(a.get("padding", [0, 0]))
    return k, s, p


def _max_pool_attrs(op):
    return {"dilations": [int(d) for d in op.attrs.get("dilation", [1, 1])],
            "ceil_mode": int(op.attrs.get("ceil_mode", False))}


@onnx_converter("max_pool2d")
def _max_pool2d_onnx(g, op):
    k, s, p = _pool_geometry(op, g.shape(op.inputs[0]))
    g.node("MaxPool", op.inputs, op.outputs, kernel_shape=k, strides=s, pads=p + p, **_max_pool_attrs(op))


@onnx_converter("max_pool2d_indices")
def _max_pool2d_indices_onnx(g, op):
    # ONNX numbers the maximum's position over the whole (N, C, H, W) tensor; PyTorch within
    # its (H, W) plane: the remainder by H*W
    x = op.inputs[0]
    k, s, p = _pool_geometry(op, g.shape(x))
    vals, flat, shp, hw = g.tmp(), g.tmp(), g.tmp(), g.tmp()
    g.node("MaxPool", [x], [vals, flat], kernel_shape=k, strides=s, pads=p + p, **_max_pool_attrs(op))
    g.node("Shape", [x], [shp], start=2)
    g.node("ReduceProd", [shp], [hw], keepdims=1)
    g.node("Mod", [flat, hw], op.outputs)


def _avg_pool_exact_in_onnx(op, x_shape):
    """AveragePool computes PyTorch's divisor unless a ceil_mode window runs past the padding
    (onnxruntime then divides differently) or a divisor is forced."""
    a = op.attrs
    if a.get("divisor_override"):
        return False
    if not a.get("ceil_mode"):
        return True
    k, s, p = _pool_geometry(op, x_shape)
    for d in range(2):
        n = x_shape[2 + d]
        if n is None:
            return False
        out = -(-(n + 2 * p[d] - k[d]) // s[d]) + 1
        if (out - 1) * s[d] >= n + p[d]:
            out -= 1
        if (out - 1) * s[d] + k[d] > n + 2 * p[d]:
            return False
    return True


@onnx_converter("avg_pool2d")
def _avg_pool2d_onnx(g, op):
    x = op.inputs[0]
    k, s, p = _pool_geometry(op, g.shape(x))
    if _avg_pool_exact_in_onnx(op, g.shape(x)):
        g.node("AveragePool", [g.cast(x, g.dtype(op.outputs[0]))], op.outputs, kernel_shape=k, strides=s, pads=p + p,
               ceil_mode=int(op.attrs.get("ceil_mode", False)),
               count_include_pad=int(op.attrs.get("count_include_pad", True)))
        return
    # window sums (a depthwise Conv of ones over the padded input), then PyTorch's divisors
    from d2s_runtime.ops.pool_ops import avg_divisor, avg_geometry
    shape = g.shape(x)
    if None in shape[1:]:
        raise g.unsupported(op, "avg_pool2d with divisor_override or a ceil_mode window past the padding needs the "
                                "channels, height and width known when exporting")
    dtype = g.dtype(op.outputs[0])
    kk, ss, pp, _, outs = avg_geometry(shape, **{n: op.attrs[n] for n in ("kernel_size", "stride", "padding",
                                                                            "ceil_mode") if n in op.attrs})
    extra = [max(0, (outs[d] - 1) * ss[d] + kk[d] - (shape[2 + d] + 2 * pp[d])) for d in range(2)]
    c = shape[1]
    sums = g.tmp()
    g.node("Conv", [g.cast(x, dtype), g.const(np.ones((c, 1) + tuple(kk), dtype=dtype))], [sums], strides=ss,
           pads=[pp[0], pp[1], pp[0] + extra[0], pp[1] + extra[1]], group=c)
    div = avg_divisor(np, shape, kk, ss, pp, outs, op.attrs.get("count_include_pad", True),
                       op.attrs.get("divisor_override"), np.dtype(dtype))
    g.node("Div", [sums, g.const(np.asarray(div, dtype=dtype))], op.outputs)


def _divisible(op, x_shape):
    size = op.attrs["output_size"]
    out = [x_shape[2 + d] if size[d] is None else size[d] for d in range(2)]
    if any(x_shape[2 + d] is None for d in range(2)) or any(x_shape[2 + d] % out[d] for d in range(2)):
        return out, None
    return out, [x_shape[2 + d] // out[d] for d in range(2)]


@onnx_converter("adaptive_avg_pool2d")
def _adaptive_avg_pool2d_onnx(g, op):
    x = op.inputs[0]
    shape = g.shape(x)
    x = g.cast(x, g.dtype(op.outputs[0]))
    out, k = _divisible(op, shape)
    if out == [1, 1]:
        g.node("GlobalAveragePool", [x], op.outputs)
    elif k is not None:
        g.node("AveragePool", [x], op.outputs, kernel_shape=k, strides=k)
    elif None in shape[2:]:
        raise g.unsupported(op, "adaptive_avg_pool2d to a size that does not divide the input's needs the input's "
                                "height and width known when exporting")
    else:  # averaging matrices: out = Mh @ x @ Mw^T
        from d2s_runtime.ops.pool_ops import avg_matrix
        dtype = np.dtype(g.dtype(op.outputs[0]))
        rows = g.tmp()
        g.node("MatMul", [g.const(avg_matrix(shape[2], out[0], dtype)), x], [rows])
        g.node("MatMul", [rows, g.const(avg_matrix(shape[3], out[1], dtype).T.copy())], op.outputs)


@onnx_converter("adaptive_max_pool2d")
def _adaptive_max_pool2d_onnx(g, op):
    out, k = _divisible(op, g.shape(op.inputs[0]))
    if out == [1, 1]:
        g.node("GlobalMaxPool", op.inputs, op.outputs)
    elif k is not None:
        g.node("MaxPool", op.inputs, op.outputs, kernel_shape=k, strides=k)
    else:
        raise g.unsupported(op, "adaptive_max_pool2d exports only to a size that divides the input's (ONNX has no "
                                "overlapping adaptive windows)")


onnx_unsupported("adaptive_max_pool2d_indices", reason="ONNX has no adaptive max pooling indices; export the model "
                                                      "without return_indices=True")


@onnx_converter("interpolate")
def _interpolate_onnx(g, op):
    a = op.attrs
    x = op.inputs[0]
    mode = a.get("mode", "nearest")
    if mode == "nearest":
        attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    elif mode == "nearest-exact":
        attrs = dict(mode="nearest", coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil")
    else:
        attrs = dict(mode="linear", coordinate_transformation_mode="align_corners" if a.get("align_corners")
                     else "pytorch_half_pixel")
    xin = g.cast(x, g.dtype(op.outputs[0]))
    if a.get("scales") is not None:
        scales = g.const(np.asarray([1.0, 1.0] + [float(s) for s in a["scales"]], dtype=np.float32))
        g.node("Resize", [xin, "", scales], op.outputs, **attrs)
    else:
        shp, sizes = g.tmp(), g.tmp()
        g.node("Shape", [x], [shp], start=0, end=2)
        g.node("Concat", [shp, g.const(i64(a["size"]))], [sizes], axis=0)
        g.node("Resize", [xin, "", "", sizes], op.outputs, **attrs)


@onnx_converter("pixel_shuffle")
def _pixel_shuffle_onnx(g, op):
    if len(g.shape(op.inputs[0])) != 4:
        raise g.unsupported(op, "pixel_shuffle exports for 4-d (N, C, H, W) inputs")
    g.node("DepthToSpace", op.inputs, op.outputs, blocksize=int(op.attrs["upscale_factor"]), mode="CRD")


@onnx_converter("pixel_unshuffle")
def _pixel_unshuffle_onnx(g, op):
    # SpaceToDepth orders the channels (i*r + j)*C + c; PyTorch's c*r*r + i*r + j: regroup them
    x = op.inputs[0]
    shape = g.shape(x)
    r = int(op.attrs["downscale_factor"])
    if len(shape) != 4 or shape[1] is None:
        raise g.unsupported(op, "pixel_unshuffle exports for 4-d (N, C, H, W) inputs with C known")
    c = shape[1]
    s2d, grouped, moved, shp = g.tmp(), g.tmp(), g.tmp(), g.tmp()
    g.node("SpaceToDepth", [x], [s2d], blocksize=r)
    g.node("Reshape", [s2d, g.const(i64([0, r * r, c, -1]))], [grouped])
    g.node("Transpose", [grouped], [moved], perm=[0, 2, 1, 3])
    g.node("Shape", [s2d], [shp])
    g.node("Reshape", [moved, shp], op.outputs)
