"""Sorting and selection with PyTorch's signatures and named-tuple results (runtime:
``d2s_runtime/ops/sorting.py``): sort, argsort, topk, kthvalue, median, mode, and unique (eager
only): for each op its public wrapper, its gradient rule and its ONNX converter, side by side.

The primitives return int64 indices; the values are gathered with them (``gather``), so a
value's gradient goes to the element it came from, as PyTorch's does. NaN sorts as the largest
value; sorts are stable. Where PyTorch's own order of equal values is an accident of its
algorithm (``topk``, ``kthvalue`` and ``median`` indices among ties), d2s gives the stable
order: the values are equal, the indices of ties may differ.
"""
import numpy as np

from .. import return_types
from ..autograd.registry import non_differentiable, sample_call
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter, onnx_unsupported
from ..tensor import Tensor, tensor, tensor_method
from . import _dim_args as A
from .elementwise import eq, logical_and, logical_or, ne, where
from .reduce import _floating, _isnan
from ._util import _as_tensor

_INDICES = "indices carry no gradient (the values are gathered with them, and gather has one)"
non_differentiable("argsort", "topk", "select_index", "mode_index", reason=_INDICES)


def _gathered(x, idx, axis, keep=True):
    """``x``'s elements at ``idx`` along ``axis`` (indices of a reduced dim when ``keep`` is False)."""
    if x.ndim == 0:
        return apply("reshape", x, shape=[])
    if not keep:
        idx = apply("expand_dims", idx, axis=axis)
    values = apply("gather", x, idx, axis=axis)
    return values if keep else apply("squeeze", values, axes=[axis])


def _axis(x, d):
    """``d`` as a non-negative axis of ``x`` (0 for a 0-d tensor, which takes 0 or -1)."""
    nd = x.ndim
    if not -max(nd, 1) <= d < max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, {max(nd, 1) - 1}], "
                         f"but got {d})")
    return d % nd if nd else 0


# ------------------------------------------------------------------ sort, argsort
@tensor_method()
def sort(input, dim=-1, descending=False, stable=False, *, axis=None, **unsupported):
    """The named tuple ``(values, indices)`` of ``input`` sorted along ``dim`` (ascending unless
    ``descending``). The sort is always stable (``stable=True`` changes nothing); NaN sorts as
    the largest value (last ascending, first descending), as in PyTorch."""
    A.no_extra("sort", unsupported)
    x = _as_tensor(input)
    d = _axis(x, A.one_dim("sort", dim, axis))
    idx = apply("argsort", x, axis=d, descending=bool(descending))
    return return_types.sort(_gathered(x, idx, d), idx)


@tensor_method()
def argsort(input, dim=-1, descending=False, stable=False, *, axis=None, **unsupported):
    """The indices (int64) that sort ``input`` along ``dim``: the ``indices`` of :func:`sort`."""
    A.no_extra("argsort", unsupported)
    x = _as_tensor(input)
    return apply("argsort", x, axis=_axis(x, A.one_dim("argsort", dim, axis)), descending=bool(descending))


def _topk_shape_onnx(g, x, axis):
    """The size of ``x``'s dim ``axis`` as a 1-element int64 tensor (ONNX TopK's K)."""
    n = g.shape(x)[axis]
    if n is not None:
        return g.const(i64([n]))
    s, k = g.tmp(), g.tmp()
    g.node("Shape", [x], [s])
    g.node("Gather", [s, g.const(i64([axis]))], [k])
    return k


def _topk_input(g, x):
    """ONNX TopK takes numbers, not bools: a bool input sorts as 0/1 ints."""
    return g.cast(x, "int32") if g.dtype(x) == "bool" else x


@onnx_converter("argsort")
def _argsort_onnx(g, op):
    x = op.inputs[0]
    if not g.shape(x):
        g.node("Constant", [], op.outputs, value=g.x.numpy_helper.from_array(i64(0)))
        return
    axis = op.attrs.get("axis", -1) % len(g.shape(x))
    # TopK over the whole dim: equal values keep their order and NaN counts as the largest, as here
    g.node("TopK", [_topk_input(g, x), _topk_shape_onnx(g, x, axis)], [g.tmp(), op.outputs[0]], axis=axis,
           largest=int(bool(op.attrs.get("descending", False))), sorted=1)


sample_call("argsort", argsort, (3, 5))


