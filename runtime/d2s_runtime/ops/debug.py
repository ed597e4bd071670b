"""``print`` and ``assert`` ops: Python's print/assert on tensors, kept inside programs.

Converted code cannot print or check a symbolic tensor while the program is built (it has no
value yet), so ``print(x)`` and ``assert x > 0, "msg"`` become these effect ops, which run
every time the program does. Both have no outputs; passes never drop them.

``print`` attrs: ``parts``, one per argument: ``["s", text]`` (literal text, printed as is),
``["t", j]`` (the j-th tensor input's values), and the forms converted code uses to print what
eager code prints (a tensor's ``repr``, a Python number with a format spec, an f-string or a list
assembled from pieces: see ``_shown``); ``sep`` and ``end`` as in Python's print.
``assert`` attrs: ``message`` and ``where`` (the user's ``file:line``), and ``error``: the
Python exception it stands for, ``"AssertionError"`` (an ``assert`` statement) or
``"UnboundLocalError"`` (converted code reading a variable that the path this run took never
bound, e.g. one first assigned in a tensor loop that ran zero times) or ``"TypeError"`` (using
a variable that is still None on this path), or another built-in exception's name (a Python
``raise`` in the branch of a tensor ``if`` that this run took).
"""
import builtins

import numpy as np

from ..device import to_host
from .registry import ShapeError, deflowering, defop


class ProgramAssertionError(AssertionError):
    """An ``assert`` on tensor values failed while a program ran."""


class ProgramUnboundLocalError(UnboundLocalError):
    """A program read a variable that is not bound on the path this run took, where Python
    raises UnboundLocalError."""


class ProgramTypeError(TypeError):
    """A program used a value that is None on the path this run took (``h = None`` before a
    tensor loop that ran zero times), where Python's operators raise TypeError."""


class ProgramRaisedError(Exception):
    """Base of the errors standing for a Python ``raise`` of a built-in exception type in a
    branch the program took (``raise ValueError(...)`` under a tensor ``if``): each is a
    subclass of both this and that built-in type, so ``except ValueError`` catches it."""


_ERRORS = {"AssertionError": ProgramAssertionError, "UnboundLocalError": ProgramUnboundLocalError,
           "TypeError": ProgramTypeError}


def error_class(name):
    """The exception class an ``assert`` op with ``error=name`` raises: a known one above, or
    for another built-in exception type ``Program<name>`` (a subclass of it)."""
    cls = _ERRORS.get(name)
    if cls is None:
        # (ShapeError: what d2s's ops raise eagerly, e.g. stack of an empty list)
        base = ShapeError if name == "ShapeError" else getattr(builtins, name, None)
        if not (isinstance(base, type) and issubclass(base, Exception)):
            raise ValueError(f"assert op: error={name!r} is not a built-in Python exception type")
        cls = type(f"Program{name}", (ProgramRaisedError, base), {"__module__": __name__})
        _ERRORS[name] = cls
    return cls


def _no_outputs(*types, **attrs):
    return ()


def _host(x):
    return to_host(x)


_PY_TYPES = {"int": int, "float": float, "bool": bool}


def _shown(p, tensors):
    """The text of one ``print`` part: ``["s", text]``; ``["t", j]`` the j-th tensor's values
    (NumPy's format); ``["r", j]`` the j-th tensor as eager code's ``repr`` shows a tensor
    (``tensor([1., 2.], dtype=float32)``); ``["f", j, spec, type]`` the j-th tensor's one
    element as the Python number (``int``, ``float`` or ``bool``) that eager code holds,
    formatted with ``spec`` as ``format`` does; ``["c", [parts]]`` those parts joined;
    ``["e", j, part, other]`` ``part`` where the j-th tensor (a bool) holds, else ``other`` (a
    value that is a Python number on some runs and a tensor on others)."""
    kind = p[0]
    if kind == "s":
        return p[1]
    if kind == "c":
        return "".join(_shown(q, tensors) for q in p[1])
    if kind == "e":
        return _shown(p[2] if bool(np.asarray(_host(tensors[p[1]])).all()) else p[3], tensors)
    x = np.asarray(_host(tensors[p[1]]))
    if kind == "r":
        return f"tensor({np.array2string(x, separator=', ', prefix='tensor(')}, dtype={x.dtype.name})"
    if kind == "f":
        return format(_PY_TYPES[p[3]](x.reshape(-1)[0].item()), p[2])
    return str(x)


@defop("print", _no_outputs, n_out=0, effect=True)
def _print(xp, *tensors, parts, sep=" ", end="\n"):
    """Print literal text and tensor values, as Python's print would (see ``_shown``)."""
    print(*[_shown(p, tensors) for p in parts], sep=sep, end=end)
    return ()


@defop("assert", _no_outputs, n_out=0, effect=True)
def _assert(xp, cond, message="", where="", error="AssertionError"):
    """Raise the ``error`` kind (ProgramAssertionError by default) unless every element of
    ``cond`` is true."""
    if not bool(xp.all(cond)):
        loc = f" (at {where})" if where else ""
        raise error_class(error)(f"{message or 'assertion failed'}{loc}")
    return ()


@deflowering("assert", "graph")
def _assert_graph(g, cond, message="", where="", error="AssertionError"):
    # (gpu/capture.py) a failing assert sets the device error word; the call then runs on
    # the Python backend, which raises this op's error
    g.check(g.run(lambda c: g.xp.all(c), cond))
    return ()
