"""`and`, `or`, `not` over thunks: Python short-circuit semantics for Python values and
concrete tensors; once a value is a symbolic tensor, the rest is evaluated inside a ``cond``
so it still runs only when needed (``i < n and x[i] > 0`` never reads ``x[n]``)."""
from .values import is_symbolic


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
    branch where it decides the result; the other branch yields ``value`` itself, as Python's
    ``and``/``or`` do. When the two sides have different types (``bool[1]`` and ``bool[]``,
    a float and a bool), a result of either kind is only used for its truth, so both become
    bool scalars; their sizes must then be 1, as Python's truth test requires."""
    from .. import ops
    from ..static.control_flow import cond
    pred = _as_bool(value)
    decided = {}

    def evaluated():
        out = rest()
        same = _same_type(out, value)
        decided["same"] = same
        return out if same else _truth(out)

    def shortcut():
        return value if decided["same"] else _truth(value)

    # the side that runs `rest` is traced first, so the other side knows which form to give
    if short_value:  # `or`: a true value decides
        return cond(ops.logical_not(pred), evaluated, shortcut)
    return cond(pred, evaluated, shortcut)


def _same_type(a, b):
    """Whether ``a`` can merge with symbolic ``b`` as is (same dtype and shape)."""
    from ..tensor import Tensor
    if not isinstance(a, Tensor):
        return False
    sa = a._var.type.shape if a._data is None else a._data.shape
    return a.dtype == b.dtype and tuple(sa) == tuple(b._var.type.shape)


def _truth(x):
    """``x``'s truth as a bool scalar tensor; a one-element tensor of any shape qualifies."""
    from .. import ops
    from ..tensor import Tensor
    t = _bool_tensor(x)
    shape = t._var.type.shape if isinstance(t, Tensor) and t._data is None else t.shape
    if len(shape) and all(d == 1 for d in shape):
        t = ops.reshape(t, [])
    return t


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
    if is_symbolic(x):
        from .. import ops
        return ops.logical_not(_as_bool(x))
    return not x
