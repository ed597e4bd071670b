"""The base of every transformer: conversion context, fresh names, locations."""
import gast

from . import gast_compat as gc
from ..user_errors import ConversionError
from .anno import Key, getanno, setanno
from .templates import replace

JST = "_jst"  # the one global name under which converted code reaches d2s.convert


class Context:
    """What every transformer of one conversion shares: file, namer, the root function."""

    def __init__(self, filename, namer, root):
        self.filename, self.namer, self.root = filename, namer, root
        # result variables made by the return pass: a tensor `if` may leave them undefined on
        # one side (a flag guards every read), so convert_ifelse fills them instead of failing
        self.retval_names = set()
        # the flags the return pass sets when a loop returns (read between iterations, and after)
        self.return_flags = set()
        # locals of the root function that its closures read (analysis.activity.closure_cells)
        self.cells = set()
        # those of them that a nested function rebinds (`nonlocal n; n += 1`): see nonlocal_cells
        self.nonlocal_cells = set()
        # whether the function may update a tensor in place (updates_in_place)
        self.in_place = None


def _unlocated(nodes):
    """The nodes of ``nodes`` that have no source location yet, descending only through such
    nodes: a located node is the user's code or generated code an earlier visit already
    placed, so its subtree needs nothing. Walking whole subtrees instead made every nested
    ``if``/loop walk the already-converted code inside it again (quadratic in the nesting)."""
    stack = list(nodes) if isinstance(nodes, list) else [nodes]
    while stack:
        node = stack.pop()
        if getattr(node, "lineno", None) is not None:
            continue
        yield node
        stack.extend(gast.iter_child_nodes(node))


def mark_generated(nodes):
    """Flag generated ``def``s so transformers enter them (user-written nested defs are not
    entered: they are converted on their own when called). Call it before ``copy_location``:
    the generated nodes are those still without a location."""
    for sub in _unlocated(nodes):
        if isinstance(sub, gast.FunctionDef):
            setanno(sub, Key.GENERATED, True)
    return nodes


def copy_location(nodes, origin):
    """Give every node in ``nodes`` lacking a location the location of ``origin``, so
    generated code reports the user's line."""
    lineno = getattr(origin, "lineno", None)
    if lineno is None:
        return nodes
    col = getattr(origin, "col_offset", 0) or 0
    for sub in list(_unlocated(nodes)):
        if isinstance(sub, (gast.stmt, gast.expr, gast.excepthandler, gast.arg if hasattr(gast, "arg") else gast.expr)):
            sub.lineno, sub.col_offset = lineno, col
            sub.end_lineno, sub.end_col_offset = lineno, col
    return nodes


def jst(attr):
    """The expression ``_jst.<attr>``."""
    return gast.Attribute(value=gc.name(JST), attr=attr, ctx=gast.Load())


def is_jst_call(node):
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and isinstance(node.func.value, gast.Name) and node.func.value.id == JST)


class Transformer(gast.NodeTransformer):
    """A gast transformer with the conversion context and error helpers."""

    def __init__(self, ctx):
        self.ctx = ctx

    def new_name(self, base):
        return self.ctx.namer.new(base)

    def error(self, node, message):
        return ConversionError(message, self.ctx.filename, getattr(node, "lineno", None),
                               getattr(node, "col_offset", 0))

    def transform(self, tree):
        return self.visit(tree)

    def visit_FunctionDef(self, node):
        if node is self.ctx.root or getanno(node, Key.GENERATED, False):
            return self.generic_visit(node)
        return node

    def visit_block(self, stmts):
        """Visit a statement list, splicing statements that became lists."""
        out = []
        for s in stmts:
            new = self.visit(s)
            if new is None:
                continue
            out.extend(new if isinstance(new, list) else [new])
        return out


def python_only(node):
    """The reason a control-flow statement must stay plain Python (or None)."""
    return getanno(node, Key.PYTHON_ONLY)


def undefined_inits(names, anno):
    """Statements binding each of ``names`` not surely bound at the statement's entry: to an
    ``Undefined`` placeholder, or to its current value where some path binds it."""
    out = []
    for n in names:
        if n in anno.defined:
            continue
        if n in anno.maybe_defined:
            out += replace(f"{n} = {JST}.ld(locals(), {n!r})")
        else:
            out += replace(f"{n} = {JST}.Undefined({n!r})")
    return out


