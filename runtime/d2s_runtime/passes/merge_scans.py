"""Reads a ``scan`` whose carries another ``scan`` computes on the same inputs from that one.

A scan whose carries are those of another scan on the same inputs (the gradient's copy of a
recurrent layer's forward, with more ``ys``) is dropped; its ``ys`` become more ``ys`` of the
other, computed by the other's own ops (loops compared by value numbering, ``stop_gradient``
seen through). The same ops on the same operands: results are unchanged.
"""
from ._util import Namer, prune_vars, rename_uses, start
from ._loops import _canon, _defs, _dependents, _Numbering, _reorder
from ._scans import _add_ys, _blocks, _counts, _input_keys, _scans, _var_of_number


def merge_scans(program):
    """Return a new Program in which a ``scan`` computing the same carries as another ``scan``
    on the same inputs is read from that one (its ``ys`` added to the other's)."""
    p = start(program)
    namer = Namer(p, "sm")
    for block in _blocks(p):
        while _merge_one(p, block, namer):
            pass
    return p


def _merge_one(program, block, namer):
    defs = _defs(block)
    scans = _scans(block)
    for a in scans:
        for b in scans:
            if a is b:
                continue
            ys_vars = _merge_map(block, defs, a, b)
            if ys_vars is None:
                continue
            nc, _ = _counts(a)
            mapping = dict(zip(a.outputs[:nc], b.outputs[:nc]))
            for y, v in zip(a.outputs[nc:], ys_vars):
                mapping[y] = _add_ys(block, namer, b, v)
            block.ops = [op for op in block.ops if op is not a]
            rename_uses(block, mapping, program)
            _reorder(program, block)
            prune_vars(block)
            return True
    return False


def _merge_map(block, defs, a, b):
    """For each ``ys`` of scan ``a``, the var of ``b``'s body holding the same value, when
    ``b`` computes ``a``'s carries from the same inputs (so ``a`` can go); else None."""
    if a.attrs != b.attrs:
        return None
    nc, nx = _counts(a)
    # the same carries and xs (captures may differ: body values are compared by value number)
    if [_canon(defs, x) for x in a.inputs[:nc + nx]] != [_canon(defs, x) for x in b.inputs[:nc + nx]]:
        return None
    if any(block.lookup(x).type != block.lookup(y).type for x, y in zip(a.outputs[:nc], b.outputs[:nc])):
        return None
    if _dependents(block, a.outputs) & set(b.inputs) or _dependents(block, b.outputs) & set(a.inputs):
        return None
    numbering = _Numbering()
    ba, bb = a.blocks["body"], b.blocks["body"]
    va = numbering.block(ba, _input_keys(a, defs, "same"))
    vb = numbering.block(bb, _input_keys(b, defs, "same"))
    if any(va[x] != vb[y] for x, y in zip(ba.outputs[:nc], bb.outputs[:nc])):
        return None
    in_b = _var_of_number(bb, vb)
    ys_vars = []
    for y in ba.outputs[nc:]:
        v = in_b.get(va[y])
        if v is None or bb.lookup(v).type != ba.lookup(y).type:
            return None
        ys_vars.append(v)
    return ys_vars
