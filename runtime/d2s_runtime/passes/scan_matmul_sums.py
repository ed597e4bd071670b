"""Turns a scan's sum of thin weight-gradient products into one product after the scan.

A scan carry updated as ``acc + X.T @ Y`` (a weight gradient summed over the steps) is carried
through unchanged, and after the scan ``Xs.T @ Ys`` adds all the steps' terms in ONE product as
deep as all the steps' rows (``Xs``/``Ys``: every step's ``X`` and ``Y`` one under the other: an
``xs`` or ``ys`` of the scan, reshaped). The sum is the same up to rounding (the terms are added
in another order, as a BLAS may do inside one product).
"""
from ..ir import Op
from ..ops import OPS
from ._util import Namer, prune_vars, rename_uses, start
from ._loops import _canon, _dce_sub, _defs, _reorder
from ._scans import _add_ys, _blocks, _counts, _scans
from .loop_matmul_sums import _matmul_sum, _real_uses


def scan_matmul_sums(program):
    """Return a new Program in which a scan carry summing ``X.T @ Y`` over the steps is one
    product after the scan (see the module docstring)."""
    p = start(program)
    namer = Namer(p, "ss")
    for block in _blocks(p):
        changed = False
        for g in _scans(block):
            changed |= _hoist_sums(p, block, namer, g)
        if changed:
            _reorder(p, block)
            prune_vars(block)
    return p


def _transposed_sum(body, bdefs, uses, pos):
    """``(Y, X)`` when carry ``pos`` is updated as ``carry + (X.T @ Y).T`` (= ``Y.T @ X``: the
    gradient of a weight the step reads transposed, ``h @ W.T``), else None."""
    acc_in = body.inputs[pos]
    upd = bdefs.get(_canon(bdefs, body.outputs[pos]))
    if upd is None or upd[0].type != "add" or len(upd[0].inputs) != 2 or uses.get(acc_in, 0) != 1:
        return None
    others = [i for i in upd[0].inputs if _canon(bdefs, i) != acc_in]
    if len(others) != 1 or _real_uses(body, upd[0].outputs[0]) != 1:
        return None
    tr = bdefs.get(_canon(bdefs, others[0]))
    if tr is None or tr[0].type != "transpose" or tr[0].attrs.get("perm") not in (None, [1, 0], (1, 0)) \
            or _real_uses(body, tr[0].outputs[0]) != 1:
        return None
    mm = bdefs.get(_canon(bdefs, tr[0].inputs[0]))
    if mm is None or mm[0].type != "matmul" or _real_uses(body, mm[0].outputs[0]) != 1:
        return None
    tx = bdefs.get(_canon(bdefs, mm[0].inputs[0]))
    if tx is None or tx[0].type != "transpose" or tx[0].attrs.get("perm") not in (None, [1, 0], (1, 0)):
        return None
    x, y = tx[0].inputs[0], mm[0].inputs[1]
    tx_, ty_, tacc = body.lookup(x).type, body.lookup(y).type, body.lookup(acc_in).type
    if len(tx_.shape) != 2 or len(ty_.shape) != 2 or None in tx_.shape[1:] or None in ty_.shape[1:] \
            or tx_.dtype != ty_.dtype or tacc.dtype != tx_.dtype or None in tacc.shape \
            or tuple(tacc.shape) != (ty_.shape[1], tx_.shape[1]):
        return None
    return y, x


def _hoist_sums(program, block, namer, g):
    nc, nx = _counts(g)
    body = g.blocks["body"]
    bdefs = _defs(body)
    uses = {}
    for op in body.ops:
        for i in op.inputs:
            uses[i] = uses.get(i, 0) + 1
    for o in body.outputs:
        uses[o] = uses.get(o, 0) + 1
    captured = set(body.inputs[nc + nx:])
    found = []
    for pos in range(nc):
        if body.lookup(body.inputs[pos]).type.dtype not in ("float32", "float64"):
            continue
        xy = _matmul_sum(body, bdefs, uses, pos) or _transposed_sum(body, bdefs, uses, pos)
        if xy is not None and not captured & set(xy) and not set(xy) & set(body.inputs[:nc]):
            found.append((pos, *xy))
    if not found:
        return False
    defs = _defs(block)
    after, renames = [], {}

    def emit(optype, inputs, attrs):
        t = OPS[optype].infer(*[block.lookup(i).type for i in inputs], **attrs)
        v = namer()
        block.add_var(v, t)
        after.append(Op(optype, inputs, [v], attrs))
        return v

    def stacked(value):
        if value in body.inputs[nc:nc + nx]:
            return g.inputs[body.inputs.index(value)]
        return _add_ys(block, namer, g, value)

    for pos, x, y in found:
        tx, ty = body.lookup(x).type, body.lookup(y).type
        rx = emit("reshape", [stacked(x)], {"shape": [-1, tx.shape[1]]})
        ry = emit("reshape", [stacked(y)], {"shape": [-1, ty.shape[1]]})
        total = emit("matmul", [emit("transpose", [rx], {"perm": [1, 0]}), ry], {})
        body.outputs[pos] = body.inputs[pos]  # the scan carries the initial value through
        acc_out = g.outputs[pos]
        init = defs.get(_canon(defs, g.inputs[pos]))
        if init is not None and init[0].type in ("full", "full_like") and init[0].attrs.get("value") == 0 \
                and block.lookup(init[0].outputs[0]).type == block.lookup(total).type:
            renames[acc_out] = total  # nothing to add to (DCE drops the carry)
        else:
            renames[acc_out] = emit("add", [acc_out, total], {})
    rename_uses(block, renames, program)
    at = block.ops.index(g) + 1
    block.ops[at:at] = after
    _dce_sub(body)
    return True
