"""Lowers `break` statements to a flag: the rest of the body runs under `if not flag`, and the
loop goes on only while `not flag` (a `for` gets it as an extra test)."""
import gast

from . import gast_compat as gc
from .anno import Key, getanno, setanno
from .base import Transformer, python_only
from .loop_flags import contains, lower, own
from .templates import replace_as_expression


class BreakStatements(Transformer):
    def _loop(self, node):
        node = self.generic_visit(node)
        if python_only(node) or not contains(node.body, gast.Break):
            return node
        flag = self.new_name("break_")
        # every break a return: once the flag is set the function returns, and nothing reads
        # the loop's variables again but the flags and the return value
        setanno(node, Key.BREAKS_RETURN, all(getanno(b, Key.RETURN_BREAK, False) for b in own(node.body, gast.Break)))
        node.body = lower(node.body, gast.Break, flag) or [gast.Pass()]
        not_flag = replace_as_expression("not flag", flag=flag)
        if isinstance(node, gast.While):
            # `not flag` first: after a break the original test must not run again
            node.test = gast.BoolOp(op=gast.And(), values=[not_flag, node.test])
        else:
            setanno(node, Key.EXTRA_TEST, not_flag)
        init = gast.copy_location(gc.assign(gc.name(flag, gast.Store()), gc.constant(False)), node)
        return [init, node]

    visit_While = _loop
    visit_For = _loop
