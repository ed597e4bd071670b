"""Helpers shared by the passes: fresh names, constant values, use counts, renaming."""
import numpy as np

from ..ops import OPS
from ..ops.control_flow import drop_carries  # noqa: F401  (re-exported: the loop passes drop carries too)
from ..ops.registry import TRAITS

SMALL_CONSTANT = 16  # elements; folded results up to this size become `constant` ops


def start(program):
    """The copy a pass works on: a deep clone without annotations the pass may invalidate."""
    p = program.clone()
    p.annotations.pop("memory_plan", None)
    return p


def all_names(program):
    names = set(program.inputs) | set(program.params) | set(program.constants)
    for b in program.blocks:
        names.update(b.vars)
        names.update(b.inputs)
    return names


class Namer:
    """Fresh var names that clash with no name in the program."""

    def __init__(self, program, prefix="_"):
        self.taken = all_names(program)
        self.prefix = prefix
        self.n = 0

    def __call__(self):
        while True:
            self.n += 1
            name = f"{self.prefix}{self.n}"
            if name not in self.taken:
                self.taken.add(name)
                return name


def trait(op, name):
    """The op's trait ``name`` (see ``ops.registry.TRAITS``); an op type the registry does not
    know has every trait at its default."""
    opdef = OPS.get(op.type)
    return getattr(opdef, name) if opdef is not None else TRAITS[name]


def is_effect(op):
    """Ops passes must neither drop, merge nor fold: effects, structured ops containing them,
    and op types the registry does not know (with no blocks: nothing is known of them)."""
    opdef = OPS.get(op.type)
    if opdef is None:
        return any(is_effect(o) for b in op.blocks.values() for o in b.ops) or not op.blocks
    return opdef.effect or any(is_effect(o) for b in op.blocks.values() for o in b.ops)


def constant_op_value(op):
    """The array a `constant` op holds."""
    a = op.attrs
    return np.asarray(a["value"], dtype=a["dtype"]).reshape(tuple(a.get("shape", ())))


def constant_op(name, value):
    value = np.asarray(value)
    return ("constant", [], [name], {"value": value.tolist(), "dtype": value.dtype.name,
                                     "shape": list(value.shape)})


def use_counts(block, extra_outputs=()):
    """var name -> number of reads by ops of ``block`` plus block outputs (and ``extra_outputs``)."""
    n = {}
    for op in block.ops:
        for i in op.inputs:
            n[i] = n.get(i, 0) + 1
    for o in list(block.outputs) + list(extra_outputs):
        n[o] = n.get(o, 0) + 1
    return n


def rename_uses(block, mapping, program=None):
    """Replace reads of vars per ``mapping`` in ``block``'s ops and outputs (and the program's
    outputs when ``block`` is the global block). Sub-blocks read only their own inputs, so
    they need no renaming."""
    if not mapping:
        return

    def r(n):
        while n in mapping:
            n = mapping[n]
        return n

    for op in block.ops:
        op.inputs = [r(n) for n in op.inputs]
    block.outputs = [r(n) for n in block.outputs]
    if program is not None and block is program.block:
        program.outputs = [r(n) for n in program.outputs]


def prune_vars(block):
    """Drop vars no longer defined by an op or input of ``block``."""
    keep = set(block.inputs)
    for op in block.ops:
        keep.update(op.outputs)
    block.vars = {n: v for n, v in block.vars.items() if n in keep}


def needed_ops(block, roots):
    """``(ops, names)``: the ops of ``block`` that ``roots`` (names of it) or its effects are
    computed from, in order, and the names all of them read (``roots`` included)."""
    names = set(roots)
    ops = []
    for op in reversed(block.ops):
        if is_effect(op) or any(o in names for o in op.outputs):
            ops.append(op)
            names.update(op.inputs)
    ops.reverse()
    return ops, names
