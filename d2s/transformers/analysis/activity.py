"""Which names a statement or expression reads, writes (rebinds) and modifies (mutates)."""
import gast
from ..anno import Key, getanno

# Methods that mutate their receiver: ``xs.append(v)`` modifies ``xs`` as far as a branch or a
# loop is concerned, so the list is carried through it.
MUTATING_METHODS = {"append", "pop", "extend", "insert", "remove", "clear", "update", "setdefault",
                    "popitem", "sort", "reverse", "add", "discard"}

_SCOPES = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def expr_reads(node):
    """Names loaded by ``node``; names bound inside a lambda or comprehension are not reads."""
    if node is None:
        return set()
    if isinstance(node, gast.Name):
        return {node.id} if isinstance(node.ctx, gast.Load) else set()
    if isinstance(node, _SCOPES):
        inner = set()
        bound = set()
        for child in gast.walk(node):
            if isinstance(child, gast.Name):
                if isinstance(child.ctx, gast.Load):
                    inner.add(child.id)
                else:
                    bound.add(child.id)
        return inner - bound
    out = set()
    for child in gast.iter_child_nodes(node):
        if isinstance(child, gast.Name):
            if isinstance(child.ctx, gast.Load):
                out.add(child.id)
        else:
            out |= expr_reads(child)
    return out


