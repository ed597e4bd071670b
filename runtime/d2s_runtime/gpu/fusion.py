"""Which ops of a captured block run fused: runs of element-wise ops (and reductions reading
them) become one group each, lowered by the CUDA C emitter (``cuda_lower.lower_group``) to a
few kernels, so a graph holds a node per kernel instead of a node per op.

A group is a run of consecutive ops in the block's schedule (so nothing outside it runs in
between: merging them never changes what another op reads), each with a ``"cuda"`` lowering,
inputs, static shapes and dtypes the emitter writes, and no effects; its outputs are the
values it defines that anything after it reads (an op outside the group, a sub-block, the
block's outputs). A group the emitter cannot lower (a 0-d chain, an op whose hook refuses
these attrs) runs op by op, as an unfused capture would.
"""
from ..ir import Block, Program, Var
from ..ops import OPS
from .cuda_lower import C_TYPE, lower_group

# fewer ops than this are not worth a kernel of their own
MIN_GROUP = 2


class Group:
    """A fused group: its ops (schedule order), input and output names, and the
    :class:`~d2s_runtime.gpu.cuda_lower.FusedPlan` of its kernels."""

    __slots__ = ("ops", "members", "inputs", "outputs", "plan")

    def __init__(self, ops, members, inputs, outputs, plan):
        self.ops, self.members, self.inputs, self.outputs, self.plan = ops, members, inputs, outputs, plan


def _static(t):
    return t is not None and None not in tuple(t.shape) and str(t.dtype) in C_TYPE


def _candidate(block, op):
    opdef = OPS.get(op.type)
    if opdef is None or opdef.structured or opdef.effect or op.blocks or not op.inputs:
        return False
    if opdef.lowering("cuda") is None:
        return False
    try:
        types = [block.lookup(n).type for n in list(op.inputs) + list(op.outputs)]
    except KeyError:
        return False
    if not all(_static(t) for t in types):
        return False
    # a 0-d result is a scalar program's (the emitter lowers arrays), unless it reduces one
    return any(len(block.lookup(n).type.shape) for n in op.outputs) or op.type.startswith("reduce_")


def _reads(block):
    """Every name read in ``block``'s sub-blocks (their ops may read outer values by name)."""
    out = set()
    for op in block.ops:
        for b in op.blocks.values():
            for sub in b.ops:
                out.update(sub.inputs)
            out.update(b.outputs)
            out |= _reads(b)
    return out


def plan_groups(block, order):
    """``{index in block.ops of a group's first op: Group}`` for ``block`` scheduled as
    ``order`` (indices into ``block.ops``)."""
    runs, run = [], []
    for i in order:
        if _candidate(block, block.ops[i]):
            run.append(i)
        else:
            if len(run) >= MIN_GROUP:
                runs.append(run)
            run = []
    if len(run) >= MIN_GROUP:
        runs.append(run)
    if not runs:
        return {}
    later_reads = _reads(block) | set(block.outputs)
    pos = {i: k for k, i in enumerate(order)}
    groups = {}
    for run in runs:
        members = set(run)
        last = pos[run[-1]]
        after = set(later_reads)
        for i in order[last + 1:]:
            after.update(block.ops[i].inputs)
        defined, inputs = [], []
        for i in run:
            op = block.ops[i]
            for n in op.inputs:
                if n not in defined and n not in inputs:
                    inputs.append(n)
            defined.extend(op.outputs)
        outputs = [n for n in defined if n in after]
        if not outputs:
            continue
        ops = [block.ops[i] for i in run]
        plan = _lower(block, ops, inputs, outputs)
        if plan is not None:
            groups[run[0]] = Group(ops, members, inputs, outputs, plan)
    return groups


def _lower(block, ops, inputs, outputs):
    prog = Program()
    b = prog.block = Block()
    for op in ops:
        for n in list(op.inputs) + list(op.outputs):
            if n not in b.vars:
                b.vars[n] = Var(n, block.lookup(n).type)
    b.inputs, b.outputs, b.ops = list(inputs), list(outputs), [op.copy() for op in ops]
    prog.inputs, prog.outputs = list(inputs), list(outputs)
    try:
        plan = lower_group(prog)
    except Exception:  # noqa: BLE001 - NativeUnsupported, or a hook refusing: the ops run one by one
        return None
    if any(kind != "a" for kind, _ in plan.outputs) or not plan.kernels:
        return None  # (an output folded to a literal, or nothing to launch: no gain)
    return plan
