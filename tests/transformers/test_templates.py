"""templates.replace: placeholders become names, expressions, statement lists and parameters."""
import ast

import gast

from d2s.transformers import gast_compat as gc
from d2s.transformers.templates import replace, replace_as_expression


def test_replace_names_statements_and_parameters():
    body = gast.parse("a = b + 1\nc = a").body
    nodes = replace("""
        def fn(args):
            body
            return out
    """, fn="g", args=["b", "d"], body=body, out=["a", "c"])
    code = ast.unparse(ast.fix_missing_locations(gast.gast_to_ast(gast.Module(body=nodes, type_ignores=[]))))
    assert code.splitlines() == ["def g(b, d):", "    a = b + 1", "    c = a", "    return (a, c)"]


def test_replace_expression_with_store_context():
    e = replace_as_expression("f(x)", f=gc.name("h"), x=gc.constant(3))
    assert ast.unparse(gast.gast_to_ast(e)) == "h(3)"
    (stmt,) = replace("target = 1", target=["a", "b"])
    assert isinstance(stmt.targets[0].elts[0].ctx, gast.Store)
