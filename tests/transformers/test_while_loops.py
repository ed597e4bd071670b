"""WhileLoops: a while becomes test and body functions over the loop variables."""
from convert_helpers import same_code, transformed
from d2s.transformers.while_loops import WhileLoops


def test_while_loop_vars_are_rebound_names_live_in_or_after():
    got = transformed("""
        def f(x, n):
            i = 0
            while i < n:
                step = x * 2
                x = x + step
                i += 1
            return x
    """, WhileLoops)
    same_code(got, """
        def f(x, n):
            i = 0
            def while_test(i, x):
                return i < n
            def while_body(i, x):
                step = x * 2
                x = x + step
                i += 1
                return (i, x)
            i, x = _jst.convert_while_loop(while_test, while_body, (i, x), ('i', 'x'), None, None, entry_flags=True)
            return x
    """)
