"""Convolutions: ``conv1d``, ``conv2d``, ``conv_transpose1d``, ``conv_transpose2d`` and the
im2col/col2im pair behind ``F.unfold``/``F.fold`` (runtime: ``d2s_runtime/ops/conv_ops.py``):
for each op its public wrapper, its gradient rule and its ONNX converter.

Signatures are PyTorch's (``torch.conv2d(input, weight, bias, stride, padding, dilation,
groups)``). One-dimensional forms run the 2-d primitives on a height of 1. conv2d is bilinear in
(x, w), so its gradient primitives are linear in each argument and their own gradients are
again conv2d / conv2d_grad_* / conv_transpose2d calls: any order of derivative works.
"""
import numpy as np

from ..autograd.registry import grad_rule, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter, onnx_unsupported, promoted
from .shape import stop_gradient
from ._util import _as_tensor, _is_diff, _shape


_GRAD_OP = "gradient ops belong to backward programs; export the forward program"
onnx_unsupported("conv2d_grad_input", "conv2d_grad_weight", reason=_GRAD_OP)
shape_only("conv2d_grad_input", 2)
shape_only("conv2d_grad_weight", 2)


# ------------------------------------------------------------------ argument helpers
def _tuple(v, n, name, op):
    if isinstance(v, (list, tuple)):
        if len(v) != n:
            raise ValueError(f"{op}: {name} needs one int or {n}, got {v!r}")
        return tuple(int(a) for a in v)
    return (int(v),) * n


def _same_pads(kernel, dilation, stride, op):
    """PyTorch's padding='same': d*(k-1) in all, the smaller half before."""
    if any(s != 1 for s in stride):
        raise ValueError(f"{op}: padding='same' is not supported for strided convolutions (stride {stride}), "
                         "as in PyTorch")
    return [[d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2] for k, d in zip(kernel, dilation)]


