"""Reductions with PyTorch's signatures (runtime: ``d2s_runtime/ops/reduce.py``): sum, mean, prod,
max, min (with a dim: ``(values, indices)``), amax, amin, argmax, argmin, any, all, count_nonzero,
nansum, nanmean, std, var, norm, cumprod, logcumsumexp: for each op its public wrapper, its
gradient rule and its ONNX converter, side by side.

Every wrapper takes ``dim=``/``keepdim=`` (numpy's ``axis=``/``keepdims=`` as aliases) and
PyTorch's positional order (``x.sum(1)``, ``x.mean(-1, True)``); ``dim=None``, ``()`` or ``[]``
reduce every dim. Gradient rules call the ops through :func:`_reduce` (an empty axes list there
means "no axis", as the op reads it).
"""
import builtins
import math

import numpy as np

from d2s_runtime.dtypes import FLOATS

from .. import return_types
from ..autograd.registry import grad_rule, non_differentiable, reads_outputs, sample_call, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter, onnx_unsupported
from ..tensor import Tensor, tensor_method
from . import _dim_args as A
from .creation import full_like, ones_like, zeros_like
from .elementwise import abs as _abs, cast, eq, exp, log, logical_and, logical_not, logical_or, maximum, minimum, ne, \
    pow as _pow, sqrt, where
from .shape import broadcast_to, unsqueeze
from ._util import _as_tensor, _shape


def _reduce(name, x, axes, keepdims=False):
    return apply(name, x, axes=axes, keepdims=keepdims)


def _isnan(x):
    return ne(x, x)


def _floating(x):
    return str(x.dtype) in FLOATS


def _require_float(fn, x, hint=""):
    if not _floating(x):
        raise RuntimeError(f"d2s.{fn}(): expected a floating point tensor, got {x.dtype}"
                           f"{hint or '; cast it first (x.float()) or pass dtype='}")


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


def _count(x, axes):
    """How many elements each result of reducing ``x`` over ``axes`` (None: all) reads: an int,
    or a 0-d int64 tensor when one of those dims is known only when the program runs."""
    shape = x.shape
    nd = len(shape)
    n = 1
    for a in (range(nd) if axes is None or not nd else sorted({a % nd for a in axes})):
        n = n * shape[a]
    return n


# ------------------------------------------------------------------ sum, mean, nansum, nanmean
@tensor_method()
def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None, **unsupported):
    """Sum over ``dim`` (an int, a tuple, or None: all). bool and int32 inputs sum in int64, as in
    PyTorch; ``dtype`` casts the input first (and gives the result that dtype)."""
    A.no_extra("sum", unsupported)
    dt = A.dtype_name(dtype)
    x = input if dt is None else cast(input, dt)
    out = _reduce("reduce_sum", x, A.dims("sum", dim, axis), A.keep("sum", keepdim, keepdims))
    return out if dt is None or out.dtype == dt else cast(out, dt)


@grad_rule("reduce_sum")
def _sum_grad(ctx, g):
    x = ctx.inputs[0]
    g = _expand_reduced(g, x, ctx.attrs.get("axes"), ctx.attrs.get("keepdims", False))
    return (g * ones_like(x) if None in _shape(x) else broadcast_to(g, _shape(x)),)


shape_only("reduce_sum", 0)
onnx_converter("reduce_sum")(_reduce_onnx("ReduceSum"))


@tensor_method()
def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None, **unsupported):
    """Mean over ``dim`` (an int, a tuple, or None: all). As in PyTorch the input must be floating
    point, or ``dtype`` must name a floating dtype to compute in; an empty reduction is NaN."""
    A.no_extra("mean", unsupported)
    x = _as_tensor(input)
    dt = A.dtype_name(dtype)
    if dt is not None:
        if dt not in ("float32", "float64"):
            raise RuntimeError(f"d2s.mean(): dtype must be a floating dtype, got {dt}")
        x = cast(x, dt) if x.dtype != dt else x
    _require_float("mean", x, "; PyTorch cannot infer the output dtype either: cast it first (x.float()) "
                              "or pass dtype=d2s.float32")
    return _reduce("reduce_mean", x, A.dims("mean", dim, axis), A.keep("mean", keepdim, keepdims))


