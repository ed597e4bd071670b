"""Makes a loop's transposed captured weights contiguous copies made once, before the loop."""
from ..ir import Op
from ._loops import _defs, _canon, _each_loop, _dce_sub, _layout_free_reads


def loop_transposes(program):
    """Return a new Program in which a ``while`` body's ``transpose`` of a value the loop
    captures (the same at every iteration), read by a ``matmul``, is made once before the loop,
    as a contiguous copy the body captures instead. The transposed weight of a matmul's input
    gradient (``g @ W.T``) is such a transpose; BLAS multiplies by a contiguous matrix about
    twice as fast as by a transposed view of one. Only for products whose bits do not depend on
    the layout (``_layout_free_reads``)."""
    return _each_loop(program, "t", lambda p, block, namer, loop: _hoist_transposes(block, namer, loop))


def _hoist_transposes(block, namer, loop):
    body = loop.blocks["body"]
    n = len(loop.outputs)
    bdefs = _defs(body)
    captured = {body.inputs[i]: loop.inputs[i] for i in range(n, len(body.inputs))}
    matmul_reads = {_canon(bdefs, i) for op in body.ops if op.type == "matmul" for i in op.inputs}
    at = block.ops.index(loop)
    renames, new_outer = {}, []
    for op in body.ops:
        if op.type != "transpose" or op.outputs[0] not in matmul_reads:
            continue
        src = _canon(bdefs, op.inputs[0])
        if src not in captured or None in body.lookup(src).type.shape \
                or not _layout_free_reads(body, bdefs, op.outputs[0]):
            continue
        t = body.lookup(op.outputs[0]).type
        tv, cv = namer(), namer()
        block.add_var(tv, t)
        block.add_var(cv, t)
        new_outer += [Op("transpose", [captured[src]], [tv], dict(op.attrs)), Op("identity", [tv], [cv], {})]
        loop.inputs.append(cv)
        for blk in loop.blocks.values():
            v = namer()
            blk.add_var(v, t)
            blk.inputs.append(v)
            if blk is body:
                renames[op.outputs[0]] = v
    if not renames:
        return False
    for op in body.ops:
        op.inputs = [renames.get(i, i) for i in op.inputs]
    body.outputs = [renames.get(i, i) for i in body.outputs]
    block.ops[at:at] = new_outer
    _dce_sub(body)
    return True
