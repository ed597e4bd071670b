"""CallTrees: calls go through convert_call; _jst helpers and frame-reading builtins do not."""
from convert_helpers import same_code, transformed
from d2s.transformers.call_trees import CallTrees


def test_calls_are_wrapped():
    got = transformed("""
        def f(self, x):
            y = self.layer(helper(len(x)))
            return _jst.ld(locals(), 'y')
    """, CallTrees)
    same_code(got, """
        def f(self, x):
            y = _jst.convert_call(self.layer)(_jst.convert_call(helper)(_jst.convert_call(len)(x)))
            return _jst.ld(locals(), 'y')
    """)
