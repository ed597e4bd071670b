"""Errors that point at the user's source line, and how that line is found.

Converted code is compiled under the user's own file name and line numbers, so the user's
line is simply the innermost frame outside the d2s package (:func:`user_frame`); no map from
generated to original lines is needed. Every error raised while a program is built or a
function is converted names that line the same way (:func:`where_text`).

This module imports nothing of d2s: ``tensor.py``, the program builder and the converter all
raise these errors.
"""
import linecache
import os
import sys

_PKG = os.path.dirname(os.path.abspath(__file__))
# d2s's own demo model (``d2s demo``) is user code: errors and warnings point into it
_USER_FILES = {os.path.join(_PKG, "demo.py")}


class ConversionError(SyntaxError):
    """A construct d2s cannot convert, reported at the user's original file and line.

    Being a SyntaxError, Python's traceback shows ``File "...", line N`` with the line and a
    caret under it, as it does for a real syntax error.
    """

    def __init__(self, message, filename=None, lineno=None, col_offset=0):
        text = linecache.getline(filename, lineno).rstrip("\n") if filename and lineno else None
        offset = (col_offset or 0) + 1
        if text:
            offset = len(text) - len(text.lstrip()) + 1
        super().__init__(message, (filename, lineno, offset, text))

    def __str__(self):
        where = f'\n  File "{self.filename}", line {self.lineno}' if self.filename else ""
        shown = ""
        if self.text:
            line = self.text.strip()
            shown = f"\n    {line}\n    {'^' * max(1, len(line))}"
        return f"{self.msg}{where}{shown}"


class SourceUnavailable(Exception):
    """``inspect.getsource`` cannot find the function's source (defined in a REPL or by
    ``exec``); the caller should fall back to running the function eagerly."""


class NoProgramError(RuntimeError):
    """A program was asked of a function that cannot be converted (its source is unavailable):
    it runs eagerly, so it has no program to print, save or export."""


class ConvertError(TypeError):
    """Tensor control flow whose parts do not fit together (a name defined in one branch only,
    branches of different structure or dtype, a loop variable changing dtype)."""


class SymbolicValueError(TypeError):
    """A symbolic tensor (inside a program being built) was turned into a Python value."""


def is_user_file(filename):
    path = os.path.abspath(filename)
    return (not path.startswith(_PKG + os.sep) or path in _USER_FILES) and "<frozen" not in path


def user_frame():
    """(filename, lineno, line text) of the innermost frame outside d2s itself, or None."""
    f = sys._getframe(1)
    while f is not None:
        if is_user_file(f.f_code.co_filename):
            return f.f_code.co_filename, f.f_lineno, linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
        f = f.f_back
    return None


def traceback_user_line(tb):
    """``'file:line'`` of the innermost frame of traceback ``tb`` outside d2s itself, or ''."""
    where = ""
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def where_text():
    """The user's line as a traceback shows it (file, line, source, carets), or ''."""
    loc = user_frame()
    if loc is None:
        return ""
    fn, line, text = loc
    return f"\n  File \"{fn}\", line {line}\n    {text}\n    {'^' * max(1, len(text))}"


def at_user_line(message, cls=ConvertError):
    """``cls(message)`` with the user's file and line shown and marked."""
    return cls(f"{message}{where_text()}")


def symbolic_value_error(t, what):
    """The error for symbolic tensor ``t`` used where ``what`` needs a concrete value."""
    return SymbolicValueError(
        f"{what} needs a concrete value, but this tensor ({t._var.name}: {t._var.type}) is symbolic: "
        f"it only has a value when the program runs.{where_text()}\n"
        "Inside d2s.static.build_program, use d2s.cond / d2s.while_loop for control flow on tensors; "
        "@d2s.jit.to_static converts Python if/while/for on tensors for you.")


def stray_symbolic_error(opname):
    """The error for op ``opname`` given a symbolic tensor outside the program it belongs to."""
    return SymbolicValueError(
        f"{opname}: a symbolic tensor was used outside the program it belongs to (it escaped a "
        f"build_program/to_static call).{where_text()}")
