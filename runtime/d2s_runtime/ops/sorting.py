"""Sorting and selection along one axis: sort, argsort, topk, the k-th smallest (and the median),
the mode, the running maximum and minimum (cummax, cummin).

Each but argsort returns ``(values, indices)``, the values taken at the indices (int64), so the
d2s side sends a value's gradient to the element it came from (as PyTorch does). Orders are
PyTorch's where it fixes them: NaN sorts as the largest value (last ascending, first
descending), and sorts are stable (equal values keep their order, in both directions).
"""
import numpy as np

from ..dtypes import is_floating
from .reduce import _one_axis, scan, select_along, selection_types
from .registry import ShapeError, TensorType, deflowering, defop


def _stable_argsort(xp, x, axis, descending=False):
    """Stable ascending argsort with NaN last (numpy's order); descending sorts the reversed
    array ascending and reverses the result, so equal values keep their order and NaN comes first
    (negating ``x`` would overflow the smallest int and leave NaN last)."""
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    rev = xp.argsort(xp.flip(x, axis=axis), axis=axis, kind="stable")
    return (n - 1) - xp.flip(rev, axis=axis)


def _indices(xp, a):
    return xp.asarray(a, dtype="int64")


# ------------------------------------------------------------------ sort, argsort
def _argsort_infer(x, axis=-1, descending=False):
    _one_axis("argsort", axis, x.ndim)
    return TensorType(x.shape, "int64")


@defop("argsort", _argsort_infer, fresh=True)
def _argsort(xp, x, axis=-1, descending=False):
    """Indices that sort ``x`` along ``axis`` (stable; NaN as the largest value)."""
    _one_axis("argsort", axis, x.ndim)
    if x.ndim == 0:
        return xp.zeros((), "int64")
    return _indices(xp, _stable_argsort(xp, x, axis, descending))


def _sort_infer(x, axis=-1, descending=False):
    _one_axis("sort", axis, x.ndim)
    return TensorType(x.shape, x.dtype), TensorType(x.shape, "int64")


@defop("sort", _sort_infer, n_out=2, fresh=True)
def _sort(xp, x, axis=-1, descending=False):
    """(values, indices) of ``x`` sorted along ``axis`` (stable; NaN as the largest value)."""
    a = _one_axis("sort", axis, x.ndim)
    if x.ndim == 0:
        return x.copy(), xp.zeros((), "int64")
    return select_along(xp, x, _stable_argsort(xp, x, a, descending), a, True)


# ------------------------------------------------------------------ topk
def _topk_infer(x, k, axis=-1, largest=True):
    a = _one_axis("topk", axis, x.ndim)
    if type(k) is bool or not isinstance(k, int) or k < 0:
        raise ShapeError(f"topk: k must be a non-negative int, got {k!r}")
    n = x.shape[a] if x.ndim else 1
    if n is not None and k > n or (not x.ndim and k != 1):
        raise ShapeError(f"topk: k ({k}) is larger than dimension {axis} of the input, of size {n}"
                         if k > n else "topk: a 0-d tensor takes k=1")
    shape = list(x.shape)
    if shape:
        shape[a] = k
    return TensorType(shape, x.dtype), TensorType(shape, "int64")


@defop("topk", _topk_infer, n_out=2, fresh=True)
def _topk(xp, x, k, axis=-1, largest=True):
    """(values, indices) of the ``k`` largest (or smallest) elements along ``axis``, best first;
    equal values in their order in ``x`` (ONNX TopK's rule), NaN as the largest value."""
    a = _one_axis("topk", axis, x.ndim)
    n = x.shape[a] if x.ndim else 1
    if type(k) is bool or not isinstance(k, int) or not 0 <= k <= n or (not x.ndim and k != 1):
        raise ShapeError(f"topk: k ({k!r}) must be an int from 0 to the size of dimension {axis}, {n}"
                         + ("" if x.ndim else " (1 for a 0-d tensor)"))
    if x.ndim == 0:
        return x.copy(), xp.zeros((), "int64")
    order = _stable_argsort(xp, x, a, descending=largest)
    head = [slice(None)] * x.ndim
    head[a] = slice(0, k)
    return select_along(xp, x, order[tuple(head)], a, True)


@deflowering("topk", "native")
def _topk_native(e, x, k, axis=-1, largest=True):
    """Along the last axis: one pass per row keeping the ``k`` best in order (``_lib.topk_rows``,
    the kernel's stable order)."""
    if x.ndim == 0 or axis % x.ndim != x.ndim - 1 or type(k) is not int or type(largest) is not bool:
        e.unsupported("topk along another axis than the last")
    l = e._l
    x = l.contiguous(l.array(x))
    ind = l.indent
    rows, vals, idx, rv, ri = (l.fresh() for _ in range(5))
    lead = ", ".join(f"{x.name}.shape[{j}]" for j in range(x.ndim - 1))
    l.emit(ind, f"if {k} > {x.name}.shape[{x.ndim - 1}]: raise ValueError('native program: topk: k is larger "
                f"than the dimension')")
    l.emit(ind, f"{rows} = {x.name}.reshape((-1, {x.name}.shape[{x.ndim - 1}]))")
    l.emit(ind, f"{vals} = np.empty(({rows}.shape[0], {k}), {x.name}.dtype)")
    l.emit(ind, f"{idx} = np.empty(({rows}.shape[0], {k}), np.int64)")
    l.emit(ind, f"L.topk_rows({rows}, {k}, {largest}, {vals}, {idx})")
    shape = f"({lead}{', ' if lead else ''}{k},)"
    l.emit(ind, f"{rv} = {vals}.reshape({shape})")
    l.emit(ind, f"{ri} = {idx}.reshape({shape})")
    vt, it = e.out_types
    return l.new_array(rv, vt.dtype, tuple(vt.shape)), l.new_array(ri, "int64", tuple(it.shape))


