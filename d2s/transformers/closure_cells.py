"""Keeps closure cells shared: generated functions declare the cells they bind `nonlocal`.

A lambda or nested function reads its enclosing function's variables through cells, seeing
every later rebinding (``g = lambda: i`` then ``i += 1``: ``g()`` sees the new ``i``). Once a
branch or loop body becomes a generated function, a name it binds would be that function's own
local, and the closure would keep reading the stale outer cell. So each generated function
binding such a name declares it ``nonlocal`` (a parameter is renamed and copied into the cell
first), and every rebinding lands in the one cell the user's closures read. Runs last, over the
finished tree.
"""
import gast

from . import gast_compat as gc
from .analysis.activity import own_names
from .anno import Key, getanno
from .base import Transformer


class ClosureCells(Transformer):
    def transform(self, func):
        cells = getattr(self.ctx, "cells", None)
        if not cells:
            return func
        shared = set()
        for node in gast.walk(func):
            if isinstance(node, gast.FunctionDef) and getanno(node, Key.GENERATED, False):
                shared |= self._share(node, cells)
        # A cell only a generated function binds (the target of a converted `for`) must still
        # be a local of the converted function for `nonlocal` to reach it: a bare annotation
        # makes it one without binding it.
        unbound = shared - own_names(func)[0]
        func.body = [gast.copy_location(gast.AnnAssign(target=gc.name(n, gast.Store()), annotation=gc.name("object"),
                                                       value=None, simple=1), func)
                     for n in sorted(unbound)] + func.body
        return func

    def _share(self, fn, cells):
        stores, _ = own_names(fn)
        shared = sorted(stores & cells)
        if not shared:
            return set()
        copies = []
        for a in fn.args.args:
            if a.id in cells:
                arg = self.new_name(f"{a.id}_arg")
                copies.append(gast.copy_location(gc.assign(gc.name(a.id, gast.Store()), gc.name(arg)), fn))
                a.id = arg
        decl = gast.copy_location(gast.Nonlocal(names=shared), fn)
        fn.body = [decl] + copies + fn.body
        return set(shared)