# ------------------------------------------------------------------ topk
@tensor_method()
def topk(input, k, dim=-1, largest=True, sorted=True, *, axis=None, **unsupported):
    """The named tuple ``(values, indices)`` of the ``k`` largest (``largest=False``: smallest)
    elements along ``dim``, best first (also with ``sorted=False``); NaN counts as the largest.
    Among equal values the earlier element comes first (PyTorch's order of ties is its
    algorithm's: the values agree, the indices of ties may not)."""
    A.no_extra("topk", unsupported)
    x = _as_tensor(input)
    d = _axis(x, A.one_dim("topk", dim, axis))
    idx = apply("topk", x, k=int(k), axis=d, largest=bool(largest))
    return return_types.topk(_gathered(x, idx, d), idx)


@onnx_converter("topk")
def _topk_onnx(g, op):
    x = op.inputs[0]
    if not g.shape(x):
        g.node("Constant", [], op.outputs, value=g.x.numpy_helper.from_array(i64(0)))
        return
    axis = op.attrs.get("axis", -1) % len(g.shape(x))
    g.node("TopK", [_topk_input(g, x), g.const(i64([op.attrs["k"]]))], [g.tmp(), op.outputs[0]], axis=axis,
           largest=int(bool(op.attrs.get("largest", True))), sorted=1)


sample_call("topk", lambda x: topk(x, 2, 0), (3, 5))


