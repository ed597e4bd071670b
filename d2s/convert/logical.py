"""`and`, `or`, `not` over thunks: Python short-circuit semantics for Python values and
concrete tensors; element-wise logical ops once a value is a symbolic tensor."""
from .values import is_symbolic


def _as_bool(x):
    from .. import ops
    if not is_symbolic(x):
        return x
    return x if x.dtype == "bool" else ops.ne(x, 0)


def and_(*thunks):
    """``a and b and ...`` where each operand is a zero-argument function (evaluated lazily)."""
    value = thunks[0]()
    for i, th in enumerate(thunks[1:], 1):
        if is_symbolic(value):
            from .. import ops
            rest = and_(*thunks[i:])
            return ops.logical_and(_as_bool(value), _as_bool(rest))
        if not value:
            return value
        value = th()
    return value


def or_(*thunks):
    """``a or b or ...`` where each operand is a zero-argument function (evaluated lazily)."""
    value = thunks[0]()
    for i, th in enumerate(thunks[1:], 1):
        if is_symbolic(value):
            from .. import ops
            rest = or_(*thunks[i:])
            return ops.logical_or(_as_bool(value), _as_bool(rest))
        if value:
            return value
        value = th()
    return value


def not_(x):
    """``not x``: a logical_not op for a symbolic tensor."""
    if is_symbolic(x):
        from .. import ops
        return ops.logical_not(_as_bool(x))
    return not x
