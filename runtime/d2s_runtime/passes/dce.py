"""Removes ops whose outputs nothing reads (like JAX's ``dce_jaxpr``), keeping ops with effects.

Liveness runs backwards from the block's outputs (the program's outputs for the global block).
Control-flow ops are kept when an output is live or their sub-blocks hold an effect; their
sub-blocks are cleaned with their own outputs as roots (an op's interface never changes).
Program constants nothing reads any more are dropped; program inputs and params stay (they
are the calling convention).
"""
from ._util import is_effect, prune_vars, start


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
            kept.append(op)
            live.update(op.inputs)
            for sub in op.blocks.values():
                _dce_block(sub, set(sub.outputs))
    kept.reverse()
    block.ops = kept
    prune_vars(block)
