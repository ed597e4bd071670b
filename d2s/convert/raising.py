"""A Python ``raise`` met while a branch of a tensor ``if`` is traced, deferred to run time.

Tracing runs both branches of a tensor ``if``, but eager code raises only when the branch it
takes raises. So an exception that the user's own ``raise`` statement (or ``assert``) throws
while one branch is traced becomes an effect op in that branch's block, raising the same
built-in exception type (a ``Program<Name>`` subclass from d2s_runtime) with the same message
and the user's file:line each time the program takes that branch; the other branch gives the
outputs. IndexError keeps its own op (``list_index_check``: a Python list read out of range).
"""
import builtins
import dis

from d2s_runtime.ops import ShapeError

from ..dispatch import apply
from ..tensor import tensor
from ..user_errors import is_user_file, at_user_line, traceback_user_line

_RAISE_OPS = {dis.opmap[n] for n in ("RAISE_VARARGS", "RERAISE") if n in dis.opmap}
# generator protocol and name lookups: never a user's deliberate raise of a tensor condition
_NOT_DEFERRED = (StopIteration, StopAsyncIteration, NameError)


def _innermost(tb):
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb


def raised_by_user(exc):
    """Whether ``exc`` comes from a ``raise`` statement in the user's code or a failed
    ``assert`` on Python values in it (not from d2s itself refusing something)."""
    if not isinstance(exc, Exception) or isinstance(exc, _NOT_DEFERRED) or exc.__traceback__ is None:
        return False
    tb = _innermost(exc.__traceback__)
    code = tb.tb_frame.f_code
    if not is_user_file(code.co_filename):
        return code.co_name == "convert_assert" and isinstance(exc, AssertionError)
    raw = code.co_code
    return 0 <= tb.tb_lasti < len(raw) and raw[tb.tb_lasti] in _RAISE_OPS


def eager_error(exc):
    """Marks ``exc`` (raised by a converted-code helper) as the error Python itself raises at
    that point of eager code (``for v in 3``, iterating a 0-d tensor): like a user's ``raise``, it
    is deferred to the runs that reach it when it comes up in a tensor branch or loop body.
    Returns ``exc``."""
    exc.d2s_eager_error = True
    return exc


def deferrable(exc):
    """Whether a branch that raised ``exc`` while traced can raise it when the program runs."""
    return isinstance(exc, IndexError) or getattr(exc, "d2s_eager_error", False) or raised_by_user(exc)


def defer(exc, ok=None):
    """An op in the current block raising ``exc``'s type and message when it runs (unless the
    boolean tensor ``ok`` holds). A user-defined exception class cannot be raised by a program
    (programs are saved without Python code): a clear error at the user's line."""
    if isinstance(exc, IndexError):
        # `a.pop()` on a Python list still empty, in a tensor branch that may never run
        message = str(exc).split("\n")[0] or "list index out of range"
        apply("list_index_check", tensor(False) if ok is None else ok, message=message,
              where=traceback_user_line(exc.__traceback__))
        return
    name = type(exc).__name__
    if getattr(builtins, name, None) is not type(exc) and type(exc) is not ShapeError:
        raise at_user_line(
            f"`raise {name}(...)` in one branch of a tensor `if` (or a tensor loop): a program can raise only "
            f"Python's built-in exception types when it runs, and {name} is not one. Raise a built-in type "
            "(ValueError, RuntimeError, ...) there, or decide the condition with Python values") from None
    # (an error of converted code's own carries the user's line in its text: the op names it)
    message = str(exc).split("\n")[0] if getattr(exc, "d2s_eager_error", False) else str(exc)
    apply("assert", tensor(False) if ok is None else ok, message=message,
          where=traceback_user_line(exc.__traceback__), error=name)
