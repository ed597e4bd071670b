"""Guards reads of locals that may be unbound: `x` becomes `_jst.checked(x, 'x')`.

Converted branches and loops bind a name that is not bound on every path to an ``Undefined``
placeholder (or, inside a program, to a value with a run-time "defined" flag), so Python no
longer raises where the original would have. Each read that the definedness analysis cannot
prove bound is routed through ``checked``, which raises Python's UnboundLocalError at the
user's line (or adds a run-time check to the program) and otherwise returns the value as is.
Reads of a name set to None before a loop that rebinds it are checked as well: after a tensor
loop it is None on runs where the loop ran zero times, and ``checked`` then raises TypeError
when the program runs (``h is None`` and ``return h`` see the None as it is).
Runs before any pass rewrites the body, so it sees the user's own reads only.
"""
import gast

from . import gast_compat as gc
from .analysis import activity
from .analysis.liveness import maybe_unbound
from .base import Transformer, jst


def _check(name_node):
    call = gc.call(jst("checked"), [name_node, gc.constant(name_node.id)])
    return gast.copy_location(call, name_node)


def _none_before_loop(func):
    """Names assigned ``None`` and rebound inside a loop (``h = None`` then a loop setting
    ``h``): after a tensor loop they may be None or a value, depending on the run; reads of
    them are checked too, except where None is fine (``h is None``, ``return h``)."""
    assigned_none, in_loops = set(), set()
    for node in gast.walk(func):
        if isinstance(node, gast.Assign) and isinstance(node.value, gast.Constant) and node.value.value is None:
            assigned_none |= {t.id for t in node.targets if isinstance(t, gast.Name)}
        if isinstance(node, (gast.While, gast.For)):
            in_loops |= activity.modified(node.body)[0]
    return assigned_none & in_loops


def _none_is_fine(func):
    """Ids of Name reads that may see None as it is: ``x is None``, ``x is not None`` and
    ``return x`` (or a tuple of names)."""
    out = set()
    for node in gast.walk(func):
        if isinstance(node, gast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (gast.Is, gast.IsNot)):
            out |= {id(x) for x in [node.left] + node.comparators if isinstance(x, gast.Name)}
        if isinstance(node, gast.Return) and node.value is not None:
            parts = node.value.elts if isinstance(node.value, gast.Tuple) else [node.value]
            out |= {id(x) for x in parts if isinstance(x, gast.Name)}
    return out


class UndefinedReads(Transformer):
    def transform(self, func):
        self.names, self.augs = maybe_unbound(func)
        self.maybe_none = _none_before_loop(func)
        self.none_fine = _none_is_fine(func) if self.maybe_none else set()
        if self.names or self.augs or self.maybe_none:
            self.generic_visit(func)
        return func

    def visit_Name(self, node):
        if id(node) in self.names:
            return _check(node)
        if node.id in self.maybe_none and isinstance(node.ctx, gast.Load) and id(node) not in self.none_fine:
            return _check(node)
        return node

    def visit_AugAssign(self, node):
        node = self.generic_visit(node)
        if id(node) not in self.augs:
            return node
        # `x += v` reads x first: check it in a statement of its own (the target is a store)
        read = gast.copy_location(gc.name(node.target.id), node.target)
        return [gast.copy_location(gc.expr_stmt(_check(read)), node), node]

    # user-written nested functions and classes are converted (and checked) on their own;
    # lambdas and comprehensions are entered (their reads of this function's variables are
    # checked when they run, which is when Python would raise)
    def visit_ClassDef(self, node):
        return node
