"""ConditionalExpressions: a ternary becomes convert_ifexp over two thunks."""
from convert_helpers import same_code, transformed
from d2s.transformers.conditional_expressions import ConditionalExpressions


def test_ternary_inside_lambda():
    got = transformed("""
        def f(x):
            g = lambda v: v if v > 0 else -v
            return g(x)
    """, ConditionalExpressions)
    same_code(got, """
        def f(x):
            g = lambda v: _jst.convert_ifexp(v > 0, lambda: v, lambda: -v)
            return g(x)
    """)
