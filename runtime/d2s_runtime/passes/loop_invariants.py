"""Makes what a ``while`` holds fixed (carries passed on unchanged, small constants) visible as fixed."""
from ..ir import Op
from ._util import SMALL_CONSTANT, rename_uses, trait, use_counts
from ._loops import _defs, _canon, _each_loop


def loop_invariants(program):
    """Return a new Program in which what a ``while`` holds fixed is seen as fixed inside it.

    * A carry that every iteration passes on unchanged (its update is the carry itself, seen
      through ``stop_gradient``, ``identity`` and casts to its own dtype) becomes a value the
      loop captures, and the loop's result for it is its initial value. A loop gradient carries
      the output gradient it is seeded with (often the constant 1 of ``loss.backward()``) and
      the accumulators that ``loop_matmul_sums`` emptied this way.
    * A small ``constant`` or ``full`` the loop captures is defined inside the loop's blocks
      too, so that the passes after this one see its value there: ``algebraic_simplify``
      then drops ``g * h`` when ``g`` is a broadcast 1.

    Values are unchanged: the loop computes the same ops on the same values."""
    def rewrite(p, block, namer, loop):
        return _fix_carries(p, block, loop) | _sink_constants(block, namer, loop)
    return _each_loop(program, "c", rewrite)


def _same_value_source(block, defs, name):
    """``name`` with the ops that pass a value on unchanged seen through (``_canon`` sees through
    ``stop_gradient`` only: loops compared by value numbering must match op for op)."""
    while True:
        d = defs.get(name)
        if d is None:
            return name
        op = d[0]
        # an alias (stop_gradient), a copy, or a cast to the dtype it has: the input's value
        same_type = op.inputs and block.lookup(op.inputs[0]).type == block.lookup(name).type
        if trait(op, "alias") or op.type == "identity" or (op.type == "cast" and same_type):
            name = op.inputs[0]
        else:
            return name


def _fix_carries(program, block, loop):
    """Make the carries every iteration passes on unchanged captures; whether there were any."""
    body = loop.blocks["body"]
    n = len(loop.outputs)
    defs = _defs(body)
    fixed = []
    for i in range(n):
        init, out = loop.inputs[i], loop.outputs[i]
        t_init, t_out = block.lookup(init).type, block.lookup(out).type
        if (_same_value_source(body, defs, body.outputs[i]) == body.inputs[i] and t_init.dtype == t_out.dtype
                and len(t_init.shape) == len(t_out.shape)):
            fixed.append(i)
    if not fixed:
        return False
    keep = [k for k in range(n) if k not in fixed]
    rename_uses(block, {loop.outputs[i]: loop.inputs[i] for i in fixed}, program)
    loop.inputs = [loop.inputs[k] for k in keep] + loop.inputs[n:] + [loop.inputs[i] for i in fixed]
    loop.outputs = [loop.outputs[k] for k in keep]
    for name, blk in loop.blocks.items():
        blk.inputs = [blk.inputs[k] for k in keep] + blk.inputs[n:] + [blk.inputs[i] for i in fixed]
        if name == "body":
            blk.outputs = [blk.outputs[k] for k in keep]
    return True


def _small_fixed_value(block, defs, name):
    """The op defining ``name`` in ``block`` (seen through ops that pass a value on) when it is
    a small constant or full, else None."""
    d = defs.get(_same_value_source(block, defs, name))
    if d is None:
        return None
    op = d[0]
    t = block.lookup(op.outputs[0]).type
    if op.type not in ("constant", "full") or op.inputs or None in t.shape:
        return None
    size = 1
    for s in t.shape:
        size *= s
    return op if size <= SMALL_CONSTANT else None


def _sink_constants(block, namer, loop):
    n = len(loop.outputs)
    defs = _defs(block)
    # (one pass per sub-block: a loop of many captures, as reach flags make, stays linear)
    read = {key: use_counts(blk) for key, blk in loop.blocks.items()}
    made = {key: ([], {}) for key in loop.blocks}
    for j in range(n, len(loop.inputs)):
        src = _small_fixed_value(block, defs, loop.inputs[j])
        if src is None:
            continue
        for key, blk in loop.blocks.items():
            v = blk.inputs[j]
            if v not in read[key]:
                continue
            c = namer()
            blk.add_var(c, blk.vars[v].type if v in blk.vars else block.lookup(loop.inputs[j]).type)
            made[key][0].append(Op(src.type, [], [c], dict(src.attrs)))
            made[key][1][v] = c
    for key, (ops, mapping) in made.items():
        blk = loop.blocks[key]
        blk.ops[:0] = ops[::-1]  # (the order inserting each at 0 gave)
        rename_uses(blk, mapping)
    return any(ops for ops, _ in made.values())
