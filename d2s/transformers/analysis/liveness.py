"""Liveness (backward) and definedness (forward) over a function's CFG, summarized per
compound statement as an :class:`Anno` on the node (``getanno(node, Key.LIVENESS)``)."""
import gast

from . import activity, cfg
from ..anno import Key, getanno, setanno


class Anno:
    """What the control-flow transformers need to know about one ``if``/``while``/``for``.

    live_in / live_out: names that may be read before being rebound, on entry / after it.
    defined / maybe_defined: names bound on every path / on some path reaching its entry.
    mods / composites: names rebound or mutated inside it, attribute paths assigned inside it.

    escaping: names mutated inside it that belong to an enclosing scope (a global or closure
    list); they are not carried (rebinding them would make them locals), only watched.
    """

    __slots__ = ("live_in", "live_out", "defined", "maybe_defined", "mods", "composites", "escaping")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    def __repr__(self):
        return "Anno(" + ", ".join(f"{k}={sorted(getattr(self, k))}" for k in self.__slots__) + ")"


def _liveness(g):
    live_in = {n: set() for n in g.nodes}
    live_out = {n: set() for n in g.nodes}
    work = list(g.nodes)
    while work:
        n = work.pop()
        out = set().union(*[live_in[s] for s in n.next]) if n.next else set()
        new_in = n.effects.reads | (out - n.effects.writes)
        live_out[n] = out
        if new_in != live_in[n]:
            live_in[n] = new_in
            work.extend(n.prev)
    return live_in, live_out


def _definedness(g):
    everything = set()
    for n in g.nodes:
        everything |= n.effects.writes
    must_in = {n: set(everything) for n in g.nodes}
    may_in = {n: set() for n in g.nodes}
    must_in[g.entry] = set()
    work = list(g.nodes)
    while work:
        n = work.pop(0)
        if n is g.entry:
            must, may = set(), set()
        else:
            preds = n.prev
            must = set.intersection(*[must_in[p] | p.effects.writes for p in preds]) if preds else set()
            may = set().union(*[may_in[p] | p.effects.writes for p in preds]) if preds else set()
        if must != must_in[n] or may != may_in[n]:
            must_in[n], may_in[n] = must, may
            work.extend(s for s in n.next if s not in work)
    return must_in, may_in


def analyze_function(func, local_names=None, always_live=frozenset()):
    """Annotate every ``if``/``while``/``for`` directly in ``func`` (not in nested defs).
    ``local_names``: the names local to the function being converted (default: ``func``'s).
    ``always_live``: names a closure may read at any time (closure cells): live on entry to
    and after every branch and loop they are bound before, so those carry what they rebind."""
    if local_names is None:
        local_names = activity.bound_names(func)
    g = cfg.build(func)
    live_in, live_out = _liveness(g)
    must_in, may_in = _definedness(g)
    for parts in g.parts.values():
        entry = parts.get("test") or parts.get("iter")
        stmt = entry.stmt
        if not isinstance(stmt, (gast.If, gast.While, gast.For)):
            continue
        body = stmt.body + stmt.orelse
        mods, comps = activity.modified(body)
        if isinstance(stmt, gast.For):
            r, w, m, c = activity.target_effects(stmt.target)
            mods |= w | m
            comps |= c
        escaping = mods - local_names
        mods = mods - escaping
        head = parts.get("head", entry)
        cells = always_live & must_in[entry]
        setanno(stmt, Key.LIVENESS, Anno(live_in=live_in[head] | live_in[entry] | cells,
                                         live_out=live_in[parts["join"]] | cells,
                                         defined=must_in[entry], maybe_defined=may_in[entry],
                                         mods=mods, composites=comps, escaping=escaping))
    return g


def analyze(tree, always_live=frozenset()):
    """Annotate the compound statements of every function in ``tree`` (nested ones too). The
    functions the converter generated share the scope of the function they were carved from."""
    for node in gast.walk(tree):
        if isinstance(node, gast.FunctionDef) and not getanno(node, Key.GENERATED, False):
            names = activity.bound_names(node)
            analyze_function(node, names, always_live)
            for sub in gast.walk(node):
                if isinstance(sub, gast.FunctionDef) and getanno(sub, Key.GENERATED, False):
                    analyze_function(sub, names, always_live)
    return tree


def _node_exprs(n):
    """The expressions a CFG node evaluates (nested function and class bodies excluded)."""
    s = n.stmt
    if n.kind == "stmt":
        return [] if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)) else [s]
    if n.kind == "test":
        return [s.test]
    if n.kind == "iter":
        return [s.iter]
    if n.kind == "items":
        return [item.context_expr for item in s.items]
    if n.kind == "handler":
        return [s.type] if s.type is not None else []
    return []


_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _loads(node, out, bound=frozenset()):
    """Load-context Name nodes in ``node`` reading the enclosing function's variables: inside
    lambdas and comprehensions too (minus the names they bind themselves), not inside nested
    defs or classes (converted, and checked, on their own)."""
    if isinstance(node, gast.Name):
        if isinstance(node.ctx, gast.Load) and node.id not in bound:
            out.append(node)
        return out
    if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return out
    if isinstance(node, gast.Lambda):
        for d in node.args.defaults + [k for k in node.args.kw_defaults if k is not None]:
            _loads(d, out, bound)
        params = {a.id for a in gast.walk(node.args) if isinstance(a, gast.Name)}
        return _loads(node.body, out, bound | params)
    if isinstance(node, _COMPREHENSIONS):
        targets = {n.id for g in node.generators for n in gast.walk(g.target) if isinstance(n, gast.Name)}
        inner = bound | targets
        for child in gast.iter_child_nodes(node):
            _loads(child, out, inner)
        return out
    for child in gast.iter_child_nodes(node):
        _loads(child, out, bound)
    return out


def maybe_unbound(func):
    """Where ``func`` may read one of its own locals before it is bound (Python would raise
    UnboundLocalError there): returns (ids of such Load ``Name`` nodes, ids of ``AugAssign``
    statements whose target name may be unbound)."""
    g = cfg.build(func)
    must_in, _ = _definedness(g)
    local = set()
    for n in g.nodes:
        local |= n.effects.writes
    local -= activity.declared_nonlocal(func)
    names, augs = set(), set()
    for n in g.nodes:
        risky = (n.effects.reads & local) - must_in[n]
        if not risky:
            continue
        for expr in _node_exprs(n):
            if isinstance(expr, gast.AugAssign) and isinstance(expr.target, gast.Name) and expr.target.id in risky:
                augs.add(id(expr))
            names.update(id(x) for x in _loads(expr, []) if x.id in risky)
    return names, augs
