"""Removes ops whose outputs nothing reads (like JAX's ``dce_jaxpr``), keeping ops with effects.

Liveness runs backwards from the block's outputs (the program's outputs for the global block).
Structured ops are kept when an output is live or their sub-blocks hold an effect; their
``"narrow"`` rule (declared beside each, ``ops/control_flow.py``) then drops the outputs nothing
reads, with what computes them in their sub-blocks: a ``cond``'s from both branches; a loop's
carries that neither a live output, the loop's condition, an effect nor another such carry
needs, and a scan's ``ys``. Gradient programs carry much that nothing reads: a loop body
replayed for its gradient brings every carry of the loops nested in it, bool flags and counters
included. Sub-blocks are then cleaned with their remaining outputs as roots. Program constants nothing
reads any more are dropped; program inputs and params stay (they are the calling convention).
"""
from ..ops import OPS
from ._util import is_effect, needed_ops, prune_vars, start


def dce(program):
    """Return a new Program without dead ops."""
    p = start(program)
    _dce_block(p.block, set(p.outputs) | set(p.block.outputs))
    live_in_global = {n for op in p.block.ops for n in op.inputs} | set(p.outputs) | set(p.block.outputs)
    for name in [n for n in p.constants if n not in live_in_global]:
        del p.constants[name]
        p.block.inputs = [n for n in p.block.inputs if n != name]
    prune_vars(p.block)
    return p


def _dce_block(block, roots):
    live = set(roots)
    kept = []
    for op in reversed(block.ops):
        if is_effect(op) or any(o in live for o in op.outputs):
            opdef = OPS.get(op.type)
            narrow = opdef.rule("narrow") if opdef is not None else None
            if narrow is not None:
                narrow(op, live, needed_ops)
            kept.append(op)
            live.update(op.inputs)
            for sub in op.blocks.values():
                _dce_block(sub, set(sub.outputs))
    kept.reverse()
    block.ops = kept
    prune_vars(block)
