"""Moves what a backward ``while`` recomputes from popped stacks into the forward ``while``.

A backward ``while`` that pops, once per iteration, stacks that a forward ``while`` pushed once
per iteration (the pops mirror the pushes: iteration ``k`` of the backward loop pops what
iteration ``N - k + 1`` of the forward pushed) recomputes from the popped values what the
forward loop computed from the pushed ones (see ``merge_loops`` for where such loop pairs come
from). Such a computation (pure ops reading only popped values, values both loops capture, and
constants) moves into the forward loop: there it is the same as the body's own ops, which it
reuses, and its result is pushed onto a new stack, popped by the backward loop in lockstep
with the others. Only results of costly ops (a matmul, a ``tanh``, ...) are stacked: views and
reshapes (``transpose``, ``getitem``, ``stop_gradient``, ...) and element-wise arithmetic
operators over available values are recomputed, as they cost about a stack's copy or less.
Stacks whose popped values the backward loop then no longer reads are removed from both loops
(``dce`` removes the dead ops left behind).

The moved ops compute the same values from the same operands, only once and earlier: results
are unchanged. Loops holding effects (random draws, prints, asserts) are left alone.
"""
from ..ir import Op
from ._util import Namer, drop_carries, is_effect, prune_vars, start, trait
from ._loops import (_Numbering, _add_stack_carry, _attrs_key, _canon, _dce_sub, _defs, _dependents, _empty_stack,
                     _is_while, _pure, _reorder, _stack_vars, _whiles)


def loop_residuals(program):
    """Return a new Program in which a backward ``while`` reads, from new stacks, the values it
    recomputed from the stacks a forward ``while`` pushed (see the module docstring)."""
    p = start(program)
    namer = Namer(p, "r")
    for block in [p.block, *p.block.sub_blocks()]:
        done = set()
        while True:
            pair = _find_pair(block, done)
            if pair is None:
                break
            done.add(id(pair[1]))
            if _move_residuals(p, block, namer, *pair):
                _reorder(p, block)
            _drop_dead_stacks(block, *pair)
        prune_vars(block)
    return p


def _find_pair(block, done):
    """(forward while, backward while, anchors) for a backward loop not yet handled: anchors
    are ``(push op, pop op, forward carry index, backward carry index)`` of each stack that the
    forward loop, starting from an empty stack, pushes once per iteration and the backward loop,
    starting from the forward loop's final stack, pops once per iteration."""
    defs = _defs(block)
    producer = {o: op for op in block.ops for o in op.outputs}
    for g in _whiles(block):
        if id(g) in done:
            continue
        f, anchors = None, []
        gb = g.blocks["body"]
        gdefs = _defs(gb)
        ng = len(g.outputs)
        for pop in gb.ops:
            if pop.type != "stack_pop":
                continue
            try:
                qb, qs = gb.inputs.index(pop.inputs[0]), gb.inputs.index(pop.inputs[1])
            except ValueError:
                continue
            if qb >= ng or qs >= ng or _canon(gdefs, gb.outputs[qb]) != pop.outputs[0] \
                    or _canon(gdefs, gb.outputs[qs]) != pop.outputs[1]:
                continue
            src_b, src_s = _canon(defs, g.inputs[qb]), _canon(defs, g.inputs[qs])
            cand = producer.get(src_b)
            if cand is None or not _is_while(cand) or cand is g or producer.get(src_s) is not cand \
                    or (f is not None and cand is not f) or is_effect(cand):
                continue
            pb, ps = cand.outputs.index(src_b), cand.outputs.index(src_s)
            push = _push_of(block, defs, cand, pb, ps)
            if push is None:
                continue
            f = cand
            anchors.append((push, pop, (pb, ps), (qb, qs)))
        if anchors:
            return f, g, anchors
    return None


def _push_of(block, defs, f, pb, ps):
    """The ``stack_push`` by which ``f``'s body pushes once per iteration onto the stack
    carried at ``(pb, ps)``, when that stack starts empty (a ``stack_new``); else None."""
    init_b, init_s = defs.get(_canon(defs, f.inputs[pb])), defs.get(_canon(defs, f.inputs[ps]))
    if init_b is None or init_s is None or init_b[0].type != "stack_new" or init_s[0] is not init_b[0] \
            or (init_b[1], init_s[1]) != (0, 1):
        return None
    fb = f.blocks["body"]
    fdefs = _defs(fb)
    out_b, out_s = fdefs.get(_canon(fdefs, fb.outputs[pb])), fdefs.get(_canon(fdefs, fb.outputs[ps]))
    if out_b is None or out_s is None or out_b[0].type != "stack_push" or out_s[0] is not out_b[0] \
            or (out_b[1], out_s[1]) != (0, 1):
        return None
    push = out_b[0]
    if [_canon(fdefs, x) for x in push.inputs[:2]] != [fb.inputs[pb], fb.inputs[ps]]:
        return None
    return push