@grad_rule("reduce_mean")
def _mean_grad(ctx, g):
    x = ctx.inputs[0]
    shape = _shape(x)
    axes = ctx.attrs.get("axes")
    n_in = ones_like(x)
    g = _expand_reduced(g, x, axes, ctx.attrs.get("keepdims", False))
    ax = range(len(shape)) if axes is None or not shape else [a % len(shape) for a in axes]
    if None in [shape[a] for a in ax]:
        count = _reduce("reduce_sum", n_in, list(ax), True)
        return (g * n_in / count,)
    n = 1
    for a in ax:
        n *= shape[a]
    return (g * n_in / n if None in shape else broadcast_to(g / n, shape),)


shape_only("reduce_mean", 0)


@onnx_converter("reduce_mean")
def _mean_onnx(g, op):
    """ReduceMean, and NaN where it reads no element (onnxruntime gives 0 there; d2s and PyTorch
    NaN), unless every reduced dim is known to be non-empty."""
    x, out = op.inputs[0], op.outputs[0]
    axes, keep = op.attrs.get("axes"), int(bool(op.attrs.get("keepdims", False)))
    if axes is not None and len(axes) == 0:
        g.node("Identity", [g.cast(x, g.dtype(out))], [out])
        return
    xc = g.cast(x, g.dtype(out))
    shape = g.shape(x)
    reduced = range(len(shape)) if axes is None else [a % builtins.max(len(shape), 1) for a in axes]
    if builtins.all(shape[a] is not None and shape[a] > 0 for a in reduced if a < len(shape)):
        g.node("ReduceMean", [xc] + _axes_input(g, axes), [out], keepdims=keep)
        return
    m, n, empty = g.tmp(), g.tmp(), g.tmp()
    g.node("ReduceMean", [xc] + _axes_input(g, axes), [m], keepdims=keep)
    if axes is None:
        g.node("Size", [x], [n])
    else:
        s, dims = g.tmp(), g.tmp()
        g.node("Shape", [x], [s])
        g.node("Gather", [s, g.const(i64(list(reduced)))], [dims])
        g.node("ReduceProd", [dims], [n], keepdims=0)
    g.node("Equal", [n, g.const(i64(0))], [empty])
    g.node("Where", [empty, g.const(np.asarray(np.nan, dtype=g.dtype(out))), m], [out])


def _nan_to_zero(x):
    return where(_isnan(x), zeros_like(x), x) if _floating(x) else x


@tensor_method()
def nansum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None, **unsupported):
    """Sum over ``dim`` counting NaN as zero (integers: as :func:`sum`)."""
    A.no_extra("nansum", unsupported)
    x = _as_tensor(input)
    return sum(_nan_to_zero(x), dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)


@tensor_method()
def nanmean(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None, **unsupported):
    """Mean over ``dim`` of the elements that are not NaN (NaN where there are none)."""
    A.no_extra("nanmean", unsupported)
    x = _as_tensor(input)
    dt = A.dtype_name(dtype)
    if dt is not None and x.dtype != dt:
        x = cast(x, dt)
    _require_float("nanmean", x)
    axes, keep = A.dims("nanmean", dim, axis), A.keep("nanmean", keepdim, keepdims)
    count = _reduce("reduce_sum", cast(logical_not(_isnan(x)), x.dtype), axes, keep)
    return _reduce("reduce_sum", _nan_to_zero(x), axes, keep) / count


@tensor_method()
def count_nonzero(input, dim=None, *, axis=None, **unsupported):
    """How many elements over ``dim`` (an int, a tuple, or None: all) are not zero (int64)."""
    A.no_extra("count_nonzero", unsupported)
    return _reduce("reduce_sum", ne(input, 0), A.dims("count_nonzero", dim, axis))


# ------------------------------------------------------------------ max, min, amax, amin
def _is_other(v):
    """``max(x, other)``: a tensor or array second argument is the other operand, not a dim."""
    return isinstance(v, (Tensor, np.ndarray))


