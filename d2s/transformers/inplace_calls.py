"""Rebinds the target of in-place tensor updates: `x.add_(v)` -> `x = _jst.call_inplace(x, ...)`.

In a program an in-place update is an out-of-place op whose result the tensor object takes;
the branch and loop passes carry only names that are assigned, so the statement must assign
its target for the new value to leave a tensor `if` or `while`. Three rewrites:

- a statement `T.m_(args)` (``m_`` one of d2s's in-place methods, ``T`` a name or attribute
  path) becomes `T = _jst.call_inplace(T, 'm_', is_attribute, (args,), {kwargs})`, and a chain
  `T.a_(x).b_(y)` (PyTorch's running-statistics idiom) one such statement per call, in order;
- `T.a += v` (and -=, *=, /=, //=, %=, **=, &=, |=, ^=) on an attribute becomes
  `T.a = _jst.call_inplace(T.a, '__iadd__', True, (v,), {})`, so a module buffer updated this
  way becomes an attribute write;
- any other simple statement calling `x.m_(...)` on a name `x` is followed by `x = x`, which
  only tells the name analysis that ``x`` changed there.
"""
import gast

from . import gast_compat as gc
from .base import Transformer, jst

# the names of d2s.inplace.RESULTS (kept literal: transformers do not import tensor code)
INPLACE_METHODS = frozenset({"add_", "sub_", "mul_", "div_", "zero_", "fill_", "copy_", "clamp_"})
_AUG = {gast.Add: "__iadd__", gast.Sub: "__isub__", gast.Mult: "__imul__", gast.Div: "__itruediv__",
        gast.FloorDiv: "__ifloordiv__", gast.Mod: "__imod__", gast.Pow: "__ipow__", gast.BitAnd: "__iand__",
        gast.BitOr: "__ior__", gast.BitXor: "__ixor__"}
_SIMPLE = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr)


def _path(node):
    """True for a name or an attribute path rooted at a name (``x``, ``self.buf``)."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name)


def _is_inplace_call(node):
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr in INPLACE_METHODS)


def _load(node):
    """A fresh Load copy of a name/attribute path."""
    if isinstance(node, gast.Name):
        return gc.name(node.id)
    return gast.Attribute(value=_load(node.value), attr=node.attr, ctx=gast.Load())


def _store(node):
    if isinstance(node, gast.Name):
        return gc.name(node.id, gast.Store())
    return gast.Attribute(value=_load(node.value), attr=node.attr, ctx=gast.Store())


def _rebind(target, method, args, keywords):
    kw = gast.Dict(keys=[gc.constant(k.arg) for k in keywords], values=[k.value for k in keywords])
    call = gc.call(jst("call_inplace"), [_load(target), gc.constant(method),
                                         gc.constant(isinstance(target, gast.Attribute)),
                                         gc.tuple_(args), kw])
    return gc.assign(_store(target), call)


class _InplaceReceivers(gast.NodeVisitor):
    """Names whose in-place methods an expression calls (not inside lambdas or comprehensions)."""

    def __init__(self):
        self.names = []

    def visit_Call(self, node):
        if _is_inplace_call(node) and isinstance(node.func.value, gast.Name) \
                and node.func.value.id not in self.names:
            self.names.append(node.func.value.id)
        self.generic_visit(node)

    def visit_Lambda(self, node):
        return

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda


def _plain_inplace_call(node):
    """An in-place method call without ``*args`` or ``**kwargs``."""
    return (_is_inplace_call(node) and not any(k.arg is None for k in node.keywords)
            and not any(isinstance(a, gast.Starred) for a in node.args))


def _inplace_chain(call):
    """(receiver path, calls innermost first) of ``T.a_(x).b_(y)...`` (each in-place method
    returns its receiver, so the chain updates ``T`` once per call, in order), or None."""
    chain = []
    node = call
    while _plain_inplace_call(node):
        chain.append(node)
        node = node.func.value
    if not chain or not _path(node):
        return None
    return node, chain[::-1]


class _Bound(gast.NodeVisitor):
    """The names a function may rebind: its parameters, the names it assigns (not in nested
    functions, lambdas, classes or comprehensions), and those it declares global or nonlocal."""

    def __init__(self):
        self.names = set()

    def visit_Name(self, node):
        if isinstance(node.ctx, (gast.Store, gast.Del, gast.Param)):
            self.names.add(node.id)

    def visit_Global(self, node):
        self.names.update(node.names)

    visit_Nonlocal = visit_Global

    def visit_alias(self, node):
        self.names.add((node.asname or node.name).split(".")[0])

    def visit_FunctionDef(self, node):
        self.names.add(node.name)  # (its body is another scope)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_Lambda(self, node):
        return

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda


def _bound_names(fn):
    finder = _Bound()
    finder.visit(fn.args)
    for stmt in fn.body:
        finder.visit(stmt)
    return finder.names


class InplaceCalls(Transformer):
    bound = frozenset()

    def _rebindable(self, target):
        # a global or closure tensor updated in place (``STEP.add_(1)``) is not rebound: the
        # assignment would make the name local, and its read before it an UnboundLocalError
        root = target
        while isinstance(root, gast.Attribute):
            root = root.value
        return isinstance(target, gast.Attribute) or root.id in self.bound

    def visit_Expr(self, node):
        found = _inplace_chain(node.value)
        if found is not None and not self._rebindable(found[0]):
            return node
        if found is not None:
            # `T.a_(x).b_(y)` -> `T = call_inplace(T, 'a_', x); T = call_inplace(T, 'b_', y)`: y is
            # evaluated after a_ ran, as Python evaluates the chain
            target, calls = found
            return [gast.copy_location(_rebind(target, c.func.attr, c.args, c.keywords), node) for c in calls]
        return self._note_receivers(node)

    def visit_AugAssign(self, node):
        method = _AUG.get(type(node.op))
        if method is not None and isinstance(node.target, gast.Attribute) and _path(node.target):
            return gast.copy_location(_rebind(node.target, method, [node.value], []), node)
        return self._note_receivers(node)

    def visit_Assign(self, node):
        return self._note_receivers(node)

    visit_AnnAssign = visit_Assign

    def _note_receivers(self, node):
        finder = _InplaceReceivers()
        finder.visit(node)
        if not finder.names:
            return node
        out = [node]
        for n in finder.names:
            if n not in self.bound:
                continue  # (see _rebindable)
            out.append(gast.copy_location(gc.assign(gc.name(n, gast.Store()), gc.name(n)), node))
        return out

    def visit_If(self, node):
        node.body = self.visit_block(node.body)
        node.orelse = self.visit_block(node.orelse)
        return node

    def visit_For(self, node):
        node.body = self.visit_block(node.body)
        node.orelse = self.visit_block(node.orelse)
        return node

    visit_While = visit_For

    def visit_With(self, node):
        node.body = self.visit_block(node.body)
        return node

    def visit_Try(self, node):
        node.body = self.visit_block(node.body)
        for h in node.handlers:
            h.body = self.visit_block(h.body)
        node.orelse = self.visit_block(node.orelse)
        node.finalbody = self.visit_block(node.finalbody)
        return node

    def visit_FunctionDef(self, node):
        if node is self.ctx.root:
            self.bound = _bound_names(node)
            node.body = self.visit_block(node.body)
        return node
