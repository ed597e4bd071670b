"""Reductions: sum, mean, max, min, prod, any, all, argmax, argmin (runtime:
``d2s_runtime/ops/reduce.py``): for each op its public wrapper, its gradient rule and its ONNX
converter, side by side."""
from ..autograd.registry import grad_rule, non_differentiable, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter
from ..tensor import tensor_method
from .creation import ones_like, zeros_like
from .elementwise import cast, eq, logical_not, ne, where
from .shape import broadcast_to, unsqueeze
from ._util import _axes, _shape



# ------------------------------------------------------------------ helpers of the rules
def _expand_reduced(g, x, axes, keepdims):
    """Put reduced axes back (size 1) so ``g`` broadcasts against input ``x``."""
    nd = len(_shape(x))
    if not keepdims and nd:
        ax = range(nd) if axes is None else sorted(a % nd for a in axes)
        for a in ax:
            g = unsqueeze(g, a)
    return g


def _reduction_operands(ctx, g):
    """(input, output, gradient) of a reduction, output and gradient with the reduced axes put
    back as size 1 so they broadcast against the input."""
    x, y = ctx.inputs[0], ctx.outputs[0]
    axes, keep = ctx.attrs.get("axes"), ctx.attrs.get("keepdims", False)
    return x, _expand_reduced(y, x, axes, keep), _expand_reduced(g, x, axes, keep)


def _axes_input(g, axes):
    return [g.const(i64(axes))] if axes is not None else []


def _reduce_onnx(onnx_name):
    def conv(g, op):
        axes = op.attrs.get("axes")
        if axes is not None and len(axes) == 0:  # ONNX reads empty axes as "all"; d2s as "none"
            g.node("Identity", [g.cast(op.inputs[0], g.dtype(op.outputs[0]))], op.outputs)
            return
        x = g.cast(op.inputs[0], g.dtype(op.outputs[0]))
        g.node(onnx_name, [x] + _axes_input(g, axes), op.outputs,
               keepdims=int(bool(op.attrs.get("keepdims", False))))
    return conv


# ------------------------------------------------------------------ sum, mean
@tensor_method()
def sum(x, axis=None, keepdims=False):
    """Sum over ``axis`` (an int, a list, or None: all)."""
    return apply("reduce_sum", x, axes=_axes(axis), keepdims=keepdims)


@grad_rule("reduce_sum")
def _sum_grad(ctx, g):
    x = ctx.inputs[0]
    g = _expand_reduced(g, x, ctx.attrs.get("axes"), ctx.attrs.get("keepdims", False))
    return (g * ones_like(x) if None in _shape(x) else broadcast_to(g, _shape(x)),)


shape_only("reduce_sum", 0)
onnx_converter("reduce_sum")(_reduce_onnx("ReduceSum"))


@tensor_method()
def mean(x, axis=None, keepdims=False):
    """Mean over ``axis`` (an int, a list, or None: all); integers average in float32."""
    return apply("reduce_mean", x, axes=_axes(axis), keepdims=keepdims)


@grad_rule("reduce_mean")
def _mean_grad(ctx, g):
    x = ctx.inputs[0]
    shape = _shape(x)
    axes = ctx.attrs.get("axes")
    n_in = ones_like(x)
    g = _expand_reduced(g, x, axes, ctx.attrs.get("keepdims", False))
    ax = range(len(shape)) if axes is None or not shape else [a % len(shape) for a in axes]
    if None in [shape[a] for a in ax]:
        count = sum(n_in, axis=list(ax), keepdims=True)
        return (g * n_in / count,)
    n = 1
    for a in ax:
        n *= shape[a]
    return (g * n_in / n if None in shape else broadcast_to(g / n, shape),)


shape_only("reduce_mean", 0)
onnx_converter("reduce_mean")(_reduce_onnx("ReduceMean"))


# ------------------------------------------------------------------ max, min, prod
@tensor_method()
def max(x, axis=None, keepdims=False):
    """Largest element over ``axis`` (an int, a list, or None: all)."""
    return apply("reduce_max", x, axes=_axes(axis), keepdims=keepdims)


@tensor_method()
def min(x, axis=None, keepdims=False):
    """Smallest element over ``axis`` (an int, a list, or None: all)."""
    return apply("reduce_min", x, axes=_axes(axis), keepdims=keepdims)


