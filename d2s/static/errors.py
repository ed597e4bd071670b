"""Errors for symbolic tensors used as Python values, pointing at the user's line."""
import os
import traceback

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# d2s's own demo model (``d2s demo``) is user code: errors and warnings point into it
_USER_FILES = {os.path.join(_PKG, "demo.py")}


class SymbolicValueError(TypeError):
    """A symbolic tensor (inside a program being built) was turned into a Python value."""


def user_frame():
    """(filename, lineno, line) of the innermost frame outside d2s itself."""
    for fs in reversed(traceback.extract_stack()):
        fn = os.path.abspath(fs.filename)
        if (not fn.startswith(_PKG + os.sep) or fn in _USER_FILES) and "<frozen" not in fn:
            return fs.filename, fs.lineno, (fs.line or "").strip()
    return None


def where_text():
    loc = user_frame()
    if loc is None:
        return ""
    fn, line, text = loc
    try:
        from ..jit.linemap import original_location
        fn, line, text = original_location(fn, line, text)
    except Exception:
        pass
    return f"\n  File \"{fn}\", line {line}\n    {text}\n    {'^' * max(1, len(text))}"


def symbolic_value_error(t, what):
    return SymbolicValueError(
        f"{what} needs a concrete value, but this tensor ({t._var.name}: {t._var.type}) is symbolic: "
        f"it only has a value when the program runs.{where_text()}\n"
        "Inside d2s.static.build_program, use d2s.cond / d2s.while_loop for control flow on tensors; "
        "@d2s.jit.to_static converts Python if/while/for on tensors for you.")


def stray_symbolic_error(opname):
    return SymbolicValueError(
        f"{opname}: a symbolic tensor was used outside the program it belongs to (it escaped a "
        f"build_program/to_static call).{where_text()}")
