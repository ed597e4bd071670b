"""Control-flow ops as ONNX control flow, following the op layout documented in
``d2s_runtime/control_flow.py``:

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

from .export import GraphCtx, _Type
from .registry import CONTROL_FLOW, _i64, converter, onnx_unsupported


def _cf(name):
    def deco(fn):
        CONTROL_FLOW[name] = fn
        return fn
    return deco


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


def _fresh_like(ex, g, names):
    out = []
    for n in names:
        m = ex.fresh()
        g.types[m] = g.types[n]
        out.append(m)
    return out


@_cf("cond")
def _cond(ex, g, op):
    bound = op.inputs[1:]
    then_g, _ = ex.subgraph(g, op.blocks["then"], bound, ex.fresh() + "_then")
    else_g, _ = ex.subgraph(g, op.blocks["else"], bound, ex.fresh() + "_else")
    g.node("If", [g.cast(op.inputs[0], "bool")], op.outputs, then_branch=then_g, else_branch=else_g)


def _loop_header(ex, g):
    it, cin = ex.fresh(), ex.fresh()
    g.types[it] = _Type((), "int64")
    g.types[cin] = _Type((), "bool")
    return it, cin


@_cf("while")
def _while(ex, g, op):
    n = len(op.outputs)
    cond_b, body_b = op.blocks["cond"], op.blocks["body"]
    init, caps = op.inputs[:n], op.inputs[n:]
    first = inline_block(ex, g, cond_b, list(init) + list(caps))[0]
    it, cin = _loop_header(ex, g)
    carry_in = _fresh_like(ex, g, body_b.inputs[:n])
    sub = GraphCtx(ex, g.types)
    for inner, outer in zip(body_b.inputs, carry_in + list(caps)):
        sub.node("Identity", [outer], [inner])
    ex.emit_block(sub, body_b)
    again = inline_block(ex, sub, cond_b, list(body_b.outputs) + list(caps))[0]
    outs = _fresh_like(ex, g, [again] + list(body_b.outputs))
    for src, dst in zip([again] + list(body_b.outputs), outs):
        sub.node("Identity", [src], [dst])
    body = ex.helper.make_graph(sub.nodes, ex.fresh() + "_while_body",
                                [sub.value_info(it), sub.value_info(cin)] + [sub.value_info(c) for c in carry_in],
                                [sub.value_info(m) for m in outs])
    g.node("Loop", ["", g.cast(first, "bool")] + list(init), op.outputs, body=body)


def _trip_count(g, op, xs):
    if xs:
        shape, trip = g.tmp(), g.tmp()
        g.node("Shape", [xs[0]], [shape])
        g.node("Gather", [shape, g.const(_i64(0))], [trip], axis=0)
        return trip
    return g.const(_i64(op.attrs["length"]))


@_cf("scan")
def _scan(ex, g, op):
    nc, nx = op.attrs["n_carry"], op.attrs["n_xs"]
    reverse = bool(op.attrs.get("reverse", False))
    body_b = op.blocks["body"]
    init, xs, caps = op.inputs[:nc], op.inputs[nc:nc + nx], op.inputs[nc + nx:]
    trip = _trip_count(g, op, xs)
    it, cin = _loop_header(ex, g)
    carry_in = _fresh_like(ex, g, body_b.inputs[:nc])
    sub = GraphCtx(ex, g.types)
    t = it
    if reverse:  # t = trip - 1 - iter
        last, t = sub.tmp(), sub.tmp()
        sub.node("Sub", [trip, sub.const(_i64(1))], [last])
        sub.node("Sub", [last, it], [t])
    slices = []
    for x in xs:
        s = sub.tmp()
        sub.node("Gather", [x, t], [s], axis=0)
        slices.append(s)
    for inner, outer in zip(body_b.inputs, carry_in + slices + list(caps)):
        sub.node("Identity", [outer], [inner])
    ex.emit_block(sub, body_b)
    outs = _fresh_like(ex, g, [cin] + list(body_b.outputs))
    for src, dst in zip([cin] + list(body_b.outputs), outs):
        sub.node("Identity", [src], [dst])
    body = ex.helper.make_graph(sub.nodes, ex.fresh() + "_scan_body",
                                [sub.value_info(it), sub.value_info(cin)] + [sub.value_info(c) for c in carry_in],
                                [sub.value_info(m) for m in outs])
    ys = op.outputs[nc:]
    stacked = _fresh_like(ex, g, ys) if reverse else list(ys)
    g.node("Loop", [trip, g.const(np.asarray(True))] + list(init), list(op.outputs[:nc]) + stacked, body=body)
    for s, y in zip(stacked, ys) if reverse else ():
        g.node("Slice", [s, g.const(_i64([-1])), g.const(_i64([np.iinfo(np.int64).min])), g.const(_i64([0])),
                         g.const(_i64([-1]))], [y])


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
    g.node("Concat", [g.const(_i64([0])), shape], [full], axis=0)
    g.node("ConstantOfShape", [full], op.outputs,
           value=g.x.numpy_helper.from_array(np.zeros((1,), dtype=g.dtype(op.outputs[0]))))


@converter("list_push")
def _list_push(g, op):
    lst, x = op.inputs
    one = g.tmp()
    g.node("Unsqueeze", [g.cast(x, g.dtype(lst)), g.const(_i64([0]))], [one])
    g.node("Concat", [lst, one], op.outputs, axis=0)


@converter("list_pop")
def _list_pop(g, op):
    lst = op.inputs[0]
    g.node("Slice", [lst, g.const(_i64([0])), g.const(_i64([-1])), g.const(_i64([0]))], [op.outputs[0]])
    g.node("Gather", [lst, g.const(_i64(-1))], [op.outputs[1]], axis=0)


@converter("list_get")
def _list_get(g, op):
    g.node("Gather", [op.inputs[0], g.cast(op.inputs[1], "int64")], op.outputs, axis=0)


@converter("list_len")
def _list_len(g, op):
    s = g.tmp()
    g.node("Shape", op.inputs, [s])
    g.node("Gather", [s, g.const(_i64(0))], op.outputs, axis=0)


@converter("list_stack")
def _list_stack(g, op):
    g.node("Identity", op.inputs, op.outputs)
