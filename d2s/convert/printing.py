"""``print`` in converted code prints what eager code prints, on every call of the program.

While a program is built, every ``print`` becomes a ``print`` op (``d2s_runtime/ops/debug.py``),
whatever its arguments: an op runs each time the program runs, in the program's order, inside
the branch or loop iteration where it stands, so a call prints eager's sequence (values, order
and count). Python values are printed as text fixed when the program is built (the program is
made for them); a tensor as eager code shows it (``tensor([1., 2.], dtype=float32)``), a tensor
standing for a Python number (a loop counter, ``x.item()``) as that number, with its format
spec in an f-string; lists, tuples and dicts holding tensors, and f-strings (``print(f"loss
{loss:.4f}")``, passed through ``formatted_text``), are assembled from such pieces.
Outside programs (converted code running eagerly) it is Python's print.
"""
import builtins

from .._state import STATE
from ..dispatch import apply
from ..static.weak_index import NumberOrTensor, exact_number, plain_tensor, python_type
from ..tensor import Tensor
from .values import is_symbolic


class FormattedText(str):
    """An f-string given to ``print``: the text Python makes of it, and its pieces (``("s", text)``
    and ``("v", value, conversion, spec)``), from which a program prints run-time values."""

    def __new__(cls, pieces):
        # (a value known only when the program runs shows as its placeholder here: this text is
        # what a use other than print sees, as it would without the conversion)
        text = "".join(p[1] if p[0] == "s" else repr(p[1]) if is_symbolic(p[1]) else _format(*p[1:])
                       for p in pieces)
        obj = super().__new__(cls, text)
        obj.pieces = pieces
        return obj


def _format(value, conversion, spec):
    """What an f-string's ``{value!conversion:spec}`` gives (conversion: -1, 's', 'r' or 'a')."""
    if conversion in ("s", 115):
        value = str(value)
    elif conversion in ("r", 114):
        value = repr(value)
    elif conversion in ("a", 97):
        value = ascii(value)
    return format(value, spec)


def formatted_text(*pieces):
    """The f-string ``f"..."`` of ``print(f"...")``, from its literal and formatted pieces."""
    return FormattedText(pieces)


def convert_print(*args, sep=" ", end="\n", **kwargs):
    """``print``: inside a program being built, a ``print`` op printing what eager code prints
    (see the module); otherwise, or with ``file=``, Python's print, now."""
    if STATE.builder is None or kwargs.keys() - {"flush"}:
        builtins.print(*args, sep=sep, end=end, **kwargs)
        return
    tensors = []
    parts = [_part(a, tensors, top=True) for a in args]
    apply("print", *tensors, parts=parts, sep=str(sep), end=str(end))


def _part(value, tensors, top=False):
    """The print op part that shows ``value`` as ``str`` (``top``) or ``repr`` would."""
    if isinstance(value, NumberOrTensor):
        return _either(value, tensors, "")
    if isinstance(value, Tensor) and value.is_symbolic:
        tensors.append(value)
        py = python_type(value)
        if py is not None:
            return ["f", len(tensors) - 1, "", py.__name__]
        return ["r", len(tensors) - 1]
    if isinstance(value, FormattedText) and any(p[0] == "v" and _has_symbolic(p[1]) for p in value.pieces):
        return ["c", [["s", p[1]] if p[0] == "s" else _formatted(*p[1:], tensors) for p in value.pieces]]
    if _has_symbolic(value):
        return ["c", _container(value, tensors)]
    return ["s", str(value) if top else repr(value)]


def _formatted(value, conversion, spec, tensors):
    """The part of an f-string's ``{value!conversion:spec}``."""
    if not (isinstance(value, Tensor) and value.is_symbolic):
        if _has_symbolic(value):
            return ["c", _container(value, tensors)]
        return ["s", _format(value, conversion, spec)]
    if isinstance(value, NumberOrTensor) and conversion not in ("r", 114, "a", 97):
        return _either(value, tensors, spec)
    py = python_type(value)
    if py is not None and conversion not in ("r", 114, "a", 97):
        tensors.append(value)
        return ["f", len(tensors) - 1, spec, py.__name__]
    if spec:  # eager code's error: a tensor takes no format spec
        _format(Tensor._make(None, value._var), -1, spec)
    return _part(value, tensors)


def _either(value, tensors, spec):
    """The part showing a value that is a Python number on some runs (of type ``pytype``) and
    a tensor (or a number of ``else_type``) on others: the print op picks by its flag."""
    tensors.append(value.is_number)
    flag = len(tensors) - 1
    if value.else_type is None:
        n = exact_number(value)
        if not isinstance(n, Tensor):
            number = ["s", format(n, spec)]
        else:
            tensors.append(n)
            number = ["f", len(tensors) - 1, spec, value.pytype.__name__]
        tensors.append(plain_tensor(value))
        # (a 0-d tensor with a format spec formats its element, as eagerly)
        other = ["f", len(tensors) - 1, spec, "float" if value.dtype.is_floating_point else "int"] if spec \
            else ["r", len(tensors) - 1]
        return ["e", flag, number, other]
    tensors.append(plain_tensor(value))
    j = len(tensors) - 1
    return ["e", flag, ["f", j, spec, value.pytype.__name__], ["f", j, spec, value.else_type.__name__]]


def _container(value, tensors):
    """Pieces showing a list, tuple or dict holding symbolic tensors, as ``repr`` does."""
    if isinstance(value, dict):
        pieces = [["s", "{"]]
        for k, (key, v) in enumerate(value.items()):
            pieces += [["s", (", " if k else "") + repr(key) + ": "], _part(v, tensors)]
        return pieces + [["s", "}"]]
    open_, close = ("[", "]") if isinstance(value, list) else ("(", ")")
    pieces = [["s", open_]]
    for k, v in enumerate(value):
        pieces += [["s", ", "]] if k else []
        pieces.append(_part(v, tensors))
    if isinstance(value, tuple) and len(value) == 1:
        pieces.append(["s", ","])
    return pieces + [["s", close]]


def _has_symbolic(value):
    if is_symbolic(value):
        return True
    if type(value) in (list, tuple):
        return any(_has_symbolic(v) for v in value)
    if type(value) is dict:
        return any(_has_symbolic(v) for v in value.values())
    return False
