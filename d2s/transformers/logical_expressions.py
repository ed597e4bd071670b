"""Lowers `and`/`or`/`not` and chained comparisons to `_jst.and_`/`or_`/`not_` over thunks,
so short-circuiting survives (`a is not None and a.sum() > 1` never evaluates `a.sum()` on None),
and identity tests of two values (`b is c`) to `_jst.convert_is`.

An `and`/`or` whose result is only tested for truth (the test of an `if`, `while`, ternary or
`assert`, the operand of `not`, and their nested `and`/`or`s) gets ``truth=True``: its value
may then be a bool scalar where the two sides' types differ, which a value use cannot be."""
import gast

from . import gast_compat as gc
from .anno import Key, getanno, setanno
from .base import Transformer, compares_identity, is_jst_call, jst

# Converted calls whose first argument is a condition.
_CONDITION_CALLS = ("convert_ifelse", "convert_ifexp", "convert_assert")


class LogicalExpressions(Transformer):
    def transform(self, tree):
        self._test_functions = _loop_test_functions(tree)
        return super().transform(tree)

    def visit_FunctionDef(self, node):
        if getanno(node, Key.GENERATED, False) and node.name in self._test_functions:
            for stmt in node.body:
                if isinstance(stmt, gast.Return) and stmt.value is not None:
                    _mark_truth(stmt.value)
        return super().visit_FunctionDef(node)

    def visit_Call(self, node):
        if is_jst_call(node) and node.func.attr in _CONDITION_CALLS and node.args:
            _mark_truth(node.args[0])
        return self.generic_visit(node)

    def visit_BoolOp(self, node):
        truth = getanno(node, Key.TRUTH, False)
        if truth:
            for v in node.values:
                _mark_truth(v)
        node = self.generic_visit(node)
        helper = "and_" if isinstance(node.op, gast.And) else "or_"
        keywords = [gc.keyword("truth", gc.constant(True))] if truth else []
        return gast.copy_location(gc.call(jst(helper), [gc.lambda_(v) for v in node.values], keywords), node)

    def visit_UnaryOp(self, node):
        if isinstance(node.op, gast.Not):
            _mark_truth(node.operand)
        node = self.generic_visit(node)
        if isinstance(node.op, gast.Not):
            return gast.copy_location(gc.call(jst("not_"), [node.operand]), node)
        return node

    def visit_Compare(self, node):
        truth = getanno(node, Key.TRUTH, False)
        node = self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (gast.Is, gast.IsNot)) and \
                isinstance(node.comparators[0], gast.Constant) and node.comparators[0].value is None:
            # `h is None`: a variable that a tensor loop may leave None answers at run time
            test = gast.copy_location(gc.call(jst("is_none"), [node.left]), node)
            if isinstance(node.ops[0], gast.IsNot):
                test = gast.copy_location(gc.call(jst("not_"), [test]), node)
            return test
        if compares_identity(node):
            # `b is c`: after a tensor `if` or loop, which object a name holds may depend on the data
            keywords = [gc.keyword("negate", gc.constant(True))] if isinstance(node.ops[0], gast.IsNot) else []
            return gast.copy_location(gc.call(jst("convert_is"), [node.left, node.comparators[0]], keywords), node)
        if len(node.ops) == 1:
            return node
        # 0 < s < 10 -> and_(lambda: 0 < s, lambda: s < 10); a middle operand is evaluated
        # twice (once per comparison), which only matters for side effects
        operands = [node.left] + list(node.comparators)
        pairs = [gast.Compare(left=operands[i], ops=[op], comparators=[operands[i + 1]])
                 for i, op in enumerate(node.ops)]
        keywords = [gc.keyword("truth", gc.constant(True))] if truth else []
        return gast.copy_location(gc.call(jst("and_"), [gc.lambda_(p) for p in pairs], keywords), node)


def _mark_truth(node):
    if isinstance(node, (gast.BoolOp, gast.Compare)):
        setanno(node, Key.TRUTH, True)


def _loop_test_functions(tree):
    """Names of the generated functions whose result is a loop's condition: the test of
    ``convert_while_loop`` and the extra (break) test of ``convert_for``."""
    names = set()
    for sub in gast.walk(tree):
        if not is_jst_call(sub):
            continue
        arg = None
        if sub.func.attr == "convert_while_loop" and sub.args:
            arg = sub.args[0]
        elif sub.func.attr == "convert_for" and len(sub.args) > 4:
            arg = sub.args[4]
        if isinstance(arg, gast.Name):
            names.add(arg.id)
    return names
