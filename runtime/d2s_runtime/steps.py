"""A block prepared for the interpreter: its ops as steps over numbered slots.

``prepare_block`` decides once what every run of a block repeats: the op order
(``schedule.topo_order``), a slot per var, the kernel of every op (the bare ufunc where the op's
``ufunc`` trait says the kernel is exactly that ufunc), the literals made once, last-use
liveness (the slots to clear after each step) and, for the thread-pool interpreter, successor
lists and reader counts. ``apply_buffer_plan`` then lets element-wise steps write into the
dead buffers the ``memory_plan`` pass assigned them. The executor interprets the result.
"""
from collections import namedtuple

import numpy as np

from .codegen import direct_ufunc_ok, numpy_ufunc, read_only
from .ops import OPS
from .schedule import FeedView, topo_order

# Step kinds
KERNEL, MULTI, OUT, UFUNC1, UFUNC2, PRESET = range(6)
Step = namedtuple("Step", "kind fn ins out attrs frees")
Step.__doc__ = """One prepared op: ``kind`` (KERNEL, MULTI, OUT, UFUNC1, UFUNC2, PRESET), the callable, input
slots, output slot (a tuple of slots for MULTI), attrs and slots to clear afterwards."""


class Plan:
    """One block, prepared: steps in order, slots, liveness."""

    __slots__ = ("block", "input_slots", "output_slots", "n_slots", "steps", "order", "slot_of",
                 "succ", "n_preds", "step_inputs", "consumers", "pinned", "free_first", "presets", "pad")


def prepare_block(block, xp, structured_step, inputs=None, outputs=None):
    """``block`` as a :class:`Plan` on array namespace ``xp``; ``inputs``/``outputs``: the names
    bound before / read after it (default: the block's own). ``structured_step(rule, op)`` gives
    the step function of a structured op run by its ``"run"`` rule (called in op order)."""
    inputs = list(block.inputs if inputs is None else inputs)
    outputs = list(block.outputs if outputs is None else outputs)
    order, succ, n_preds = topo_order(FeedView(block, inputs))
    slot_of = {}

    def slot(name):
        s = slot_of.get(name)
        if s is None:
            s = slot_of[name] = len(slot_of)
        return s

    input_slots = [slot(n) for n in inputs]
    ops = block.ops
    for i in order:
        for o in ops[i].outputs:
            slot(o)
    for name in outputs:
        if name not in slot_of:
            raise ValueError(f"block output {name!r} is neither an input of the block nor defined in it")
    output_slots = [slot_of[n] for n in outputs]
    pinned = set(output_slots)

    # last-use liveness: the position (in `order`) after which each slot is dead
    last_use = {}
    for pos, i in enumerate(order):
        for name in ops[i].inputs:
            last_use[slot_of[name]] = pos
        for name in ops[i].outputs:
            last_use.setdefault(slot_of[name], pos)  # never read: dead right after definition
    frees = [[] for _ in order]
    for s, pos in last_use.items():
        if s not in pinned:
            frees[pos].append(s)
    free_first = tuple(s for s in input_slots if s not in last_use and s not in pinned)

    steps = []
    presets = []
    for pos, i in enumerate(order):
        op = ops[i]
        ins = tuple(slot_of[n] for n in op.inputs)
        outs = tuple(slot_of[n] for n in op.outputs)
        frees_here = tuple(frees[pos])
        if op.type == "constant" and not ins:
            # literals are made once, here; each run only binds them (kernels never write
            # into their inputs, and the buffer plan never donates a literal)
            literal = xp.asarray(OPS["constant"].kernel(xp, **op.attrs))
            presets.append((outs[0], read_only(literal)))
            steps.append(Step(PRESET, None, (), outs[0], {}, frees_here))
            continue
        opdef = OPS.get(op.type)
        if opdef is None or opdef.structured or op.blocks:
            rule = opdef.rule("run") if opdef is not None and opdef.structured else None
            if rule is None:
                raise ValueError(f"op {op.type!r} (outputs {op.outputs}) is neither a registered kernel nor a "
                                 "structured op with a run rule")
            steps.append(Step(MULTI, structured_step(rule, op), ins, outs, {}, frees_here))
            continue
        if opdef.n_out != 1 or len(outs) != 1:
            steps.append(Step(MULTI, opdef.kernel, ins, outs, kernel_attrs(op.attrs), frees_here))
        elif opdef.ufunc is not None and not op.attrs and len(ins) in (1, 2) and \
                hasattr(xp, opdef.ufunc) and \
                direct_ufunc_ok(op, lambda n: block.lookup(n).type):
            kind = UFUNC1 if len(ins) == 1 else UFUNC2
            fn = numpy_ufunc(opdef.ufunc) if xp is np else getattr(xp, opdef.ufunc)
            steps.append(Step(kind, fn, ins, outs[0], {}, frees_here))
        else:
            steps.append(Step(KERNEL, opdef.kernel, ins, outs[0], kernel_attrs(op.attrs), frees_here))
    plan = Plan()
    plan.block, plan.order, plan.slot_of = block, order, slot_of
    plan.input_slots, plan.output_slots, plan.n_slots = input_slots, output_slots, len(slot_of)
    plan.steps = steps
    plan.presets = presets
    # inputs take slots 0..k-1, so a sub-block's env is its input list padded with Nones
    dense = input_slots == list(range(len(input_slots)))
    plan.pad = [None] * (len(slot_of) - len(input_slots)) if dense else None
    plan.pinned, plan.free_first = pinned, free_first
    # for parallel scheduling: successor lists and reader counts, by position in `order`
    pos_of = {i: p for p, i in enumerate(order)}
    plan.succ = [[pos_of[j] for j in succ[i]] for i in order]
    plan.n_preds = [n_preds[i] for i in order]
    plan.step_inputs = [tuple(set(slot_of[n] for n in ops[i].inputs)) for i in order]
    consumers = [0] * len(slot_of)
    for ins in plan.step_inputs:
        for s in ins:
            consumers[s] += 1
    plan.consumers = consumers
    return plan


