"""BreakStatements: break becomes a flag, later code a guarded block, the test gains `not flag`."""
from convert_helpers import same_code, transformed
from d2s.transformers.break_statements import BreakStatements


def test_break_in_while():
    got = transformed("""
        def f(x):
            while x < 10:
                if x > 5:
                    break
                    x = 0
                x = x + 1
            return x
    """, BreakStatements)
    same_code(got, """
        def f(x):
            break_ = False
            while not break_ and x < 10:
                if x > 5:
                    break_ = True
                if not break_:
                    x = x + 1
            return x
    """)


def test_break_in_for_becomes_an_extra_test():
    got = transformed("""
        def f(xs):
            for v in xs:
                if v:
                    break
            return v
    """, BreakStatements)
    assert "break_ = True" in got and "break" not in got.replace("break_", "")
