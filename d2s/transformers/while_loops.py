"""Lowers `while` loops to `_jst.convert_while_loop(test_fn, body_fn, loop_vars, ...)`.

The loop variables are the names the body rebinds or mutates that are live on entry to the
loop (read by the test or before being rebound in the body) or after it, per the liveness
analysis; the rest of what the body binds stays local to ``body_fn``.
"""

from . import gast_compat as gc
from .anno import Key, getanno
from .base import (JST, Transformer, called_cells, copy_location, mark_generated, python_only,
                   state_functions,
                   undefined_inits, watch_entry_identity, watch_escaping)
from .templates import replace


class WhileLoops(Transformer):
    def _label(self, name):
        """How messages name a loop variable: the early-return pass's result variable is the
        function's return value, not a name the user wrote."""
        return "the return value" if name in self.ctx.retval_names else name

    def _labels(self, loop_vars):
        return gc.tuple_([gc.constant(self._label(n)) for n in loop_vars])

    def visit_While(self, node):
        node = self.generic_visit(node)
        if python_only(node):
            return node
        anno = getanno(node, Key.LIVENESS)
        loop_vars = sorted(anno.mods & (anno.live_in | anno.live_out))
        state_defs, get_state, set_state = state_functions(
            self.ctx.namer, anno.composites, called_cells(self.ctx, node, anno))
        code = replace(f"""
            def test_fn(loop_vars):
                return test
            def body_fn(loop_vars):
                body
                return loop_vars
            loop_vars = {JST}.convert_while_loop(test_fn, body_fn, loop_vars, names, get_state, set_state)
            """, test_fn=self.new_name("while_test"), body_fn=self.new_name("while_body"),
                       loop_vars=loop_vars, test=node.test, body=node.body,
                       names=self._labels(loop_vars),
                       get_state=get_state, set_state=set_state)
        watch_escaping(code[-1].value, anno)
        watch_entry_identity(code[-1].value, self.ctx)
        out = undefined_inits(loop_vars, anno) + state_defs + mark_generated(code)
        return copy_location(out, node)
