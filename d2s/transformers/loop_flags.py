"""Shared lowering of `break`/`continue` into a flag plus guards (used by two transformers)."""
import gast

from . import gast_compat as gc
from .templates import replace


def contains(stmts, kind):
    """Whether a statement of type ``kind`` belongs to this loop body (nested loops and defs
    have their own)."""
    return any(True for _ in own(stmts, kind))


def own(stmts, kind):
    """The statements of type ``kind`` that belong to this loop body."""
    for s in stmts:
        if isinstance(s, kind):
            yield s
        elif isinstance(s, (gast.If, gast.With, gast.Try)):
            inner = list(getattr(s, "body", [])) + list(getattr(s, "orelse", []) or []) + \
                list(getattr(s, "finalbody", []) or [])
            for h in getattr(s, "handlers", []) or []:
                inner += h.body
            yield from own(inner, kind)


def lower(stmts, kind, flag):
    """``stmts`` with each ``kind`` statement replaced by ``flag = True`` and everything that
    could run after it guarded by ``if not flag:``; code right after it is dropped (dead)."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, kind):
            out.append(gast.copy_location(gc.assign(gc.name(flag, gast.Store()), gc.constant(True)), s))
            return out
        if isinstance(s, (gast.If, gast.With, gast.Try)) and contains([s], kind):
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None):
                    setattr(s, field, lower(getattr(s, field), kind, flag) or [gast.Pass()])
            for h in getattr(s, "handlers", []) or []:
                h.body = lower(h.body, kind, flag) or [gast.Pass()]
            out.append(s)
            rest = stmts[i + 1:]
            if rest:
                guard = replace("if not flag:\n    rest", flag=flag, rest=lower(rest, kind, flag))[0]
                out.append(gast.copy_location(guard, rest[0]))
            return out
        out.append(s)
    return out
