"""Errors raised by converted code while it builds a program, at the user's original line."""
import linecache
import os
import sys

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ConvertError(TypeError):
    """Tensor control flow whose parts do not fit together (a name defined in one branch only,
    branches of different structure or dtype, a loop variable changing dtype)."""


def user_location():
    """(filename, lineno, text) of the innermost frame outside the d2s package: converted code
    is compiled under the user's file and line numbers, so this is the user's statement."""
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(_PKG + os.sep) and not fn.startswith("<frozen"):
            line = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
            return f.f_code.co_filename, f.f_lineno, line
        f = f.f_back
    return None


def at_user_line(message, cls=ConvertError):
    """``cls(message)`` with the user's file and line shown and marked."""
    loc = user_location()
    if loc is not None:
        fn, line, text = loc
        message = f"{message}\n  File \"{fn}\", line {line}\n    {text}\n    {'^' * max(1, len(text))}"
    return cls(message)


def deferred_index_error(exc, ok=None):
    """Code that raised IndexError while a program was built (``a.pop()`` on a Python list that
    is still empty, in a tensor branch that may never run) raises it when that code runs in the
    program instead: an effect op in the current block, naming the user's line (raising unless
    the boolean tensor ``ok`` holds, or always)."""
    from ..dispatch import apply
    from ..tensor import tensor
    where = ""
    tb = exc.__traceback__
    while tb is not None:
        fn = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not fn.startswith(_PKG + os.sep) and not fn.startswith("<"):
            where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    message = str(exc).split("\n")[0] or "list index out of range"
    apply("list_index_check", tensor(False) if ok is None else ok, message=message, where=where)
