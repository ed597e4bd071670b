"""`and`, `or`, `not` over thunks: Python short-circuit semantics for Python values and
concrete tensors; once a value is a symbolic tensor, the rest is evaluated inside a ``cond``
so it still runs only when needed (``i < n and x[i] > 0`` never reads ``x[n]``)."""
import numpy as np

from .. import ops
from ..dispatch import apply
from ..static.control_flow import cond
from ..static.weak_index import number_stand_in, plain_tensor, python_type
from ..tensor import Tensor
from ..user_errors import at_user_line, user_frame
from . import raising
from .values import is_symbolic, truth


def _as_bool(x):
    if not is_symbolic(x):
        return x
    return x if x.dtype == "bool" else ops.ne(x, 0)


def _bool_tensor(x):
    if isinstance(x, Tensor):
        return _as_bool(x) if is_symbolic(x) else ops.cast(x, "bool")
    return ops.full([], bool(x), dtype="bool")


def _lazy(value, rest, short_value, truth=False):
    """``value`` (symbolic) combined with the thunk ``rest``: ``rest`` runs only in the
    branch where it decides the result; the other branch yields ``value`` itself, as Python's
    ``and``/``or`` do. The two sides must then have one type; where they differ, bool flags
    of one element take the higher rank, and a result used only for its truth (``truth``: the
    test of an ``if``/``while``) is a bool scalar. Any other mix is an error: which operand
    comes back depends on the data, and a program value has one type."""
    pred = _as_bool(value)
    decided = {}

    def evaluated():
        try:
            out = rest()
        except IndexError as e:  # `len(xs) > 0 and xs[-1] > 0` with xs still empty when traced
            raising.defer(e)  # raised when the program runs this side
            decided["form"] = None
            return value
        if _same_type(out, value):
            decided["form"], decided["type"] = None, python_type(out)
            return out
        if truth:
            decided["form"] = "truth"
            return _truth(out)
        shape = _flag_shape(out, value)
        if shape is None:
            raise at_user_line(
                f"this `{'or' if short_value else 'and'}` gives one of its operands, and they have different types "
                f"({_describe(value)} and {_describe(out)}): which one comes back depends on the data, but a "
                "program value has one type. Use the result only as a condition (in an `if` or `while`), or give "
                "both operands the same dtype and shape (d2s.cast, d2s.reshape)")
        decided["form"] = shape
        return ops.reshape(_bool_tensor(out), list(shape))

    def shortcut():
        form = decided["form"]
        if form is None:
            return value
        if form == "truth":
            return _truth(value)
        return ops.reshape(value, list(form))

    # the side that runs `rest` is traced first, so the other side knows which form to give
    if short_value:  # `or`: a true value decides
        out = cond(ops.logical_not(pred), evaluated, shortcut)
    else:
        out = cond(pred, evaluated, shortcut)
    # two Python numbers of one type (``c > 0 and c < 3`` of a counter): the result is one too
    py = python_type(value)
    if py is not None and decided.get("form") is None and decided.get("type") is py:
        return number_stand_in(out)
    return out


def _shape(x):
    return tuple(x._var.type.shape if x.is_symbolic else x.array.shape)


def _same_type(a, b):
    """Whether ``a`` can merge with symbolic ``b`` as is (same dtype and shape)."""
    return isinstance(a, Tensor) and a.dtype == b.dtype and _shape(a) == _shape(b)


def _flag_shape(a, b):
    """The shared shape of bool flags ``a`` (a tensor or Python bool) and ``b`` when both hold
    one element (the higher rank of the two), else None."""
    if isinstance(a, bool):
        a_shape = ()
    elif isinstance(a, Tensor) and a.dtype == "bool":
        a_shape = _shape(a)
    else:
        return None
    if b.dtype != "bool" or not all(d == 1 for d in a_shape + _shape(b)):
        return None
    return max(a_shape, _shape(b), key=len)


def _describe(x):
    if isinstance(x, Tensor):
        dims = ", ".join("?" if d is None else str(d) for d in _shape(x))
        return f"{x.dtype}[{dims}]"
    return f"Python {type(x).__name__}"


def _truth(x):
    """``x``'s truth as a bool scalar tensor; a one-element tensor of any shape qualifies."""
    t = _bool_tensor(x)
    shape = t._var.type.shape if isinstance(t, Tensor) and t.is_symbolic else t.shape
    if len(shape) and all(d == 1 for d in shape):
        t = ops.reshape(t, [])
    return t


def and_(*thunks, truth=False):
    """``a and b and ...`` where each operand is a zero-argument function (evaluated lazily);
    ``truth``: the result is only tested for truth."""
    value = thunks[0]()
    for i, th in enumerate(thunks[1:], 1):
        if is_symbolic(value):
            return _lazy(value, lambda: and_(*thunks[i:], truth=truth), False, truth)
        if not value:
            return value
        value = th()
    return value


def or_(*thunks, truth=False):
    """``a or b or ...`` where each operand is a zero-argument function (evaluated lazily);
    ``truth``: the result is only tested for truth."""
    value = thunks[0]()
    for i, th in enumerate(thunks[1:], 1):
        if is_symbolic(value):
            return _lazy(value, lambda: or_(*thunks[i:], truth=truth), True, truth)
        if value:
            return value
        value = th()
    return value


def not_(x):
    """``not x``: Python's bool, as eager code gets it; for a symbolic tensor (of one element:
    ValueError otherwise, as eagerly) a logical_not op standing for that bool."""
    x = truth(x)
    if is_symbolic(x):
        _one_element(x)
        return number_stand_in(ops.reshape(ops.logical_not(_as_bool(plain_tensor(x))), []))
    return not x


def _one_element(x):
    shape = _shape(x)
    if all(isinstance(d, int) for d in shape):
        if int(np.prod(shape, dtype=np.int64)) != 1:
            raise at_user_line(f"the truth value of a tensor with shape {shape} is ambiguous: use .any() or .all()",
                               ValueError)
        return
    loc = user_frame()
    apply("assert", ops.eq(ops.numel(x), 1), message="the truth value of a tensor with more than one element is "
          "ambiguous: use .any() or .all()", where=f"{loc[0]}:{loc[1]}" if loc else "", error="ValueError")