@grad_rule("reduce_max", "reduce_min")
def _maxmin_reduce_grad(ctx, g):
    x, y, g = _reduction_operands(ctx, g)
    axes = ctx.attrs.get("axes")
    hit = cast(eq(x, y), g.dtype)
    # ties share the gradient evenly
    count = sum(hit, axis=axes, keepdims=True)
    return (g * hit / count,)


onnx_converter("reduce_max")(_reduce_onnx("ReduceMax"))
onnx_converter("reduce_min")(_reduce_onnx("ReduceMin"))


@tensor_method()
def prod(x, axis=None, keepdims=False):
    """Product over ``axis`` (an int, a list, or None: all)."""
    return apply("reduce_prod", x, axes=_axes(axis), keepdims=keepdims)


@grad_rule("reduce_prod")
def _prod_grad(ctx, g):
    x, y, g = _reduction_operands(ctx, g)
    axes = ctx.attrs.get("axes")
    # y / x is wrong where x == 0: there, multiply the other factors directly
    nonzero = ne(x, 0)
    safe = where(nonzero, x, 1)
    others = prod(safe, axis=axes, keepdims=True)
    zeros = sum(cast(logical_not(nonzero), x.dtype), axis=axes, keepdims=True)
    grad_nz = where(eq(zeros, 0), y / safe, zeros_like(y))
    grad_z = where(eq(zeros, 1), others, zeros_like(others))
    return (g * where(nonzero, grad_nz, grad_z),)


onnx_converter("reduce_prod")(_reduce_onnx("ReduceProd"))


# ------------------------------------------------------------------ any, all
@tensor_method()
def any(x, axis=None, keepdims=False):
    """Whether any element over ``axis`` is true (non-zero)."""
    return apply("reduce_any", x, axes=_axes(axis), keepdims=keepdims)


@tensor_method()
def all(x, axis=None, keepdims=False):
    """Whether every element over ``axis`` is true (non-zero)."""
    return apply("reduce_all", x, axes=_axes(axis), keepdims=keepdims)


non_differentiable("reduce_any", "reduce_all", reason="a bool result carries no gradient")


def _logical_reduce_onnx(onnx_name):
    def conv(g, op):
        x = g.cast(op.inputs[0], "int64")
        r = g.tmp()
        g.node(onnx_name, [x] + _axes_input(g, op.attrs.get("axes")), [r],
               keepdims=int(bool(op.attrs.get("keepdims", False))))
        g.node("Cast", [r], op.outputs, to=g.onnx_dtype("bool"))
    return conv


onnx_converter("reduce_any")(_logical_reduce_onnx("ReduceMax"))
onnx_converter("reduce_all")(_logical_reduce_onnx("ReduceMin"))


# ------------------------------------------------------------------ argmax, argmin
@tensor_method()
def argmax(x, axis=None, keepdims=False):
    """Index of the largest element (over the flattened tensor when ``axis`` is None)."""
    return apply("argmax", x, axis=axis, keepdims=keepdims)


@tensor_method()
def argmin(x, axis=None, keepdims=False):
    """Index of the smallest element (over the flattened tensor when ``axis`` is None)."""
    return apply("argmin", x, axis=axis, keepdims=keepdims)


non_differentiable("argmax", "argmin", reason="an index carries no gradient")


def _arg_onnx(onnx_name):
    def conv(g, op):
        axis = op.attrs.get("axis")
        x = op.inputs[0]
        keep = int(bool(op.attrs.get("keepdims", False)))
        if axis is not None:
            g.node(onnx_name, [x], op.outputs, axis=int(axis), keepdims=keep)
            return
        flat, r = g.tmp(), g.tmp()
        g.node("Reshape", [x, g.const(i64([-1]))], [flat])
        g.node(onnx_name, [flat], [r], axis=0, keepdims=0)
        shape = [1] * len(g.shape(x)) if keep else []
        g.node("Reshape", [r, g.const(i64(shape))], op.outputs)
    return conv


onnx_converter("argmax")(_arg_onnx("ArgMax"))
onnx_converter("argmin")(_arg_onnx("ArgMin"))
