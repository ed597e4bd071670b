"""AssertStatements: assert becomes convert_assert with a lazy message."""
from convert_helpers import same_code, transformed
from d2s.transformers.assert_statements import AssertStatements


def test_assert_with_message():
    got = transformed("""
        def f(x):
            assert x > 0, f"bad {x}"
            return x
    """, AssertStatements)
    same_code(got, """
        def f(x):
            _jst.convert_assert(x > 0, lambda: f'bad {x}')
            return x
    """)
