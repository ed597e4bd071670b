"""Lowers a ``while`` whose test binds a name with ``:=`` to assignments at the top of the body.

``while (i := i + 1) <= n: body`` becomes::

    while True:
        i = i + 1
        if not (i <= n):
            break
        body

so the assignment sits in the loop body, where the loop passes see ``i`` as a variable the
loop carries (left in the test, the converted test function bound a local ``i`` of its own and
the body read an unbound one). ``continue`` still reaches the test first, as in Python. Only
walruses that Python evaluates on every test, before any call of the test, are hoisted (that
keeps the order of effects); one inside ``and``/``or``, a ternary, a comprehension, or after a
call is refused with a clear error. The pass runs after the loop-``else`` pass, which already
cleared its flag before the user's own breaks, so this generated ``break`` (the test turning
false) still runs the ``else`` clause, as Python does.
"""
import gast

from . import gast_compat as gc
from .base import Transformer, copy_location

_SCOPES = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _has_walrus(e):
    return any(isinstance(n, gast.NamedExpr) for n in gast.walk(e))


class _Hoist:
    """Replaces each walrus of an expression by its target, collecting the assignments in
    evaluation order; ``bad`` is the first walrus that cannot be hoisted exactly."""

    def __init__(self):
        self.stmts, self.called, self.bad = [], False, None

    def expr(self, e, conditional=False):
        if isinstance(e, gast.NamedExpr):
            if conditional or self.called:
                self.bad = self.bad or e
                return e
            value = self.expr(e.value)
            self.stmts.append(copy_location(gc.assign(gc.name(e.target.id, gast.Store()), value), e))
            return copy_location(gc.name(e.target.id), e)
        if isinstance(e, gast.BoolOp):
            e.values = [self.expr(e.values[0], conditional)] + [self.expr(v, True) for v in e.values[1:]]
            return e
        if isinstance(e, gast.IfExp):
            e.test = self.expr(e.test, conditional)
            e.body, e.orelse = self.expr(e.body, True), self.expr(e.orelse, True)
            return e
        if isinstance(e, _SCOPES):
            if _has_walrus(e):
                self.bad = self.bad or e
            return e
        for field, value in gast.iter_fields(e):
            if isinstance(value, gast.expr):
                setattr(e, field, self.expr(value, conditional))
            elif isinstance(value, list):
                for k, v in enumerate(value):
                    if isinstance(v, gast.expr):
                        value[k] = self.expr(v, conditional)
                    elif isinstance(v, gast.keyword):
                        v.value = self.expr(v.value, conditional)
        if isinstance(e, gast.Call):
            self.called = True
        return e


class WhileWalrus(Transformer):
    def visit_While(self, node):
        node = self.generic_visit(node)
        if node.orelse or not _has_walrus(node.test):
            return node
        hoist = _Hoist()
        test = hoist.expr(node.test)
        if hoist.bad is not None:
            raise self.error(hoist.bad, "a `:=` inside `and`/`or`, a ternary or a comprehension, or after a call, in a "
                                        "`while` condition is not supported by to_static; assign the name in a "
                                        "statement before the loop and at the end of its body instead")
        stop = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=test), body=[gast.Break()], orelse=[])
        copy_location(stop, node)
        node.test = copy_location(gc.constant(True), node)
        node.body = hoist.stmts + [stop] + node.body
        return node
