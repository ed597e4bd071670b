"""Turns a loop's sum of thin weight-gradient products into one product after the loop."""
from ..ir import Op
from ..ops import OPS
from ._util import rename_uses
from ._loops import _add_stack_carry, _canon, _dce_sub, _defs, _each_loop, _empty_stack, _stack_vars


def loop_matmul_sums(program):
    """Return a new Program in which a ``while`` that accumulates ``acc = acc + X.T @ Y`` (the
    weight gradient of a matmul, summed over a backward loop's iterations) stacks ``X`` and
    ``Y`` instead, and after the loop adds ``Xs.T @ Ys`` once, ``Xs`` and ``Ys`` being every
    iteration's ``X`` and ``Y`` one under the other. The loop's many thin products (as deep
    as a batch) become one product as deep as all the iterations' rows, which BLAS computes
    several times faster. The sum is the same up to rounding (the terms are added in another
    order, as any BLAS may do inside one product)."""
    return _each_loop(program, "m", _hoist_sums)


def _matmul_sum(body, bdefs, uses, pos):
    """``(X, Y)`` (body values) when carry ``pos`` is updated as ``carry + X.T @ Y`` (2-d, the
    product read by nothing else), else None."""
    acc_in = body.inputs[pos]
    upd = bdefs.get(_canon(bdefs, body.outputs[pos]))
    if upd is None or upd[0].type != "add" or uses.get(acc_in, 0) != 1:
        return None
    add = upd[0]
    others = [i for i in add.inputs if _canon(bdefs, i) != acc_in]
    if len(others) != 1 or len(add.inputs) != 2 or _real_uses(body, add.outputs[0]) != 1:
        return None
    mm = bdefs.get(_canon(bdefs, others[0]))
    if mm is None or mm[0].type != "matmul":
        return None
    mm = mm[0]
    if _real_uses(body, mm.outputs[0]) != 1:
        return None
    tr = bdefs.get(_canon(bdefs, mm.inputs[0]))
    if tr is None or tr[0].type != "transpose" or tr[0].attrs.get("perm") not in ([1, 0], (1, 0)):
        return None
    x, y = tr[0].inputs[0], mm.inputs[1]
    tx, ty, tacc = body.lookup(x).type, body.lookup(y).type, body.lookup(acc_in).type
    tm = body.lookup(mm.outputs[0]).type
    if len(tx.shape) != 2 or len(ty.shape) != 2 or tx.shape[1] is None or ty.shape[1] is None \
            or tx.dtype != ty.dtype or tm != tacc or tacc.dtype != tx.dtype or None in tacc.shape:
        return None
    return x, y


def _real_uses(block, name):
    """Reads of ``name`` (or of ``stop_gradient`` chains over it) by ``block``'s other ops and
    outputs."""
    names = {name} | _sg_aliases(block, name)
    return (sum(i in names for op in block.ops if op.type != "stop_gradient" for i in op.inputs)
            + sum(o in names for o in block.outputs))


def _sg_aliases(block, name):
    """Vars of ``block`` that are ``stop_gradient`` chains over ``name``."""
    out, frontier = set(), {name}
    for op in block.ops:
        if op.type == "stop_gradient" and op.inputs[0] in frontier:
            out.add(op.outputs[0])
            frontier.add(op.outputs[0])
    return out


def _hoist_sums(program, block, namer, loop):
    body, cond = loop.blocks["body"], loop.blocks["cond"]
    n = len(loop.outputs)
    bdefs = _defs(body)
    uses = {}
    for op in body.ops:
        for i in op.inputs:
            uses[i] = uses.get(i, 0) + 1
    for o in body.outputs:
        uses[o] = uses.get(o, 0) + 1
    cond_reads = {i for op in cond.ops for i in op.inputs} | set(cond.outputs)
    found = []
    for pos in range(n):
        if body.inputs[pos] in cond_reads or body.lookup(body.inputs[pos]).type.dtype not in ("float32", "float64"):
            continue
        xy = _matmul_sum(body, bdefs, uses, pos)
        if xy is not None:
            found.append((pos, *xy))
    if not found:
        return False
    stacks = {}  # body value -> (position of its stack carry pair) : each value stacked once

    def stack_of(value):
        if value in stacks:
            return stacks[value]
        t = body.lookup(value).type
        ops, init = _empty_stack(block, namer, t)
        at = block.ops.index(loop)
        block.ops[at:at] = ops
        (ob, _), (vb, vs) = _add_stack_carry(block, namer, loop, init, t)
        nb, ns = _stack_vars(body, namer, t)
        body.ops.append(Op("stack_push", [vb, vs, value], [nb, ns], {}))
        body.outputs.extend([nb, ns])
        stacks[value] = (ob, t)
        return stacks[value]

    after = []
    renames = {}
    for pos, x, y in found:
        (bx, tx), (by, ty) = stack_of(x), stack_of(y)
        acc_out = loop.outputs[pos]
        body.outputs[pos] = body.inputs[pos]  # the loop carries the initial value through

        def emit(optype, inputs, attrs):
            t = OPS[optype].infer(*[block.lookup(i).type for i in inputs], **attrs)
            v = namer()
            block.add_var(v, t)
            after.append(Op(optype, inputs, [v], attrs))
            return v

        rx = emit("stack_rows", [bx], {"width": tx.shape[1]})
        ry = emit("stack_rows", [by], {"width": ty.shape[1]})
        total = emit("matmul", [emit("transpose", [rx], {"perm": [1, 0]}), ry], {})
        renames[acc_out] = emit("add", [acc_out, total], {})
    rename_uses(block, renames, program)
    at = block.ops.index(loop) + 1
    block.ops[at:at] = after
    _dce_sub(body)
    return True
