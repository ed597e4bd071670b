"""Sorting and selection along one axis: argsort, topk, the k-th smallest (and the median), the mode.

Each returns int64 indices; the d2s side gathers the values with them, so a value's gradient
flows to the element it was taken from (as PyTorch's). Orders are PyTorch's where it fixes them:
NaN sorts as the largest value (last ascending, first descending), and sorts are stable (equal
values keep their order, in both directions).
"""
import numpy as np

from ..dtypes import is_floating
from .reduce import _one_axis, scan
from .registry import ShapeError, TensorType, defop
from .rules import reduce_shape


def _stable_argsort(xp, x, axis, descending=False):
    """Stable ascending argsort with NaN last (numpy's order); descending sorts the reversed
    array ascending and reverses the result, so equal values keep their order and NaN comes first
    (negating ``x`` would overflow the smallest int and leave NaN last)."""
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    rev = xp.argsort(xp.flip(x, axis=axis), axis=axis, kind="stable")
    return (n - 1) - xp.flip(rev, axis=axis)


def _take(xp, a, k, axis, keepdims):
    """Position ``k`` (an int, or an int array shaped like ``a`` without ``axis``) along ``axis``."""
    if isinstance(k, int):
        out = xp.take(a, k, axis=axis)
    else:
        out = xp.take_along_axis(a, xp.expand_dims(k, axis), axis=axis).squeeze(axis)
    return xp.expand_dims(out, axis) if keepdims else out


def _indices(xp, a):
    return xp.asarray(a, dtype="int64")


# ------------------------------------------------------------------ argsort
def _argsort_infer(x, axis=-1, descending=False):
    _one_axis("argsort", axis, x.ndim)
    return TensorType(x.shape, "int64")


@defop("argsort", _argsort_infer, fresh=True)
def _argsort(xp, x, axis=-1, descending=False):
    """Indices that sort ``x`` along ``axis`` (stable; NaN as the largest value)."""
    if x.ndim == 0:
        return xp.zeros((), "int64")
    return _indices(xp, _stable_argsort(xp, x, axis, descending))


# ------------------------------------------------------------------ topk
def _topk_infer(x, k, axis=-1, largest=True):
    a = _one_axis("topk", axis, x.ndim)
    if type(k) is bool or not isinstance(k, int) or k < 0:
        raise ShapeError(f"topk: k must be a non-negative int, got {k!r}")
    n = x.shape[a] if x.ndim else 1
    if n is not None and k > n:
        raise ShapeError(f"topk: k ({k}) is larger than dimension {axis} of the input, of size {n}")
    shape = list(x.shape)
    if shape:
        shape[a] = k
    return TensorType(shape, "int64")


@defop("topk", _topk_infer, fresh=True)
def _topk(xp, x, k, axis=-1, largest=True):
    """Indices of the ``k`` largest (or smallest) elements along ``axis``, best first; equal
    values in their order in ``x`` (ONNX TopK's rule), NaN as the largest value."""
    if x.ndim == 0:
        if k > 1:
            raise ValueError(f"topk: k ({k}) is larger than the 1 element of a 0-d tensor")
        return xp.zeros((), "int64")
    if k > x.shape[axis]:
        raise ValueError(f"topk: k ({k}) is larger than dimension {axis} of the input, of size {x.shape[axis]}")
    order = _stable_argsort(xp, x, axis, descending=largest)
    head = [slice(None)] * x.ndim
    head[axis] = slice(0, k)
    return _indices(xp, order[tuple(head)])


# ------------------------------------------------------------------ k-th smallest, median
def _select_infer(x, axis=-1, k=None, keepdims=False):
    a = _one_axis("kthvalue" if k is not None else "median", axis, x.ndim)
    n = x.shape[a] if x.ndim else 1
    if k is not None and (type(k) is bool or not isinstance(k, int)):
        raise ShapeError(f"kthvalue: k must be an int, got {k!r}")
    if n is not None and k is not None and not 0 <= k < n:
        raise ShapeError(f"kthvalue: k ({k + 1}) is out of range for dimension {axis} of size {n} "
                         f"(k counts from 1)")
    if n == 0:
        raise ShapeError(f"median: dimension {axis} has size 0 (nothing to take a median of)")
    return TensorType(reduce_shape(x.shape, (a,) if x.ndim else (), keepdims), "int64")


@defop("select_index", _select_infer, fresh=True)
def _select_index(xp, x, axis=-1, k=None, keepdims=False):
    """Index along ``axis`` of the ``k``-th smallest element (0-based, in the stable order with NaN
    last), or with ``k=None`` of the median (the lower middle, ``(n - 1) // 2``; a slice holding
    NaN gives its first NaN, as PyTorch's median propagates NaN)."""
    if x.ndim == 0:
        if k not in (None, 0):
            raise ValueError(f"kthvalue: k ({k + 1}) is out of range for a 0-d tensor")
        return xp.zeros((), "int64")
    n = x.shape[axis]
    pos = (n - 1) // 2 if k is None else k
    if not 0 <= pos < n:
        what = "median: dimension has size 0" if k is None else f"kthvalue: k ({k + 1}) is out of range for size {n}"
        raise ValueError(what)
    idx = _take(xp, _stable_argsort(xp, x, axis), pos, axis, keepdims)
    if k is None and is_floating(x.dtype.name):
        nan = xp.isnan(x)
        has_nan, first_nan = nan.any(axis=axis, keepdims=keepdims), xp.argmax(nan, axis=axis, keepdims=keepdims)
        idx = xp.where(has_nan, first_nan, idx)
    return _indices(xp, idx)


# ------------------------------------------------------------------ mode
def _mode_infer(x, axis=-1, keepdims=False):
    a = _one_axis("mode", axis, x.ndim)
    if x.ndim and x.shape[a] == 0:
        raise ShapeError(f"mode: dimension {axis} has size 0 (no value to count)")
    return TensorType(reduce_shape(x.shape, (a,) if x.ndim else (), keepdims), "int64")


@defop("mode_index", _mode_infer, fresh=True)
def _mode_index(xp, x, axis=-1, keepdims=False):
    """Index along ``axis`` of the most frequent value (the smallest of equally frequent ones) at
    its last occurrence, as PyTorch's mode; NaNs count as different values."""
    if x.ndim == 0:
        return xp.zeros((), "int64")
    n = x.shape[axis]
    if n == 0:
        raise ValueError("mode: the dimension has size 0")
    order = _stable_argsort(xp, x, axis)
    s = xp.take_along_axis(x, order, axis=axis)
    pos = xp.arange(n).reshape([n if d == axis % x.ndim else 1 for d in range(x.ndim)])
    head, tail = [slice(None)] * x.ndim, [slice(None)] * x.ndim
    head[axis], tail[axis] = slice(1, None), slice(None, -1)
    new_run = xp.ones(s.shape, bool)
    new_run[tuple(head)] = s[tuple(head)] != s[tuple(tail)]
    # the running count inside each run of equal values peaks at the run's last element: the
    # first peak equal to the largest count ends the smallest most-frequent value's run
    start = scan(xp, np.maximum, xp.where(new_run, pos, 0), axis)
    count = pos - start
    last = xp.argmax(count == count.max(axis=axis, keepdims=True), axis=axis)
    return _indices(xp, _take(xp, order, last, axis, keepdims))
