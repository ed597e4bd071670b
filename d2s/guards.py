"""What a trace bakes in: decisions (where a tensor's value steered Python), their warnings,
and the errors raised when a later input would take another path.

It sits low (it imports nothing of d2s): ``d2s.trace`` records the decisions, and ``d2s.jit``,
below ``d2s.trace``, reads a saved trace's guard errors back when it loads one."""
import os
import warnings

import numpy as np


class TracerWarning(Warning):
    """A tensor's value steered Python while tracing: the trace bakes that value in."""


class TraceGuardError(RuntimeError):
    """A traced function was called on an input that would take another path than the traced
    one (a guard recorded at trace time saw another value), or that the trace cannot take
    (another shape, another non-tensor argument).

    Attributes: ``filename``, ``lineno``, ``code`` (the user's line), ``what`` (how the value
    was read), ``expected`` (the traced value) and ``actual`` (this input's value); ``None``
    where they do not apply.
    """

    def __init__(self, message, filename=None, lineno=None, code="", what="", expected=None, actual=None):
        super().__init__(message)
        self.filename, self.lineno, self.code = filename, lineno, code
        self.what, self.expected, self.actual = what, expected, actual


class TraceCheckError(ValueError):
    """``trace(..., check_inputs=...)`` found inputs where the trace disagrees with eager.

    ``.table`` is the report, ``.traced`` the TracedFunction (still usable)."""

    def __init__(self, message, table, traced):
        super().__init__(message)
        self.table, self.traced = table, traced


# How each value read (``what`` from Tensor._concrete / __len__) is checked by the guard op.
CHECK_OF = {"bool()": "bool", "int()": "int", "float()": "float", ".item()": "item",
            "an index": "int", "len()": "len"}


class Decision:
    """One place where a tensor's value went to Python during the trace."""

    __slots__ = ("filename", "lineno", "code", "what", "value", "var")

    def __init__(self, filename, lineno, code, what, value, var):
        self.filename, self.lineno, self.code = filename, lineno, code
        self.what, self.value, self.var = what, value, var

    @property
    def where(self):
        return f"{os.path.basename(self.filename)}:{self.lineno}" if self.filename else "<unknown>"

    def key(self):
        """Hashable summary of the decision, used to tell control-flow paths apart."""
        v = self.value
        if isinstance(v, np.ndarray):
            v = (v.shape, v.tobytes())
        return (self.filename, self.lineno, self.what, v)

    def __repr__(self):
        return f"<Decision {self.where} {self.what} = {_short(self.value)}>"


def _short(v):
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}" if v.size > 6 else repr(v.tolist())
    return repr(v)


def kind_of_line(code):
    """'if', 'while', 'for' or '' from the text of a source line."""
    s = code.lstrip()
    for kw in ("if", "elif", "while", "for"):
        if s.startswith(kw + " ") or s.startswith(kw + "("):
            return "if" if kw == "elif" else kw
    if " if " in s and " else " in s:
        return "if"
    return ""


def baked_text(decisions):
    """What the trace baked in at one source location (all decisions there, in order)."""
    d0 = decisions[0]
    kind = kind_of_line(d0.code)
    values = [d.value for d in decisions]
    if d0.what == "bool()":
        if kind == "while":
            n = sum(1 for v in values if v)
            return f"loop condition: {', '.join(map(str, values))} (trip count {n} baked in)"
        if kind == "if":
            if len(values) == 1:
                return f"branch taken: {values[0]}"
            return f"branch taken: {', '.join(map(str, values))} (evaluated {len(values)} times)"
        return f"bool() = {', '.join(map(str, values))}"
    if d0.what == "an index":
        label = "range() bound" if "range(" in d0.code else "index"
        return f"{label} = {', '.join(map(_short, values))}"
    return f"{d0.what} = {', '.join(map(_short, values))}"


def group_by_line(decisions):
    """{(filename, lineno): [decisions]} in first-seen order."""
    out = {}
    for d in decisions:
        out.setdefault((d.filename, d.lineno), []).append(d)
    return out


def emit_warnings(decisions, guards):
    """One TracerWarning per source location, at the user's file and line."""
    then = ("A call whose input takes another path raises d2s.jit.TraceGuardError" if guards else
            "Guards are off: a call whose input takes another path silently returns this path's answer")
    for (filename, lineno), ds in group_by_line(decisions).items():
        code = ds[0].code
        msg = (f"{os.path.basename(filename or '?')}:{lineno}: `{code}`: a tensor's value steered Python "
               f"while tracing; the trace bakes in {baked_text(ds)}. {then}; "
               "d2s.jit.to_static converts this control flow into graph ops instead.")
        warnings.warn_explicit(msg, TracerWarning, filename or "<unknown>", lineno or 0,
                               module=_module_name(filename))


def _module_name(filename):
    base = os.path.basename(filename or "<unknown>")
    return base[:-3] if base.endswith(".py") else base


def guard_error_from(err):
    """The TraceGuardError for a runtime GuardError (naming the user's file and line)."""
    where = getattr(err, "where", "")
    filename, lineno = None, None
    if ":" in where:
        filename, _, line = where.rpartition(":")
        lineno = int(line) if line.isdigit() else None
    shown = f"File \"{filename}\", line {lineno}" if filename else where
    code = getattr(err, "code", "")
    if err.what == "bool()" and kind_of_line(code) in ("if", "while"):
        label = "branch taken" if kind_of_line(code) == "if" else "loop condition"
        baked = f"{label}: {err.expected!r}; this input gives {err.actual!r}"
    elif isinstance(err.expected, str):  # an array read whole (.numpy(), .tolist())
        baked = f"the values read by {err.what}; this input gives {err.actual}"
    else:
        baked = f"{err.what} = {err.expected!r}; this input gives {err.actual!r}"
    msg = (f"this input takes another path than the traced one.\n  {shown}\n    {code}\n"
           f"  the trace baked in {baked}.\n"
           "Re-trace with an input that takes this path, or use d2s.jit.to_static, which converts "
           "data-dependent control flow into graph ops.")
    return TraceGuardError(msg, filename, lineno, code, err.what, err.expected, err.actual)


def find_guard_error(exc):
    """The runtime GuardError behind ``exc`` (the executor wraps kernel errors), or None."""
    from d2s_runtime import GuardError
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, GuardError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
