"""Sorting and selection with PyTorch's signatures and named-tuple results (runtime:
``d2s_runtime/ops/sorting.py``): sort, argsort, topk, kthvalue, median, mode, and unique (eager
only): for each op its public wrapper, its gradient rule and its ONNX converter, side by side.

The primitives return ``(values, indices)``; a value's gradient goes to the element it came from
(``_selected_grad``, shared with max/min with a dim), as PyTorch's does. NaN sorts as the largest
value; sorts are stable. Where PyTorch's own order of equal values is an accident of its
algorithm (``topk``, ``kthvalue`` and ``median`` indices among ties), d2s gives the stable
order: the values are equal, the indices of ties may differ.
"""
import numpy as np

from .. import return_types
from ..autograd.registry import grad_rule, non_differentiable, reads_outputs, sample_call, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter, onnx_unsupported
from ..tensor import tensor, tensor_method
from . import _dim_args as A
from .elementwise import eq, logical_and, logical_or, where
from .reduce import _floating, _isnan, _selected_grad, gather_selected
from ._util import _as_tensor

non_differentiable("argsort", reason="indices carry no gradient (sort's values do)")
grad_rule("sort", "topk", "kthvalue", "mode")(_selected_grad)
for _op in ("sort", "topk", "kthvalue", "mode"):
    reads_outputs(_op, 1)  # the rule reads the indices and the input's shape only, as PyTorch saves them
    shape_only(_op, 0)


def _axis(x, d):
    """``d`` as a non-negative axis of ``x`` (0 for a 0-d tensor, which takes 0 or -1)."""
    nd = x.ndim
    if d is None:
        raise TypeError("d2s: this function takes one int dim, got None")
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
    return return_types.sort(*apply("sort", x, axis=d, descending=bool(descending)))


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


def _zero_d(g, op):
    """A 0-d input: its value (where the op has values) and index 0."""
    if len(op.outputs) == 2:
        g.node("Identity", [op.inputs[0]], [op.outputs[0]])
    g.node("Constant", [], [op.outputs[-1]], value=g.x.numpy_helper.from_array(i64(0)))


def _topk_nodes(g, x, k, axis, largest, outputs):
    """TopK's (values, indices) into ``outputs``: equal values keep their order and NaN counts as
    the largest, as in the kernels; a bool input goes through int32 and back."""
    if g.dtype(x) != "bool":
        g.node("TopK", [x, k], outputs, axis=axis, largest=largest, sorted=1)
        return
    v = g.tmp()
    g.node("TopK", [_topk_input(g, x), k], [v, outputs[1]], axis=axis, largest=largest, sorted=1)
    g.node("Cast", [v], [outputs[0]], to=g.onnx_dtype("bool"))


@onnx_converter("sort", "argsort")
def _sort_onnx(g, op):
    x = op.inputs[0]
    if not g.shape(x):
        _zero_d(g, op)
        return
    axis = op.attrs.get("axis", -1) % len(g.shape(x))
    outs = list(op.outputs) if len(op.outputs) == 2 else [g.tmp(), op.outputs[0]]
    _topk_nodes(g, x, _topk_shape_onnx(g, x, axis), axis, int(bool(op.attrs.get("descending", False))), outs)


sample_call("argsort", argsort, (3, 5))
sample_call("sort", lambda x: sort(x, 0, descending=True), (3, 5))


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
    return return_types.topk(*apply("topk", x, k=int(k), axis=d, largest=bool(largest)))


@onnx_converter("topk")
def _topk_onnx(g, op):
    x = op.inputs[0]
    if not g.shape(x):
        _zero_d(g, op)
        return
    axis = op.attrs.get("axis", -1) % len(g.shape(x))
    _topk_nodes(g, x, g.const(i64([op.attrs["k"]])), axis, int(bool(op.attrs.get("largest", True))), op.outputs)


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
    return return_types.kthvalue(*apply("kthvalue", x, axis=d, k=int(k) - 1, keepdims=keep))


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
    return return_types.median(*apply("kthvalue", x, axis=d, keepdims=keep))


def _median_all(x, keep):
    if _floating(x) and any(d == 0 for d in x.shape if isinstance(d, int)):  # no elements: NaN, as PyTorch's
        out = apply("reduce_sum", x, axes=None, keepdims=keep) * np.nan
        return out
    flat = apply("reshape", x, shape=[-1])
    v = apply("kthvalue", flat, axis=0)[0]
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


