"""Gradient rules of the neural-network primitives (``d2s_runtime/ops/nn_ops.py``), in d2s ops.

Like ``rules.py``, every rule is ordinary d2s code, so it runs eagerly, builds static
backward programs and records its own graph for higher-order derivatives.
"""
from .. import ops as d
from ..dispatch import apply
from .node import defgrad, nondiff
from .rules import _is_diff, reduction_operands

nondiff("one_hot", "dropout_mask")


@defgrad("softmax")
def _softmax(ctx, g):
    y = ctx.outputs[0]
    axis = ctx.attrs.get("axis", -1)
    gy = g * y
    return (gy - y * d.sum(gy, axis=axis, keepdims=True),)


@defgrad("log_softmax")
def _log_softmax(ctx, g):
    y = ctx.outputs[0]
    axis = ctx.attrs.get("axis", -1)
    return (g - d.exp(y) * d.sum(g, axis=axis, keepdims=True),)


@defgrad("logsumexp")
def _logsumexp(ctx, g):
    x, y, g = reduction_operands(ctx, g)
    return (g * d.exp(x - y),)


@defgrad("cumsum")
def _cumsum(ctx, g):
    return (apply("cumsum", g, axis=ctx.attrs["axis"], reverse=not ctx.attrs.get("reverse", False)),)


@defgrad("gather")
def _gather(ctx, g):
    x, index = ctx.inputs
    axis = ctx.attrs["axis"]
    return (apply("scatter_add", d.zeros_like(x), index, g, axis=axis), None)


@defgrad("scatter_add")
def _scatter_add(ctx, g):
    base, index, src = ctx.inputs
    axis = ctx.attrs["axis"]
    gsrc = None
    if _is_diff(src):
        gsrc = apply("gather", g, index, axis=axis)
        if tuple(gsrc.shape) != tuple(src.shape):  # src larger than index: the rest was never read
            gsrc = _pad_to(gsrc, src)
    return (g if _is_diff(base) else None, None, gsrc)


def _pad_to(g, like):
    """``g`` placed in the leading corner of zeros shaped like ``like``."""
    spec = [["s", 0, n, None] for n in g.shape]
    return apply("index_add", d.zeros_like(like), g, index=spec)


# conv2d is bilinear in (x, w), so its gradient primitives are linear in each argument and
# their own gradients are again conv2d / conv2d_grad_* calls: any order works.
def _conv_attrs(ctx):
    return {"stride": ctx.attrs.get("stride", 1), "padding": ctx.attrs.get("padding", 0)}


@defgrad("conv2d")
def _conv2d(ctx, g):
    x, w = ctx.inputs
    a = _conv_attrs(ctx)
    gx = apply("conv2d_grad_input", g, w, d.stop_gradient(x), **a) if _is_diff(x) else None
    gw = apply("conv2d_grad_weight", g, x, d.stop_gradient(w), **a) if _is_diff(w) else None
    return gx, gw


@defgrad("conv2d_grad_input")
def _conv2d_grad_input(ctx, h):
    g, w, x = ctx.inputs
    a = _conv_attrs(ctx)
    gg = apply("conv2d", h, w, **a) if _is_diff(g) else None
    gw = apply("conv2d_grad_weight", g, h, d.stop_gradient(w), **a) if _is_diff(w) else None
    return gg, gw, None


@defgrad("conv2d_grad_weight")
def _conv2d_grad_weight(ctx, h):
    g, x, w = ctx.inputs
    a = _conv_attrs(ctx)
    gg = apply("conv2d", x, h, **a) if _is_diff(g) else None
    gx = apply("conv2d_grad_input", g, h, d.stop_gradient(x), **a) if _is_diff(x) else None
    return gg, gx, None


@defgrad("max_pool2d")
def _max_pool2d(ctx, g):
    x = ctx.inputs[0]
    return (apply("max_pool2d_grad", g, d.stop_gradient(x), **ctx.attrs),)


@defgrad("max_pool2d_grad")
def _max_pool2d_grad(ctx, h):
    raise NotImplementedError("max_pool2d: second derivatives are not supported "
                              "(its gradient primitive max_pool2d_grad has no gradient rule)")
