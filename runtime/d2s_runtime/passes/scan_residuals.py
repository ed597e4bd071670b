"""A scan that recomputes, from another scan's saved ``ys``, what that scan computed reads it.

A scan ``g`` reading, as ``xs``, the ``ys`` of a scan ``f`` (the saved carries) recomputes from
them values that ``f``'s body computed at the same step from the same operands. The costly ones
(a matmul, a ``sigmoid``, a ``tanh``, ...; not views, reshapes or arithmetic operators, which
``g`` recomputes for about what reading a stacked value costs) become more ``ys`` of ``f``,
which ``g`` reads as more ``xs``; ``xs`` of ``g`` its body no longer reads are dropped. The same
ops on the same operands, computed once and earlier: results are unchanged.
"""
from ..ops import OPS
from ._util import Namer, is_effect, prune_vars, start
from ._loops import _canon, _dce_sub, _defs, _dependents, _Numbering, _reorder
from ._scans import _add_ys, _blocks, _counts, _input_keys, _scans, _var_of_number
from .loop_residuals import _cheap


def scan_residuals(program):
    """Return a new Program in which a scan that recomputes, from the ``ys`` of another scan,
    values that scan's body computed reads them as more of its ``ys`` (see the module
    docstring)."""
    p = start(program)
    namer = Namer(p, "sr")
    for block in _blocks(p):
        changed = False
        for g in _scans(block):
            f = _source_scan(block, g)
            if f is not None and _move_residuals(block, namer, f, g):
                changed = True
        if changed:
            _reorder(p, block)
            prune_vars(block)
    return p


def _source_scan(block, g):
    """A scan ``f`` (not ``g``, independent of it) some of whose ``ys`` ``g`` reads as ``xs``."""
    defs = _defs(block)
    nc, nx = _counts(g)
    producer = {o: op for op in _scans(block) for o in op.outputs}
    for x in g.inputs[nc:nc + nx]:
        c = _canon(defs, x)
        f = producer.get(c)
        if f is None or f is g or c not in f.outputs[_counts(f)[0]:]:
            continue
        if _dependents(block, g.outputs) & set(f.inputs):
            continue
        return f
    return None


def _move_residuals(block, namer, f, g):
    defs = _defs(block)
    fb, gb = f.blocks["body"], g.blocks["body"]
    ncf, _ = _counts(f)
    ncg, nxg = _counts(g)
    numbering = _Numbering()
    vf = numbering.block(fb, _input_keys(f, defs, "f"))
    key_of = {n: k for k, n in numbering.table.items()}
    f_ys = {f.outputs[ncf + j]: fb.outputs[ncf + j] for j in range(len(f.outputs) - ncf)}
    keys = _input_keys(g, defs, "g")
    for k, x in enumerate(g.inputs[ncg:ncg + nxg]):
        v = f_ys.get(_canon(defs, x))
        if v is not None:  # g's step t reads f's step t value of v
            keys[ncg + k] = key_of[vf[v]]
    vg = numbering.block(gb, keys)
    in_f = _var_of_number(fb, vf)
    moved = {}  # g body var -> f body var computing the same value
    for op in gb.ops:
        if op.type not in OPS or op.blocks or is_effect(op) or _cheap(op):
            continue
        for o in op.outputs:
            v = in_f.get(vg.get(o))
            if v is not None and gb.lookup(o).type == fb.lookup(v).type:
                moved[o] = v
    if not moved:
        return False
    renames = {}
    for o, v in moved.items():
        ys = _add_ys(block, namer, f, v)
        at = ncg + g.attrs["n_xs"]
        new_in = namer()
        gb.add_var(new_in, gb.lookup(o).type)
        g.inputs.insert(at, ys)
        gb.inputs.insert(at, new_in)
        g.attrs = {**g.attrs, "n_xs": g.attrs["n_xs"] + 1}
        renames[o] = new_in
    for op in gb.ops:
        op.inputs = [renames.get(i, i) for i in op.inputs]
    gb.outputs = [renames.get(i, i) for i in gb.outputs]
    _dce_sub(gb)
    _drop_unread_xs(g)
    return True


def _drop_unread_xs(scan):
    """Drop ``xs`` the body no longer reads (one stays where the scan has no ``length``: the
    ``xs`` give its number of steps)."""
    nc, nx = _counts(scan)
    body = scan.blocks["body"]
    reads = {i for op in body.ops for i in op.inputs} | set(body.outputs)
    unread = [k for k in range(nx) if body.inputs[nc + k] not in reads]
    if len(unread) == nx and scan.attrs.get("length") is None:
        unread = unread[1:]
    if not unread:
        return
    keep = [k for k in range(nx) if k not in unread]
    scan.inputs = scan.inputs[:nc] + [scan.inputs[nc + k] for k in keep] + scan.inputs[nc + nx:]
    body.inputs = body.inputs[:nc] + [body.inputs[nc + k] for k in keep] + body.inputs[nc + nx:]
    scan.attrs = {**scan.attrs, "n_xs": len(keep)}
    prune_vars(body)
