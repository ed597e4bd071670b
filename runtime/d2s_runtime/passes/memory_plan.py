"""Plans buffer reuse in the global block: a value may take the buffer of a dead one.

The plan follows the executor's schedule (``schedule.topo_order``). A *buffer* is what a
freshly allocating op produces (element-wise ufuncs, matmul, reductions...: ops with the
``fresh`` trait); any other op (views such as reshape, transpose, broadcast_to, getitem,
stop_gradient, cast, and control flow) is taken to share the buffers of its inputs, so a buffer
is dead only after the last use of every value viewing it. The output of an op that may write
into a planned buffer (the ``out_ok`` trait: element-wise ufuncs, matmul) may then reuse a dead
buffer of exactly its shape and dtype (element-wise ones even the buffer of an input dying at
that very op: ufuncs allow ``out=`` to alias an input). The executor writes those outputs with
``out=`` into the donated buffer.

The plan is stored as ``program.annotations['memory_plan']``::

    {"reuse": {receiver var: donor var}, "order": [op index...],
     "no_reuse_peak_bytes": int,  # every intermediate kept to the end (no freeing)
     "freed_peak_bytes": int,     # freed after last use, never reused
     "planned_peak_bytes": int,   # freed after last use and reused as planned
     "external_bytes": int}       # inputs, params and constants (not counted above)

Values of unknown size are left out of the plan and the byte counts.
"""
import numpy as np

from ..schedule import FeedView, topo_order
from ._util import start, trait


def _nbytes(t):
    if None in t.shape:
        return None
    return int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize


def memory_plan(program):
    """Return a copy of ``program`` annotated with a buffer-reuse plan (see the module docstring)."""
    p = start(program)
    p.annotations["memory_plan"] = plan_block(p)
    return p


def plan_block(program):
    gb = program.block
    feeds = list(program.inputs) + list(program.params) + list(program.constants)
    order, _, _ = topo_order(FeedView(gb, feeds))
    ops = [gb.ops[i] for i in order]
    external = set(feeds) | set(gb.inputs)
    pinned_names = set(program.outputs) | set(gb.outputs)

    # roots: the buffers a value may share memory with
    roots = {}
    for n in external:
        roots[n] = frozenset()
    empty = frozenset()
    for op in ops:
        # any op not known to allocate its result may return a view of, or the very array of, an input
        fresh = trait(op, "fresh") and not op.blocks
        for o in op.outputs:
            if fresh and len(op.outputs) == 1:
                roots[o] = frozenset([o])
                continue
            sources = [roots.get(i, empty) for i in _aliasable_inputs(op, o, gb)]
            sources = [r for r in sources if r]
            if not sources:
                roots[o] = empty
            elif len(sources) == 1:
                roots[o] = sources[0]  # shared, not copied: a chain of views stays linear
            else:
                roots[o] = frozenset().union(*sources)
    # a buffer is dead after the last op reading any value that views it
    INF = len(ops) + 1
    end = {}
    for pos, op in enumerate(ops):
        for o in op.outputs:
            for r in roots[o]:
                end.setdefault(r, pos)
        for i in op.inputs:
            for r in roots.get(i, ()):
                end[r] = max(end.get(r, pos), pos)
    for n in pinned_names:
        for r in roots.get(n, ()):
            end[r] = INF
    size = {r: _nbytes(gb.vars[r].type) for r in end}

    reuse = {}
    free = {}      # (shape, dtype) -> [holder var of a dead buffer]
    buf_of = {}    # fresh value -> its physical buffer (the value that first allocated it)
    buf_end = {}   # physical buffer -> position after which it is dead
    holder = {}    # physical buffer -> the value living in it now
    planned_live = 0
    freed_live = freed_peak = planned_peak = 0
    freed_at = {}
    for r, e in end.items():
        if size.get(r):
            freed_at.setdefault(e, []).append(r)
    ending = {}    # position -> physical buffers dying after it (buf_end inverted)
    seq = {}       # physical buffer -> when it entered buf_end (the order buffers are freed in)
    for pos, op in enumerate(ops):
        for out in op.outputs:
            r = roots.get(out)
            if r is None or len(r) != 1 or out not in r or not size.get(out):
                continue
            freed_live += size[out]
            donor = _find_donor(op, out, pos, gb, roots, free, buf_of, buf_end, holder)
            if donor is not None:
                reuse[out] = donor
                b = buf_of[donor]
            else:
                b = out
                planned_live += size[out]
            buf_of[out] = b
            old = buf_end.get(b)
            if old is not None:
                ending[old].discard(b)
            else:
                seq[b] = len(seq)
            buf_end[b] = end[out]
            ending.setdefault(end[out], set()).add(b)
            holder[b] = out
        freed_peak = max(freed_peak, freed_live)
        planned_peak = max(planned_peak, planned_live)
        for r in freed_at.get(pos, ()):
            freed_live -= size[r]
        for b in sorted(ending.pop(pos, ()), key=seq.__getitem__):
            del buf_end[b]
            planned_live -= size[b]
            h = holder.pop(b)
            t = gb.vars[h].type
            free.setdefault((t.shape, t.dtype), []).append(h)
    no_reuse = sum(s for r, s in size.items() if s)
    return {"reuse": reuse, "order": order, "no_reuse_peak_bytes": no_reuse, "freed_peak_bytes": freed_peak,
            "planned_peak_bytes": planned_peak,
            "external_bytes": sum(_nbytes(gb.vars[n].type) or 0 for n in external if n in gb.vars)}


def _aliasable_inputs(op, out, gb):
    """The inputs whose buffers ``out`` (an output of non-fresh ``op``) may share: indexed
    writes return (a copy of) input 0; ops with sub-blocks return block outputs, which may be
    block inputs passed through, so an output may alias an input of the same type only."""
    if trait(op, "writes_input"):
        return op.inputs[:1]
    if not op.blocks or len(op.inputs) <= 1:
        return op.inputs
    t = gb.vars[out].type
    return [i for i in op.inputs if _type_in(gb, i) is not None and _type_in(gb, i).dtype == t.dtype
            and len(_type_in(gb, i).shape) == len(t.shape)]


def _type_in(gb, name):
    v = gb.vars.get(name)
    return v.type if v is not None else None


def _find_donor(op, out, pos, gb, roots, free, buf_of, buf_end, holder):
    """The var whose (dead) buffer ``out`` may take, or None."""
    if not trait(op, "out_ok"):
        return None
    t = gb.vars[out].type
    if not t.dtype.startswith("float") or any(gb.vars[i].type.dtype != t.dtype for i in op.inputs):
        return None  # the ufunc must compute in the output's dtype
    pool = free.get((t.shape, t.dtype))
    if pool:
        return pool.pop()
    if trait(op, "elementwise"):
        # an input whose buffer dies at this very op can be overwritten in place (ufuncs allow
        # out= to alias an input; matmul does not)
        for i in op.inputs:
            b = buf_of.get(i)
            if b is not None and holder.get(b) == i and buf_end.get(b) == pos and gb.vars[i].type == t:
                return i
    return None


def planned_peak(program):
    """The memory report of an annotated program (runs the plan if there is none)."""
    plan = program.annotations.get("memory_plan") or plan_block(program)
    return {k: v for k, v in plan.items() if k.endswith("_bytes")}