@onnx_converter("kthvalue")
def _kthvalue_onnx(g, op):
    """TopK of the k + 1 smallest, then its last index (TopK's order of ties and of NaN is the
    kernel's); for the median, k = (n - 1) // 2 and the first NaN wins; the values gathered there."""
    x = op.inputs[0]
    shape = g.shape(x)
    if not shape:
        _zero_d(g, op)
        return
    keep = bool(op.attrs.get("keepdims", False))
    axis = op.attrs.get("axis", -1) % len(shape)
    k = op.attrs.get("k")
    if k is not None:
        kk, pos = g.const(i64([k + 1])), g.const(i64([k]))
    else:
        s, n, m, pos, kk = (g.tmp() for _ in range(5))
        g.node("Shape", [x], [s])
        g.node("Gather", [s, g.const(i64([axis]))], [n])
        g.node("Sub", [n, g.const(i64([1]))], [m])
        g.node("Div", [m, g.const(i64([2]))], [pos])
        g.node("Add", [pos, g.const(i64([1]))], [kk])
    idx, sel = g.tmp(), g.tmp()
    g.node("TopK", [_topk_input(g, x), kk], [g.tmp(), idx], axis=axis, largest=0, sorted=1)
    g.node("Gather", [idx, pos], [sel], axis=axis)  # a 1-element index keeps the axis
    if k is None and g.dtype(x) in ("float32", "float64"):
        isn, flag, first, anyn, anyb, guarded = (g.tmp() for _ in range(6))
        g.node("IsNaN", [x], [isn])
        g.node("Cast", [isn], [flag], to=g.onnx_dtype("int32"))
        g.node("ArgMax", [flag], [first], axis=axis, keepdims=1)
        g.node("ReduceMax", [flag, g.const(i64([axis]))], [anyn], keepdims=1)
        g.node("Cast", [anyn], [anyb], to=g.onnx_dtype("bool"))
        g.node("Where", [anyb, first, sel], [guarded])
        sel = guarded
    gather_selected(g, x, sel, axis, keep, *op.outputs)


sample_call("kthvalue", lambda x: (kthvalue(x, 2), median(x, 0, keepdim=True)), (3, 5))


# ------------------------------------------------------------------ mode
@tensor_method()
def mode(input, dim=-1, keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """The named tuple ``(values, indices)`` of the most frequent value along ``dim`` (the
    smallest of equally frequent ones) and the index of its last occurrence, as ``torch.mode``
    (whose index among equal values, like its answer for a slice holding NaN, depends on how its
    unstable sort orders them past 16 elements; d2s counts NaNs as distinct and sorts them last)."""
    A.no_extra("mode", unsupported)
    x = _as_tensor(input)
    d = _axis(x, A.one_dim("mode", dim, axis))
    keep = A.keep("mode", keepdim, keepdims)
    return return_types.mode(*apply("mode", x, axis=d, keepdims=keep))


onnx_unsupported("mode", reason="ONNX has no operator counting equal values along an axis")


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
    xp_arr = _eager_host_array(x, "unique", "distinct values")
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


def _eager_host_array(x, name, counted):
    """``x``'s values as a numpy array, for an op whose result's length depends on the data: a
    clear error inside a program, which cannot hold such a shape."""
    if x.is_symbolic:
        raise TypeError(f"d2s.{name}() cannot run inside a program (to_static, build_program): the number of "
                        f"{counted} is known only from the data; call it outside the converted function, or keep "
                        "it eager with @d2s.jit.not_to_static")
    arr = x._concrete(name)
    return np.asarray(arr.get() if hasattr(arr, "get") else arr)


@tensor_method()
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with each run of equal consecutive elements (with ``dim``, slices along it)
    collapsed to one, as ``torch.unique_consecutive``, with the run each input element falls in
    (``return_inverse``) and each run's length (``return_counts``). NaNs never equal each other
    (each is a run of its own), as in PyTorch. Eager only, as :func:`unique`; no gradient.

    Args:
        input: a tensor.
        return_inverse: also return, per element (per slice with ``dim``), the index of its run.
        return_counts: also return each run's length.
        dim: the dim to compare slices along; None: the flattened elements.

    Returns:
        The runs' values (a tensor), or a tuple with the inverse indices and counts (int64) asked for.
    """
    x = _as_tensor(input)
    host = _eager_host_array(x, "unique_consecutive", "runs")
    if dim is None:
        flat = host.reshape(-1)
        moved = flat.reshape(-1, 1)
    else:
        d = _axis(x, A.one_dim("unique_consecutive", dim))
        if any(s == 0 for k, s in enumerate(host.shape) if k != d):
            raise RuntimeError("unique_consecutive: there are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")
        moved = np.moveaxis(host, d, 0).reshape(host.shape[d], host.size // max(host.shape[d], 1))
    n = moved.shape[0]
    # a new run starts where a slice differs from the one before (NaN != NaN starts one too)
    starts = np.ones(n, bool)
    if n > 1:
        starts[1:] = (moved[1:] != moved[:-1]).any(axis=1) if moved.shape[1] else False
    run_of = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    counts = np.diff(np.append(first, n))
    if dim is None:
        vals = flat[first]
        inv = run_of.reshape(host.shape)
    else:
        vals = np.take(host, first, axis=d)
        inv = run_of
    out = [tensor(vals.astype(host.dtype, copy=False), device=x.device)]
    if return_inverse:
        out.append(tensor(inv.astype(np.int64), device=x.device))
    if return_counts:
        out.append(tensor(counts.astype(np.int64), device=x.device))
    return out[0] if len(out) == 1 else tuple(out)