# ------------------------------------------------------------------ k-th smallest, median
def _kthvalue_infer(x, axis=-1, k=None, keepdims=False):
    op = "kthvalue" if k is not None else "median"
    a = _one_axis(op, axis, x.ndim)
    if k is not None and (type(k) is bool or not isinstance(k, int)):
        raise ShapeError(f"kthvalue: k must be an int, got {k!r}")
    n = x.shape[a] if x.ndim else 1
    if n is not None and k is not None and n > 0 and not 0 <= k < n:
        raise ShapeError(f"kthvalue: k ({k + 1}) is out of range for dimension {axis} of size {n} "
                         f"(k counts from 1)")
    return selection_types(op, x, axis, keepdims)


@defop("kthvalue", _kthvalue_infer, n_out=2, fresh=True)
def _kthvalue(xp, x, axis=-1, k=None, keepdims=False):
    """(values, indices) of the ``k``-th smallest element along ``axis`` (0-based, in the stable
    order with NaN last), or with ``k=None`` of the median (the lower middle, ``(n - 1) // 2``; a
    slice holding NaN gives its first NaN, as PyTorch's median propagates NaN)."""
    a = _one_axis("kthvalue" if k is not None else "median", axis, x.ndim)
    n = x.shape[a] if x.ndim else 1
    pos = (n - 1) // 2 if k is None else k
    if type(pos) is bool or not isinstance(pos, int) or not 0 <= pos < n:
        raise ShapeError(f"median: dimension {axis} has size 0 (nothing to select from)" if k is None else
                         f"kthvalue: k ({k + 1 if isinstance(k, int) else k!r}) is out of range for dimension "
                         f"{axis} of size {n} (k counts from 1)")
    if x.ndim == 0:
        return x.copy(), xp.zeros((), "int64")
    at = [slice(None)] * x.ndim
    at[a] = slice(pos, pos + 1)
    idx = _stable_argsort(xp, x, a)[tuple(at)]
    if k is None and is_floating(x.dtype.name):
        nan = xp.isnan(x)
        idx = xp.where(nan.any(axis=a, keepdims=True), xp.argmax(nan, axis=a, keepdims=True), idx)
    return select_along(xp, x, idx, a, keepdims)


# ------------------------------------------------------------------ mode
def _mode_infer(x, axis=-1, keepdims=False):
    return selection_types("mode", x, axis, keepdims)


@defop("mode", _mode_infer, n_out=2, fresh=True)
def _mode(xp, x, axis=-1, keepdims=False):
    """(values, indices) of the most frequent value along ``axis`` (the smallest of equally
    frequent ones) at its last occurrence, as PyTorch's mode; NaNs count as different values."""
    a = _one_axis("mode", axis, x.ndim)
    if x.ndim == 0:
        return x.copy(), xp.zeros((), "int64")
    n = x.shape[a]
    if n == 0:
        raise ShapeError(f"mode: dimension {axis} has size 0 (nothing to select from)")
    order = _stable_argsort(xp, x, a)
    s = xp.take_along_axis(x, order, axis=a)
    pos = xp.arange(n).reshape([n if d == a else 1 for d in range(x.ndim)])
    head, tail = [slice(None)] * x.ndim, [slice(None)] * x.ndim
    head[a], tail[a] = slice(1, None), slice(None, -1)
    new_run = xp.ones(s.shape, bool)
    new_run[tuple(head)] = s[tuple(head)] != s[tuple(tail)]
    # the running count inside each run of equal values peaks at the run's last element: the
    # first peak equal to the largest count ends the smallest most-frequent value's run
    start = scan(xp, np.maximum, xp.where(new_run, pos, 0), a)
    count = pos - start
    last = xp.argmax(count == count.max(axis=a, keepdims=True), axis=a, keepdims=True)
    return select_along(xp, x, xp.take_along_axis(order, last, axis=a), a, keepdims)


# ------------------------------------------------------------------ cummax, cummin
def _cum_extreme(name, ufunc):
    def infer(x, axis):
        _one_axis(name, axis, x.ndim)
        return TensorType(x.shape, x.dtype), TensorType(x.shape, "int64")

    def kernel(xp, x, axis):
        a = _one_axis(name, axis, x.ndim)
        if x.ndim == 0:
            return x.copy(), xp.zeros((), "int64")
        values = scan(xp, ufunc, x, a)
        # a running extreme changes only where an element equals it (or, once NaN, is NaN), and
        # PyTorch's index is the last such element (its comparison is >= / <=)
        hit = x == values
        if is_floating(x.dtype.name):
            hit |= xp.isnan(x) & xp.isnan(values)
        pos = xp.arange(x.shape[a], dtype="int64").reshape((-1,) + (1,) * (x.ndim - a - 1))
        return values, scan(xp, np.maximum, xp.where(hit, pos, 0), a)

    kernel.__doc__ = (f"(values, indices) of the running {'maximum' if ufunc is np.maximum else 'minimum'} along "
                      "``axis``: NaN, once seen, is the value; each index is the last element equal to its value.")
    defop(name, infer, n_out=2, fresh=True)(kernel)


_cum_extreme("cummax", np.maximum)
_cum_extreme("cummin", np.minimum)
