"""Lowers `and`/`or`/`not` and chained comparisons to `_jst.and_`/`or_`/`not_` over thunks,
so short-circuiting survives (`a is not None and a.sum() > 1` never evaluates `a.sum()` on None)."""
import gast

from . import gast_compat as gc
from .base import Transformer, jst


class LogicalExpressions(Transformer):
    def visit_BoolOp(self, node):
        node = self.generic_visit(node)
        helper = "and_" if isinstance(node.op, gast.And) else "or_"
        return gast.copy_location(gc.call(jst(helper), [gc.lambda_(v) for v in node.values]), node)

    def visit_UnaryOp(self, node):
        node = self.generic_visit(node)
        if isinstance(node.op, gast.Not):
            return gast.copy_location(gc.call(jst("not_"), [node.operand]), node)
        return node

    def visit_Compare(self, node):
        node = self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (gast.Is, gast.IsNot)) and \
                isinstance(node.comparators[0], gast.Constant) and node.comparators[0].value is None:
            # `h is None`: a variable that a tensor loop may leave None answers at run time
            test = gast.copy_location(gc.call(jst("is_none"), [node.left]), node)
            if isinstance(node.ops[0], gast.IsNot):
                test = gast.copy_location(gc.call(jst("not_"), [test]), node)
            return test
        if len(node.ops) == 1:
            return node
        # 0 < s < 10 -> and_(lambda: 0 < s, lambda: s < 10); a middle operand is evaluated
        # twice (once per comparison), which only matters for side effects
        operands = [node.left] + list(node.comparators)
        pairs = [gast.Compare(left=operands[i], ops=[op], comparators=[operands[i + 1]])
                 for i, op in enumerate(node.ops)]
        return gast.copy_location(gc.call(jst("and_"), [gc.lambda_(p) for p in pairs]), node)
