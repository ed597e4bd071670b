"""The ``guard`` op: a traced program's check that a new input takes the recorded path.

When a trace reads a tensor's value in Python (``if t:``, ``int(t)``, ``len(t)`` of a
data-dependent size, ...), the value is baked into the program. ``guard`` recomputes that
value from the program's own ops at run time and compares it with the recorded one; a
mismatch raises :class:`GuardError` instead of letting the program return the answer of a
path the input would not take. It has no outputs and an effect, so passes never drop it.

Attrs: ``check`` (how the value was read: ``bool``, ``int``, ``float``, ``item``, ``len``,
``shape``, ``array``), ``expected`` (the recorded value; for ``array`` a second input holds it),
``where`` (``file:line`` of the user's code) and ``code``/``what`` (for the message).
"""
import math

from .registry import ShapeError, deflowering, defop


class GuardError(RuntimeError):
    """A traced program met an input that would take another path than the traced one."""

    def __init__(self, message, where="", code="", what="", expected=None, actual=None):
        super().__init__(message)
        self.where, self.code, self.what = where, code, what
        self.expected, self.actual = expected, actual


CHECKS = ("bool", "int", "float", "item", "len", "shape", "array")


def _guard_infer(x, *ref, check, expected=None, where="", code="", what=""):
    if check not in CHECKS:
        raise ShapeError(f"guard: unknown check {check!r}; expected one of {', '.join(CHECKS)}")
    if check == "array" and len(ref) != 1:
        raise ShapeError("guard: check='array' needs the recorded array as a second input")
    return ()


def _host_scalar(xp, x):
    return (x if hasattr(x, "item") else xp.asarray(x)).item()


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


@defop("guard", _guard_infer, n_out=0, effect=True)
def _guard(xp, x, *ref, check, expected=None, where="", code="", what=""):
    """Raise GuardError when ``x`` no longer gives the value recorded at trace time."""
    if check == "bool":  # the common case (if/while), kept to one conversion and compare
        actual = bool(x)
        if actual is expected:
            return ()
    elif check == "len":
        actual = int(x.shape[0])
    elif check == "shape":
        actual, expected = tuple(int(d) for d in x.shape), tuple(expected)
    elif check == "array":
        same = x.shape == ref[0].shape and bool(xp.all((x == ref[0]) | ((x != x) & (ref[0] != ref[0]))))
        if same:
            return ()
        actual = f"another array (shape {tuple(x.shape)})"
        expected = f"the traced array (shape {tuple(ref[0].shape)})"
        raise GuardError(_message(where, code, what, expected, actual), where, code, what, expected, actual)
    if check not in ("bool", "len", "shape"):
        v = _host_scalar(xp, x)
        actual = int(v) if check == "int" else float(v) if check == "float" else v
    if not _same(actual, expected):
        raise GuardError(_message(where, code, what, expected, actual), where, code, what, expected, actual)
    return ()


def _message(where, code, what, expected, actual):
    src = f" `{code}`" if code else ""
    return (f"guard failed at {where}{src}: the trace recorded {what} = {expected!r}, "
            f"this input gives {actual!r}, so it would take another path than the traced one")


@deflowering("guard", "graph")
def _guard_graph(g, x, *ref, check, expected=None, where="", code="", what=""):
    """(gpu/capture.py) The guard's test on the device, into the error word (a failing guard
    makes the call run on Python, which raises GuardError); shape and length checks are
    decided at capture, where shapes are fixed."""
    xp = g.xp
    if check == "len":
        g.const_check(int(x.shape[0]) == expected)
    elif check == "shape":
        g.const_check(tuple(int(d) for d in x.shape) == tuple(expected))
    elif check == "array":
        r = ref[0]
        if tuple(x.shape) != tuple(r.shape):
            g.const_check(False)
        g.check(g.run(lambda a, b: xp.all((a == b) | ((a != a) & (b != b))), x, r))
    elif check in ("bool", "int", "float") and isinstance(expected, (bool, int, float)):
        if check == "float" and math.isnan(expected):
            g.check(g.run(lambda a: a != a, x))
        else:
            g.check(g.run(lambda a: xp.all(a == expected), x))
    else:
        g.unsupported(f"guard check {check!r} has no graph form")
    return ()