def composite_path(node):
    """``'self.a.b'`` for an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, gast.Name) and parts:
        return ".".join([node.id] + parts[::-1])
    return None


def target_effects(target):
    """(reads, writes, mods, composites) of assigning to ``target``.

    ``x`` writes x; ``x[i]`` reads x and i and modifies x; ``self.a`` reads self and
    modifies the composite ``self.a``; ``self.a[k]`` modifies the composite ``self.a``.
    """
    reads, writes, mods, comps = set(), set(), set(), set()
    if isinstance(target, gast.Name):
        writes.add(target.id)
    elif isinstance(target, (gast.Tuple, gast.List)):
        for e in target.elts:
            r, w, m, c = target_effects(e)
            reads |= r; writes |= w; mods |= m; comps |= c  # noqa: E702
    elif isinstance(target, gast.Starred):
        return target_effects(target.value)
    elif isinstance(target, gast.Subscript):
        reads |= expr_reads(target)
        base = target.value
        while isinstance(base, gast.Subscript):
            base = base.value
        if isinstance(base, gast.Name):
            mods.add(base.id)
            reads.add(base.id)
        else:
            path = composite_path(base)
            if path:
                comps.add(path)
    elif isinstance(target, gast.Attribute):
        reads |= expr_reads(target.value)
        path = composite_path(target)
        if path:
            comps.add(path)
    return reads, writes, mods, comps


def mutating_calls(node):
    """Names whose value a method call in expression ``node`` mutates (``xs.pop()``)."""
    return _mutating_calls(node) if node is not None else set()


def _receiver(value):
    """The name a method is called on: ``xs`` in ``xs.append`` and in the
    ``_jst.checked(xs, 'xs').append`` that the undefined-reads pass makes of a maybe-unbound
    ``xs`` (or None)."""
    if isinstance(value, gast.Name):
        return value.id
    if (isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and value.func.attr == "checked"
            and isinstance(value.func.value, gast.Name) and value.func.value.id == "_jst" and value.args
            and isinstance(value.args[0], gast.Name)):
        return value.args[0].id
    return None


def _mutating_calls(node):
    mods = set()
    for child in gast.walk(node):
        if (isinstance(child, gast.Call) and isinstance(child.func, gast.Attribute)
                and child.func.attr in MUTATING_METHODS and _receiver(child.func.value) is not None):
            mods.add(_receiver(child.func.value))
    return mods


class Effects:
    """Reads, writes (rebinds: they kill liveness), mods (rebinds or mutations: carried) and
    composites (attribute paths assigned) of one CFG node."""

    __slots__ = ("reads", "writes", "mods", "composites")

    def __init__(self, reads=(), writes=(), mods=(), composites=()):
        self.reads, self.writes = set(reads), set(writes)
        self.mods, self.composites = set(mods) | set(writes), set(composites)


def _function_free_reads(node):
    params = {a.id for a in gast.walk(node.args) if isinstance(a, gast.Name)}
    loads, stores = set(), set()
    for stmt in node.body:
        for child in gast.walk(stmt):
            if isinstance(child, gast.Name):
                (loads if isinstance(child.ctx, gast.Load) else stores).add(child.id)
    reads = loads - params - stores
    for d in node.decorator_list + node.args.defaults + [k for k in node.args.kw_defaults if k]:
        reads |= expr_reads(d)
    return reads


def _placeholder_read(value):
    """``{n}`` for the generated ``n = _jst.ld(locals(), 'n')``: it keeps n's current value where
    some path bound it, so n stays live before it (a name bound in one branch of a Python ``if``
    must reach the loop that then mutates it)."""
    if (isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and value.func.attr == "ld"
            and isinstance(value.func.value, gast.Name) and value.func.value.id == "_jst" and len(value.args) == 2
            and isinstance(value.args[1], gast.Constant) and isinstance(value.args[1].value, str)):
        return {value.args[1].value}
    return set()


def statement_effects(stmt):
    """Effects of a simple statement (compound statements are split by the CFG)."""
    if isinstance(stmt, gast.Assign):
        e = Effects(expr_reads(stmt.value) | _placeholder_read(stmt.value))
        for t in stmt.targets:
            r, w, m, c = target_effects(t)
            e.reads |= r; e.writes |= w; e.mods |= m | w; e.composites |= c  # noqa: E702
        e.mods |= _mutating_calls(stmt.value)
        return e
    if isinstance(stmt, gast.AugAssign):
        r, w, m, c = target_effects(stmt.target)
        reads = expr_reads(stmt.value) | r | expr_reads(stmt.target) | w
        return Effects(reads, w, m | _mutating_calls(stmt.value), c)
    if isinstance(stmt, gast.AnnAssign):
        r, w, m, c = target_effects(stmt.target)
        mods = m | (_mutating_calls(stmt.value) if stmt.value is not None else set())
        return Effects(expr_reads(stmt.value) | r, w if stmt.value is not None else (), mods, c)
    if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef)):
        return Effects(_function_free_reads(stmt), [stmt.name])
    if isinstance(stmt, gast.ClassDef):
        return Effects(set().union(*[expr_reads(b) for b in stmt.bases]) if stmt.bases else (), [stmt.name])
    if isinstance(stmt, gast.Delete):
        e = Effects()
        for t in stmt.targets:
            r, w, m, c = target_effects(t)
            e.reads |= r; e.writes |= w; e.mods |= m | w; e.composites |= c  # noqa: E702
        return e
    if isinstance(stmt, (gast.Import, gast.ImportFrom)):
        return Effects((), [(a.asname or a.name).split(".")[0] for a in stmt.names])
    if isinstance(stmt, (gast.Global, gast.Nonlocal, gast.Pass, gast.Break, gast.Continue)):
        return Effects()
    e = Effects(expr_reads(stmt))
    e.mods |= _mutating_calls(stmt)
    return e


def modified(stmts):
    """(mods, composites) of a list of statements, nested compound statements included,
    nested function bodies not (a ``def`` only binds its name)."""
    mods, comps = set(), set()
    for stmt in stmts:
        for node in _statements(stmt):
            if isinstance(node, (gast.If, gast.While)):
                mods |= _mutating_calls(node.test)  # `while xs.pop() > 0:`
                continue
            if isinstance(node, gast.For):
                r, w, m, c = target_effects(node.target)
                mods |= w | m | _mutating_calls(node.iter)
                comps |= c
                continue
            if isinstance(node, gast.With):
                for item in node.items:
                    if item.optional_vars is not None:
                        r, w, m, c = target_effects(item.optional_vars)
                        mods |= w | m
                continue
            if isinstance(node, gast.Try):
                for h in node.handlers:
                    if h.name is not None:
                        mods.add(h.name.id if isinstance(h.name, gast.Name) else h.name)
                continue
            e = statement_effects(node)
            mods |= e.mods
            comps |= e.composites
    return mods, comps


def _statements(stmt):
    """``stmt`` and every statement nested in it, not entering function or class bodies."""
    yield stmt
    if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return
    for field in ("body", "orelse", "finalbody"):
        for s in getattr(stmt, field, None) or []:
            yield from _statements(s)
    for h in getattr(stmt, "handlers", None) or []:
        for s in h.body:
            yield from _statements(s)


def bound_names(func):
    """Names that are local to ``func`` as Python scopes them: its parameters and every name it
    binds (the bodies of functions the converter generated included, user-written nested
    function and class bodies not), less those it declares global or nonlocal. A name the
    function only mutates (``LOG.append(i)`` on a module-level list) is not among them: it
    belongs to an enclosing scope."""
    names = {a.id for a in gast.walk(func.args) if isinstance(a, gast.Name)}
    for stmt in func.body:
        for node in _statements(stmt):
            if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                names.add(node.name)
                if getanno(node, Key.GENERATED, False):
                    names |= bound_names(node)
                continue
            for child in _own_expressions(node):
                for sub in gast.walk(child):
                    if isinstance(sub, gast.Name) and not isinstance(sub.ctx, gast.Load):
                        names.add(sub.id)
                    elif isinstance(sub, gast.alias):
                        names.add((sub.asname or sub.name).split(".")[0])
            for h in getattr(node, "handlers", None) or []:
                if isinstance(h.name, gast.Name):
                    names.add(h.name.id)
    return names - declared_nonlocal(func)


def _own_expressions(stmt):
    """The parts of ``stmt`` that are not nested statements (those are walked on their own)."""
    for field, value in gast.iter_fields(stmt):
        if field in ("body", "orelse", "finalbody", "handlers"):
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, gast.AST):
                yield v


def declared_nonlocal(func):
    """Names a function declares ``global`` or ``nonlocal`` (writes to them escape it)."""
    out = set()
    for stmt in func.body:
        for node in _statements(stmt):
            if isinstance(node, (gast.Global, gast.Nonlocal)):
                out.update(node.names)
    return out


_CLOSURES = (gast.Lambda, gast.FunctionDef, gast.AsyncFunctionDef, gast.GeneratorExp)


def own_names(node):
    """(names stored, names loaded) in ``node``'s own body, its parameters counted as stored;
    nested functions, lambdas and generator expressions are not entered."""
    stores, loads = set(), set()
    if isinstance(node, (gast.Lambda, gast.FunctionDef, gast.AsyncFunctionDef)):
        stores |= {a.id for a in gast.walk(node.args) if isinstance(a, gast.Name)}
        roots = node.body if isinstance(node.body, list) else [node.body]
    else:
        roots = [node]
    stack = list(roots)
    while stack:
        n = stack.pop()
        if isinstance(n, _CLOSURES) and n is not node:
            if not isinstance(n, (gast.Lambda, gast.GeneratorExp)):
                stores.add(n.name)
            continue
        if isinstance(n, gast.Name):
            (loads if isinstance(n.ctx, gast.Load) else stores).add(n.id)
            continue
        if isinstance(n, gast.ClassDef):
            stores.add(n.name)
        stack.extend(gast.iter_child_nodes(n))
    return stores, loads


def closure_cells(func):
    """Locals of ``func`` that a nested function, lambda or generator expression reads: they
    live in cells, and the nested code sees each later rebinding (Python's late binding)."""
    local, _ = own_names(func)
    local -= declared_nonlocal(func)
    free = set()
    for node in gast.walk(func):
        if node is not func and isinstance(node, _CLOSURES):
            stores, loads = own_names(node)
            free |= loads - stores
    return local & free
