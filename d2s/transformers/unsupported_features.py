"""Rejects syntax that cannot become a graph and pins control flow that must stay Python.

``yield``, ``await`` and ``async`` raise a ConversionError at once. An ``if``/``while``/``for``
carrying one that writes a ``global``/``nonlocal`` name, and, in a function with a ``return``
in a ``try``'s handlers, ``else`` or ``finally`` inside an if/while/for, each one holding a
``return`` stays plain Python (so those returns stay real returns); its test is wrapped in ``_jst.python_cond`` (its
iterable in ``_jst.python_iter``), which raises at the user's line, naming the construct, only
if the value turns out to be a symbolic tensor. Control flow inside ``try``/``with`` bodies
converts like any other (loop ``else`` clauses are lowered before this pass).
"""
import gast

from . import gast_compat as gc
from .analysis import activity
from .anno import Key, setanno
from .base import Transformer, copy_location, jst

_KIND = {gast.If: "if", gast.While: "while", gast.For: "for"}
_TRY_RETURN = "holding a `return` inside a `try` block's handlers, `else` or `finally`"


def _has_try_return(stmts, in_control, in_try, any_return=False):
    """Whether a ``return`` sits inside a try's handlers, ``else`` or ``finally`` inside an
    if/while/for among ``stmts`` (with ``any_return``: whether any return sits in them); nested
    defs are not entered. Returns in with and try bodies do not count: the early-return pass
    lowers them."""
    for s in stmts:
        if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        if isinstance(s, gast.Return) and (any_return or (in_control and in_try)):
            return True
        control = in_control or isinstance(s, (gast.If, gast.While, gast.For))
        if isinstance(s, gast.Try):
            others = list(s.orelse or []) + list(s.finalbody or []) + [b for h in s.handlers for b in h.body]
            if _has_try_return(s.body, control, in_try, any_return) or \
                    _has_try_return(others, control, True, any_return):
                return True
            continue
        inner = list(getattr(s, "body", None) or []) + list(getattr(s, "orelse", None) or [])
        if inner and _has_try_return(inner, control, in_try, any_return):
            return True
    return False


class UnsupportedFeatures(Transformer):
    def transform(self, func):
        self.declared = activity.declared_nonlocal(func)
        self._check_expressions(func)
        # a `return` inside try/with inside an if/while/for must stay a real return (the
        # early-return pass cannot carve a try/with into branch functions): every if/while/for
        # holding a return then stays Python, which is exact for Python conditions
        self.try_returns = _has_try_return(func.body, False, False)
        func.body = self._block(func.body, None, False)
        return func

    def _check_expressions(self, func):
        stack = list(func.body)
        while stack:
            node = stack.pop()
            if isinstance(node, (gast.Yield, gast.YieldFrom)):
                raise self.error(node, "`yield` is not supported by to_static: a generator cannot "
                                       "become a static program (mark the function @d2s.jit.not_to_static)")
            if isinstance(node, gast.Await):
                raise self.error(node, "`await` is not supported by to_static")
            if isinstance(node, (gast.AsyncFor, gast.AsyncWith, gast.AsyncFunctionDef)):
                raise self.error(node, "`async` is not supported by to_static")
            if isinstance(node, (gast.FunctionDef, gast.ClassDef)):
                continue  # converted on their own when called
            stack.extend(gast.iter_child_nodes(node))

    def _block(self, stmts, reason, in_control):
        for s in stmts:
            self._statement(s, reason, in_control)
        return stmts

    def _statement(self, s, reason, in_control):
        if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            return
        if isinstance(s, gast.Return) and reason and in_control and reason != _TRY_RETURN:
            raise self.error(s, f"`return` {reason} inside an if/while/for is not supported by to_static; "
                                "assign the result to a variable and return it after the block")
        inner = reason
        if isinstance(s, (gast.If, gast.While, gast.For)):
            own = reason
            if not own and self.declared:
                mods, _ = activity.modified(s.body + s.orelse)
                if isinstance(s, gast.For):
                    mods |= activity.target_effects(s.target)[1]
                escaping = sorted(mods & self.declared)
                if escaping:
                    own = f"writing the global/nonlocal name '{escaping[0]}'"
            if not own and self.try_returns and _has_try_return([s], True, False, any_return=True):
                own = _TRY_RETURN
            if own:
                setanno(s, Key.PYTHON_ONLY, own)
                self._pin(s, own)
            # statements nested in one held Python for a try/with return are judged on their own
            inner = None if own == _TRY_RETURN else own
            in_control = True
        for field in ("body", "orelse", "finalbody"):
            self._block(getattr(s, field, None) or [], inner, in_control)
        for h in getattr(s, "handlers", None) or []:
            self._block(h.body, inner, in_control)

    def _pin(self, s, reason):
        kind = gc.constant(_KIND[type(s)])
        # the wrapper call takes the test's own line: an error it raises points at the
        # `if`/`while`/`for` line, not at the statement's last line
        if isinstance(s, gast.For):
            s.iter = copy_location(gc.call(jst("python_iter"), [s.iter, kind, gc.constant(reason)]), s.iter)
        else:
            s.test = copy_location(gc.call(jst("python_cond"), [s.test, kind, gc.constant(reason)]), s.test)
