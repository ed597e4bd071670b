"""Object identity through control flow: what eager code's tensor objects are after a branch
or a loop, so names that alias one tensor before a ``cond`` or ``while`` alias it after it.

A branch or loop body may update in place a tensor object made outside it (``a += v``,
``a[i] = v``, ``lst[0].add_(v)``): every name and container holding that object must see the
update after the op, as in eager code, not only the name the converter carries. The builder
logs such objects while the block is built and re-points them back when it ends
(``ProgramBuilder.note_inplace``); the op carries each one's final value as an extra output
and the object is re-pointed to it. Where a name may or may not be an object depending on the
data (a tensor ``if`` choosing between names), the builder links them under a flag
(``ProgramBuilder.link_maybe_alias``), which ``cond`` outputs and ``while`` carries
(``ObjectCarry``) keep.
"""
from d2s_runtime.ops import TensorType

from .. import ops as d, views
from ..tensor import Tensor, tensor
from .cf_common import _alias_error, _type_of


# A branch or loop body may update in place a tensor object made outside it (``a += v``,
# ``a[i] = v``, ``lst[0].add_(v)``): every name and container holding that object must see the
# update after the op, as in eager code, not only the name the converter carries. The builder
# logs such objects while the block is built and re-points them back when it ends
# (``ProgramBuilder.note_inplace``); the op carries each one's final value as an extra output
# and the object is re-pointed to it.
def _inplace_outputs(b, blocks):
    """The outside tensor objects some of ``blocks`` updated in place; each block gets one more
    output per object: its final value there, or the object's unchanged value (captured)."""
    writes = [b.inplace_writes.pop(blk, []) for blk in blocks]
    objs = list({id(t): t for w in writes for t, _ in w}.values())
    for blk, w in zip(blocks, writes):
        final = {id(t): f for t, f in w}
        for t in objs:
            src = final.get(id(t), t)
            blk.outputs.append(b.resolve(src._var.name, blk, tensor=src))
    return objs


def _repoint(b, objs, outs):
    """After the op: each object updated in place inside it takes the op's output for it."""
    for t, o in zip(objs, outs):
        b.note_inplace(t)  # (inside an enclosing block being built: carried out of it too)
        t.array, t._var = None, o._var
        t._version += 1
        views.take_history(t, o)
    for t in objs:
        b.after_inplace(t, carried_out=True)


