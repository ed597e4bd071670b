"""Lowers f-strings given to `print` to `_jst.formatted_text(pieces)`, so a program prints the
run-time values of the tensors they format (see d2s/convert/printing.py)."""
import gast

from . import gast_compat as gc
from .base import Transformer, jst


def _pieces(node):
    """The pieces of f-string ``node``: ``("s", text)`` and ``("v", value, conversion, spec)``."""
    out = []
    for v in node.values:
        if isinstance(v, gast.Constant):
            out.append(gc.tuple_([gc.constant("s"), v]))
        elif isinstance(v, gast.FormattedValue):
            spec = v.format_spec if v.format_spec is not None else gc.constant("")
            out.append(gc.tuple_([gc.constant("v"), v.value, gc.constant(v.conversion), spec]))
    return out


class FormattedStrings(Transformer):
    def visit_Call(self, node):
        node = self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id == "print":
            node.args = [gast.copy_location(gc.call(jst("formatted_text"), _pieces(a)), a)
                         if isinstance(a, gast.JoinedStr) and any(isinstance(v, gast.FormattedValue)
                                                                  for v in a.values) else a
                         for a in node.args]
        return node
