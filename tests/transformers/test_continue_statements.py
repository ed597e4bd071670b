"""ContinueStatements: continue becomes a per-iteration flag guarding the rest of the body."""
from convert_helpers import same_code, transformed
from d2s.transformers.continue_statements import ContinueStatements


def test_continue_in_for():
    got = transformed("""
        def f(xs):
            s = 0
            for v in xs:
                if v < 0:
                    continue
                s = s + v
            return s
    """, ContinueStatements)
    same_code(got, """
        def f(xs):
            s = 0
            for v in xs:
                continue_ = False
                if v < 0:
                    continue_ = True
                if not continue_:
                    s = s + v
            return s
    """)
