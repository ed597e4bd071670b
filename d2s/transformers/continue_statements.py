"""Lowers `continue` statements to a per-iteration flag guarding the rest of the body."""
import gast

from . import gast_compat as gc
from .base import Transformer, python_only
from .loop_flags import contains, lower


class ContinueStatements(Transformer):
    def _loop(self, node):
        node = self.generic_visit(node)
        if python_only(node) or not contains(node.body, gast.Continue):
            return node
        flag = self.new_name("continue_")
        reset = gast.copy_location(gc.assign(gc.name(flag, gast.Store()), gc.constant(False)), node)
        node.body = [reset] + lower(node.body, gast.Continue, flag)
        return node

    visit_While = _loop
    visit_For = _loop
