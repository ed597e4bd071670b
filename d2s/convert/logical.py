"""`and`, `or`, `not` over thunks: Python short-circuit semantics for Python values and
concrete tensors; once a value is a symbolic tensor, the rest is evaluated inside a ``cond``
so it still runs only when needed (``i < n and x[i] > 0`` never reads ``x[n]``)."""
from .values import is_symbolic, truth


def _as_bool(x):
    from .. import ops
    if not is_symbolic(x):
        return x
    return x if x.dtype == "bool" else ops.ne(x, 0)


def _bool_tensor(x):
    from .. import ops
    from ..tensor import Tensor
    if isinstance(x, Tensor):
        return _as_bool(x) if is_symbolic(x) else ops.cast(x, "bool")
    return ops.full([], bool(x), dtype="bool")


def _lazy(value, rest, short_value):
    """``value`` (symbolic) combined with the thunk ``rest``: ``rest`` runs only in the
    branch where it decides the result; the other branch yields ``short_value``."""
    from ..static.control_flow import cond
    pred = _as_bool(value)

    def evaluated():
        try:
            return _bool_tensor(rest())
        except IndexError as e:  # `len(xs) > 0 and xs[-1] > 0` with xs still empty when traced
            from .errors import deferred_index_error
            deferred_index_error(e)
            return _bool_tensor(short_value)

    shortcut = lambda: _bool_tensor(short_value)  # noqa: E731
    if short_value:  # `or`: a true value decides
        return cond(pred, shortcut, evaluated)
    return cond(pred, evaluated, shortcut)


def and_(*thunks):
    """``a and b and ...`` where each operand is a zero-argument function (evaluated lazily)."""
    value = thunks[0]()
    for i, th in enumerate(thunks[1:], 1):
        if is_symbolic(value):
            return _lazy(value, lambda: and_(*thunks[i:]), False)
        if not value:
            return value
        value = th()
    return value


def or_(*thunks):
    """``a or b or ...`` where each operand is a zero-argument function (evaluated lazily)."""
    value = thunks[0]()
    for i, th in enumerate(thunks[1:], 1):
        if is_symbolic(value):
            return _lazy(value, lambda: or_(*thunks[i:]), True)
        if value:
            return value
        value = th()
    return value


def not_(x):
    """``not x``: a logical_not op for a symbolic tensor."""
    x = truth(x)
    if is_symbolic(x):
        from .. import ops
        return ops.logical_not(_as_bool(x))
    return not x
