"""ForLoops: a for becomes a body function of (item, loop vars) and a convert_for call."""
from convert_helpers import same_code, transformed
from d2s.transformers.for_loops import ForLoops


def test_for_loop_binds_the_target_from_the_item():
    got = transformed("""
        def f(x, n):
            for i in range(n):
                x = x + i
            return x, i
    """, ForLoops)
    same_code(got, """
        def f(x, n):
            i = _jst.Undefined('i')
            def for_body(item, i, x):
                i = item
                x = x + i
                return (i, x)
            i, x = _jst.convert_for(range(n), for_body, (i, x), ('i', 'x'), None, None, None)
            return (x, i)
    """)