def _max_min(kind, input, dim, keepdim, axis, keepdims, other, unsupported):
    A.no_extra(kind, unsupported)
    if other is not None:
        if dim is not None:
            raise TypeError(f"d2s.{kind}(): give a dim or other=, not both")
        dim = other if _is_other(other) else _as_tensor(other)
    if _is_other(dim):
        if keepdim is not False or keepdims is not None or axis is not None:
            raise TypeError(f"d2s.{kind}(input, other): takes no keepdim or dim (it is the element-wise "
                            f"{kind}imum of two tensors)")
        return (maximum if kind == "max" else minimum)(input, dim)
    d = A.one_dim(kind, dim, axis)
    keep = A.keep(kind, keepdim, keepdims)
    if d is None:  # the full reduction (PyTorch takes no keepdim here; d2s keeps the dims if asked)
        return _reduce("reduce_max" if kind == "max" else "reduce_min", input, None, keep)
    x = _as_tensor(input)
    if x.ndim == 0 and d not in (-1, 0):  # PyTorch takes dim 0 or -1 of a 0-d tensor
        raise IndexError(f"d2s.{kind}(): dim {d} is out of range for a 0-d tensor (expected -1 or 0)")
    values, indices = apply(f"{kind}_dim", x, axis=d, keepdims=keep)
    return getattr(return_types, kind)(values, indices)


@tensor_method()
def max(input, dim=None, keepdim=False, *, axis=None, keepdims=None, other=None, **unsupported):
    """As ``torch.max``: ``max(x)`` is the largest element; ``max(x, dim, keepdim=False)`` is the
    named tuple ``(values, indices)`` of the largest elements along ``dim`` (the first one where
    several are equal; NaN counts as the largest); ``max(x, other)`` (or ``other=``) with a tensor
    ``other`` is :func:`maximum`. The gradient of ``values`` goes to the selected elements, that of
    ``max(x)`` is shared by all elements equal to the result (as in PyTorch)."""
    return _max_min("max", input, dim, keepdim, axis, keepdims, other, unsupported)


@tensor_method()
def min(input, dim=None, keepdim=False, *, axis=None, keepdims=None, other=None, **unsupported):
    """As ``torch.min``: the smallest element, ``(values, indices)`` along ``dim``, or
    :func:`minimum` with a tensor ``other`` (see :func:`max`)."""
    return _max_min("min", input, dim, keepdim, axis, keepdims, other, unsupported)