def state_functions(namer, composites, cells=()):
    """``get_state``/``set_state`` defs for attribute paths assigned inside a branch or loop
    (``self.h = ...``) and for closure cells a call inside it may rebind (``cells``, see
    ``called_cells``), plus the two expressions to pass (``None`` when there are none)."""
    if not composites and not cells:
        return [], gc.constant(None), gc.constant(None)
    paths = sorted(composites)
    get_name, set_name = namer.new("get_state"), namer.new("set_state")
    getters = ", ".join([f"{JST}.ld_attr({p.rsplit('.', 1)[0]}, {p.rsplit('.', 1)[1]!r})" for p in paths]
                        + list(cells))
    setters = "\n".join([f"    {JST}.st_attr({p.rsplit('.', 1)[0]}, {p.rsplit('.', 1)[1]!r}, values[{i}])"
                         for i, p in enumerate(paths)]
                        + [f"    {c} = values[{len(paths) + i}]" for i, c in enumerate(cells)])
    declare = f"    nonlocal {', '.join(cells)}\n" if cells else ""
    src = f"def {get_name}():\n    return ({getters},)\ndef {set_name}(values):\n{declare}{setters}\n"
    return mark_generated(replace(src)), gc.name(get_name), gc.name(set_name)


def nonlocal_cells(func, cells):
    """Locals of ``func`` that a function nested in it rebinds through ``nonlocal``."""
    out = set()
    for node in gast.walk(func):
        if isinstance(node, gast.Nonlocal):
            out.update(node.names)
    return out & set(cells)


def called_cells(ctx, node, anno):
    """The closure cells that a call inside ``node`` (an if or loop) may rebind, bound on entry
    and not rebound by ``node`` itself: the branch or loop carries them as state, so a tensor
    ``if`` that traces both branches keeps the count of the branch taken, as Python does."""
    if not ctx.nonlocal_cells or not any(isinstance(n, gast.Call) for n in gast.walk(node)):
        return ()
    return tuple(sorted(c for c in ctx.nonlocal_cells if c in anno.defined and c not in anno.mods))


def updates_in_place(func):
    """Whether the code of ``func`` (nested functions and lambdas included) may update a tensor
    in place: an augmented assignment (``b += 1``), an item store (``b[0] = v``) or a call of a
    method named like PyTorch's in-place ones (``b.add_(1)``). Only then can code of the
    function observe which tensor object a name holds after a tensor loop (``c = b`` before
    it, ``b += 1`` after it), so only then do its tensor loops carry flags for that. An
    identity test of two values (``b is c``, see ``compares_identity``) observes it too."""
    # (``i += 1`` on a Python counter counts too: which names hold numbers is not known here,
    # and a function without flags links such names under an unknown condition instead, which
    # a loop around the loop could not carry)
    for node in gast.walk(func):
        if isinstance(node, gast.AugAssign) or compares_identity(node):
            return True
        if isinstance(node, (gast.Assign, gast.AnnAssign)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            if any(isinstance(t, gast.Subscript) or any(isinstance(x, gast.Subscript) and isinstance(
                    x.ctx, gast.Store) for x in gast.walk(t)) for t in targets):
                return True
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute):
            name = node.func.attr
            if name.endswith("_") and not name.startswith("_"):
                return True
    return False


def compares_identity(node):
    """Whether ``node`` is ``a is b`` / ``a is not b`` with neither side the literal None (whose
    answer after a tensor ``if`` or loop may depend on the data: ``convert_is``)."""
    if not (isinstance(node, gast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (gast.Is, gast.IsNot))):
        return False
    return not any(isinstance(x, gast.Constant) and x.value is None for x in (node.left, node.comparators[0]))


def watch_entry_identity(call, ctx):
    """Pass ``entry_flags=True`` to a loop's runtime helper when the converted function may
    update tensors in place (``updates_in_place``, decided once per function)."""
    if getattr(ctx, "in_place", None) is None:
        ctx.in_place = updates_in_place(ctx.root)
    if ctx.in_place:
        call.keywords.append(gc.keyword("entry_flags", gc.constant(True)))
    return call


def watch_escaping(call, anno):
    """Pass the names a loop or ``if`` mutates but does not own (a global or closure list) to
    its runtime helper as ``escaping=lambda: (LOG, ...)``: a tensor loop traces its body once,
    so such a mutation would happen once at build time; the helper refuses it instead."""
    names = sorted(getattr(anno, "escaping", None) or ())
    if names:
        call.keywords.append(gc.keyword("escaping", gc.lambda_(gc.tuple_([gc.name(n) for n in names]))))
    return call
