"""``d2s.fori_loop`` and ``d2s.map``: loops built from the ``while`` and ``scan`` ops (so
gradients, the runtime and ONNX export need nothing new), with JAX's semantics
(``d2s.switch`` lives with ``cond``, in ``conditionals``).

* ``fori_loop`` with concrete bounds is a ``scan`` over the indices (reverse-differentiable,
  exported as an ONNX ``Loop`` with a trip count); with a symbolic bound it is a ``while``.
* ``map`` is a ``scan`` with no carry.
"""
from .. import ops as d
from ..tensor import Tensor
from .cf_common import _index_dtype, _is_symbolic
from .conditionals import switch
from .scans import _scan
from .while_loops import run_while

__all__ = ["fori_loop", "switch", "map"]  # (switch: from conditionals)

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
