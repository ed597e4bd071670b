"""JAX's structured control flow with ``jax.lax``'s exact signatures and carry conventions.

JAX code ports by changing its import: ``from jax import lax`` becomes ``from d2s import
lax``. Each function works eagerly and inside programs (``to_static``, ``build_program``),
with gradients, exactly as the ``d2s.*`` function it forwards to; the differences from those
are JAX's calling conventions:

* ``while_loop(cond_fun, body_fun, init_val)`` passes the carry as ONE value, whatever it is
  (``d2s.while_loop`` follows Paddle and spreads a tuple of loop vars over the arguments);
* ``cond`` and ``switch`` also take JAX's old single ``operand=`` keyword;
* ``scan``, ``fori_loop`` and ``map`` accept JAX's ``unroll``, ``_split_transpose`` and
  ``batch_size`` arguments, which change how JAX compiles a loop, never what it computes:
  d2s checks and ignores them.

Python numbers in carries and branch outputs are weakly typed, as in JAX: they take the
dtype of the tensors they meet, and come back as tensors.
"""
from .static import control_flow as _cf
from .static import structured as _st

__all__ = ["cond", "while_loop", "fori_loop", "scan", "switch", "map"]

_NO_OPERAND = object()


def _operands(what, operands, operand):
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(f"d2s.lax.{what}: give the operands either positionally or as operand=, not both")
    return (operand,)


def _check_unroll(what, unroll):
    if unroll is not None and not isinstance(unroll, (bool, int)):
        raise TypeError(f"d2s.lax.{what}: unroll must be an int or a bool, got {type(unroll).__name__}")
    if isinstance(unroll, int) and not isinstance(unroll, bool) and unroll < 1 and unroll != 0:
        raise ValueError(f"d2s.lax.{what}: unroll must be positive, got {unroll}")


def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)`` (``jax.lax.cond``).

    ``pred`` is a bool scalar; both branches must return the same pytree structure with the
    same dtypes and ranks. See :func:`d2s.cond`.
    """
    return _cf.cond(pred, true_fun, false_fun, *_operands("cond", operands, operand))


def while_loop(cond_fun, body_fun, init_val):
    """``val = body_fun(val)`` while ``cond_fun(val)``; returns the final ``val``
    (``jax.lax.while_loop``).

    The carry ``init_val`` (any pytree: a tuple is one value, not a list of arguments) is
    passed to both functions as one argument, and ``body_fun`` returns a value of the same
    structure, dtypes and ranks. Inside a program with a symbolic condition this builds one
    ``while`` op (differentiable in reverse mode in d2s, unlike JAX).
    """
    return _cf.run_while(lambda v: cond_fun(v[0]), lambda v: [body_fun(v[0])], [init_val],
                         "d2s.lax.while_loop")[0]


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)`` (``jax.lax.fori_loop``):
    a ``scan`` with concrete bounds, a ``while`` with a symbolic one. See
    :func:`d2s.fori_loop`."""
    _check_unroll("fori_loop", unroll)
    return _st.fori_loop(lower, upper, body_fun, init_val)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``; returns
    ``(final_carry, stacked ys)`` (``jax.lax.scan``). See :func:`d2s.scan`."""
    _check_unroll("scan", unroll)
    return _cf.scan(f, init, xs, length=length, reverse=reverse)


def switch(index, branches, *operands, operand=_NO_OPERAND):
    """``branches[clamp(index)](*operands)`` (``jax.lax.switch``). See :func:`d2s.switch`."""
    return _st.switch(index, branches, *_operands("switch", operands, operand))


def map(f, xs, *, batch_size=None):  # noqa: A001  (jax.lax.map's name)
    """``f`` over the leading axis of ``xs``, results stacked (``jax.lax.map``). JAX's
    ``batch_size`` (vmapped batches) gives the same result, so it is checked and ignored."""
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"d2s.lax.map: batch_size must be a positive int, got {batch_size!r}")
    return _st.map(f, xs)
