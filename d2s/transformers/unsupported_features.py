"""Rejects syntax that cannot become a graph and pins control flow that must stay Python.

``yield``, ``await`` and ``async`` raise a ConversionError at once. An ``if``/``while``/``for``
inside ``try`` or ``with``, or one that writes a
``global``/``nonlocal`` name stays plain Python; its test is wrapped in ``_jst.python_cond``
(its iterable in ``_jst.python_iter``), which raises at the user's line, naming the construct,
only if the value turns out to be a symbolic tensor.
"""
import gast

from . import gast_compat as gc
from .analysis import activity
from .base import Transformer, copy_location, jst

_KIND = {gast.If: "if", gast.While: "while", gast.For: "for"}


class UnsupportedFeatures(Transformer):
    def transform(self, func):
        self.declared = activity.declared_nonlocal(func)
        self._check_expressions(func)
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
        if isinstance(s, gast.Return) and reason and in_control:
            raise self.error(s, f"`return` {reason} inside an if/while/for is not supported by to_static; "
                                "assign the result to a variable and return it after the block")
        inner = reason
        if isinstance(s, gast.Try):
            inner = reason or "inside a `try` block"
        elif isinstance(s, gast.With):
            inner = reason or "inside a `with` block"
        elif isinstance(s, (gast.If, gast.While, gast.For)):
            own = reason
            if not own and self.declared:
                mods, _ = activity.modified(s.body + s.orelse)
                if isinstance(s, gast.For):
                    mods |= activity.target_effects(s.target)[1]
                escaping = sorted(mods & self.declared)
                if escaping:
                    own = f"writing the global/nonlocal name '{escaping[0]}'"
            if own:
                s._d2s_python_only = own
                self._pin(s, own)
            inner = own
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
