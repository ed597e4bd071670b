"""Lowers the `else` clause of `for`/`while` loops to a flag tested after the loop.

``for ...: body else: tail`` runs ``tail`` when the loop ends without a ``break``. Without a
``break`` of its own the loop always ends that way, so ``tail`` simply follows the loop.
Otherwise each own ``break`` first clears a ``no_break`` flag, and ``tail`` runs under
``if no_break:`` after the loop. A ``return`` in the body leaves the function before the
test is reached, as in Python; a ``break``/``continue``/``return`` in ``tail`` now sits in the
enclosing loop or function, which is where Python sends it.
"""
import gast

from . import gast_compat as gc
from .base import Transformer, copy_location
from .loop_flags import contains


def _clear_before_breaks(stmts, flag):
    """``stmts`` with ``flag = False`` put before each ``break`` that belongs to this loop."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Break):
            clear = gast.copy_location(gc.assign(gc.name(flag, gast.Store()), gc.constant(False)), s)
            out += [clear, s]
            continue
        if isinstance(s, (gast.If, gast.With, gast.Try)):
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None):
                    setattr(s, field, _clear_before_breaks(getattr(s, field), flag))
            for h in getattr(s, "handlers", None) or []:
                h.body = _clear_before_breaks(h.body, flag)
        out.append(s)
    return out


class LoopElse(Transformer):
    def _loop(self, node):
        node = self.generic_visit(node)  # inner loops first: their breaks are their own
        tail = node.orelse
        if not tail:
            return node
        node.orelse = []
        if not contains(node.body, gast.Break):
            return [node] + tail
        flag = self.new_name("no_break")
        node.body = _clear_before_breaks(node.body, flag)
        init = gast.copy_location(gc.assign(gc.name(flag, gast.Store()), gc.constant(True)), node)
        # the test takes the line of the first `else` statement: an error in it points there
        test = gast.If(test=gc.name(flag), body=tail, orelse=[])
        copy_location(test, tail[0])
        return [init, node, test]

    visit_While = _loop
    visit_For = _loop
