"""Loop passes: the forward a loop gradient recomputes, computed once.

The gradient of a ``while`` (``d2s/static/control_flow_grad.py``) runs the loop forward again,
pushing each iteration's incoming carries onto stacks, then a backward ``while`` that pops them
and replays the body to get the values its vector-Jacobian product reads. A program that
returns a loss and its gradient so runs the loop body three times per iteration: the loop
itself, its copy that pushes, and the replay inside the backward loop. Two passes remove the
repetition:

* ``merge_loops``: a ``while`` whose carries, condition and body updates are those of a
  leading part of another ``while`` on the same initial values (the gradient's forward copy
  has every carry of the original loop, plus its stacks and an iteration count) is dropped;
  its outputs are read from the other loop. Loops are compared by value numbering, with
  ``stop_gradient`` (the identity when the program runs) seen through.

* ``loop_residuals``: a backward ``while`` that pops, once per iteration, stacks that a forward
  ``while`` pushed once per iteration (the pops mirror the pushes: iteration ``k`` of the
  backward loop pops what iteration ``N - k + 1`` of the forward pushed) recomputes from the
  popped values what the forward loop computed from the pushed ones. Such a computation
  (pure ops reading only popped values, values both loops capture, and constants) moves into
  the forward loop: there it is the same as the body's own ops, which it reuses, and its
  result is pushed onto a new stack, popped by the backward loop in lockstep with the others.
  Only results of costly ops (a matmul, a ``tanh``, ...) are stacked: views and reshapes
  (``transpose``, ``getitem``, ``stop_gradient``, ...) and element-wise arithmetic operators
  over available values are recomputed, as they cost about a stack's copy or less.
  Stacks whose popped values the backward loop then no longer reads are removed from both
  loops (``dce`` removes the dead ops left behind).

* ``loop_matmul_sums`` and ``loop_transposes`` (below) then make the backward loop's weight
  gradients one product after the loop, and its transposed weights contiguous copies made
  before it.

``merge_loops`` and ``loop_residuals`` need no ops of their own and keep results exactly: the
moved ops compute the same values from the same operands, only once and earlier. Loops
holding effects (random draws, prints, asserts) are left alone.
"""
import json

from ..ir import Op
from ..ops import OPS, TensorType
from ..schedule import FeedView, topo_order
from ._util import SMALL_CONSTANT, Namer, drop_carries, is_effect, prune_vars, rename_uses, start, trait, use_counts

# ------------------------------------------------------------------ helpers
def _defs(block):
    """var name -> (op, output index) for the vars defined by ``block``'s ops."""
    d = {}
    for op in block.ops:
        for k, o in enumerate(op.outputs):
            d[o] = (op, k)
    return d


def _canon(defs, name):
    """``name`` with any ``stop_gradient`` chain defining it seen through."""
    while True:
        d = defs.get(name)
        if d is None or d[0].type != "stop_gradient":
            return name
        name = d[0].inputs[0]


def _attrs_key(op):
    try:
        return json.dumps(op.attrs, sort_keys=True)
    except (TypeError, ValueError):
        return None


def _pure(op):
    """An op the loop passes may compare, move or duplicate."""
    return op.type in OPS and not op.blocks and not is_effect(op)


class _Numbering:
    """Value numbers shared by several blocks: equal numbers, equal values."""

    def __init__(self):
        self.table = {}

    def number(self, key):
        n = self.table.get(key)
        if n is None:
            n = self.table[key] = len(self.table)
        return n

    def op_key(self, op, ins):
        if trait(op, "commutative"):
            ins = sorted(ins)
        return op.type, _attrs_key(op), tuple(ins)

    def block(self, block, input_keys):
        """Value numbers of ``block``'s vars, its inputs numbered by ``input_keys``; an op that
        cannot be compared (effects, sub-blocks, unserializable attrs) gets numbers of its own."""
        vn = {name: self.number(k) for name, k in zip(block.inputs, input_keys)}
        for op in block.ops:
            if op.type == "stop_gradient":
                vn[op.outputs[0]] = vn[op.inputs[0]]
                continue
            if not _pure(op) or _attrs_key(op) is None:
                for o in op.outputs:
                    vn[o] = self.number(("unique", id(op), o))
                continue
            key = self.op_key(op, [vn[i] for i in op.inputs])
            for k, o in enumerate(op.outputs):
                vn[o] = self.number(key + (k,))
        return vn


def _feeds(program, block):
    if block is program.block:
        return set(program.inputs) | set(program.params) | set(program.constants) | set(block.inputs)
    return set(block.inputs)


def _reorder(program, block):
    """Put ``block``'s ops back in a topological order (ties keep their order)."""
    inputs = list(_feeds(program, block))
    order, _, _ = topo_order(FeedView(block, inputs))
    block.ops = [block.ops[i] for i in order]


def _dependents(block, names):
    """Vars of ``block`` computed (transitively) from ``names``."""
    dep = set(names)
    for op in block.ops:
        if any(i in dep for i in op.inputs):
            dep.update(op.outputs)
    return dep


def _whiles(block):
    return [op for op in block.ops if op.type == "while" and not is_effect(op)]


