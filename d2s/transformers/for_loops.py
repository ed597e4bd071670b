"""Lowers `for` loops to `_jst.convert_for(iterable, body_fn, loop_vars, ...)`.

``convert_for`` unrolls Python iterables and builds a while op for a range with a tensor
bound or the rows of a symbolic tensor. A lowered `break` arrives as an extra test
(``not break_``) that the loop checks before each iteration.
"""

from . import gast_compat as gc
from .analysis import activity
from .anno import Key, getanno
from .base import (JST, Transformer, called_cells, copy_location, mark_generated, python_only,
                   state_functions,
                   undefined_inits, watch_entry_identity, watch_escaping)
from .templates import replace


class ForLoops(Transformer):
    def _label(self, name):
        """How messages name a loop variable: the early-return pass's result variable is the
        function's return value, not a name the user wrote."""
        return "the return value" if name in self.ctx.retval_names else name

    def _labels(self, loop_vars):
        return gc.tuple_([gc.constant(self._label(n)) for n in loop_vars])

    def visit_For(self, node):
        node = self.generic_visit(node)
        if python_only(node):
            return node
        anno = getanno(node, Key.LIVENESS)
        extra = getanno(node, Key.EXTRA_TEST)
        live = anno.live_in | anno.live_out
        if extra is not None:
            live |= activity.expr_reads(extra)  # the flag is read between iterations
        loop_vars = sorted(anno.mods & live)
        state_defs, get_state, set_state = state_functions(
            self.ctx.namer, anno.composites, called_cells(self.ctx, node, anno))
        extra_defs, extra_fn = [], gc.constant(None)
        if extra is not None:
            extra_name = self.new_name("for_test")
            extra_defs = replace("def extra_fn(loop_vars):\n    return extra",
                                 extra_fn=extra_name, loop_vars=loop_vars, extra=extra)
            extra_fn = gc.name(extra_name)
        item = self.new_name("item")
        code = replace(f"""
            def body_fn(item, loop_vars):
                target = item
                body
                return loop_vars
            loop_vars = {JST}.convert_for(iterable, body_fn, loop_vars, names, extra_fn, get_state, set_state)
            """, body_fn=self.new_name("for_body"), item=item, loop_vars=loop_vars, target=node.target,
                       body=node.body, iterable=node.iter, names=self._labels(loop_vars),
                       extra_fn=extra_fn, get_state=get_state, set_state=set_state)
        if extra is not None and getanno(node, Key.BREAKS_RETURN, False):
            # variables dead once the loop has returned (see convert_for)
            keep = self.ctx.retval_names | self.ctx.return_flags | activity.expr_reads(extra) | self.ctx.cells
            dead = [self._label(n) for n in loop_vars if n not in keep]
            if dead:
                names = gc.tuple_([gc.constant(n) for n in dead])
                code[-1].value.keywords.append(gc.keyword("dead_when_broken", names))
        watch_escaping(code[-1].value, anno)
        watch_entry_identity(code[-1].value, self.ctx)
        out = undefined_inits(loop_vars, anno) + state_defs + mark_generated(extra_defs + code)
        return copy_location(out, node)
