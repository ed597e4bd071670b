"""IfStatements: an if becomes two branch functions and a convert_ifelse call."""
from convert_helpers import same_code, transformed
from d2s.transformers.if_statements import IfStatements


def test_if_carries_names_live_after_and_keeps_temporaries_local():
    got = transformed("""
        def f(x):
            if x > 0:
                tmp = x * 2
                y = tmp + 1
            else:
                y = -x
            return y
    """, IfStatements)
    same_code(got, """
        def f(x):
            def if_true(y):
                tmp = x * 2
                y = tmp + 1
                return (y,)
            def if_false(y):
                y = -x
                return (y,)
            y, = _jst.convert_ifelse(x > 0, if_true, if_false, (_jst.Undefined('y'),), ('y',), ('y',), None, None)
            return y
    """)


def test_attribute_targets_go_through_state_functions():
    got = transformed("""
        def f(self, x):
            if x > 0:
                self.h = x
            return x
    """, IfStatements)
    assert "def get_state():\n        return (_jst.ld_attr(self, 'h'),)" in got
    assert "_jst.st_attr(self, 'h', values[0])" in got
    assert "get_state, set_state)" in got