def _alias_flags(b, blocks, n_out):
    """Before the ``cond`` op is made: the outside tensor objects (made before the op) that an
    output may be in eager code through maybe-alias links made inside a branch (a nested
    tensor `if` choosing between names): for each such (output, object), each branch gets one
    more bool output, whether its result is that object there, so the op's output for it is
    the flag the link needs. Returns ``(per-block leaves, [(output index, object)] with a flag
    output each, [(output index, object)] whose condition is unknown)``; links a branch makes
    directly (it returns the outside object itself) need no flag output."""
    per_block = [b.block_leaves.pop(blk, None) for blk in blocks]
    if any(p is None or len(p) < n_out for p in per_block) or not b.maybe_aliases:
        return per_block, [], []
    pairs = {}
    for k in range(n_out):
        # An object that only one branch's result may be, other than through links made inside
        # that branch, needs no output of its own: the output's link to the branch's result
        # and the links after it (which the current block sees) say it exactly. Flagging it too
        # linked each output to every object an earlier `if` had linked: a clique, with which n
        # unrolled tensor `if`s on one name took n⁴ time.
        close = [{id(t): t for t in alias_targets(b, leaves[k], blk, lambda x: _outside(b, x))}
                 for blk, leaves in zip(blocks, per_block)]
        for j, (blk, leaves) in enumerate(zip(blocks, per_block)):
            inner = {id(t) for t in alias_targets(b, leaves[k], blk, lambda x: _outside(b, x),
                                                  inner_only=lambda x: _outside(b, x))}
            for key, t in close[j].items():
                if t is not leaves[k] and (key in inner or any(key in c for i, c in enumerate(close) if i != j)):
                    pairs.setdefault((k, key), (k, t))
    pairs = [(k, t) for k, t in pairs.values() if not all(p[k] is t for p in per_block)]
    # two outputs that may be one tensor of a branch through links made inside it (``b = a``
    # in a tensor loop of the branch): (output, other output's index)
    joined = {}
    for blk, leaves in zip(blocks, per_block):
        for k in range(n_out):
            near = {id(x) for x in alias_targets(b, leaves[k], blk, lambda x: True)}
            joined.update(((k, j), None) for j in range(k + 1, n_out) if leaves[j] is not leaves[k]
                          and isinstance(leaves[j], Tensor) and id(leaves[j]) in near)
    pairs.extend(joined)
    if not pairs:
        return per_block, [], []
    outer = b.block
    try:
        flags = []
        for blk, leaves in zip(blocks, per_block):
            b.block = blk
            flags.append([alias_flag(b, leaves[k], leaves[t] if isinstance(t, int) else t, blk) for k, t in pairs])
        # (two outputs identical or distinct in every branch: the links below the op say so)
        wanted = [j for j, (k, t) in enumerate(pairs)
                  if not (isinstance(t, int) and all(isinstance(f[j], bool) for f in flags))]
        pairs, flags = [pairs[j] for j in wanted], [[f[j] for j in wanted] for f in flags]
        # (an alias whose condition is not known: the output is linked to it with flag None)
        unknown = [(k, t) for j, (k, t) in enumerate(pairs) if any(f[j] is None for f in flags)]
        keep = [j for j, (k, t) in enumerate(pairs) if all(f[j] is not None for f in flags)]
        for blk, fs in zip(blocks, flags):
            b.block = blk
            for j in keep:
                blk.outputs.append(b.var_of(fs[j] if isinstance(fs[j], Tensor) else tensor(bool(fs[j]))))
    finally:
        b.block = outer
    return per_block, [pairs[j] for j in keep], unknown


def alias_targets(b, o, scope, wanted, depth=6, inner_only=None):
    """The tensor objects that ``o`` is, or may be in eager code through maybe-alias links
    visible in block ``scope`` (``ProgramBuilder.link_maybe_alias``), for which ``wanted`` holds.
    From an object for which ``inner_only`` holds, only links made in ``scope`` itself are
    followed."""
    found, seen, todo = {}, {id(o)}, [(o, 0)]
    while todo:
        x, d_ = todo.pop()
        if isinstance(x, Tensor) and wanted(x):
            found[id(x)] = x
        if d_ >= depth:
            continue
        only_here = inner_only is not None and inner_only(x)
        for other, _, blk in b.maybe_aliases.get(id(x), (None, ()))[1]:
            if only_here and blk is not scope:
                continue
            if id(other) not in seen and _encloses(blk, scope):
                seen.add(id(other))
                todo.append((other, d_ + 1))
    return list(found.values())


def alias_flag(b, o, target, scope, depth=6):
    """Whether ``o`` is the object ``target`` in eager code, as ops built into the current
    block: True, False, a bool scalar tensor, or None where a link on the way has an unknown
    condition. Follows the maybe-alias links visible in block ``scope`` (each one exact: the
    two objects are one exactly when its flag holds), along the shortest chains of at most
    ``depth`` links from ``o`` to ``target``: ``o`` is ``target`` when every link of one
    such chain holds (a chain that goes through more objects adds nothing an exact shorter
    one does not say), so the ops grow with the links, not with the chains."""
    if o is target:
        return True
    edges, dist, frontier = {}, {id(o): 0}, [o]
    for level in range(1, depth + 1):
        nxt = []
        for x in frontier:
            for other, flag, blk in b.maybe_aliases.get(id(x), (None, ()))[1]:
                if other is x or not _encloses(blk, scope):
                    continue
                edges.setdefault(id(x), {})[(id(other), id(flag))] = (other, flag)
                edges.setdefault(id(other), {})[(id(x), id(flag))] = (x, flag)
                if id(other) not in dist:
                    dist[id(other)] = level
                    nxt.append(other)
        frontier = nxt
    if id(target) not in dist:
        return False
    # distances from target; each node's flag from its neighbors one link nearer target
    unknown = object()
    reach, layer = {id(target): True}, [id(target)]
    for _ in range(depth):
        nxt = {}
        for y in layer:
            for (k, _), (x, flag) in edges.get(y, {}).items():
                if k in reach or dist.get(k, depth + 1) > depth:
                    continue
                r = reach[y]
                got = nxt.get(k, False)
                if flag is None or r is unknown or got is unknown:
                    nxt[k] = unknown
                    continue
                term = flag if r is True else d.logical_and(flag, r)
                nxt[k] = term if got is False else d.logical_or(got, term)
        if not nxt:
            break
        reach.update(nxt)
        if id(o) in reach:
            break
        layer = list(nxt)
    got = reach.get(id(o), False)
    return None if got is unknown else got