def _each_loop(program, prefix, rewrite):
    """A copy of ``program`` after ``rewrite(program, block, namer, loop)`` (whether it changed
    anything) ran on each ``while`` of each block; a changed block's ops are put back in a
    topological order."""
    p = start(program)
    namer = Namer(p, prefix)
    for block in [p.block, *p.block.sub_blocks()]:
        changed = False
        for loop in _whiles(block):
            changed |= rewrite(p, block, namer, loop)
        if changed:
            _reorder(p, block)
            prune_vars(block)
    return p


# ------------------------------------------------------------------ merge_loops
def merge_loops(program):
    """Return a new Program in which a ``while`` that computes a leading part of another
    ``while``'s carries (same initial values, condition and updates) is read from that one."""
    p = start(program)
    for block in [p.block, *p.block.sub_blocks()]:
        while _merge_one(p, block):
            pass
    return p


def _merge_one(program, block):
    defs = _defs(block)
    loops = _whiles(block)
    for a in loops:
        for b in loops:
            if a is b or len(a.outputs) > len(b.outputs) or (len(a.outputs) == len(b.outputs) and
                                                             loops.index(a) < loops.index(b)):
                continue
            if _computes_prefix(block, defs, a, b):
                mapping = dict(zip(a.outputs, b.outputs[:len(a.outputs)]))
                block.ops = [op for op in block.ops if op is not a]
                rename_uses(block, mapping, program)
                _reorder(program, block)
                prune_vars(block)
                return True
    return False


def _computes_prefix(block, defs, a, b):
    """Whether ``while`` ``b``'s first carries are exactly ``a``'s carries (so ``a`` can go)."""
    n = len(a.outputs)
    canon = [_canon(defs, x) for x in a.inputs[:n]]
    if canon != [_canon(defs, x) for x in b.inputs[:n]]:
        return False
    if any(block.lookup(x).type != block.lookup(y).type for x, y in zip(a.outputs, b.outputs)):
        return False
    if _dependents(block, a.outputs) & set(b.inputs):
        return False  # b reads a's results: it cannot replace a
    numbering = _Numbering()

    def keys(op):
        nc = len(op.outputs)
        return [("carry", i) for i in range(nc)] + [("outer", _canon(defs, x)) for x in op.inputs[nc:]]

    for name in ("cond", "body"):
        ba, bb = a.blocks[name], b.blocks[name]
        va, vb = numbering.block(ba, keys(a)), numbering.block(bb, keys(b))
        outs = range(1) if name == "cond" else range(n)
        if any(va[ba.outputs[i]] != vb[bb.outputs[i]] for i in outs):
            return False
    return True


# ------------------------------------------------------------------ loop_residuals
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
            if cand is None or cand.type != "while" or cand is g or producer.get(src_s) is not cand \
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


def _dce_sub(block):
    live = set(block.outputs)
    kept = []
    for op in reversed(block.ops):
        if is_effect(op) or op.blocks or any(o in live for o in op.outputs):
            kept.append(op)
            live.update(op.inputs)
    kept.reverse()
    block.ops = kept
    prune_vars(block)


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


def _stack_vars(blk, namer, t):
    """Two new vars of ``blk`` holding a stack of ``t`` elements: its buffer and its shapes."""
    b, sh = namer(), namer()
    blk.add_var(b, TensorType((None,), t.dtype))
    blk.add_var(sh, TensorType((None, len(t.shape)), "int64"))
    return b, sh


def _empty_stack(block, namer, t):
    """``(ops, (buffer, shapes))``: the ops of ``block`` making an empty stack of ``t`` elements."""
    like = namer()
    block.add_var(like, TensorType([1] * len(t.shape), t.dtype))
    pair = _stack_vars(block, namer, t)
    return [Op("full", [], [like], {"shape": [1] * len(t.shape), "value": 0, "dtype": str(t.dtype)}),
            Op("stack_new", [like], list(pair), {})], pair


def _add_stack_carry(block, namer, loop, init, t):
    """Carry a stack of ``t`` elements through ``loop`` (after its other carries), starting from
    ``init`` (buffer, shapes); returns the loop's result pair and the body's input pair."""
    out = _stack_vars(block, namer, t)
    pos = len(loop.outputs)
    loop.inputs[pos:pos] = list(init)
    loop.outputs.extend(out)
    body_in = None
    for blk in loop.blocks.values():
        pair = _stack_vars(blk, namer, t)
        blk.inputs[pos:pos] = list(pair)
        if blk is loop.blocks["body"]:
            body_in = pair
    return out, body_in


# ------------------------------------------------------------------ loop_matmul_sums
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


# ------------------------------------------------------------------ loop_transposes
def loop_transposes(program):
    """Return a new Program in which a ``while`` body's ``transpose`` of a value the loop
    captures (the same at every iteration), read by a ``matmul``, is made once before the loop,
    as a contiguous copy the body captures instead. The transposed weight of a matmul's input
    gradient (``g @ W.T``) is such a transpose; BLAS multiplies by a contiguous matrix about
    twice as fast as by a transposed view of one."""
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
        if src not in captured or None in body.lookup(src).type.shape:
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


# ------------------------------------------------------------------ loop_invariants
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