def _cheap(op):
    """Recomputing it costs about what stacking its result would, or less: a view, a reshape,
    a constant, or an element-wise arithmetic operator (``1 - y * y`` from a stacked ``y``)."""
    return (trait(op, "movement") or trait(op, "view") or not op.inputs
            or trait(op, "elementwise") and trait(op, "infix") is not None)


def _move_residuals(program, block, namer, f, g, anchors):
    fb, gb = f.blocks["body"], g.blocks["body"]
    defs = _defs(block)
    ng, nf = len(g.outputs), len(f.outputs)
    f_index = block.ops.index(f)
    after_f = _dependents(block, f.outputs)

    # where each value the moved ops may read comes from, in the forward body
    fmap = {pop.outputs[2]: push.inputs[2] for push, pop, _, _ in anchors}
    f_caps = {_canon(defs, x): fb.inputs[nf + j] for j, x in enumerate(f.inputs[nf:])}
    outer_of = {}  # backward body capture -> the outer var it reads
    for pos in range(ng, len(g.inputs)):
        src = _canon(defs, g.inputs[pos])
        if src in after_f and not (src in defs and not defs[src][0].inputs and _pure(defs[src][0])):
            continue  # computed from the forward loop's results: not available inside it
        outer_of[gb.inputs[pos]] = src

    gdefs = _defs(gb)
    primal = set(fmap) | set(outer_of)
    for op in gb.ops:
        if _pure(op) and all(i in primal for i in op.inputs):
            primal.update(op.outputs)
    free = set(fmap) | set(outer_of)

    # values the backward body reads from the primal part, and which of them to stack
    read = set()
    for op in gb.ops:
        if not all(o in primal for o in op.outputs):
            read.update(i for i in op.inputs if i in primal and i not in free)
    read.update(o for o in gb.outputs if o in primal and o not in free)
    stacked, seen, work = [], set(), sorted(read)
    while work:
        name = work.pop()
        if name in seen:
            continue
        seen.add(name)
        op = gdefs[name][0]
        if _cheap(op):
            work.extend(i for i in op.inputs if i in primal and i not in free)
        else:
            stacked.append(name)
    if not stacked:
        return False

    numbering = _Numbering()
    fvn = numbering.block(fb, [("in", i) for i in range(len(fb.inputs))])
    by_number = {}
    for op in fb.ops:
        for o in op.outputs:
            by_number.setdefault(fvn[o], o)
    new_f_ops, new_outer_ops = [], []

    def add_capture(src):
        """The forward body's name for outer var ``src`` (captured by ``f`` if it is not yet)."""
        name = f_caps.get(src)
        if name is not None:
            return name
        read_var = src
        if src in after_f:  # a constant made after the loop: made again before it
            op = defs[src][0]
            read_var = namer()
            block.add_var(read_var, block.lookup(src).type)
            new_outer_ops.append(Op(op.type, [], [read_var], dict(op.attrs)))
        t = block.lookup(src).type
        f.inputs.append(read_var)
        for blk in f.blocks.values():
            v = namer()
            blk.add_var(v, t)
            blk.inputs.append(v)
            if blk is fb:
                name = v
                fvn[v] = numbering.number(("in", len(fb.inputs) - 1))
        f_caps[src] = name
        return name

    def clone(name):
        got = fmap.get(name)
        if got is not None:
            return got
        if name in outer_of:
            got = fmap[name] = add_capture(outer_of[name])
            return got
        op, k = gdefs[name]
        if op.type == "stop_gradient":
            got = fmap[name] = clone(op.inputs[0])
            return got
        ins = [clone(i) for i in op.inputs]
        comparable = _attrs_key(op) is not None
        key = numbering.op_key(op, [fvn[i] for i in ins]) if comparable else ("unique", id(op))
        found = [by_number.get(numbering.table.get(key + (j,))) for j in range(len(op.outputs))]
        if comparable and all(x is not None for x in found):
            outs = found
        else:
            outs = []
            for o in op.outputs:
                v = namer()
                fb.add_var(v, gb.lookup(o).type)
                outs.append(v)
            new_f_ops.append(Op(op.type, ins, outs, dict(op.attrs)))
            for j, v in enumerate(outs):
                fvn[v] = numbering.number(key + (j,))
                by_number.setdefault(fvn[v], v)
        for o, v in zip(op.outputs, outs):
            fmap[o] = v
        return fmap[name]

    renames = {}
    for r in stacked:
        rf = clone(r)
        t = gb.lookup(r).type
        ops, (sb, ss) = _empty_stack(block, namer, t)
        new_outer_ops.extend(ops)
        # the forward loop pushes it, the backward loop pops it (a new carry pair in each)
        fo, (vb, vs) = _add_stack_carry(block, namer, f, (sb, ss), t)
        nb, ns = _stack_vars(fb, namer, t)
        new_f_ops.append(Op("stack_push", [vb, vs, rf], [nb, ns], {}))
        fb.outputs.extend([nb, ns])
        _, (vb, vs) = _add_stack_carry(block, namer, g, fo, t)
        nb, ns = _stack_vars(gb, namer, t)
        val = namer()
        gb.add_var(val, t)
        gb.ops.insert(0, Op("stack_pop", [vb, vs], [nb, ns, val], {"shape": list(t.shape)}))
        gb.outputs.extend([nb, ns])
        renames[r] = val
    fb.ops.extend(new_f_ops)
    block.ops[f_index:f_index] = new_outer_ops
    # the backward body reads the popped values; what computed them is dead there now
    for op in gb.ops:
        op.inputs = [renames.get(n, n) for n in op.inputs]
    gb.outputs = [renames.get(n, n) for n in gb.outputs]
    _dce_sub(gb)
    return True


