"""Lowers `assert` statements to `_jst.convert_assert(test, lambda: msg)` (a check op on tensors)."""
import gast

from . import gast_compat as gc
from .base import Transformer, jst


class AssertStatements(Transformer):
    def visit_Assert(self, node):
        msg = gc.lambda_(node.msg) if node.msg is not None else gc.constant(None)
        call = gc.call(jst("convert_assert"), [node.test, msg])
        return gast.copy_location(gc.expr_stmt(call), node)
