"""Merges a ``while`` that computes a leading part of another ``while``'s carries into it.

The gradient of a ``while`` (``d2s/static/control_flow_grad.py``) runs the loop forward again,
pushing each iteration's incoming carries onto stacks, then a backward ``while`` that pops them
and replays the body to get the values its vector-Jacobian product reads. A program that
returns a loss and its gradient so runs the loop body three times per iteration: the loop
itself, its copy that pushes, and the replay inside the backward loop. This pass and
``loop_residuals`` remove the repetition.

A ``while`` whose carries, condition and body updates are those of a leading part of another
``while`` on the same initial values (the gradient's forward copy has every carry of the
original loop, plus its stacks and an iteration count) is dropped; its outputs are read from
the other loop. Loops are compared by value numbering, with ``stop_gradient`` (the identity
when the program runs) seen through. Results are unchanged; loops holding effects (random
draws, prints, asserts) are left alone.
"""
from ._util import prune_vars, rename_uses, start
from ._loops import _defs, _canon, _Numbering, _reorder, _dependents, _whiles


def merge_loops(program):
    """Return a new Program in which a ``while`` that computes a leading part of another
    ``while``'s carries (same initial values, condition and updates) is read from that one."""
    p = start(program)
    for block in [p.block, *p.block.sub_blocks()]:
        while _merge_one(p, block):
            pass
    return p


def _merge_one(program, block):
    defs = _defs(block)
    loops = _whiles(block)
    for a in loops:
        for b in loops:
            if a is b or len(a.outputs) > len(b.outputs) or (len(a.outputs) == len(b.outputs) and
                                                             loops.index(a) < loops.index(b)):
                continue
            if _computes_prefix(block, defs, a, b):
                mapping = dict(zip(a.outputs, b.outputs[:len(a.outputs)]))
                block.ops = [op for op in block.ops if op is not a]
                rename_uses(block, mapping, program)
                _reorder(program, block)
                prune_vars(block)
                return True
    return False


def _computes_prefix(block, defs, a, b):
    """Whether ``while`` ``b``'s first carries are exactly ``a``'s carries (so ``a`` can go)."""
    n = len(a.outputs)
    canon = [_canon(defs, x) for x in a.inputs[:n]]
    if canon != [_canon(defs, x) for x in b.inputs[:n]]:
        return False
    if any(block.lookup(x).type != block.lookup(y).type for x, y in zip(a.outputs, b.outputs)):
        return False
    if _dependents(block, a.outputs) & set(b.inputs):
        return False  # b reads a's results: it cannot replace a
    numbering = _Numbering()

    def keys(op):
        nc = len(op.outputs)
        return [("carry", i) for i in range(nc)] + [("outer", _canon(defs, x)) for x in op.inputs[nc:]]

    for name in ("cond", "body"):
        ba, bb = a.blocks[name], b.blocks[name]
        va, vb = numbering.block(ba, keys(a)), numbering.block(bb, keys(b))
        outs = range(1) if name == "cond" else range(n)
        if any(va[ba.outputs[i]] != vb[bb.outputs[i]] for i in outs):
            return False
    return True
