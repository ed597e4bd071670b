"""Lowers calls `f(x)` to `_jst.convert_call(f)(x)`, which converts user functions (and
methods, nested defs, submodules' forward) on first use and maps builtins such as `len`,
`print`, `range`, `int` to their tensor-aware versions; library functions pass through."""
import gast

from . import gast_compat as gc
from .base import Transformer, is_jst_call, jst

_UNTOUCHED = {"locals", "super", "globals", "vars"}  # need the caller's own frame


class CallTrees(Transformer):
    def visit_Call(self, node):
        node = self.generic_visit(node)
        if is_jst_call(node):
            return node
        if isinstance(node.func, gast.Name) and node.func.id in _UNTOUCHED:
            return node
        node.func = gast.copy_location(gc.call(jst("convert_call"), [node.func]), node.func)
        return node
