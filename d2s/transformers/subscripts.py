"""Lowers subscripts with a computed index, `xs[i]` and `xs[i] = v`, to `_jst.convert_getitem(xs, i)`
and `_jst.convert_setitem(xs, i, v)`, so a Python list can be read and written at a tensor position
(a loop index inside a tensor loop), and a tensor sliced with a bound known only when the program
runs. Constant indexes, slices and tuples of indexes with constant bounds stay as written: they
never meet a symbolic position in a Python list."""
import copy

import gast

from . import gast_compat as gc
from .base import Transformer, copy_location, jst


def _computed(index):
    """Whether ``index`` (a subscript's slice) is a single index computed at run time."""
    if isinstance(index, (gast.Constant, gast.Slice, gast.Tuple)):
        return False
    if isinstance(index, gast.UnaryOp) and isinstance(index.operand, gast.Constant):
        return False
    return True


def _computed_bound(index):
    """Whether ``index`` holds a slice with a bound computed at run time (``attn[:t + 1]``: a
    tensor loop's counter makes it a length known only when the program runs)."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    return any(isinstance(p, gast.Slice) and any(b is not None and _computed(b) for b in (p.lower, p.upper, p.step))
               for p in parts)


def _routed(index):
    """Whether ``obj[index]`` goes through ``convert_getitem``/``convert_setitem``: a computed
    index, a slice with a computed bound, or a constant key (a dict key a tensor `if` or loop
    sets on some runs only is checked there, see convert/dict_keys.py)."""
    return _computed(index) or _computed_bound(index) or \
        isinstance(index, gast.Constant) and isinstance(index.value, (str, int))


def _as_value(index):
    """A subscript's index as an expression a call can take: a slice becomes ``slice(...)``."""
    if isinstance(index, gast.Slice):
        none = gc.constant(None)
        return gast.copy_location(gc.call(gc.name("slice"), [b if b is not None else none for b in
                                                             (index.lower, index.upper, index.step)]), index)
    if isinstance(index, gast.Tuple) and any(isinstance(e, gast.Slice) for e in index.elts):
        return gast.copy_location(gc.tuple_([_as_value(e) for e in index.elts]), index)
    return index


class Subscripts(Transformer):
    def visit_Subscript(self, node):
        node = self.generic_visit(node)
        if not isinstance(node.ctx, gast.Load) or not _routed(node.slice):
            return node
        return gast.copy_location(gc.call(jst("convert_getitem"), [node.value, _as_value(node.slice)]), node)

    def visit_Assign(self, node):
        target = node.targets[0] if len(node.targets) == 1 else None
        if not isinstance(target, gast.Subscript) or not _routed(target.slice):
            node = self.generic_visit(node)
            if any(isinstance(t, (gast.Tuple, gast.List)) for t in node.targets) and \
                    not isinstance(node.value, (gast.Tuple, gast.List)):
                # `a, b = d` iterates d: a dict whose keys depend on a tensor is refused
                node.value = gast.copy_location(gc.call(jst("checked_unpack"), [node.value]), node.value)
            return node
        value = self.visit(node.value)
        obj, index = self.visit(_loaded(target.value)), self.visit(target.slice)
        call = gc.call(jst("convert_setitem"), [obj, _as_value(index), value])
        return copy_location([gc.expr_stmt(call)], node)

    def visit_AugAssign(self, node):
        target = node.target
        if not (isinstance(target, gast.Subscript) and _computed(target.slice)
                and isinstance(target.value, gast.Name) and isinstance(target.slice, gast.Name)):
            return self.generic_visit(node)
        # `xs[i] += v` reads and writes the same position; both names are evaluated twice,
        # which is safe because they are plain names
        obj, index = _loaded(target.value), target.slice
        current = gc.call(jst("convert_getitem"), [copy.deepcopy(obj), copy.deepcopy(index)])
        value = gast.BinOp(left=current, op=node.op, right=self.visit(node.value))
        call = gc.call(jst("convert_setitem"), [obj, index, value])
        return copy_location([gc.expr_stmt(call)], node)


    def visit_Compare(self, node):
        # `k in d` / `k not in d`: a dict key set on some runs only answers per run
        node = self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (gast.Eq, gast.NotEq)):
            # `d == e` compares key sets: a dict whose keys depend on a tensor is refused
            node.left, node.comparators[0] = (gast.copy_location(gc.call(jst("checked_compare"), [x]), x)
                                              for x in (node.left, node.comparators[0]))
            return node
        if len(node.ops) != 1 or not isinstance(node.ops[0], (gast.In, gast.NotIn)):
            return node
        args = [node.left, node.comparators[0]]
        if isinstance(node.ops[0], gast.NotIn):
            args.append(gc.constant(True))
        return gast.copy_location(gc.call(jst("convert_in"), args), node)

    def visit_comprehension(self, node):
        # iterating a dict whose keys depend on a tensor is refused (see convert/dict_keys.py)
        node = self.generic_visit(node)
        node.iter = gast.copy_location(gc.call(jst("plain_iterable"), [node.iter]), node.iter)
        return node


def _loaded(node):
    node = copy.deepcopy(node)
    if hasattr(node, "ctx"):
        node.ctx = gast.Load()
    return node
