"""LogicalExpressions: and/or/not and chained comparisons become thunk-taking helpers."""
from convert_helpers import same_code, transformed
from d2s.transformers.logical_expressions import LogicalExpressions


def test_and_or_not_and_chains():
    got = transformed("""
        def f(a, s):
            return (a is not None and a.sum() > 1) or not (0 < s < 10)
    """, LogicalExpressions)
    same_code(got, """
        def f(a, s):
            return _jst.or_(lambda: _jst.and_(lambda: _jst.not_(_jst.is_none(a)), lambda: a.sum() > 1), lambda: _jst.not_(_jst.and_(lambda: 0 < s, lambda: s < 10, truth=True)))
    """)
