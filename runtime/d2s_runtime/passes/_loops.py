"""What the loop passes share: value numbering, definitions, stacks added to loops.

The loop passes (``merge_loops``, ``loop_residuals``, ``loop_matmul_sums``, ``loop_transposes``,
``loop_invariants``) rewrite the ops of ``while``'s layout (``ops/control_flow.py``: carries, a
``cond`` block and a ``body`` block), found by that layout, not by name.
"""
import json

from ..ir import Op
from ..ops import OPS, TensorType
from ..ops.control_flow import WhileLayout
from ..schedule import FeedView, topo_order
from ._util import Namer, is_effect, prune_vars, start, trait


def _defs(block):
    """var name -> (op, output index) for the vars defined by ``block``'s ops."""
    d = {}
    for op in block.ops:
        for k, o in enumerate(op.outputs):
            d[o] = (op, k)
    return d


def _canon(defs, name):
    """``name`` with any ``stop_gradient`` chain defining it seen through."""
    while True:
        d = defs.get(name)
        if d is None or d[0].type != "stop_gradient":
            return name
        name = d[0].inputs[0]


def _layout_free_reads(body, bdefs, var):
    """Whether every ``matmul`` of ``body`` reading ``var`` gives the same bits whatever ``var``'s
    memory layout: a product of matrices whose result has at least 2 rows and 2 columns, known.
    numpy hands a product with one row or one column to BLAS's matrix-vector routine, whose
    sum order depends on which operand is transposed (a batch-1 RNN step ``h @ W.T`` differs in
    its last bits between a transposed view of ``W`` and a contiguous copy), and ``a @ a.T`` of
    one buffer to a symmetric routine."""
    for op in body.ops:
        if op.type != "matmul" or var not in (_canon(bdefs, i) for i in op.inputs):
            continue
        if len({_canon(bdefs, i) for i in op.inputs}) < 2:
            return False
        types = [body.lookup(i).type for i in op.inputs]
        out = body.lookup(op.outputs[0]).type.shape
        if min(t.ndim for t in types) < 2 or len(out) < 2 or None in out[-2:] or min(out[-2:]) < 2:
            return False
    return True


def _attrs_key(op):
    try:
        return json.dumps(op.attrs, sort_keys=True)
    except (TypeError, ValueError):
        return None


def _pure(op):
    """An op the loop passes may compare, move or duplicate."""
    return op.type in OPS and not op.blocks and not is_effect(op)


class _Numbering:
    """Value numbers shared by several blocks: equal numbers, equal values."""

    def __init__(self):
        self.table = {}

    def number(self, key):
        n = self.table.get(key)
        if n is None:
            n = self.table[key] = len(self.table)
        return n

    def op_key(self, op, ins):
        if trait(op, "commutative"):
            ins = sorted(ins)
        return op.type, _attrs_key(op), tuple(ins)

    def block(self, block, input_keys):
        """Value numbers of ``block``'s vars, its inputs numbered by ``input_keys``; an op that
        cannot be compared (effects, sub-blocks, unserializable attrs) gets numbers of its own."""
        vn = {name: self.number(k) for name, k in zip(block.inputs, input_keys)}
        for op in block.ops:
            if op.type == "stop_gradient":
                vn[op.outputs[0]] = vn[op.inputs[0]]
                continue
            if not _pure(op) or _attrs_key(op) is None:
                for o in op.outputs:
                    vn[o] = self.number(("unique", id(op), o))
                continue
            key = self.op_key(op, [vn[i] for i in op.inputs])
            for k, o in enumerate(op.outputs):
                vn[o] = self.number(key + (k,))
        return vn


def _feeds(program, block):
    if block is program.block:
        return set(program.inputs) | set(program.params) | set(program.constants) | set(block.inputs)
    return set(block.inputs)


def _reorder(program, block):
    """Put ``block``'s ops back in a topological order (ties keep their order)."""
    inputs = list(_feeds(program, block))
    order, _, _ = topo_order(FeedView(block, inputs))
    block.ops = [block.ops[i] for i in order]


def _dependents(block, names):
    """Vars of ``block`` computed (transitively) from ``names``."""
    dep = set(names)
    for op in block.ops:
        if any(i in dep for i in op.inputs):
            dep.update(op.outputs)
    return dep


def _is_while(op):
    """Whether ``op`` is a loop of ``while``'s layout (carries; a cond block, then a body block)."""
    opdef = OPS.get(op.type)
    return opdef is not None and isinstance(opdef.layout, WhileLayout)


def _whiles(block):
    """The ``while`` loops of ``block`` these passes may rewrite (those without effects)."""
    return [op for op in block.ops if _is_while(op) and not is_effect(op)]


def _each_loop(program, prefix, rewrite):
    """A copy of ``program`` after ``rewrite(program, block, namer, loop)`` (whether it changed
    anything) ran on each ``while`` of each block; a changed block's ops are put back in a
    topological order."""
    p = start(program)
    namer = Namer(p, prefix)
    for block in [p.block, *p.block.sub_blocks()]:
        changed = False
        for loop in _whiles(block):
            changed |= rewrite(p, block, namer, loop)
        if changed:
            _reorder(p, block)
            prune_vars(block)
    return p


def _dce_sub(block):
    live = set(block.outputs)
    kept = []
    for op in reversed(block.ops):
        if is_effect(op) or op.blocks or any(o in live for o in op.outputs):
            kept.append(op)
            live.update(op.inputs)
    kept.reverse()
    block.ops = kept
    prune_vars(block)


def _stack_vars(blk, namer, t):
    """Two new vars of ``blk`` holding a stack of ``t`` elements: its buffer and its shapes."""
    b, sh = namer(), namer()
    blk.add_var(b, TensorType((None,), t.dtype))
    blk.add_var(sh, TensorType((None, len(t.shape)), "int64"))
    return b, sh


def _empty_stack(block, namer, t):
    """``(ops, (buffer, shapes))``: the ops of ``block`` making an empty stack of ``t`` elements."""
    like = namer()
    block.add_var(like, TensorType([1] * len(t.shape), t.dtype))
    pair = _stack_vars(block, namer, t)
    return [Op("full", [], [like], {"shape": [1] * len(t.shape), "value": 0, "dtype": str(t.dtype)}),
            Op("stack_new", [like], list(pair), {})], pair


def _add_stack_carry(block, namer, loop, init, t):
    """Carry a stack of ``t`` elements through ``loop`` (after its other carries), starting from
    ``init`` (buffer, shapes); returns the loop's result pair and the body's input pair."""
    out = _stack_vars(block, namer, t)
    pos = len(loop.outputs)
    loop.inputs[pos:pos] = list(init)
    loop.outputs.extend(out)
    body_in = None
    for blk in loop.blocks.values():
        pair = _stack_vars(blk, namer, t)
        blk.inputs[pos:pos] = list(pair)
        if blk is loop.blocks["body"]:
            body_in = pair
    return out, body_in
