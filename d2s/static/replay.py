"""Replay: an interpreter that runs the ops of an IR block again, op by op, on tensors (like
torch.fx's ``Interpreter``).

Each op goes back through ``dispatch.apply``, and a structured op (``cond``, ``while``,
``scan``, ...) through the ``replay_rule`` its family module declares (``d2s.static.registry``):
its builder, with its sub-blocks replayed as the branch, condition and body functions. On concrete values that computes the block eagerly; on
symbolic values inside a builder it appends the ops again, recording autograd nodes where
values require grad: static backward, the control-flow gradient rules, anomaly detection,
traced functions' guards and loaded programs use it.

(Not to be confused with ``d2s.convert.replay``, which replays the *decisions* of nested
converted ``if``s when an enclosing ``if`` traces its branches again.)
"""
import contextlib
import threading

from d2s_runtime.passes import is_effect, needed_ops

from .._state import STATE
from ..dispatch import apply
from .registry import REPLAY_RULES

__all__ = ["replay_block", "replay_op", "replaying_forward"]


def replay_block(block, values, ops=None):
    """Run the ops of IR ``block`` again through ``dispatch.apply`` (and the structured ops'
    replay rules) on ``values`` for its inputs; returns the tensors of its outputs.

    On symbolic values inside a builder this re-appends the ops (recording autograd nodes
    where values require grad): static backward and the control-flow gradient rules use it.
    ``ops``: only these (a ``slice_block``; the outputs they do not compute are None).
    """
    env = dict(zip(block.inputs, values))
    hook = STATE.anomaly  # detect_anomaly / check_numerics follow the replay op by op
    for op in block.ops if ops is None else ops:
        args = [env[n] for n in op.inputs]
        if hook is not None:
            hook.before_op(op)
        outs = replay_op(op, args)
        if hook is not None:
            hook.after_op(op, outs, args)
        env.update(zip(op.outputs, outs))
    return [env.get(n) for n in block.outputs]


def slice_block(block, positions):
    """``(ops, inputs)``: the ops of ``block`` that its outputs at ``positions`` need, in
    order, and the positions of the block inputs those read. A gradient rule replays only
    these, so what the gradient does not read (reach flags, counters feeding only themselves)
    is neither recomputed nor saved per iteration. A block with effects (random draws,
    prints, checks) is kept whole: its replay must draw and check as the forward did."""
    if any(is_effect(op) for op in block.ops):
        return list(block.ops), set(range(len(block.inputs)))
    ops, need = needed_ops(block, [block.outputs[p] for p in positions])
    return ops, {i for i, n in enumerate(block.inputs) if n in need}


_replay_prints = threading.local()  # .on: a replay that is the forward itself keeps its prints


@contextlib.contextmanager
def replaying_forward():
    """Replays inside keep ``print`` ops: the program being built is the forward that runs
    for the call (``d2s.static.partial_eval``), not a recomputation for gradients."""
    prev = getattr(_replay_prints, "on", False)
    _replay_prints.on = True
    try:
        yield
    finally:
        _replay_prints.on = prev


@contextlib.contextmanager
def _no_alias_links():
    """The control-flow builders see no maybe-alias links while a replay builds an op's blocks.
    Those links (``ProgramBuilder.link_maybe_alias``) let an in-place update of the user's code
    reach every name that may hold the same tensor; an IR block has no in-place updates (the
    builder made them out-of-place ops), so a replayed loop has no alias to track. Left
    visible, the links of the user's forward made each replayed loop over its values carry
    alias flags: a gradient replaying loops nested three deep built 72k ops before DCE."""
    b = STATE.builder
    if b is None:
        yield
        return
    saved = b.maybe_aliases, b.track_aliases
    # (nor do they make any: the cond ops a replayed loop body builds would link their outputs
    # to the carries, and each enclosing replayed loop would carry flags for those links)
    b.maybe_aliases, b.track_aliases = {}, False
    try:
        yield
    finally:
        b.maybe_aliases, b.track_aliases = saved


def replay_op(op, args):
    """The outputs (a list) of IR ``op`` applied again to ``args``."""
    rule = REPLAY_RULES.get(op.type)
    if rule is not None:
        with _no_alias_links():
            return rule(op, args)
    if op.type == "print" and not getattr(_replay_prints, "on", False):
        # replays build backward programs, which recompute the forward: what the forward
        # printed must not print again when the gradients are computed
        return []
    out = apply(op.type, *args, **op.attrs)
    return list(out) if isinstance(out, tuple) else [out]
