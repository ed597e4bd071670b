"""Lowers ternaries `a if t else b` to `_jst.convert_ifexp(t, lambda: a, lambda: b)`."""
import gast

from . import gast_compat as gc
from .base import Transformer, jst


class ConditionalExpressions(Transformer):
    def visit_IfExp(self, node):
        node = self.generic_visit(node)
        call = gc.call(jst("convert_ifexp"), [node.test, gc.lambda_(node.body), gc.lambda_(node.orelse)])
        return gast.copy_location(call, node)
