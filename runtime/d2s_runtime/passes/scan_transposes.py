"""A matmul in a scan body reading a transposed view of a captured value reads a contiguous copy.

An RNN's ``h @ W_hh.T`` at every step: the transposed weight is copied once, contiguous,
before the scan (BLAS multiplies by a contiguous matrix faster). Only where every product
reading it gives the same bits on either layout (``_layout_free_reads``: not a batch-1 step's
matrix-vector product).
"""
from ..ir import Op
from ._util import Namer, prune_vars, start
from ._loops import _canon, _dce_sub, _defs, _layout_free_reads, _reorder
from ._scans import _blocks, _counts, _scans


def scan_transposes(program):
    """Return a new Program in which a matmul inside a scan body reading a transposed view
    of a value the scan captures reads a contiguous copy made before the scan."""
    p = start(program)
    namer = Namer(p, "st")
    for block in _blocks(p):
        changed = False
        for g in _scans(block):
            changed |= _contiguous_captures(block, namer, g)
        if changed:
            _reorder(p, block)
            prune_vars(block)
    return p


def _contiguous_captures(block, namer, g):
    nc, nx = _counts(g)
    body = g.blocks["body"]
    defs = _defs(block)
    bdefs = _defs(body)
    matmul_reads = {_canon(bdefs, i) for op in body.ops if op.type == "matmul" for i in op.inputs}
    at = block.ops.index(g)
    before = []

    def contiguous(src):
        copy = namer()
        block.add_var(copy, block.lookup(src).type)
        before.append(Op("identity", [src], [copy], {}))
        return copy

    # a captured transposed view (made before the scan)
    for k in range(nc + nx, len(body.inputs)):
        if body.inputs[k] not in matmul_reads or not _layout_free_reads(body, bdefs, body.inputs[k]):
            continue
        d = defs.get(_canon(defs, g.inputs[k]))
        if d is not None and d[0].type == "transpose" and None not in block.lookup(d[0].outputs[0]).type.shape:
            g.inputs[k] = contiguous(d[0].outputs[0])
    # a transposed view the body makes of a captured value, at every step
    captured = {body.inputs[k]: g.inputs[k] for k in range(nc + nx, len(body.inputs))}
    renames = {}
    for op in body.ops:
        if op.type != "transpose" or op.outputs[0] not in matmul_reads:
            continue
        src = _canon(bdefs, op.inputs[0])
        t = body.lookup(op.outputs[0]).type
        if src not in captured or None in t.shape or not _layout_free_reads(body, bdefs, op.outputs[0]):
            continue
        view = namer()
        block.add_var(view, t)
        before.append(Op("transpose", [captured[src]], [view], dict(op.attrs)))
        g.inputs.append(contiguous(view))
        new_in = namer()
        body.add_var(new_in, t)
        body.inputs.append(new_in)
        renames[op.outputs[0]] = new_in
    if not before:
        return False
    for op in body.ops:
        op.inputs = [renames.get(i, i) for i in op.inputs]
    body.outputs = [renames.get(i, i) for i in body.outputs]
    _dce_sub(body)
    block.ops[at:at] = before
    return True
