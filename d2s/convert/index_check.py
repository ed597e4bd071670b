"""An IndexError met while a program is built, deferred to when the program runs."""
from ..dispatch import apply
from ..tensor import tensor
from ..user_errors import traceback_user_line


def deferred_index_error(exc, ok=None):
    """Code that raised IndexError while a program was built (``a.pop()`` on a Python list that
    is still empty, in a tensor branch that may never run) raises it when that code runs in the
    program instead: an effect op in the current block, naming the user's line (raising unless
    the boolean tensor ``ok`` holds, or always)."""
    message = str(exc).split("\n")[0] or "list index out of range"
    apply("list_index_check", tensor(False) if ok is None else ok, message=message,
          where=traceback_user_line(exc.__traceback__))