def _encloses(blk, scope):
    """Whether block ``blk`` is ``scope`` or one of the blocks enclosing it."""
    while scope is not None:
        if scope is blk:
            return True
        scope = scope.parent
    return False


def _kept_objects(b, per_block, outs, pred, pairs=(), flag_outs=(), unknown=()):
    """``outs`` where both branches return the same outside tensor object: that object itself
    (re-pointed if updated), so names that alias before the op still alias after it. Where
    one branch returns an outside object and the other does not, eager code holds that
    object only on runs taking that branch: the output is linked to it under the predicate
    (``ProgramBuilder.link_maybe_alias``), so a later in-place update reaches both as eager's;
    where a branch's result may be an outside object through links made inside it (``pairs``,
    see ``_alias_flags``), the output is linked to it under the op's flag output for it."""
    if any(p is None or len(p) < len(outs) for p in per_block):
        return outs
    flags = {}

    def flag(side):
        if side not in flags:
            flags[side] = pred if side else d.logical_not(pred)
        return flags[side]

    flagged = {(k, id(t)) for k, t in (*pairs, *unknown) if not isinstance(t, int)}
    kept, first = [], {}
    for i, (o, t, e) in enumerate(zip(outs, *per_block)):
        if t is e and t.is_symbolic:
            kept.append(t)
            continue
        if (id(t), id(e)) in first and isinstance(t, Tensor) and isinstance(e, Tensor):
            kept.append(kept[first[(id(t), id(e))]])  # one object in both branches: one result
            continue
        first[(id(t), id(e))] = i
        kept.append(o)
        for side, obj in ((True, t), (False, e)):
            if _outside(b, obj) and (i, id(obj)) not in flagged:
                b.link_maybe_alias(o, obj, flag(side))
    for (k, t), f in [*zip(pairs, flag_outs), *((p, None) for p in unknown)]:
        t = kept[t] if isinstance(t, int) else t
        if kept[k] is not t:
            b.link_maybe_alias(kept[k], t, f)
    # outputs that are one object in one branch only: one object on the runs taking it
    for side, k in ((True, 0), (False, 1)):
        seen = {}
        for (t, e), i in first.items():
            key = (t, e)[k]
            if key in seen and isinstance(per_block[k][i], Tensor):
                b.link_maybe_alias(kept[i], kept[seen[key]], flag(side))
            seen.setdefault(key, i)
    return kept


def _outside(b, t):
    """Whether ``t`` is a symbolic tensor object whose var the current block sees (made before
    the op, not inside one of its blocks)."""
    if not isinstance(t, Tensor) or not t.is_symbolic:
        return False
    try:
        b.block.lookup(t._var.name)
    except KeyError:
        return False
    return True


class _PeelFirst(Exception):
    """The body updates in place a tensor that it then stops holding (``a += x; a = a * 2``):
    the first iteration updates the loop's entry tensor, later ones tensors of the loop's own."""

    def __init__(self, error):
        self.error = error