def _drop_dead_stacks(block, f, g, anchors):
    """Remove the anchor stacks whose popped values the backward body no longer reads (and
    nothing outside the two loops reads), from both loops."""
    gb, fb = g.blocks["body"], f.blocks["body"]
    # a stack carried on through stop_gradient is carried on as it is (the same value)
    for loop, blk, positions in ((f, fb, [a[2] for a in anchors]), (g, gb, [a[3] for a in anchors])):
        bdefs = _defs(blk)
        for pair in positions:
            for pos in pair:
                blk.outputs[pos] = _canon(bdefs, blk.outputs[pos])
        _dce_sub(blk)
    reads = {i for op in gb.ops for i in op.inputs} | set(gb.outputs)
    outside = {i for op in block.ops if op is not f and op is not g for i in op.inputs}
    drop_f, drop_g = [], []
    for push, pop, (pb, ps), (qb, qs) in anchors:
        if pop.outputs[2] in reads or pop not in gb.ops or push not in fb.ops:
            continue
        if f.outputs[pb] in outside or f.outputs[ps] in outside or g.outputs[qb] in outside \
                or g.outputs[qs] in outside:
            continue
        # the stack is read only by its push and pop
        if any(op is not push and (fb.inputs[pb] in op.inputs or fb.inputs[ps] in op.inputs or
                                   push.outputs[0] in op.inputs or push.outputs[1] in op.inputs)
               for op in fb.ops) or any(op is not pop and (gb.inputs[qb] in op.inputs or gb.inputs[qs] in op.inputs
                                                           or pop.outputs[0] in op.inputs or pop.outputs[1] in op.inputs)
                                        for op in gb.ops):
            continue
        if [_canon(_defs(fb), x) for x in (fb.outputs[pb], fb.outputs[ps])] != push.outputs[:2]:
            continue
        if f.blocks["cond"].inputs[pb] in {i for op in f.blocks["cond"].ops for i in op.inputs} | \
                set(f.blocks["cond"].outputs):
            continue
        if g.blocks["cond"].inputs[qb] in {i for op in g.blocks["cond"].ops for i in op.inputs} | \
                set(g.blocks["cond"].outputs):
            continue
        drop_f += [pb, ps]
        drop_g += [qb, qs]
    if not drop_f:
        return
    if len(drop_g) == 2 * sum(op.type == "stack_pop" for op in gb.ops):
        # keep one stack: popping it keeps the error of a backward loop that outruns the forward
        drop_f, drop_g = drop_f[2:], drop_g[2:]
        if not drop_f:
            return
    drop_carries(f, sorted(set(drop_f)), len(f.outputs))
    drop_carries(g, sorted(set(drop_g)), len(g.outputs))
    _dce_sub(fb)
    _dce_sub(gb)
