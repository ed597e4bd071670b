"""A statement-level control-flow graph of one function body.

Simple statements are one node each. A compound statement is split: ``if``/``while`` get a
test node, ``for`` an iter node (evaluates the iterable), a head node (decides whether to go
on) and a target node (binds the loop variable), and every compound statement a join node
where its paths meet, so liveness "after the statement" is the liveness at its join node.
Nested function and class bodies are not entered: a ``def`` is one node.
"""
import gast

from . import activity


class Node:
    __slots__ = ("stmt", "kind", "next", "prev", "effects")

    def __init__(self, stmt, kind, effects):
        self.stmt, self.kind, self.effects = stmt, kind, effects
        self.next, self.prev = [], []

    def __repr__(self):
        return f"<Node {self.kind} {type(self.stmt).__name__ if self.stmt is not None else ''}>"


class Graph:
    """Nodes of one function body; ``entry`` binds the parameters, ``exit`` is where returns go.
    ``parts[id(stmt)]`` maps a compound statement to its named nodes (``test``, ``head``, ``join``)."""

    def __init__(self):
        self.nodes = []
        self.parts = {}
        self.entry = self.exit = None


class _Builder:
    def __init__(self):
        self.g = Graph()
        self.loops = []  # (continue target, list of break nodes)

    def node(self, stmt, kind, effects=None):
        n = Node(stmt, kind, effects or activity.Effects())
        self.g.nodes.append(n)
        return n

    @staticmethod
    def link(preds, node):
        for p in preds:
            p.next.append(node)
            node.prev.append(p)

    def block(self, stmts, preds):
        for stmt in stmts:
            preds = self.statement(stmt, preds)
        return preds

    def statement(self, s, preds):
        parts = self.g.parts
        if isinstance(s, gast.If):
            test = self.node(s, "test", activity.Effects(activity.expr_reads(s.test), (),
                                                         activity.mutating_calls(s.test)))
            self.link(preds, test)
            ends = self.block(s.body, [test]) + self.block(s.orelse, [test])
            join = self.node(s, "join")
            self.link(ends, join)
            parts[id(s)] = {"test": test, "join": join}
            return [join]
        if isinstance(s, gast.While):
            test = self.node(s, "test", activity.Effects(activity.expr_reads(s.test), (),
                                                         activity.mutating_calls(s.test)))
            self.link(preds, test)
            breaks = []
            self.loops.append((test, breaks))
            self.link(self.block(s.body, [test]), test)
            self.loops.pop()
            join = self.node(s, "join")
            self.link(self.block(s.orelse, [test]) + breaks, join)
            parts[id(s)] = {"test": test, "head": test, "join": join}
            return [join]
        if isinstance(s, (gast.For, gast.AsyncFor)):
            it = self.node(s, "iter", activity.Effects(activity.expr_reads(s.iter)))
            self.link(preds, it)
            head = self.node(s, "head")
            self.link([it], head)
            r, w, m, c = activity.target_effects(s.target)
            target = self.node(s, "target", activity.Effects(r, w, m, c))
            self.link([head], target)
            breaks = []
            self.loops.append((head, breaks))
            self.link(self.block(s.body, [target]), head)
            self.loops.pop()
            join = self.node(s, "join")
            self.link(self.block(s.orelse, [head]) + breaks, join)
            parts[id(s)] = {"iter": it, "head": head, "join": join}
            return [join]
        if isinstance(s, (gast.With, gast.AsyncWith)):
            e = activity.Effects()
            for item in s.items:
                e.reads |= activity.expr_reads(item.context_expr)
                if item.optional_vars is not None:
                    r, w, m, c = activity.target_effects(item.optional_vars)
                    e.reads |= r; e.writes |= w; e.mods |= w | m  # noqa: E702
            items = self.node(s, "items", e)
            self.link(preds, items)
            join = self.node(s, "join")
            self.link(self.block(s.body, [items]), join)
            parts[id(s)] = {"test": items, "join": join}
            return [join]
        if isinstance(s, gast.Try):
            start = self.node(s, "try")
            self.link(preds, start)
            body_ends = self.block(s.body, [start])
            body_nodes = [start] + self.g.nodes[self.g.nodes.index(start) + 1:]
            ends = self.block(s.orelse, body_ends)
            for h in s.handlers:
                names = [h.name.id] if isinstance(h.name, gast.Name) else ([h.name] if h.name else [])
                hn = self.node(h, "handler", activity.Effects(activity.expr_reads(h.type), names))
                self.link(body_nodes, hn)
                ends += self.block(h.body, [hn])
            join = self.node(s, "join")
            self.link(ends, join)
            parts[id(s)] = {"test": start, "join": join}
            if s.finalbody:
                return self.block(s.finalbody, [join])
            return [join]
        n = self.node(s, "stmt", activity.statement_effects(s))
        self.link(preds, n)
        if isinstance(s, gast.Return):
            self.link([n], self.g.exit)
            return []
        if isinstance(s, gast.Raise):
            return []
        if isinstance(s, gast.Break) and self.loops:
            self.loops[-1][1].append(n)
            return []
        if isinstance(s, gast.Continue) and self.loops:
            self.link([n], self.loops[-1][0])
            return []
        return [n]


def build(func):
    """The CFG of ``func`` (a gast FunctionDef or Lambda)."""
    b = _Builder()
    params = {a.id for a in gast.walk(func.args) if isinstance(a, gast.Name)}
    b.g.entry = b.node(func, "entry", activity.Effects((), params))
    b.g.exit = Node(func, "exit", activity.Effects())
    body = func.body if isinstance(func.body, list) else [gast.Return(value=func.body)]
    ends = b.block(body, [b.g.entry])
    b.link(ends, b.g.exit)
    b.g.nodes.append(b.g.exit)
    return b.g