class _ObjectCarry:
    """Tensor objects through a ``while`` op, so that names aliasing one object before the
    loop alias it in every iteration and after it, as in eager code.

    The body first runs on a fresh tensor per loop var (values only). Loop vars whose tensor
    it updates in place, with the loop vars holding the same tensor object, then form one
    class: the body and condition see that object itself (re-pointed to the class's first
    block input while the block is built), so the update reaches every name and container
    holding it, and after the op the object takes its final value. A tensor from outside the
    loop vars that the body updates in place (an alias read through a closure or a
    container) becomes an extra loop var. Object identities must be the same at the end of an
    iteration as at its start wherever an object is updated in place (else a later iteration
    would update another object): for ``a += x; a = a * 2`` the first iteration runs on its
    own (``_PeelFirst``)."""

    def __init__(self, b, leaves, weak, private=(), entry_flags=None):
        self.b = b
        self.private = private
        # whether code after the loop may observe which tensor object a loop var holds (it
        # updates tensors in place): a loop var that the body rebinds on some runs only then
        # carries a flag "still its entry object" (see split_aliases); when False, such a
        # loop var is linked to its entry object under an unknown condition (``unsure``), so
        # an in-place update through either refuses instead of silently missing the other.
        # None: a loop not written by the user (d2s.while_loop, a replayed while op), as before
        self.entry_flags = entry_flags
        self.unsure = set()
        self.objs = list(leaves)
        self.weak = list(weak)
        self.rep = [None] * len(leaves)  # for each loop var sharing its object: the first such
        self.cls = []  # for each loop var: the first loop var holding the same object
        first = {}
        for i, t in enumerate(leaves):
            sym = isinstance(t, Tensor) and t.is_symbolic and not weak[i]
            self.cls.append(first.setdefault(id(t), i) if sym else None)
        self.extra = []  # outside tensors updated in place by the body, not among the loop vars
        self.mutated_reps = []
        self.joined = []
        self._entry = {}
        self._fresh = {}
        # loop vars with a block input of their own that may hold tensor objects from outside
        # the loop: [(loop var, object)], each with a bool loop var (initial value in
        # flag_init): whether the name holds the object (see split_aliases)
        self.flags = []
        self.flag_init = []
        self.split = set()
        self.full = set()  # such loop vars that the loop may update through: linked to their entry object too

    def extra_types(self):
        return [_type_of(t) for t in self.extra] + [TensorType([], "bool")] * len(self.flags)

    def enter(self, args):
        """The values the condition or body sees for block inputs ``args``."""
        n = len(self.objs)
        ins = list(args[:n])
        self._fresh = {}
        for i, r in enumerate(self.rep):
            if r is None:
                if self.cls[i] is not None:
                    self._fresh[i] = (args[i], args[i]._var.name)
                continue
            if r == i:
                self._point(self.objs[i], args[i])
            ins[i] = self.objs[r]
        for t, a in zip(self.extra, args[n:]):
            self._point(t, a)
        for (i, t), f in zip(self.flags, args[n + len(self.extra):]):
            self.b.link_maybe_alias(ins[i], ins[t] if isinstance(t, int) else t, f)
        return ins

    def _point(self, t, a):
        self.b.note_inplace(t)
        t.array, t._var, t.requires_grad, t.grad_fn, t._out_idx = None, a._var, False, None, 0
        self._entry.setdefault(id(t), set()).add(a._var.name)

    def share_updated(self):
        """After a trace: share the object of every loop var whose fresh tensor the body updated
        in place (with the loop vars holding the same object); whether that needs a rebuild."""
        more = False
        for i, (t, name) in self._fresh.items():
            if t._var is not None and t._var.name != name:
                if i in self.split:  # a name with flags of its own: linked to its entry object
                    more = more or i not in self.full
                    self.full.add(i)
                    continue
                c = self.cls[i]
                for j, q in enumerate(self.cls):
                    if q == c:
                        self.rep[j] = c
                more = True
        return more

    def extra_values(self):
        return tuple(self.extra)

    def flag_values(self, out):
        """In the body, after it ran: for each (loop var, object) flag, whether the loop var's new
        value is that object (as bool tensors of the body's block)."""
        vals = []
        for i, t in self.flags:
            f = alias_flag(self.b, out[i], out[t] if isinstance(t, int) else t, self.b.block)
            if f is None:
                raise _alias_error(
                    "in this tensor loop a name may hold a tensor that the loop updates in place, under a "
                    "condition the program does not know (an alias taken in an inner tensor loop); copy it "
                    "where the alias is taken (a = b.clone()) or update it out of place (a = a + x)")
            vals.append(f if isinstance(f, Tensor) else tensor(bool(f)))
        return tuple(vals)

    def _pointed(self, t):
        """Whether outside object ``t`` is re-pointed at a block input in each iteration."""
        return any(t is x for x in self.extra) or any(
            t is self.objs[j] and self.rep[j] == j for j in range(len(self.objs)))

    def _add_flag(self, i, t):
        if not isinstance(t, int):  # (a pair of names leaves how each holds its entry object as it is)
            self.split.add(i)
            self.rep[i] = None
        self.flags.append((i, t))
        f = alias_flag(self.b, self.objs[i], self.objs[t] if isinstance(t, int) else t, self.b.block)
        if f is None:
            f = False  # (links of unknown condition before the loop: an update through them raises)
        self.flag_init.append(f if isinstance(f, Tensor) else tensor(bool(f)))
        for j, o in enumerate(self.objs):
            # another loop var holding that object (not shared as one object): its name is
            # linked to the object by a flag of its own, or an update through ``i`` would miss it
            if j != i and o is t and self.cls[j] is not None and self.rep[j] is None and \
                    not any(k == j and x is t for k, x in self.flags) and not isinstance(t, int):
                self._add_flag(j, t)

    def split_aliases(self, blk):
        """A loop var that after an iteration may be, in eager code, a tensor object from outside
        the iteration other than by holding it in every iteration (``if c: b = a``, ``b = a``
        under a return flag, ``b = a`` in a loop that may run zero times) gets a bool loop var
        per such object saying whether the name holds it, linked to it under that flag in the
        body and after the loop, so an in-place update through either reaches the other exactly
        when eager's would. When the loop updates the name or the object in place, the name
        also gets a block input of its own, a flag for its own entry object, and the objects
        are carried through the loop. Whether that needs a rebuild."""
        leaves = self.b.block_leaves.get(blk)
        if leaves is None or not self.b.track_aliases:
            # (a replayed loop: its values are IR vars, which nothing updates in place; one var
            # may stand for several carries, as one constant does, without being an alias)
            return False
        n = len(self.objs)
        out = leaves[:n]
        changed = getattr(self, "_body_changed", {})
        objs = {id(t) for t in self.objs}

        def carried(x):
            return id(x) in objs or any(x is t for t in self.extra) or _outside(self.b, x)

        # another loop var's block input (``b = a`` where a is a loop var the iteration did not
        # rebind): in the first iteration, that loop var's entry object
        entries = {id(t): j for j, (t, _) in self._fresh.items()}

        more = False
        self.unsure = set()
        for i in range(n):
            r = self.rep[i]
            if not isinstance(out[i], Tensor) or (r is not None and out[i] is self.objs[r]):
                continue
            targets = alias_targets(self.b, out[i], blk, lambda x: carried(x) or id(x) in entries)
            # rebound by the body (on some runs, or in every iteration of a loop that may run zero
            # times): the name may still hold its entry object after the loop
            own = r is None and self.cls[i] is not None and not self.weak[i] and i in self._fresh and \
                out[i] is not self._fresh[i][0]
            targets = [self.objs[entries[id(t)]] if id(t) in entries else t for t in targets
                       if entries.get(id(t), -1) != i]
            targets = list({id(t): t for t in targets}.values())
            if own and self.entry_flags and i not in self.full:
                targets.append(self.objs[i])
            elif own and self.entry_flags is False:
                self.unsure.add(i)
            if not targets and i not in self.split:
                continue
            if i not in self.full and ((r is not None and id(self.objs[r]) in changed) or
                                       any(id(t) in changed for t in targets)):
                if r is not None and any(q == r for j, q in enumerate(self.rep) if j != i):
                    raise _alias_error(
                        "this tensor loop updates in place a tensor that several names hold, and whether one of "
                        "them still holds it after an iteration depends on the data (it is rebound in a tensor "
                        "`if`); copy it where the names are bound (b = a.clone()) or update it out of place "
                        "(a = a + x)")
                self.full.add(i)
            want = ([self.objs[i]] if i in self.full and self.cls[i] is not None else []) + targets
            have = {id(t) for k, t in self.flags if k == i and not isinstance(t, int)}
            for t in want:
                if id(t) not in have:
                    have.add(id(t))
                    self._add_flag(i, t)
                    more = True
        # two loop vars that may hold one tensor after an iteration (``b = a`` after ``a = x * 2``,
        # a tensor made in the iteration): a flag per pair, and the names linked under it
        for i in range(n):
            if self.weak[i] or not isinstance(out[i], Tensor) or (
                    self.rep[i] is not None and out[i] is self.objs[self.rep[i]]):
                continue
            near = {id(x) for x in alias_targets(self.b, out[i], blk, lambda x: True)}
            for j in range(i + 1, n):
                if self.weak[j] or id(out[j]) not in near or (
                        self.rep[j] is not None and out[j] is self.objs[self.rep[j]]):
                    continue
                if not any((k, x) in ((i, j), (j, i)) for k, x in self.flags if isinstance(x, int)):
                    self._add_flag(i, j)
                    more = True
        for i, t in self.flags:
            if i in self.full and not isinstance(t, int) and not self._pointed(t):
                self.extra.append(t)  # updated in place through the name: carried by the loop
                more = True
        if more:
            self.b.block_leaves.pop(blk, None)
        return more

    def _changed(self, blk):
        """The outside objects ``blk`` updated in place: {id: (object, final value)}."""
        return {id(t): (t, f) for t, f in self.b.inplace_writes.pop(blk, [])
                if f._var.name not in self._entry.get(id(t), ())}

    def check_condition(self, blk):
        self.b.block_leaves.pop(blk, None)
        if self._changed(blk):
            raise _alias_error("the condition of this tensor loop updates a tensor in place; compute the "
                               "condition without in-place updates")

    def found_new(self, blk):
        """Whether the body updated in place outside tensors not carried yet (added to extra)."""
        changed = self._changed(blk)
        self._body_changed = changed
        known = {id(t) for t in self.objs} | {id(t) for t in self.extra}
        new = [t for k, (t, _) in changed.items() if k not in known]
        self.extra.extend(new)
        if new:
            self.b.block_leaves.pop(blk, None)
        return bool(new)

    def split_classes(self, blk):
        """Loop vars holding one object that the body leaves holding different objects (``buf =
        [x, x]``, then ``buf[i] = buf[i] * 2``) cannot share one object in every iteration: each
        gets its own block input then (exact as long as the body updates none of them in place)."""
        out = self.b.block_leaves.get(blk)
        split = False
        for r in {r for r in self.rep if r is not None}:
            members = [i for i, q in enumerate(self.rep) if q == r]
            mutated = id(self.objs[r]) in self._body_changed
            if len({id(out[i]) for i in members}) == 1 and (mutated or out[r] is self.objs[r]):
                continue
            if not mutated and len({id(out[i]) for i in members}) == 1:
                # rebound, never updated in place: the loop vars carry values, and the object
                # itself keeps its value before the loop (code in the loop may read it by another name)
                for i in members:
                    self.rep[i] = None
                split = True
                continue
            if mutated:
                # (``b = a`` before the loop, ``b += x; a = a * 2`` in it): the first iteration
                # runs on its own, after which the names hold different tensors
                raise _PeelFirst(_alias_error(
                    "this tensor loop updates in place a tensor that several loop variables hold, and leaves "
                    "them holding different tensors, so a later iteration would update only some of them; "
                    "copy it where they are bound (b = a.clone()) or update it out of place (a = a + x)"))
            for i in members:
                self.rep[i] = None
            split = True
        if split:
            self.b.block_leaves.pop(blk, None)
        return split

    def _refuse_new_aliases(self, out, kept, updated):
        """Loop vars that enter an iteration as different tensors and leave it as one new tensor
        (``b = a`` after ``a`` was rebound in the body) alias from the second iteration on. The
        program carries them as separate values, so an in-place update of one of them in a
        later iteration would miss the other, as eager code would not: refused when the body
        updates a loop variable in place."""
        if not (self.mutated_reps or any(r is not None for r in self.rep) or self.full or self.extra):
            return
        holders = {}
        for i, o in enumerate(out):
            if i in kept or self.cls[i] is None or any(o is t for t in updated):
                continue
            holders.setdefault(id(o), set()).add(self.cls[i])
        if any(len(classes) > 1 for classes in holders.values()):
            raise _alias_error(
                "in this tensor loop two names that held different tensors hold the same one after an "
                "iteration (b = a), and the loop updates a tensor in place, so a later iteration's in-place "
                "update would have to reach both; copy the tensor where the name is bound (b = a.clone()) or "
                "update it out of place (b = b + x)")

    def check_body(self, blk):
        """Check that object identities are the same after an iteration as before it wherever
        an object is updated in place; returns the loop vars whose result is their object."""
        out = self.b.block_leaves.pop(blk)[:len(self.objs)]
        self.body_out = out  # (views.loop_results reads which are views)
        appended = [t for t, _, _, where in self.b.appended.values()
                    if _encloses(blk, where) and id(t) in self._body_changed]
        near = set()  # the objects the loop vars may hold after the iteration
        for o in out if appended else ():
            if isinstance(o, Tensor):
                near.update(id(x) for x in alias_targets(self.b, o, blk, lambda x: True))
        for t in appended:
            if id(t) in near or any(t is e for e in self.extra):
                # the list holds the object, which the next iteration updates again
                raise _alias_error(
                    "this tensor loop appends to a list a tensor that it updates in place in every iteration: "
                    "in eager code each element is that one tensor and sees every later update, a list grown in "
                    "a tensor loop keeps values; append a copy (xs.append(t.clone())) or update the tensor out of "
                    "place (t = t + v)")
        changed = {k: v for k, v in self._body_changed.items() if k not in self.private}
        self.mutated_reps = [i for i, r in enumerate(self.rep) if r == i and id(self.objs[i]) in changed]
        kept = {i for i, r in enumerate(self.rep) if r is not None and out[i] is self.objs[r]}
        # a name the body leaves holding the tensor it entered with (it rebinds it only under a
        # Python condition not taken): its entry object, as in eager code
        kept.update(i for i, (t, _) in self._fresh.items() if out[i] is t and self.rep[i] is None
                    and i not in self.split and not self.weak[i])
        for i, r in enumerate(self.rep):
            if r is not None and id(self.objs[r]) in changed and i not in kept:
                links = self.b.maybe_aliases.get(id(out[i]), (None, ()))[1]
                if any(o is self.objs[r] for o, _, _ in links):
                    # the name still holds the tensor on some runs of the body only
                    raise _alias_error(
                        "this tensor loop updates a tensor in place, and whether a name still holds that tensor "
                        "after an iteration depends on the data (it is rebound in a tensor `if`), so the program "
                        "cannot tell which tensor later iterations update; update it out of place (a = a + x) or "
                        "copy it before the loop (a = a.clone())")
                raise _PeelFirst(_alias_error(
                    "this tensor loop updates a tensor in place and rebinds a name that held it, so a later "
                    "iteration would update another tensor than the first one did; update it out of place "
                    "(a = a + x) or copy it before the loop (a = a.clone())"))
        updated = [self.objs[i] for i in self.mutated_reps] + self.extra
        self._refuse_new_aliases(out, kept, updated)
        self.joined = []
        for i, o in enumerate(out):
            if i in kept or i in self.split or not any(o is t for t in updated):
                continue
            self.joined.append((i, o))
            # bound in the body to a tensor the body updates in place: the name aliases that
            # tensor from the second iteration on, which matters only if the body reads the
            # value the name enters an iteration with
            entry = blk.inputs[self.rep[i] if self.rep[i] is not None else i]
            if any(entry in op.inputs for op in blk.ops) or entry in blk.outputs:
                raise _alias_error(
                    "in this tensor loop a name enters the second iteration aliasing a tensor the loop updates "
                    "in place, but not the first; copy the tensor where the name is bound (a = b.clone()) or "
                    "update it out of place (a = a + x)")
        return kept
