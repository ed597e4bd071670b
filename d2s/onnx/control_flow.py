"""What the ONNX forms of the structured ops share, and the tensor lists' converters.

The structured ops' forms are declared in their family modules (``d2s/static/conditionals.py``,
``while_loops.py``, ``scans.py``, with ``onnx_structured``), following the op layouts of
``d2s_runtime/ops/control_flow.py``:

* ``cond`` -> ``If``: both branches become subgraphs; a branch's inputs (the operands, then the
  captures) are bound by ``Identity`` to the outer values, which ONNX subgraphs may read.
* ``while`` -> ``Loop`` with no trip count: the condition runs once before the loop (inlined
  into the enclosing graph) and again at the end of each body iteration, on the new carries.
  Since ONNX wants every name defined once in the whole model, each inlined copy of the
  condition block gets fresh names.
* ``scan`` -> ``Loop`` with a trip count (the xs' leading dim, or ``length``): step ``t``
  gathers ``xs[i][t]``; the ``y`` slices are Loop scan outputs, stacked in iteration order (a
  ``reverse`` scan walks ``t = T-1..0`` and flips its stacked ys afterwards).

Tensor lists (``list_*`` ops, the carries of loops that append) become plain tensors with a
leading length dim, as in the runtime.
"""
import numpy as np

from d2s_runtime.ir import Block, Op

from .export import ValueType
from .registry import converter, i64, onnx_unsupported


def renamed_block(ex, g, block):
    """A copy of ``block`` (and its sub-blocks) with every var it defines given a fresh name."""
    rename = {}

    def collect(b):
        for n, v in b.vars.items():
            m = rename[n] = ex.fresh()
            g.types[m] = v.type
        for op in b.ops:
            for o in op.outputs:
                if o not in rename:
                    m = rename[o] = ex.fresh()
                    g.types[m] = g.types[o]
            for sb in op.blocks.values():
                collect(sb)

    def copy(b, parent):
        nb = Block(parent=parent)
        r = lambda n: rename.get(n, n)  # noqa: E731
        nb.inputs, nb.outputs = [r(n) for n in b.inputs], [r(n) for n in b.outputs]
        nb.vars = {r(n): type(v)(r(n), v.type) for n, v in b.vars.items()}
        nb.ops = [Op(op.type, [r(n) for n in op.inputs], [r(n) for n in op.outputs], op.attrs,
                     {k: copy(sb, nb) for k, sb in op.blocks.items()}) for op in b.ops]
        return nb

    collect(block)
    return copy(block, None)


def inline_block(ex, g, block, bound):
    """Emit ``block`` into graph ``g`` under fresh names, its inputs bound to ``bound``;
    returns the names of its outputs."""
    b = renamed_block(ex, g, block)
    for inner, outer in zip(b.inputs, bound):
        g.node("Identity", [outer], [inner])
    ex.emit_block(g, b)
    return list(b.outputs)


def fresh_like(ex, g, names):
    out = []
    for n in names:
        m = ex.fresh()
        g.types[m] = g.types[n]
        out.append(m)
    return out


def loop_header(ex, g):
    """The iteration count and condition inputs of an ONNX ``Loop`` body graph (their names)."""
    it, cin = ex.fresh(), ex.fresh()
    g.types[it] = ValueType((), "int64")
    g.types[cin] = ValueType((), "bool")
    return it, cin


def trip_count(g, op, xs):
    """The trip count of a scan: the leading dim of its xs, or its ``length``."""
    if xs:
        shape, trip = g.tmp(), g.tmp()
        g.node("Shape", [xs[0]], [shape])
        g.node("Gather", [shape, g.const(i64(0))], [trip], axis=0)
        return trip
    return g.const(i64(op.attrs["length"]))


# ------------------------------------------------------------------ tensor lists
onnx_unsupported("stack_new", "stack_push", "stack_pop", "stack_rows",
                 reason="the stacks of saved loop carries belong to backward programs; export the forward program")
onnx_unsupported("list_index_check", reason="an ONNX graph cannot raise on an index out of range; index tensor "
                                            "lists with indices known to be in range, or use to_static")


@converter("list_new")
def _list_new(g, op):
    like = op.inputs[0]
    shape, full = g.tmp(), g.tmp()
    g.node("Shape", [like], [shape])
    g.node("Concat", [g.const(i64([0])), shape], [full], axis=0)
    g.node("ConstantOfShape", [full], op.outputs,
           value=g.x.numpy_helper.from_array(np.zeros((1,), dtype=g.dtype(op.outputs[0]))))


@converter("list_push")
def _list_push(g, op):
    lst, x = op.inputs
    one = g.tmp()
    g.node("Unsqueeze", [g.cast(x, g.dtype(lst)), g.const(i64([0]))], [one])
    g.node("Concat", [lst, one], op.outputs, axis=0)


@converter("list_pop")
def _list_pop(g, op):
    lst = op.inputs[0]
    g.node("Slice", [lst, g.const(i64([0])), g.const(i64([-1])), g.const(i64([0]))], [op.outputs[0]])
    g.node("Gather", [lst, g.const(i64(-1))], [op.outputs[1]], axis=0)


@converter("list_get")
def _list_get(g, op):
    g.node("Gather", [op.inputs[0], g.cast(op.inputs[1], "int64")], op.outputs, axis=0)


@converter("list_len")
def _list_len(g, op):
    s = g.tmp()
    g.node("Shape", op.inputs, [s])
    g.node("Gather", [s, g.const(i64(0))], op.outputs, axis=0)


@converter("list_stack")
def _list_stack(g, op):
    g.node("Identity", op.inputs, op.outputs)
