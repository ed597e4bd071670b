"""Scan passes: a ``scan`` gradient's forward computed once, its weight gradients as one product.

The gradient of a ``scan`` (``d2s/static/control_flow_grad.py``) runs the scan again, also
emitting each step's incoming carries as ``ys``, then a reverse scan over those saved values
that replays each step to get what its vector-Jacobian product reads, and adds each step's
weight gradient to a carry. A program training a recurrent layer (``nn.LSTM``: one scan per
layer and direction) so runs each step's forward three times, and its weight gradient as one
thin product per step. These passes, the ``scan`` counterparts of ``loops.py``'s ``while``
passes, remove that:

* ``merge_scans``: a scan whose carries are those of another scan on the same inputs (the
  gradient's copy, with more ``ys``) is dropped; its ``ys`` become more ``ys`` of the other,
  computed by the other's own ops (loops compared by value numbering, ``stop_gradient`` seen
  through).
* ``scan_residuals``: a scan ``g`` reading, as ``xs``, the ``ys`` of a scan ``f`` (the saved
  carries) recomputes from them values that ``f``'s body computed at the same step from the same
  operands. The costly ones (a matmul, a ``sigmoid``, a ``tanh``, ...; not views, reshapes or
  arithmetic operators, which ``g`` recomputes for about what reading a stacked value costs)
  become more ``ys`` of ``f``, which ``g`` reads as more ``xs``; ``xs`` of ``g`` its body no
  longer reads are dropped.
* ``scan_matmul_sums``: a scan carry updated as ``acc + X.T @ Y`` (a weight gradient summed
  over the steps) is carried through unchanged, and after the scan ``Xs.T @ Ys`` adds all the
  steps' terms in ONE product as deep as all the steps' rows (``Xs``/``Ys``: every step's ``X``
  and ``Y`` one under the other: an ``xs`` or ``ys`` of the scan, reshaped). The sum is the same
  up to rounding (the terms are added in another order, as a BLAS may do inside one product).
* ``scan_transposes``: a matmul in a scan body reading a transposed view of a value the scan
  captures (an RNN's ``h @ W_hh.T``) reads a contiguous copy made once before the scan: BLAS
  multiplies by a contiguous matrix faster.

The first two and the last keep results exactly: the same ops on the same operands, computed
once and earlier. Scans holding effects (random draws, prints) are left alone.
"""
from ..ir import Op
from ..ops import OPS, TensorType
from ._util import Namer, is_effect, prune_vars, rename_uses, start
from .loops import _canon, _cheap, _dce_sub, _defs, _dependents, _matmul_sum, _Numbering, _real_uses, _reorder


def _scans(block):
    return [op for op in block.ops if op.type == "scan" and not is_effect(op)]


def _counts(op):
    return op.attrs["n_carry"], op.attrs["n_xs"]


def _blocks(program):
    return [program.block, *program.block.sub_blocks()]


def _var_of_number(block, vn):
    """value number -> the first var of ``block`` (its inputs, then its ops' outputs) holding it."""
    out = {}
    for name in list(block.inputs) + [o for op in block.ops for o in op.outputs]:
        if name in vn:
            out.setdefault(vn[name], name)
    return out


def _input_keys(op, defs, tag):
    """Numbering keys of scan ``op``'s body inputs: its carries its own (``tag``), its ``xs``
    and captures the outer values they slice or read."""
    nc, nx = _counts(op)
    return ([(tag, "carry", i) for i in range(nc)]
            + [("xs", _canon(defs, x)) for x in op.inputs[nc:nc + nx]]
            + [("outer", _canon(defs, x)) for x in op.inputs[nc + nx:]])


def _add_ys(block, namer, scan, body_var):
    """The outer var holding ``body_var`` of ``scan``'s body stacked over the steps: an existing
    ``ys`` output, or a new one."""
    nc, _ = _counts(scan)
    body = scan.blocks["body"]
    for j, o in enumerate(body.outputs[nc:]):
        if o == body_var:
            return scan.outputs[nc + j]
    t = body.lookup(body_var).type
    out = namer()
    block.add_var(out, TensorType((_steps_dim(block, scan),) + tuple(t.shape), t.dtype))
    body.outputs.append(body_var)
    scan.outputs.append(out)
    return out


def _steps_dim(block, scan):
    """The scan's number of steps where its types say it (else None: unknown)."""
    nc, nx = _counts(scan)
    for x in scan.inputs[nc:nc + nx]:
        return block.lookup(x).type.shape[0]
    return scan.attrs.get("length")


# ------------------------------------------------------------------ merge_scans
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


# ------------------------------------------------------------------ scan_residuals
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


# ------------------------------------------------------------------ scan_matmul_sums
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


# ------------------------------------------------------------------ scan_transposes
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
        if body.inputs[k] not in matmul_reads:
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
        if src not in captured or None in t.shape:
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
