"""Lowers `if` statements to `_jst.convert_ifelse(pred, true_fn, false_fn, args, ...)`.

Each branch becomes a function of the names either branch rebinds that are live on entry or
after the statement, and returns those live after it; a name bound in only one branch starts
as an ``Undefined`` placeholder, which ``convert_ifelse`` reports if a tensor ``if`` leaves it
undefined on one side and the code after reads it.
"""
from . import gast_compat as gc
from .anno import Key, getanno
from .base import (JST, Transformer, called_cells, copy_location, mark_generated, python_only,
                   state_functions,
                   undefined_inits, watch_escaping)
from .templates import replace, replace_as_expression


class IfStatements(Transformer):
    def _label(self, name):
        """How error messages name an output: the early-return pass's result variable is the
        function's return value, not a name the user wrote."""
        return "the return value" if name in self.ctx.retval_names else name

    @staticmethod
    def _arg(name, anno):
        """The value passed for parameter ``name``: a name not live on entry is bound by both
        branches before any read, so its value on entry is never used; it is passed as an
        ``Undefined`` instead of being read, because once an enclosing branch or loop body has
        become a function the name may be that function's local, still unbound here."""
        if name in anno.live_in:
            return gc.name(name)
        return replace_as_expression(f"{JST}.Undefined({name!r})")

    def visit_If(self, node):
        node = self.generic_visit(node)
        if python_only(node):
            return node
        anno = getanno(node, Key.LIVENESS)
        params = sorted(anno.mods & (anno.live_in | anno.live_out))
        outputs = sorted(anno.mods & anno.live_out)
        state_defs, get_state, set_state = state_functions(
            self.ctx.namer, anno.composites, called_cells(self.ctx, node, anno))
        code = replace(f"""
            def true_fn(params):
                body
                return outputs
            def false_fn(params):
                orelse
                return outputs
            outputs = {JST}.convert_ifelse(test, true_fn, false_fn, args, param_names, names, get_state, set_state)
            """, true_fn=self.new_name("if_true"), false_fn=self.new_name("if_false"), params=params,
                       args=gc.tuple_([self._arg(n, anno) for n in params]),
                       outputs=outputs, body=node.body, orelse=node.orelse, test=node.test,
                       names=gc.tuple_([gc.constant(self._label(n)) for n in outputs]),
                       param_names=gc.tuple_([gc.constant(n) for n in params]),
                       get_state=get_state, set_state=set_state)
        fillable = [n for n in outputs if n in self.ctx.retval_names]
        if fillable:
            call = code[-1].value
            call.keywords.append(gc.keyword("fillable", gc.tuple_([gc.constant(self._label(n)) for n in fillable])))
        watch_escaping(code[-1].value, anno)
        out = undefined_inits(sorted(set(params) & anno.live_in), anno) + state_defs + mark_generated(code)
        return copy_location(out, node)
