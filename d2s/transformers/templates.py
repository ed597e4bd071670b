"""Code generation from source templates: placeholders in a Python snippet become AST fragments.

    nodes = replace('''
        def fn_name(args):
            body
            return outputs
    ''', fn_name='true_fn', args=['x', 'y'], body=stmts, outputs=['x'])

A placeholder is a plain name in the template. Its replacement can be a ``str`` (a name,
or a function name), a gast expression (copied, its context fixed to the placeholder's), a list
of statements (spliced where the placeholder stands alone as a statement), or a list of names
(a parameter list inside ``def``/``lambda``; elsewhere a tuple of names).
"""
import copy
import textwrap

import gast

from . import gast_compat as gc


def _with_ctx(node, ctx):
    """``node`` with the load/store context of the place it is put in, recursively for tuples."""
    if isinstance(node, (gast.Name, gast.Attribute, gast.Subscript, gast.Starred)):
        node.ctx = ctx
    if isinstance(node, (gast.Tuple, gast.List)):
        node.ctx = ctx
        for e in node.elts:
            _with_ctx(e, ctx)
    if isinstance(node, gast.Starred):
        _with_ctx(node.value, ctx)
    return node


class _Replacer(gast.NodeTransformer):
    def __init__(self, replacements):
        self.repl = replacements
        # Ids of AST replacements already placed: the first use takes the node itself (the
        # caller hands it over), later uses take copies. Copying every use made converting
        # nested ifs quadratic: each level copied the whole already-converted body again.
        self.placed = set()

    def _own(self, value):
        """``value`` itself on its first placement, a deep copy after that."""
        if id(value) in self.placed:
            return copy.deepcopy(value)
        self.placed.add(id(value))
        return value

    def _expr(self, value, ctx):
        if isinstance(value, str):
            return gc.name(value, type(ctx)())
        if isinstance(value, (list, tuple)):
            return gc.tuple_([self._expr(v, ctx) for v in value], type(ctx)())
        if isinstance(value, gast.AST):
            return _with_ctx(self._own(value), type(ctx)())
        raise TypeError(f"template: cannot use {type(value).__name__} as an expression")

    def visit_Name(self, node):
        if node.id not in self.repl:
            return node
        return self._expr(self.repl[node.id], node.ctx)

    def visit_Expr(self, node):
        if isinstance(node.value, gast.Name) and node.value.id in self.repl:
            value = self.repl[node.value.id]
            if isinstance(value, list) and all(isinstance(v, gast.stmt) for v in value):
                return list(self._own(value)) or [gast.Pass()]
            if isinstance(value, gast.stmt):
                return self._own(value)
        return self.generic_visit(node)

    def visit_arguments(self, node):
        args = []
        for a in node.args:
            value = self.repl.get(a.id) if isinstance(a, gast.Name) else None
            if isinstance(value, (list, tuple)):
                args.extend(gc.param(v) for v in value)
            elif isinstance(value, str):
                args.append(gc.param(value))
            else:
                args.append(a)
        node.args = args
        return node

    def visit_FunctionDef(self, node):
        if node.name in self.repl:
            node.name = self.repl[node.name]
        return self.generic_visit(node)


_PARSED = {}  # template text -> parsed tree without locations (copied for each use)


def _parse(template):
    tree = _PARSED.get(template)
    if tree is None:
        tree = gast.parse(textwrap.dedent(template))
        for node in gast.walk(tree):  # template lines mean nothing: the caller supplies locations
            for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
                if hasattr(node, attr):
                    delattr(node, attr)
        if len(_PARSED) < 512:
            _PARSED[template] = tree
    return copy.deepcopy(tree)


def replace(template, **replacements):
    """The statements of ``template`` with placeholders replaced; returns a list of gast stmts.

    AST replacements are moved into the result, not copied (only a second use of the same one
    is a copy): the caller must not place them anywhere else afterwards."""
    tree = _parse(template)
    out = []
    replacer = _Replacer(replacements)
    for stmt in tree.body:
        new = replacer.visit(stmt)
        out.extend(new if isinstance(new, list) else [new])
    return out


def replace_as_expression(template, **replacements):
    """Like :func:`replace` for a template that is a single expression; returns the expression."""
    stmts = replace(template, **replacements)
    if len(stmts) != 1 or not isinstance(stmts[0], gast.Expr):
        raise ValueError(f"template is not a single expression: {template!r}")
    return stmts[0].value
