"""Guards reads of locals that may be unbound: `x` becomes `_jst.checked(x, 'x')`.

Converted branches and loops bind a name that is not bound on every path to an ``Undefined``
placeholder (or, inside a program, to a value with a run-time "defined" flag), so Python no
longer raises where the original would have. Each read that the definedness analysis cannot
prove bound is routed through ``checked``, which raises Python's UnboundLocalError at the
user's line (or adds a run-time check to the program) and otherwise returns the value as is.
Runs before any pass rewrites the body, so it sees the user's own reads only.
"""
import gast

from . import gast_compat as gc
from .analysis.liveness import maybe_unbound
from .base import Transformer, jst


def _check(name_node):
    call = gc.call(jst("checked"), [name_node, gc.constant(name_node.id)])
    return gast.copy_location(call, name_node)


class UndefinedReads(Transformer):
    def transform(self, func):
        self.names, self.augs = maybe_unbound(func)
        if self.names or self.augs:
            self.generic_visit(func)
        return func

    def visit_Name(self, node):
        if id(node) in self.names:
            return _check(node)
        return node

    def visit_AugAssign(self, node):
        node = self.generic_visit(node)
        if id(node) not in self.augs:
            return node
        # `x += v` reads x first: check it in a statement of its own (the target is a store)
        read = gast.copy_location(gc.name(node.target.id), node.target)
        return [gast.copy_location(gc.expr_stmt(_check(read)), node), node]

    # user-written nested functions and classes are converted (and checked) on their own
    def visit_Lambda(self, node):
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ClassDef = visit_Lambda
