"""If-conversion: a two-way branch whose blocks are cheap, pure and give outputs of one fixed
type becomes both blocks computed and a ``where`` per output. On a device this removes the
predicate's host read (the Python backend) or the conditional node (a graph) for the
commonest data-dependent ``if``: ``s = s + x if x.sum() > 0 else s - x``.

A branch qualifies when every op in it:

* is element-wise and cannot raise (a bare ufunc, a comparison, or computes in floats: an
  integer ``//`` or ``%`` raises on a zero divisor), a reduction (``method`` trait), or a
  movement (reshape, transpose, ...); no effect, random draw, check or nested block;
* has inputs and outputs whose shapes are all known (a ``where`` of two shapes that differ
  would broadcast where the branch would not);

and the branches hold at most :data:`MAX_OPS` ops together, every output has the same dtype
and known shape in both, and at most :data:`MAX_ELEMENTS` elements (both branches always run:
this trades a predicate read for the untaken branch's work).

Branches are told apart by their block layout (``ops/control_flow.py``), not by op name.
"""
from ..ir import Op
from ..ops import OPS
from ..ops.control_flow import BranchLayout
from ._util import Namer

MAX_OPS = 24
MAX_ELEMENTS = 1 << 16


def _static(t):
    return all(d is not None for d in t.shape)


def _size(t):
    n = 1
    for d in t.shape:
        n *= d
    return n


def _cheap_op(block, op):
    opdef = OPS.get(op.type)
    if opdef is None or op.blocks or opdef.structured or opdef.effect or opdef.lowering("graph") is not None:
        return False
    try:
        types = [block.lookup(n).type for n in list(op.inputs) + list(op.outputs)]
    except KeyError:
        return False
    if not all(_static(t) for t in types):
        return False
    if opdef.elementwise:
        if opdef.ufunc is not None or opdef.comparison:
            return True
        # kernels that may raise compute on integers (integer division by zero)
        return all(t.dtype.startswith("float") or t.dtype == "bool" for t in types)
    return opdef.method is not None or opdef.movement or opdef.alias


def convertible(op, parent):
    """Whether the branch op ``op`` (of block ``parent``) can become a ``where``."""
    opdef = OPS.get(op.type)
    if opdef is None or not isinstance(opdef.layout, BranchLayout) or not opdef.layout.well_formed(op):
        return False
    blocks = opdef.layout.branches(op)
    if len(blocks) != 2 or not op.outputs:
        return False
    try:
        pred = parent.lookup(op.inputs[0]).type
    except KeyError:
        return False
    if pred.dtype != "bool" or pred.shape != ():
        return False
    if sum(len(b.ops) for b in blocks) > MAX_OPS:
        return False
    for b in blocks:
        if not all(_cheap_op(b, o) for o in b.ops):
            return False
    for k in range(len(op.outputs)):
        ts = [b.lookup(b.outputs[k]).type for b in blocks]
        if not all(_static(t) for t in ts) or ts[0] != ts[1] or _size(ts[0]) > MAX_ELEMENTS:
            return False
        if parent.lookup(op.outputs[k]).type != ts[0]:
            return False
    return True


def _inline(block, parent, args, fresh, out_ops):
    """``block``'s ops copied into ``parent`` with its inputs read from ``args`` and its vars
    renamed; returns the names of its outputs there."""
    names = dict(zip(block.inputs, args))
    for op in block.ops:
        outs = []
        for o in op.outputs:
            n = fresh()
            parent.add_var(n, block.lookup(o).type)
            names[o] = n
            outs.append(n)
        out_ops.append(Op(op.type, [names.get(i, i) for i in op.inputs], outs, dict(op.attrs)))
    return [names.get(o, o) for o in block.outputs]


def if_convert(program):
    """``program`` with its convertible branches (see the module docstring) turned into
    ``where``s; the program itself when none is (else a converted copy)."""
    if not any(convertible(op, b) for b in program.blocks for op in b.ops):
        return program
    prog = program.clone()
    fresh = Namer(prog, prefix="_ifc")
    for block in prog.blocks:
        ops = []
        for op in block.ops:
            if not convertible(op, block):
                ops.append(op)
                continue
            then_blk, else_blk = OPS[op.type].layout.branches(op)
            pred, operands = op.inputs[0], op.inputs[1:]
            t_out = _inline(then_blk, block, operands, fresh, ops)
            e_out = _inline(else_blk, block, operands, fresh, ops)
            for o, a, b in zip(op.outputs, t_out, e_out):
                ops.append(Op("where", [pred, a, b], [o], {}))
        block.ops = ops
    return prog