def apply_buffer_plan(plan, memory_plan):
    """Turn ``plan``'s element-wise steps whose output the plan assigns to a dead buffer into
    ``ufunc(..., out=buffer)`` steps (see passes/memory_plan.py for the plan's format).

    A donor's slot is then not cleared at its last use: the receiving step takes the array
    out of it, so the buffer is handed over instead of freed and allocated again."""
    reuse = memory_plan.get("reuse", {})
    steps = list(plan.steps)
    ops = plan.block.ops
    donors = set()
    for pos, i in enumerate(plan.order):
        op = ops[i]
        donor = reuse.get(op.outputs[0]) if len(op.outputs) == 1 else None
        opdef = OPS.get(op.type)
        if donor is None or opdef is None or not opdef.out_ok or donor not in plan.slot_of:
            continue
        ds = plan.slot_of[donor]
        if ds in plan.pinned or ds in plan.input_slots or ds in donors:
            continue
        t = plan.block.lookup(op.outputs[0]).type
        if None in t.shape:
            continue
        donors.add(ds)
        ufunc = numpy_ufunc(opdef.ufunc)
        steps[pos] = steps[pos]._replace(kind=OUT, fn=OutStep(ufunc, ds, t.shape, np.dtype(t.dtype)))
    plan.steps = [st._replace(frees=tuple(s for s in st.frees if s not in donors)) for st in steps]


class OutStep:
    """A ufunc step writing into the buffer left by a dead value (planned by memory_plan)."""

    __slots__ = ("ufunc", "donor", "shape", "dtype")

    def __init__(self, ufunc, donor_slot, shape, dtype):
        self.ufunc, self.donor, self.shape, self.dtype = ufunc, donor_slot, tuple(shape), dtype

    def __call__(self, env, args):
        buf = env[self.donor]
        env[self.donor] = None
        # the plan is static; check anyway, since writing into a wrong buffer would corrupt data
        if (type(buf) is not np.ndarray or buf.shape != self.shape or buf.dtype != self.dtype
                or not buf.flags.writeable or buf.base is not None):
            return np.asarray(self.ufunc(*args))
        return self.ufunc(*args, out=buf)



def kernel_attrs(attrs):
    """Attrs as the kernels take them (JSON lists back to tuples where kernels need tuples)."""
    return dict(attrs)



def constant_aliased_outputs(program):
    """Positions of ``program``'s outputs that may be (views of) its constants or literals:
    outputs of ``constant`` ops and program constants, what view and movement ops make of
    them, and (conservatively) every output of a control-flow op that may pass one through."""

    def scan(block, alias):
        for op in block.ops:
            if op.type == "constant":
                alias.update(op.outputs)
            elif op.blocks:
                inner = set(alias)
                if any(i in alias for i in op.inputs):
                    for sub in op.blocks.values():
                        inner.update(sub.inputs)
                hit = any(i in alias for i in op.inputs)
                for sub in op.blocks.values():
                    sub_alias = scan(sub, set(inner))
                    hit = hit or any(o in sub_alias for o in sub.outputs)
                if hit:
                    alias.update(op.outputs)
            elif op.inputs and op.inputs[0] in alias:
                opdef = OPS.get(op.type)
                if opdef is None or opdef.view or opdef.movement:
                    alias.update(op.outputs)
        return alias

    alias = scan(program.block, set(program.constants))
    return tuple(k for k, n in enumerate(program.outputs) if n in alias)

