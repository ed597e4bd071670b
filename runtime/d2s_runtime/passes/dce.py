"""Removes ops whose outputs nothing reads (like JAX's ``dce_jaxpr``), keeping ops with effects.

Liveness runs backwards from the block's outputs (the program's outputs for the global block).
Control-flow ops are kept when an output is live or their sub-blocks hold an effect. Their
outputs nothing reads are dropped, with what computes them in their sub-blocks: a ``cond``'s
from both branches; a ``while``'s or ``scan``'s loop carries that neither a live output, the
loop's condition, an effect nor another such carry needs (found as a fixed point: carry ``i``
is needed when a needed carry's new value, or a live ``y`` of a scan, is computed from it), and
a scan's ``ys``. Gradient programs carry much that nothing reads: a loop body replayed for its
gradient brings every carry of the loops nested in it, bool flags and counters included.
Sub-blocks are then cleaned with their remaining outputs as roots. Program constants nothing
reads any more are dropped; program inputs and params stay (they are the calling convention).
"""
from ._util import drop_carries, is_effect, needed_ops, prune_vars, start


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
            narrow = _NARROW.get(op.type)
            if narrow is not None:
                narrow(op, live)
            kept.append(op)
            live.update(op.inputs)
            for sub in op.blocks.values():
                _dce_block(sub, set(sub.outputs))
    kept.reverse()
    block.ops = kept
    prune_vars(block)


def _narrow_cond(op, live):
    keep = [i for i, o in enumerate(op.outputs) if o in live]
    if not keep or len(keep) == len(op.outputs):  # (a cond kept only for its effects stays whole)
        return
    op.outputs = [op.outputs[i] for i in keep]
    for blk in op.blocks.values():
        blk.outputs = [blk.outputs[i] for i in keep]


def _needed_carries(n, live_outputs, fixed_roots, body, new_values):
    """The carry positions (of ``n``) a loop needs: those whose result is live, and, until
    nothing changes, those a needed carry's new value (``new_values[i]``, a name of ``body``)
    or ``fixed_roots`` (names of ``body``) are computed from."""
    needed = set(live_outputs)
    while True:
        names = needed_ops(body, list(fixed_roots) + [new_values[i] for i in needed])[1]
        more = {i for i in range(n) if body.inputs[i] in names} - needed
        if not more:
            return needed
        needed |= more


def _narrow_while(op, live):
    n = len(op.outputs)
    cond_blk, body = op.blocks["cond"], op.blocks["body"]
    read_by_cond = needed_ops(cond_blk, cond_blk.outputs)[1]
    first = {i for i in range(n) if op.outputs[i] in live or cond_blk.inputs[i] in read_by_cond}
    needed = _needed_carries(n, first, [], body, body.outputs)
    if not needed or len(needed) == n:
        return
    drop_carries(op, [i for i in range(n) if i not in needed], n)


def _narrow_scan(op, live):
    nc, nx = op.attrs["n_carry"], op.attrs["n_xs"]
    body = op.blocks["body"]
    ny = len(op.outputs) - nc
    live_ys = [j for j in range(ny) if op.outputs[nc + j] in live]
    needed = _needed_carries(nc, {i for i in range(nc) if op.outputs[i] in live},
                             [body.outputs[nc + j] for j in live_ys], body, body.outputs)
    dead_ys = [nc + j for j in range(ny) if j not in live_ys]
    dead_carries = [i for i in range(nc) if i not in needed]
    if not needed and not live_ys:  # (a scan kept only for its effects stays whole)
        return
    if dead_ys:
        op.outputs = [o for k, o in enumerate(op.outputs) if k not in dead_ys]
        body.outputs = [o for k, o in enumerate(body.outputs) if k not in dead_ys]
    if dead_carries:
        drop_carries(op, dead_carries, nc)
        op.attrs = {**op.attrs, "n_carry": nc - len(dead_carries)}


_NARROW = {"cond": _narrow_cond, "while": _narrow_while, "scan": _narrow_scan}