@tensor_method()
def amax(input, dim=(), keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """Largest values over ``dim`` (an int, a tuple; ``()`` or None: all). Its gradient is shared
    evenly by the elements equal to the maximum (in a slice holding NaN, by its NaN elements, as
    for ``max(x)``; PyTorch's amax gives NaN gradients there)."""
    A.no_extra("amax", unsupported)
    return _reduce("reduce_max", input, A.dims("amax", dim, axis), A.keep("amax", keepdim, keepdims))


@tensor_method()
def amin(input, dim=(), keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """Smallest values over ``dim`` (an int, a tuple; ``()`` or None: all); see :func:`amax`."""
    A.no_extra("amin", unsupported)
    return _reduce("reduce_min", input, A.dims("amin", dim, axis), A.keep("amin", keepdim, keepdims))


@tensor_method()
def aminmax(input, *, dim=None, keepdim=False, axis=None, keepdims=None, **unsupported):
    """The named tuple ``(min, max)`` over ``dim`` (one int, or None: all)."""
    A.no_extra("aminmax", unsupported)
    d = A.one_dim("aminmax", dim, axis)
    axes, keep = (None if d is None else [d]), A.keep("aminmax", keepdim, keepdims)
    return return_types.aminmax(_reduce("reduce_min", input, axes, keep), _reduce("reduce_max", input, axes, keep))


@grad_rule("reduce_max", "reduce_min")
def _maxmin_reduce_grad(ctx, g):
    x, y, g = _reduction_operands(ctx, g)
    axes = ctx.attrs.get("axes")
    hit = eq(x, y)
    if _floating(x):  # a NaN result came from the NaN elements (PyTorch's evenly_distribute_backward)
        hit = logical_or(hit, logical_and(_isnan(x), _isnan(y)))
    hit = cast(hit, g.dtype)
    # ties share the gradient evenly
    count = _reduce("reduce_sum", hit, axes, True)
    return (g * hit / count,)


def _nan_guard(g, x, r, axes, keep, out, dtype):
    """``out`` = NaN where the reduction of ``x`` over ``axes`` reads a NaN, else ``r``
    (onnxruntime's ReduceMax/ReduceMin skip NaN; d2s and PyTorch propagate it)."""
    isn, flag, anyn, anyb = g.tmp(), g.tmp(), g.tmp(), g.tmp()
    g.node("IsNaN", [x], [isn])
    g.node("Cast", [isn], [flag], to=g.onnx_dtype(dtype))
    g.node("ReduceMax", [flag] + _axes_input(g, axes), [anyn], keepdims=keep)
    g.node("Cast", [anyn], [anyb], to=g.onnx_dtype("bool"))
    g.node("Where", [anyb, g.const(np.asarray(np.nan, dtype=dtype)), r], [out])


def _maxmin_onnx(onnx_name):
    def conv(g, op):
        axes, keep = op.attrs.get("axes"), int(bool(op.attrs.get("keepdims", False)))
        dt = g.dtype(op.outputs[0])
        x = g.cast(op.inputs[0], dt)
        if axes is not None and len(axes) == 0:
            g.node("Identity", [x], op.outputs)
            return
        if dt not in ("float32", "float64"):
            g.node(onnx_name, [x] + _axes_input(g, axes), op.outputs, keepdims=keep)
            return
        r = g.tmp()
        g.node(onnx_name, [x] + _axes_input(g, axes), [r], keepdims=keep)
        _nan_guard(g, x, r, axes, keep, op.outputs[0], dt)
    return conv


onnx_converter("reduce_max")(_maxmin_onnx("ReduceMax"))
onnx_converter("reduce_min")(_maxmin_onnx("ReduceMin"))


@grad_rule("max_dim", "min_dim")
def _selected_grad(ctx, g, _g_indices=None):
    """The gradient of values selected along an axis (max/min with a dim, sort, topk, kthvalue,
    median, mode): each goes to the element it was taken from, as PyTorch's."""
    x, idx = ctx.inputs[0], ctx.outputs[1]
    nd = len(_shape(x))
    if nd == 0:
        return (g,)
    axis = ctx.attrs.get("axis", -1) % nd
    if not ctx.attrs.get("keepdims", True):  # (sort and topk keep the axis)
        g, idx = unsqueeze(g, axis), unsqueeze(idx, axis)
    return (apply("scatter_add", zeros_like(x), idx, g, axis=axis),)


for _op in ("max_dim", "min_dim"):
    reads_outputs(_op, 1)  # the indices: the values may be written in place afterwards
    shape_only(_op, 0)     # the input's shape only


def gather_selected(g, x, idx_kept, axis, keep, out_values, out_indices):
    """ONNX: the values at ``idx_kept`` (the indices with ``axis`` kept) along ``axis``, and both
    squeezed unless ``keep``, written to the op's two outputs."""
    if keep:
        g.node("GatherElements", [x, idx_kept], [out_values], axis=axis)
        g.node("Identity", [idx_kept], [out_indices])
        return
    v = g.tmp()
    g.node("GatherElements", [x, idx_kept], [v], axis=axis)
    g.node("Squeeze", [v, g.const(i64([axis]))], [out_values])
    g.node("Squeeze", [idx_kept, g.const(i64([axis]))], [out_indices])


def _maxmin_dim_onnx(onnx_name):
    def conv(g, op):
        x = op.inputs[0]
        if not g.shape(x):
            g.node("Identity", [x], [op.outputs[0]])
            g.node("Constant", [], [op.outputs[1]], value=g.x.numpy_helper.from_array(i64(0)))
            return
        axis = op.attrs["axis"] % len(g.shape(x))
        idx = g.tmp()
        _arg_nan_guarded(g, onnx_name, x, axis, 1, idx)
        gather_selected(g, x, idx, axis, bool(op.attrs.get("keepdims", False)), *op.outputs)
    return conv


# ------------------------------------------------------------------ prod
@tensor_method()
def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None, **unsupported):
    """Product over ``dim`` (an int, a tuple, or None: all); bool and int32 multiply in int64."""
    A.no_extra("prod", unsupported)
    dt = A.dtype_name(dtype)
    x = input if dt is None else cast(input, dt)
    out = _reduce("reduce_prod", x, A.dims("prod", dim, axis), A.keep("prod", keepdim, keepdims))
    return out if dt is None or out.dtype == dt else cast(out, dt)


@grad_rule("reduce_prod")
def _prod_grad(ctx, g):
    x, y, g = _reduction_operands(ctx, g)
    axes = ctx.attrs.get("axes")
    # y / x is wrong where x == 0: there, multiply the other factors directly
    nonzero = ne(x, 0)
    safe = where(nonzero, x, 1)
    others = _reduce("reduce_prod", safe, axes, True)
    zeros = _reduce("reduce_sum", cast(logical_not(nonzero), x.dtype), axes, True)
    grad_nz = where(eq(zeros, 0), y / safe, zeros_like(y))
    grad_z = where(eq(zeros, 1), others, zeros_like(others))
    return (g * where(nonzero, grad_nz, grad_z),)


onnx_converter("reduce_prod")(_reduce_onnx("ReduceProd"))


# ------------------------------------------------------------------ any, all
@tensor_method()
def any(input, dim=None, keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """Whether any element over ``dim`` (an int, a tuple, or None: all) is true (non-zero)."""
    A.no_extra("any", unsupported)
    return _uint8_stays(input, _reduce("reduce_any", input, A.dims("any", dim, axis), A.keep("any", keepdim, keepdims)))


@tensor_method()
def all(input, dim=None, keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """Whether every element over ``dim`` (an int, a tuple, or None: all) is true (non-zero)."""
    A.no_extra("all", unsupported)
    return _uint8_stays(input, _reduce("reduce_all", input, A.dims("all", dim, axis), A.keep("all", keepdim, keepdims)))


def _uint8_stays(x, result):
    """PyTorch's ``any``/``all`` of a uint8 tensor are uint8 (0 or 1), of every other dtype bool."""
    return apply("cast", result, dtype="uint8") if str(x.dtype) == "uint8" else result


non_differentiable("reduce_any", "reduce_all", reason="a bool result carries no gradient")


def _logical_reduce_onnx(onnx_name):
    def conv(g, op):
        # to bool first: a negative number is true, but would win a ReduceMin of the raw values
        x, r = g.tmp(), g.tmp()
        g.node("Cast", [g.cast(op.inputs[0], "bool")], [x], to=g.onnx_dtype("int64"))
        g.node(onnx_name, [x] + _axes_input(g, op.attrs.get("axes")), [r],
               keepdims=int(bool(op.attrs.get("keepdims", False))))
        g.node("Cast", [r], op.outputs, to=g.onnx_dtype("bool"))
    return conv


onnx_converter("reduce_any")(_logical_reduce_onnx("ReduceMax"))
onnx_converter("reduce_all")(_logical_reduce_onnx("ReduceMin"))


# ------------------------------------------------------------------ argmax, argmin
@tensor_method()
def argmax(input, dim=None, keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """Index (int64) of the largest element along ``dim`` (one int; None: of the flattened tensor):
    the first one where several are equal, a NaN counting as the largest."""
    A.no_extra("argmax", unsupported)
    return apply("argmax", input, axis=A.one_dim("argmax", dim, axis), keepdims=A.keep("argmax", keepdim, keepdims))


@tensor_method()
def argmin(input, dim=None, keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """Index (int64) of the smallest element along ``dim`` (see :func:`argmax`; NaN counts as the
    smallest here, as in PyTorch)."""
    A.no_extra("argmin", unsupported)
    return apply("argmin", input, axis=A.one_dim("argmin", dim, axis), keepdims=A.keep("argmin", keepdim, keepdims))


non_differentiable("argmax", "argmin", reason="an index carries no gradient")


def _arg_nan_guarded(g, onnx_name, x, axis, keep, out):
    """ArgMax/ArgMin, then the first NaN's index where the slice holds one (onnxruntime skips NaN)."""
    if g.dtype(x) not in ("float32", "float64"):
        g.node(onnx_name, [g.cast(x, "int32") if g.dtype(x) == "bool" else x], [out], axis=axis, keepdims=keep)
        return
    r, isn, flag, first, anyn, anyb = (g.tmp() for _ in range(6))
    g.node(onnx_name, [x], [r], axis=axis, keepdims=keep)
    g.node("IsNaN", [x], [isn])
    g.node("Cast", [isn], [flag], to=g.onnx_dtype("int32"))
    g.node("ArgMax", [flag], [first], axis=axis, keepdims=keep)
    g.node("ReduceMax", [flag, g.const(i64([axis]))], [anyn], keepdims=keep)
    g.node("Cast", [anyn], [anyb], to=g.onnx_dtype("bool"))
    g.node("Where", [anyb, first, r], [out])


def _arg_onnx(onnx_name):
    def conv(g, op):
        axis = op.attrs.get("axis")
        x = op.inputs[0]
        keep = int(bool(op.attrs.get("keepdims", False)))
        if axis is not None and len(g.shape(x)):
            _arg_nan_guarded(g, onnx_name, x, int(axis), keep, op.outputs[0])
            return
        flat, r = g.tmp(), g.tmp()
        g.node("Reshape", [x, g.const(i64([-1]))], [flat])
        g.types[flat] = g.types[x]  # only its dtype is read
        _arg_nan_guarded(g, onnx_name, flat, 0, 0, r)
        shape = [1] * len(g.shape(x)) if keep else []
        g.node("Reshape", [r, g.const(i64(shape))], op.outputs)
    return conv


onnx_converter("argmax")(_arg_onnx("ArgMax"))
onnx_converter("argmin")(_arg_onnx("ArgMin"))
onnx_converter("max_dim")(_maxmin_dim_onnx("ArgMax"))
onnx_converter("min_dim")(_maxmin_dim_onnx("ArgMin"))
sample_call("max_dim", lambda x: max(x, 1), (3, 4))
sample_call("min_dim", lambda x: min(x, 0, keepdim=True), (3, 4))


# ------------------------------------------------------------------ var, std (composed)
def _safe_sqrt(v):
    """``sqrt(v)`` whose gradient at 0 is 0, as PyTorch's std and norm mask it there (sqrt's own
    rule would give inf * 0 = NaN): the square root never sees the zeros."""
    zero = eq(v, 0)
    return where(zero, zeros_like(v), sqrt(where(zero, ones_like(v), v)))


def _correction(fn, dim, unbiased, correction):
    """(dim, correction) from PyTorch's overloads: ``f(x, dim, unbiased, keepdim)``, ``f(x, unbiased)``
    and ``f(x, dim, *, correction=1)``."""
    if isinstance(dim, (bool, np.bool_)):  # std(x, False): the unbiased flag given first
        if unbiased is not None:
            raise TypeError(f"d2s.{fn}(): got unbiased twice")
        dim, unbiased = None, bool(dim)
    if unbiased is not None and correction is not None:
        raise TypeError(f"d2s.{fn}(): give unbiased= or correction=, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _var(fn, x, axes, correction, keep):
    """Two-pass variance: sum((x - mean)**2) / max(n - correction, 0) (0/0 = NaN, as PyTorch)."""
    _require_float(fn, x, "; std and var take floating point tensors only, as in PyTorch")
    d = x - _reduce("reduce_mean", x, axes, True)
    s = _reduce("reduce_sum", d * d, axes, keep)
    n = _count(x, axes)
    if isinstance(n, Tensor):
        return s / cast(maximum(n - correction, 0), x.dtype)
    return s / builtins.max(n - correction, 0)  # 0: NaN or inf, as in PyTorch (which warns too)


def _var_call(fn, input, dim, unbiased, keepdim, correction, axis, keepdims, unsupported):
    A.no_extra(fn, unsupported)
    dim, c = _correction(fn, dim, unbiased, correction)
    x = _as_tensor(input)
    return x, A.dims(fn, dim, axis), c, A.keep(fn, keepdim, keepdims)


@tensor_method()
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None,
        **unsupported):
    """Variance over ``dim`` (an int, a tuple, or None: all), dividing by ``n - correction``
    (``correction=1`` by default; ``unbiased=False`` is ``correction=0``), as ``torch.var``."""
    x, axes, c, keep = _var_call("var", input, dim, unbiased, keepdim, correction, axis, keepdims, unsupported)
    return _var("var", x, axes, c, keep)


@tensor_method()
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None,
        **unsupported):
    """Standard deviation over ``dim``: the square root of :func:`var` (same arguments); its
    gradient is 0 where it is 0, as in PyTorch."""
    x, axes, c, keep = _var_call("std", input, dim, unbiased, keepdim, correction, axis, keepdims, unsupported)
    return _safe_sqrt(_var("std", x, axes, c, keep))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None,
             **unsupported):
    """The tuple ``(var, mean)`` over ``dim`` (arguments of :func:`var`)."""
    x, axes, c, keep = _var_call("var_mean", input, dim, unbiased, keepdim, correction, axis, keepdims, unsupported)
    return _var("var_mean", x, axes, c, keep), _reduce("reduce_mean", x, axes, keep)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None,
             **unsupported):
    """The tuple ``(std, mean)`` over ``dim`` (arguments of :func:`var`)."""
    x, axes, c, keep = _var_call("std_mean", input, dim, unbiased, keepdim, correction, axis, keepdims, unsupported)
    return _safe_sqrt(_var("std_mean", x, axes, c, keep)), _reduce("reduce_mean", x, axes, keep)


# ------------------------------------------------------------------ norms (composed; d2s.linalg has the rest)
def _vector_norm(fn, x, ord, axes, keep, dtype=None):
    """``sum(|x|**ord) ** (1/ord)`` over ``axes`` (None: all), with PyTorch's special ords (2, 1,
    0, inf, -inf) and its zero gradient where the norm is 0."""
    x = _as_tensor(x)
    dt = A.dtype_name(dtype)
    if dt is not None and x.dtype != dt:
        x = cast(x, dt)
    _require_float(fn, x, "; norms take floating point tensors only, as in PyTorch")
    if isinstance(ord, str):
        raise ValueError(f"d2s.{fn}(): ord {ord!r} is a matrix norm; use d2s.linalg.matrix_norm or a number")
    p = float(ord)
    if p == 2:
        return _safe_sqrt(_reduce("reduce_sum", x * x, axes, keep))
    if p == 1:
        return _reduce("reduce_sum", _abs(x), axes, keep)
    if p == math.inf:
        return _reduce("reduce_max", _abs(x), axes, keep)
    if p == -math.inf:
        return _reduce("reduce_min", _abs(x), axes, keep)
    if p == 0:  # how many are non-zero; a zero gradient (x * 0 where x is zero), as PyTorch's
        nz = ne(x, 0)
        return _reduce("reduce_sum", where(nz, ones_like(x), x * 0), axes, keep)
    a = _abs(x)
    if 0 < p < 1:  # |x|**p has an infinite slope at 0: PyTorch's gradient there is 0, not 0 * inf
        nz = ne(x, 0)
        powered = where(nz, _pow(where(nz, a, ones_like(a)), p), zeros_like(a))
    else:
        powered = _pow(a, p)
    s = _reduce("reduce_sum", powered, axes, keep)
    if p < 0:
        return _pow(s, 1.0 / p)
    zero = eq(s, 0)
    return where(zero, zeros_like(s), _pow(where(zero, ones_like(s), s), 1.0 / p))


def _matrix_norm(fn, x, ord, dims, keep, dtype=None):
    """PyTorch's matrix norms over the two ``dims``: 'fro', 1, -1, inf, -inf ('nuc', 2 and -2 come
    from singular values: ``d2s.linalg.matrix_norm``)."""
    x = _as_tensor(x)
    nd = x.ndim
    if nd < 2:
        raise RuntimeError(f"d2s.{fn}(): a matrix norm needs a tensor with at least 2 dims, got {nd}")
    if len(dims) != 2:
        raise RuntimeError(f"d2s.{fn}(): a matrix norm reduces 2 dims, got dim={dims}")
    d0, d1 = (int(d) % nd for d in dims)
    if d0 == d1:
        raise RuntimeError(f"d2s.{fn}(): the two dims must differ, got {dims}")
    if ord == "fro":
        return _vector_norm(fn, x, 2, [d0, d1], keep, dtype)
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"d2s.{fn}(): ord={ord!r} comes from singular values: use "
                                  f"d2s.linalg.matrix_norm")
    if isinstance(ord, str) or float(ord) not in (1.0, -1.0, math.inf, -math.inf):
        raise ValueError(f"d2s.{fn}(): ord must be one of 'fro', 'nuc', inf, -inf, 1, -1, 2, -2; got {ord!r}")
    dt = A.dtype_name(dtype)
    if dt is not None and x.dtype != dt:
        x = cast(x, dt)
    _require_float(fn, x, "; norms take floating point tensors only, as in PyTorch")
    a = _abs(x)
    # 1: the largest column sum (sum over d0, then max over d1); inf: the largest row sum
    inner, outer = (d0, d1) if float(ord) in (1.0, -1.0) else (d1, d0)
    sums = _reduce("reduce_sum", a, [inner], True)
    out = _reduce("reduce_max" if float(ord) > 0 else "reduce_min", sums, [outer], True)
    return out if keep else apply("squeeze", out, axes=sorted([d0, d1]))


@tensor_method()
def norm(input, p="fro", dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None, **unsupported):
    """``torch.norm``: the 2-norm of all elements (``p='fro'``, the default, or 2), or the vector
    ``p``-norm (a number: 1, inf, 0, 3, ...) over ``dim`` (an int, a tuple, or None: all).
    ``p='nuc'`` raises: ``d2s.linalg.matrix_norm(A, 'nuc')`` computes it."""
    A.no_extra("norm", unsupported)
    axes, keep = A.dims("norm", dim, axis), A.keep("norm", keepdim, keepdims)
    if p == "fro":
        if axes is not None and len(axes) > 2:
            raise RuntimeError(f"d2s.norm(): p='fro' reduces at most 2 dims, got dim={dim}")
        return _vector_norm("norm", input, 2, axes, keep, dtype)
    if p == "nuc":
        x = _as_tensor(input)
        return _matrix_norm("norm", x, "nuc", axes or [-2, -1], keep, dtype)
    if isinstance(p, str):
        raise ValueError(f"d2s.norm(): p must be a number, 'fro' or 'nuc'; got {p!r}")
    return _vector_norm("norm", input, p, axes, keep, dtype)


# ------------------------------------------------------------------ cumprod, logcumsumexp
def _scan_dim(fn, dim, axis):
    d = A.one_dim(fn, dim, axis)
    if d is None:
        raise TypeError(f"d2s.{fn}() missing its dim argument (the dim to run along)")
    return d


@tensor_method()
def cumprod(input, dim=None, *, dtype=None, axis=None, **unsupported):
    """Running product along ``dim``; bool and int32 inputs multiply in int64, as in PyTorch;
    ``dtype`` casts the input first. The gradient is exact where the input holds zeros."""
    A.no_extra("cumprod", unsupported)
    dt = A.dtype_name(dtype)
    x = input if dt is None else cast(input, dt)
    out = apply("cumprod", x, axis=_scan_dim("cumprod", dim, axis))
    return out if dt is None or out.dtype == dt else cast(out, dt)


@grad_rule("cumprod")
def _cumprod_grad(ctx, g):
    # d y_j / d x_k = prod_{i <= j, i != k} x_i. Before a slice's first zero this is y_j / x_k;
    # after it, every term holds that zero; at the first zero z it is the running product of x
    # with x_z replaced by 1. Each part is a cumprod or a reversed cumsum: O(n), exact with zeros.
    x, y = ctx.inputs[0], ctx.outputs[0]
    axis = ctx.attrs["axis"]
    if len(_shape(x)) == 0:
        return (g,)
    zero = eq(x, 0)
    zeros_so_far = apply("cumsum", cast(zero, "int64"), axis=axis)
    before = eq(zeros_so_far, 0)
    first_zero = logical_and(zero, eq(zeros_so_far, 1))
    rev = lambda t: apply("cumsum", t, axis=axis, reverse=True)  # noqa: E731  (sum over j >= k)
    grad_before = rev(g * y) / where(before, x, ones_like(x))
    y_without = apply("cumprod", where(first_zero, ones_like(x), x), axis=axis)
    grad_zero = rev(g * y_without)
    return (where(before, grad_before, where(first_zero, grad_zero, zeros_like(x))),)


onnx_unsupported("cumprod", reason="ONNX has no cumulative product (only CumSum); compute it outside the model "
                                   "or with a loop")


@tensor_method()
def logcumsumexp(input, dim=None, *, axis=None, **unsupported):
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably (PyTorch's values where exp would
    overflow or underflow)."""
    A.no_extra("logcumsumexp", unsupported)
    x = _as_tensor(input)
    _require_float("logcumsumexp", x)
    return apply("logcumsumexp", x, axis=_scan_dim("logcumsumexp", dim, axis))


@grad_rule("logcumsumexp")
def _logcumsumexp_grad(ctx, g):
    # grad_k = sum_{j >= k} g_j exp(x_k - y_j), in log space with the positive and negative parts
    # of g apart (TensorFlow's and PyTorch's formulation): no exp overflows
    x, y = ctx.inputs[0], ctx.outputs[0]
    axis, reverse = ctx.attrs["axis"], not ctx.attrs.get("reverse", False)
    lowest = full_like(g, float(np.finfo(str(g.dtype)).min))
    log_abs = log(where(ne(g, 0), _abs(g), ones_like(g)))  # only read where g != 0
    pos = apply("logcumsumexp", where(g > 0, log_abs, lowest) - y, axis=axis, reverse=reverse)
    neg = apply("logcumsumexp", where(g < 0, log_abs, lowest) - y, axis=axis, reverse=reverse)
    return (exp(pos + x) - exp(neg + x),)


onnx_unsupported("logcumsumexp", reason="ONNX has no running log-sum-exp, and exp/CumSum/log would overflow "
                                        "or lose the small terms that d2s and PyTorch keep")