# ------------------------------------------------------------------ kthvalue, median
@tensor_method()
def kthvalue(input, k, dim=-1, keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """The named tuple ``(values, indices)`` of the ``k``-th smallest element (``k`` counts from 1)
    along ``dim``; NaN counts as the largest. Among equal values the index is the stable sort's."""
    A.no_extra("kthvalue", unsupported)
    x = _as_tensor(input)
    d = _axis(x, A.one_dim("kthvalue", dim, axis))
    keep = A.keep("kthvalue", keepdim, keepdims)
    idx = apply("select_index", x, axis=d, k=int(k) - 1, keepdims=keep)
    return return_types.kthvalue(_gathered(x, idx, d, keep), idx)


@tensor_method()
def median(input, dim=None, keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """As ``torch.median``: ``median(x)`` is the lower median of all elements (the smaller middle
    one of an even count; NaN if any element is NaN), its gradient shared by the elements equal
    to it; ``median(x, dim, keepdim=False)`` is the named tuple ``(values, indices)`` along
    ``dim``, its gradient going to the selected elements."""
    A.no_extra("median", unsupported)
    x = _as_tensor(input)
    d = A.one_dim("median", dim, axis)
    keep = A.keep("median", keepdim, keepdims)
    if d is None:
        return _median_all(x, keep)
    d = _axis(x, d)
    idx = apply("select_index", x, axis=d, keepdims=keep)
    return return_types.median(_gathered(x, idx, d, keep), idx)


def _median_all(x, keep):
    flat = apply("reshape", x, shape=[-1])
    v = _gathered(flat, apply("select_index", flat, axis=0), 0, keep=False)
    if not _floating(flat):  # no gradient to share
        return apply("reshape", v, shape=[1] * x.ndim) if keep else v
    # PyTorch shares the gradient among the elements equal to the median (NaN ones where it is
    # NaN): the max over those elements (the min when the median is -inf, so the fill stays
    # apart) has that gradient, and its value is the median
    picked = logical_or(eq(flat, v.detach()), logical_and(_isnan(flat), _isnan(v.detach())))
    inf = np.asarray(np.inf, dtype=str(flat.dtype))
    hi = apply("reduce_max", where(picked, flat, -inf), axes=None, keepdims=False)
    lo = apply("reduce_min", where(picked, flat, inf), axes=None, keepdims=False)
    out = where(eq(v.detach(), -inf), lo, hi)
    return apply("reshape", out, shape=[1] * x.ndim) if keep else out


@onnx_converter("select_index")
def _select_index_onnx(g, op):
    """TopK of the k + 1 smallest, then its last index (TopK's order of ties and of NaN is the
    kernel's); for the median, k = (n - 1) // 2 and the first NaN wins."""
    x, out = op.inputs[0], op.outputs[0]
    shape = g.shape(x)
    keep = bool(op.attrs.get("keepdims", False))
    if not shape:
        g.node("Constant", [], [out], value=g.x.numpy_helper.from_array(i64(0)))
        return
    axis = op.attrs.get("axis", -1) % len(shape)
    k = op.attrs.get("k")
    xs = _topk_input(g, x)
    if k is not None:
        kk, pos = g.const(i64([k + 1])), g.const(i64(k))
    else:
        s, n, m, pos, k1, kk = (g.tmp() for _ in range(6))
        g.node("Shape", [x], [s])
        g.node("Gather", [s, g.const(i64(axis))], [n])
        g.node("Sub", [n, g.const(i64(1))], [m])
        g.node("Div", [m, g.const(i64(2))], [pos])
        g.node("Add", [pos, g.const(i64(1))], [k1])
        g.node("Reshape", [k1, g.const(i64([1]))], [kk])
    idx, sel = g.tmp(), g.tmp()
    g.node("TopK", [xs, kk], [g.tmp(), idx], axis=axis, largest=0, sorted=1)
    g.node("Gather", [idx, pos], [sel], axis=axis)
    if keep:
        kept = g.tmp()
        g.node("Unsqueeze", [sel, g.const(i64([axis]))], [kept])
        sel = kept
    if k is not None or g.dtype(x) not in ("float32", "float64"):
        g.node("Identity", [sel], [out])
        return
    isn, flag, first, anyn, anyb = (g.tmp() for _ in range(5))
    g.node("IsNaN", [x], [isn])
    g.node("Cast", [isn], [flag], to=g.onnx_dtype("int32"))
    g.node("ArgMax", [flag], [first], axis=axis, keepdims=int(keep))
    g.node("ReduceMax", [flag, g.const(i64([axis]))], [anyn], keepdims=int(keep))
    g.node("Cast", [anyn], [anyb], to=g.onnx_dtype("bool"))
    g.node("Where", [anyb, first, sel], [out])


sample_call("select_index", lambda x: (kthvalue(x, 2), median(x, 0, keepdim=True)), (3, 5))


# ------------------------------------------------------------------ mode
@tensor_method()
def mode(input, dim=-1, keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """The named tuple ``(values, indices)`` of the most frequent value along ``dim`` (the
    smallest of equally frequent ones) and the index of its last occurrence, as ``torch.mode``."""
    A.no_extra("mode", unsupported)
    x = _as_tensor(input)
    d = _axis(x, A.one_dim("mode", dim, axis))
    keep = A.keep("mode", keepdim, keepdims)
    idx = apply("mode_index", x, axis=d, keepdims=keep)
    return return_types.mode(_gathered(x, idx, d, keep), idx)


onnx_unsupported("mode_index", reason="ONNX has no operator counting equal values along an axis")


# ------------------------------------------------------------------ unique (eager only)
@tensor_method()
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None, **unsupported):
    """The distinct elements of ``input`` in ascending order (``sorted=False`` gives the same
    order, as PyTorch's CPU kernel does), with the index of each input element in them
    (``return_inverse``) and how often each occurs (``return_counts``); with ``dim``, the
    distinct slices along it. NaNs are all distinct, as in PyTorch. Eager only: the result's
    length depends on the data, which a program's shapes cannot."""
    A.no_extra("unique", unsupported)
    x = _as_tensor(input)
    if x.is_symbolic:
        raise TypeError("d2s.unique() cannot run inside a program (to_static, build_program): the number of "
                        "distinct values is known only from the data; call it outside the converted function, "
                        "or keep it eager with @d2s.jit.not_to_static")
    arr = x._concrete("unique")
    xp_arr = np.asarray(arr.get() if hasattr(arr, "get") else arr)
    if dim is None:
        vals, inv, counts = np.unique(xp_arr.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
        inv = inv.reshape(xp_arr.shape)
    else:
        d = _axis(x, A.one_dim("unique", dim))
        vals, inv, counts = np.unique(xp_arr, return_inverse=True, return_counts=True, axis=d, equal_nan=False)
        inv = inv.reshape(-1)
    out = [tensor(vals.astype(xp_arr.dtype, copy=False), device=x.device)]
    if return_inverse:
        out.append(tensor(inv.astype(np.int64), device=x.device))
    if return_counts:
        out.append(tensor(counts.astype(np.int64), device=x.device))
    return out[0] if len(out) == 1 else tuple(out)