def _conv_pads(padding, kernel, dilation, stride, op):
    """[[before, after], ...] per spatial dim from an int, a tuple, 'valid' or 'same'."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return [[0, 0]] * n
        if padding == "same":
            if None in kernel:
                raise ValueError(f"{op}: padding='same' needs the kernel size known when the program is built")
            return _same_pads(kernel, dilation, stride, op)
        raise ValueError(f"{op}: padding must be an int, a tuple, 'valid' or 'same', got {padding!r}")
    return [[p, p] for p in _tuple(padding, n, "padding", op)]


def _kernel_dims(weight, n, op):
    shape = _shape(weight)
    if len(shape) != n + 2:
        raise ValueError(f"{op}: weight must have {n + 2} dims (out_channels, in_channels/groups, "
                         f"{'kL' if n == 1 else 'kH, kW'}), got shape {tuple(shape)}")
    return tuple(shape[2:])


def _batched(x, n_spatial, op):
    """(x with a batch dim, whether one was added): PyTorch accepts unbatched (C, *spatial)."""
    nd = len(_shape(x))
    if nd == n_spatial + 1:
        return apply("expand_dims", x, axis=0), True
    if nd != n_spatial + 2:
        raise ValueError(f"{op}: expected a {n_spatial + 1}-d (unbatched) or {n_spatial + 2}-d (batched) input, "
                         f"got shape {tuple(_shape(x))}")
    return x, False


def _add_bias(out, bias, n_spatial):
    if bias is None:
        return out
    return out + apply("reshape", _as_tensor(bias), shape=[1, -1] + [1] * n_spatial)


def _unbatched(out, added):
    return apply("squeeze", out, axes=[0]) if added else out


# ------------------------------------------------------------------ conv1d / conv2d
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d cross-correlation of (N, C, H, W) or unbatched (C, H, W) ``input`` with ``weight``
    (O, C/groups, kH, kW), plus an optional bias (O,), as ``torch.nn.functional.conv2d``.

    Args:
        stride, dilation: an int or a pair.
        padding: an int, a pair, ``'valid'`` or ``'same'`` (stride 1; an even total is split
            with the smaller half first, as in PyTorch).
        groups: split the channels into this many independent convolutions (``groups == C``:
            depthwise).

    Returns:
        (N, O, Ho, Wo), or (O, Ho, Wo) for an unbatched input.
    """
    x, weight = _as_tensor(input), _as_tensor(weight)
    x, added = _batched(x, 2, "conv2d")
    kernel = _kernel_dims(weight, 2, "conv2d")
    stride, dilation = _tuple(stride, 2, "stride", "conv2d"), _tuple(dilation, 2, "dilation", "conv2d")
    pads = _conv_pads(padding, kernel, dilation, stride, "conv2d")
    out = apply("conv2d", x, weight, stride=list(stride), padding=pads, dilation=list(dilation), groups=int(groups))
    return _unbatched(_add_bias(out, bias, 2), added)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d cross-correlation of (N, C, L) or unbatched (C, L) ``input`` with ``weight``
    (O, C/groups, kL), plus an optional bias (O,), as ``torch.nn.functional.conv1d``
    (``padding``: an int, ``'valid'`` or ``'same'``). Returns (N, O, Lo)."""
    x, weight = _as_tensor(input), _as_tensor(weight)
    x, added = _batched(x, 1, "conv1d")
    kernel = _kernel_dims(weight, 1, "conv1d")
    stride, dilation = _tuple(stride, 1, "stride", "conv1d"), _tuple(dilation, 1, "dilation", "conv1d")
    pads = _conv_pads(padding, kernel, dilation, stride, "conv1d")
    out = apply("conv2d", apply("expand_dims", x, axis=2), apply("expand_dims", weight, axis=2),
                stride=[1, stride[0]], padding=[[0, 0]] + pads, dilation=[1, dilation[0]], groups=int(groups))
    out = apply("squeeze", out, axes=[2])
    return _unbatched(_add_bias(out, bias, 1), added)


# ------------------------------------------------------------------ transposed convolutions
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-d transposed convolution ("deconvolution") of (N, C, H, W) or (C, H, W) ``input`` with
    ``weight`` (C, O/groups, kH, kW), as ``torch.nn.functional.conv_transpose2d``: the
    gradient of conv2d with respect to its input. Output size per dim:
    ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``."""
    x, weight = _as_tensor(input), _as_tensor(weight)
    x, added = _batched(x, 2, "conv_transpose2d")
    _kernel_dims(weight, 2, "conv_transpose2d")
    p = _tuple(padding, 2, "padding", "conv_transpose2d")
    out = apply("conv_transpose2d", x, weight, stride=list(_tuple(stride, 2, "stride", "conv_transpose2d")),
                padding=[[a, a] for a in p],
                output_padding=list(_tuple(output_padding, 2, "output_padding", "conv_transpose2d")),
                dilation=list(_tuple(dilation, 2, "dilation", "conv_transpose2d")), groups=int(groups))
    return _unbatched(_add_bias(out, bias, 2), added)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-d transposed convolution of (N, C, L) or (C, L) ``input`` with ``weight``
    (C, O/groups, kL), as ``torch.nn.functional.conv_transpose1d``."""
    x, weight = _as_tensor(input), _as_tensor(weight)
    x, added = _batched(x, 1, "conv_transpose1d")
    _kernel_dims(weight, 1, "conv_transpose1d")
    (s,), (p,), (op,), (d,) = (_tuple(v, 1, n, "conv_transpose1d") for v, n in
                               ((stride, "stride"), (padding, "padding"), (output_padding, "output_padding"),
                                (dilation, "dilation")))
    out = apply("conv_transpose2d", apply("expand_dims", x, axis=2), apply("expand_dims", weight, axis=2),
                stride=[1, s], padding=[[0, 0], [p, p]], output_padding=[0, op], dilation=[1, d], groups=int(groups))
    out = apply("squeeze", out, axes=[2])
    return _unbatched(_add_bias(out, bias, 1), added)


# ------------------------------------------------------------------ im2col / col2im
def _im2col(x, kernel_size, dilation=1, padding=0, stride=1):
    """F.unfold's primitive call on an (N, C, H, W) tensor."""
    pads = [[p, p] for p in _tuple(padding, 2, "padding", "unfold")]
    return apply("im2col", _as_tensor(x), kernel_size=list(_tuple(kernel_size, 2, "kernel_size", "unfold")),
                 stride=list(_tuple(stride, 2, "stride", "unfold")), padding=pads,
                 dilation=list(_tuple(dilation, 2, "dilation", "unfold")))


