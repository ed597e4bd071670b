"""Merges ops that compute the same thing: same type, same inputs, same attrs (like fx's cse_pass).

``a = x + y; b = x + y; c = a * b`` becomes ``a = x + y; c = a * a``. Inputs of commutative
ops are compared as a set, so ``x + y`` and ``y + x`` merge; identical ``constant`` ops merge.
Ops with effects (random draws...), control-flow ops and ``unique`` ones (``stack_new``) are
never merged. Each block is
processed on its own: a sub-block's values are its own (its inputs are fresh names).
"""
import json

from ._util import is_effect, prune_vars, rename_uses, start, trait


def cse(program):
    """Return a new Program with common subexpressions merged."""
    p = start(program)
    for block in p.blocks:
        _cse_block(p, block)
    return p


def _key(op):
    inputs = sorted(op.inputs) if trait(op, "commutative") else list(op.inputs)
    try:
        attrs = json.dumps(op.attrs, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return (op.type, tuple(inputs), attrs)


def _cse_block(program, block):
    seen = {}
    mapping = {}
    kept = []
    for op in block.ops:
        if mapping:
            op.inputs = [mapping.get(n, n) for n in op.inputs]
        # ``unique`` ops are pure but not merged: two loop carries started from one merged
        # ``stack_new`` would be one buffer on the native backend, which grows stacks in place
        if op.blocks or is_effect(op) or trait(op, "unique"):
            kept.append(op)
            continue
        key = _key(op)
        prev = seen.get(key) if key is not None else None
        if prev is not None and len(prev.outputs) == len(op.outputs) and all(
                block.vars[a].type == block.vars[b].type for a, b in zip(prev.outputs, op.outputs)):
            for old, new in zip(op.outputs, prev.outputs):
                mapping[old] = new
            continue
        if key is not None:
            seen[key] = op
        kept.append(op)
    block.ops = kept
    rename_uses(block, mapping, program)
    prune_vars(block)
