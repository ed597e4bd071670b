"""``d2s.fori_loop``, ``d2s.switch`` and ``d2s.map``: structured control flow built from the
``cond``, ``while`` and ``scan`` ops (so gradients, the runtime and ONNX export need nothing
new), with JAX's semantics.

* ``fori_loop`` with concrete bounds is a ``scan`` over the indices (reverse-differentiable,
  exported as an ONNX ``Loop`` with a trip count); with a symbolic bound it is a ``while``.
* ``switch`` clamps its index into range, as JAX does, and picks a branch through a balanced
  tree of ``cond`` ops (nested ``If`` in ONNX).
* ``map`` is a ``scan`` with no carry.
"""
import numpy as np

from .. import ops as d
from ..tensor import Tensor
from .cf_common import ControlFlowError, _is_symbolic
from .conditionals import cond
from .scans import _scan
from .weak_types import _abstract, _eager_branch, _fmt_tree, _join_weak, _tensorize_weak
from .while_loops import run_while

__all__ = ["fori_loop", "switch", "map"]

_INT_DTYPES = ("int32", "int64")


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _index_dtype(what, *bounds):
    """The dtype of a loop index or switch index: that of the integer tensors among
    ``bounds`` (int64 when all are Python ints)."""
    from d2s_runtime.dtypes import result_type
    dts = []
    for v in bounds:
        if isinstance(v, Tensor):
            if str(v.dtype) not in _INT_DTYPES:
                raise ControlFlowError(f"{what}: bounds and indices must be integers, got a {v.dtype} tensor")
            if v.ndim != 0:
                raise ControlFlowError(f"{what}: bounds and indices must be scalars, got shape {list(v.shape)}")
            dts.append(str(v.dtype))
        elif isinstance(v, np.ndarray) or isinstance(v, np.generic):
            if np.asarray(v).dtype.kind not in "iu" or np.ndim(v) != 0:
                raise ControlFlowError(f"{what}: bounds and indices must be integer scalars, got {v!r}")
            dts.append("int64" if np.asarray(v).dtype.itemsize > 4 else "int32")
        elif not _is_int(v):
            raise ControlFlowError(f"{what}: bounds and indices must be integers, got {type(v).__name__} {v!r}")
    return result_type(*dts) if dts else "int64"


def fori_loop(lower, upper, body_fn, init_val):
    """``val = body_fn(i, val)`` for ``i`` in ``range(lower, upper)``; returns the final
    ``val`` (like ``jax.lax.fori_loop``).

    Args:
        lower, upper: the bounds: Python ints, or integer scalar tensors.
        body_fn: ``body_fn(i, val) -> new val``, where ``i`` is an integer scalar tensor (int64,
            or the bounds' dtype) and ``val`` keeps its pytree structure, dtypes and ranks.
        init_val: the initial value: a pytree of tensors and Python numbers (a Python
            number takes the dtype the body makes of it, as in ``scan``).

    With concrete bounds (Python ints or tensors holding data) the loop is a ``scan`` over the
    indices: eagerly a Python loop, inside a program one ``scan`` op (whatever ``body_fn``
    captures), differentiable in reverse mode. With a symbolic bound it is a ``while`` op,
    also differentiable (it keeps each iteration's carry for the backward loop). Zero or
    negative trip counts run no iteration.

    Returns:
        The value after the last iteration, with Python numbers as tensors.
    """
    dtype = _index_dtype("d2s.fori_loop", lower, upper)
    if not _is_symbolic(lower) and not _is_symbolic(upper):
        lo, hi = int(lower), int(upper)
        indices = d.arange(lo, max(lo, hi), dtype=dtype)
        carry, _ = _scan(lambda val, i: (body_fn(i, val), None), init_val, indices, None, False,
                         "d2s.fori_loop", static=True)
        return carry
    lo = lower if isinstance(lower, Tensor) else d.full([], int(lower), dtype=dtype)
    hi = upper if isinstance(upper, Tensor) else d.full([], int(upper), dtype=dtype)
    lo = lo if str(lo.dtype) == dtype else d.cast(lo, dtype)
    hi = hi if str(hi.dtype) == dtype else d.cast(hi, dtype)

    def call_body(v):
        return [v[0] + 1, body_fn(v[0], v[1])]

    return run_while(lambda v: v[0] < hi, call_body, [lo, init_val], "d2s.fori_loop")[1]


def switch(index, branches, *operands):
    """``branches[index](*operands)`` (like ``jax.lax.switch``).

    ``index`` is an integer scalar (Python int or tensor); it is clamped into
    ``[0, len(branches) - 1]``, as JAX does, so an out-of-range index picks the first or last
    branch. With a concrete index only that branch runs; with a symbolic one every branch is
    traced into a balanced tree of ``cond`` ops. The branches must return the same pytree
    structure with the same dtypes and ranks; Python numbers among the outputs take the dtype
    the other branches give (the result is always a tensor, as for ``d2s.cond``).

    Returns:
        The selected branch's result.
    """
    branches = list(branches)
    if not branches:
        raise ControlFlowError("d2s.switch: give at least one branch")
    for k, f in enumerate(branches):
        if not callable(f):
            raise ControlFlowError(f"d2s.switch: branch {k} is not callable ({type(f).__name__})")
    dtype = _index_dtype("d2s.switch", index) if not isinstance(index, (bool, np.bool_)) else "int64"
    n = len(branches)
    if not _is_symbolic(index):
        k = min(max(int(index), 0), n - 1)
        return _eager_branch(branches[k], branches[:k] + branches[k + 1:], operands)
    if n == 1:
        return _eager_branch(branches[0], [], operands)
    index = d.clip(d.cast(index, dtype), 0, n - 1)
    wrapped = _typed_branches(branches, operands)

    def pick(lo, hi):
        if hi - lo == 1:
            return wrapped[lo]
        mid = (lo + hi) // 2
        left, right = pick(lo, mid), pick(mid, hi)
        return lambda *ops: cond(index < mid, left, right, *ops)

    return pick(0, n)(*operands)


def _typed_branches(branches, operands):
    """The branches returning tensors of the dtypes joined over all of them (a Python number
    takes the dtype the other branches give that output), so every ``cond`` of the tree
    sees matching dtypes."""
    infos = [_abstract(lambda f=f: f(*operands)) for f in branches]
    targets = None
    if all(i is not None for i in infos):
        first = infos[0]
        for k, info in enumerate(infos[1:], 1):
            if info[0] != first[0] or [t.ndim for t in info[1]] != [t.ndim for t in first[1]]:
                raise ControlFlowError(
                    "d2s.switch: the branches return different types:\n"
                    f"  branch 0 returns {_fmt_tree(first[0], first[1])}\n"
                    f"  branch {k} returns {_fmt_tree(info[0], info[1])}\n"
                    "every branch must return the same structure of tensors with the same dtypes and ranks")
        if any(w is not None for i in infos for w in i[2]):
            targets = _join_weak([(i[1], i[2]) for i in infos])
    return [lambda *ops, f=f: _tensorize_weak(f(*ops), targets)[0] for f in branches]


def map(f, xs):
    """``f`` applied to each slice of ``xs`` along its leading axis, the results stacked (like
    ``jax.lax.map``): a ``scan`` with no carry. ``xs`` is a pytree of tensors (numpy arrays
    and lists of numbers are accepted) with a common leading dim; inside a program this is
    one ``scan`` op.

    Returns:
        The stacked results, with the pytree structure ``f`` returns.
    """
    _, ys = _scan(lambda carry, x: (carry, f(x)), None, xs, None, False, "d2s.map", static=True)
    return ys