def _col2im(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """F.fold's primitive call on an (N, C*kH*kW, L) tensor."""
    pads = [[p, p] for p in _tuple(padding, 2, "padding", "fold")]
    return apply("col2im", _as_tensor(x), output_size=list(_tuple(output_size, 2, "output_size", "fold")),
                 kernel_size=list(_tuple(kernel_size, 2, "kernel_size", "fold")),
                 stride=list(_tuple(stride, 2, "stride", "fold")), padding=pads,
                 dilation=list(_tuple(dilation, 2, "dilation", "fold")))


# ------------------------------------------------------------------ gradient rules
def _conv_attrs(ctx):
    a = ctx.attrs
    return {"stride": a.get("stride", 1), "padding": a.get("padding", 0), "dilation": a.get("dilation", 1),
            "groups": a.get("groups", 1)}


@grad_rule("conv2d")
def _conv2d_grad(ctx, g):
    x, w = ctx.inputs
    a = _conv_attrs(ctx)
    gx = apply("conv2d_grad_input", g, w, stop_gradient(x), **a) if _is_diff(x) else None
    gw = apply("conv2d_grad_weight", g, x, stop_gradient(w), **a) if _is_diff(w) else None
    return gx, gw


@grad_rule("conv2d_grad_input")
def _conv2d_grad_input_grad(ctx, h):
    g, w, x = ctx.inputs
    a = _conv_attrs(ctx)
    gg = apply("conv2d", h, w, **a) if _is_diff(g) else None
    gw = apply("conv2d_grad_weight", g, h, stop_gradient(w), **a) if _is_diff(w) else None
    return gg, gw, None


@grad_rule("conv2d_grad_weight")
def _conv2d_grad_weight_grad(ctx, h):
    g, x, w = ctx.inputs
    a = _conv_attrs(ctx)
    gg = apply("conv2d", x, h, **a) if _is_diff(g) else None
    gx = apply("conv2d_grad_input", g, h, stop_gradient(x), **a) if _is_diff(x) else None
    return gg, gx, None


@grad_rule("conv_transpose2d")
def _conv_transpose2d_grad(ctx, g):
    # y = conv2d_grad_input(x, w): x's gradient is the conv2d of g, w's is conv2d's weight
    # gradient with the roles of x and g exchanged
    x, w = ctx.inputs
    a = _conv_attrs(ctx)
    gx = apply("conv2d", g, w, **a) if _is_diff(x) else None
    gw = apply("conv2d_grad_weight", x, g, stop_gradient(w), **a) if _is_diff(w) else None
    return gx, gw


def _fold_attrs(ctx):
    return {k: ctx.attrs[k] for k in ("kernel_size", "stride", "padding", "dilation") if k in ctx.attrs}


@grad_rule("im2col")
def _im2col_grad(ctx, g):
    x = ctx.inputs[0]
    h, w = _shape(x)[2:]
    if h is None or w is None:
        raise NotImplementedError("unfold: the gradient needs the input's height and width known when the program "
                                  "is built; give them in the InputSpec")
    return (apply("col2im", g, output_size=[h, w], **_fold_attrs(ctx)),)


@grad_rule("col2im")
def _col2im_grad(ctx, g):
    return (apply("im2col", g, **_fold_attrs(ctx)),)


shape_only("im2col", 0)
shape_only("col2im", 0)


# ------------------------------------------------------------------ ONNX
def _onnx_pads(padding):
    """ONNX's [top, left, bottom, right] from d2s's [[top, bottom], [left, right]] (or an int / pair)."""
    if isinstance(padding, (list, tuple)) and all(isinstance(p, (list, tuple)) for p in padding):
        (t, b), (l, r) = padding
    else:
        ph, pw = (padding, padding) if isinstance(padding, int) else padding
        t = b = ph
        l = r = pw
    return [int(t), int(l), int(b), int(r)]


def _onnx_pair(v):
    return [int(v), int(v)] if isinstance(v, int) else [int(a) for a in v]


@onnx_converter("conv2d")
def _conv2d_onnx(g, op):
    a = op.attrs
    g.node("Conv", promoted(g, op.inputs, g.dtype(op.outputs[0])), op.outputs,
           strides=_onnx_pair(a.get("stride", 1)), pads=_onnx_pads(a.get("padding", 0)),
           dilations=_onnx_pair(a.get("dilation", 1)), group=int(a.get("groups", 1)))


@onnx_converter("conv_transpose2d")
def _conv_transpose2d_onnx(g, op):
    a = op.attrs
    g.node("ConvTranspose", promoted(g, op.inputs, g.dtype(op.outputs[0])), op.outputs,
           strides=_onnx_pair(a.get("stride", 1)), pads=_onnx_pads(a.get("padding", 0)),
           output_padding=_onnx_pair(a.get("output_padding", 0)), dilations=_onnx_pair(a.get("dilation", 1)),
           group=int(a.get("groups", 1)))


@onnx_converter("im2col")
def _im2col_onnx(g, op):
    # the windows are a depthwise Conv with one-hot kernels: output channel c*kH*kW + i*kW + j
    # picks input channel c at tap (i, j), which is unfold's row order
    x = op.inputs[0]
    c = g.shape(x)[1]
    if c is None:
        raise g.unsupported(op, "unfold needs the number of channels known when exporting")
    kh, kw = op.attrs["kernel_size"]
    eye = np.zeros((c * kh * kw, 1, kh, kw), dtype=g.dtype(x))
    eye[np.arange(c * kh * kw), 0, np.tile(np.repeat(np.arange(kh), kw), c), np.tile(np.arange(kw), c * kh)] = 1
    win = g.tmp()
    g.node("Conv", [x, g.const(eye)], [win], strides=_onnx_pair(op.attrs.get("stride", 1)),
           pads=_onnx_pads(op.attrs.get("padding", 0)), dilations=_onnx_pair(op.attrs.get("dilation", 1)), group=c)
    g.node("Reshape", [win, g.const(i64([0, 0, -1]))], op.outputs)


@onnx_converter("col2im")
def _col2im_onnx(g, op):
    a = op.attrs
    g.node("Col2Im", [op.inputs[0], g.const(i64(a["output_size"])), g.const(i64(a["kernel_size"]))], op.outputs,
           strides=_onnx_pair(a.get("stride", 1)), pads=_onnx_pads(a.get("padding", 0)),
           dilations=_onnx_pair(a.get("dilation", 1)))
