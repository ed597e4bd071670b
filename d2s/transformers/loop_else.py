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


_MATCH = getattr(gast, "Match", ())  # `match` statements (Python 3.10+)


def _inner_blocks(s):
    """The statement lists nested in ``s`` whose ``break`` still belongs to the enclosing loop
    (not those of nested loops or defs)."""
    if isinstance(s, (gast.If, gast.With, gast.Try)):
        blocks = [getattr(s, f, None) or [] for f in ("body", "orelse", "finalbody")]
        return blocks + [h.body for h in getattr(s, "handlers", None) or []]
    if _MATCH and isinstance(s, _MATCH):
        return [c.body for c in s.cases]
    return []


def _has_own_break(stmts):
    return any(isinstance(s, gast.Break) or any(_has_own_break(b) for b in _inner_blocks(s)) for s in stmts)


def _clear_before_breaks(stmts, flag):
    """``stmts`` with ``flag = False`` put before each ``break`` that belongs to this loop
    (the lists are edited in place, so nested blocks are updated where they stand)."""
    i = 0
    while i < len(stmts):
        s = stmts[i]
        if isinstance(s, gast.Break):
            clear = gast.copy_location(gc.assign(gc.name(flag, gast.Store()), gc.constant(False)), s)
            stmts.insert(i, clear)
            i += 1
        for block in _inner_blocks(s):
            _clear_before_breaks(block, flag)
        i += 1
    return stmts


class LoopElse(Transformer):
    def _loop(self, node):
        node = self.generic_visit(node)  # inner loops first: their breaks are their own
        tail = node.orelse
        if not tail:
            return node
        node.orelse = []
        if not _has_own_break(node.body):
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
