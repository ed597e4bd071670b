"""Functional control flow: ``d2s.cond``, ``d2s.while_loop``, ``d2s.scan`` (``fori_loop``,
``switch`` and ``map`` are built from them in ``structured``; ``d2s.lax`` gives JAX's
signatures).

Each is a public dispatcher with two halves (like AutoGraph's operators): with a concrete
predicate (a Python value, or a tensor holding data) it is plain Python, so eager autograd
sees the ops that ran; with a symbolic predicate, inside a program being built, it builds a
``cond`` / ``while`` / ``scan`` op whose sub-blocks hold the traced branch, condition and
body functions. Values the functions read from enclosing blocks become explicit op inputs
(captures). The op layout is documented in ``d2s_runtime/control_flow.py``.

Operands, loop vars and carries may be pytrees (nested tuples, lists and dicts) of tensors;
Python numbers among loop vars, carries and branch outputs are weakly typed, as in JAX: they
become tensors of the dtype they meet (the body's result for a carry, the other branch's
output for a branch), eagerly as in programs, so both give the same dtypes.
"""
import numpy as np

from d2s_runtime.device import to_host
from d2s_runtime.ir import Op
from d2s_runtime.ops import TensorType

from .. import ops as d
from .. import pytree, views
from .._state import STATE
from ..autograd.grad_mode import no_grad
from ..autograd.node import record
from ..inplace import _take_history
from ..pytree import tree_unflatten
from ..tensor import Tensor, tensor
from ..user_errors import at_user_line
from .builder import ProgramBuilder

__all__ = ["cond", "while_loop", "scan"]

_MAX_WIDEN = 32  # rebuilds of a loop body before giving up on a fixed point of its types


class ControlFlowError(TypeError):
    """Branches or loop bodies whose outputs do not fit together (structure, dtype, rank)."""


# ------------------------------------------------------------------ pytrees
def tree_flatten(obj):
    """(tensor leaves, treedef) of a pytree (see ``d2s.pytree``): other values stay in the
    treedef as constants, so two trees match only when those values are equal too."""
    return pytree.tree_flatten(obj, leaf_types=Tensor)


def _tensorize(obj, like=None):
    """Python numbers (and numpy values) in a pytree become tensors (of the dtype of the
    tensor at the same place in ``like``, when ``like`` has the structure of ``obj``)."""
    leaves, treedef = pytree.tree_flatten(obj, is_leaf=pytree.is_registered)
    refs = [None] * len(leaves)
    if like is not None:
        like_leaves, like_def = pytree.tree_flatten(like, is_leaf=pytree.is_registered)
        if like_def == treedef:
            refs = like_leaves

    def conv(o, ref):
        if isinstance(o, (bool, int, float, np.generic, np.ndarray)) and not isinstance(o, Tensor):
            return tensor(o, dtype=ref.dtype if isinstance(ref, Tensor) else None)
        return o

    return tree_unflatten(treedef, [conv(o, r) for o, r in zip(leaves, refs)])


_NOT_WEAK = (Tensor, np.generic, np.ndarray)


def _weak_mask(obj):
    """For each leaf of ``tree_flatten(_tensorize(obj))``: whether it was a Python number.
    Such a leaf is weakly typed (as in JAX): when a loop body turns it into another dtype
    (``i + 0.5``, ``s + x.sum()`` with float64 ``x``), the loop var takes that dtype, as the
    Python value would in an eager loop."""
    leaves = pytree.tree_leaves(obj, leaf_types=(*_NOT_WEAK, bool, int, float))
    return [not isinstance(o, _NOT_WEAK) for o in leaves]


def _promote_weak(types, o_types, weak):
    """``types`` with each weak loop var's dtype (and rank) changed to the one the body returns
    for it (a Python number may become a tensor of any shape, as in eager code; unknown dims
    start as 1), or None when no weak loop var changed."""
    new, changed = list(types), False
    for i, (t, o) in enumerate(zip(types, o_types)):
        if weak[i] and (t.dtype != o.dtype or t.ndim != o.ndim):
            new[i] = TensorType(t.shape if t.ndim == o.ndim else [1 if d is None else d for d in o.shape], o.dtype)
            changed = True
    return new if changed else None


def _cast_leaves(b, leaves, in_names, types):
    """Cast (and broadcast) the initial loop vars whose type was promoted to their loop types."""
    for i, t in enumerate(types):
        have = b.block.lookup(in_names[i]).type
        if have.dtype != t.dtype or have.ndim != t.ndim:
            leaf = d.cast(leaves[i], t.dtype) if have.dtype != t.dtype else leaves[i]
            if have.ndim != t.ndim:
                leaf = d.broadcast_to(leaf, [1 if s is None else s for s in t.shape])
            leaves[i] = leaf
            in_names[i] = b.var_of(leaves[i])


def _is_weak(o):
    """A Python number (weakly typed, as in JAX); numpy scalars keep their dtype."""
    return isinstance(o, (bool, int, float)) and not isinstance(o, np.generic)


def _default_dtype(v):
    return "bool" if isinstance(v, bool) else "int64" if isinstance(v, int) else "float32"


def _tensorize_weak(obj, dtypes=None):
    """``obj`` with its Python numbers (and numpy values) as tensors, and, for each leaf of
    ``tree_flatten`` of the result, the Python number it was (None for a tensor).

    ``dtypes`` (one entry per leaf, None for "default") gives each Python number its dtype;
    without it a number gets d2s's default (float32, int64, bool)."""
    # the common results first (every eager cond and loop step comes through here)
    if isinstance(obj, Tensor):
        return obj, [None]
    if type(obj) in (tuple, list) and all(isinstance(o, Tensor) for o in obj):
        return obj, [None] * len(obj)
    weak = []

    def conv(o):
        if isinstance(o, Tensor):
            weak.append(None)
            return o
        if _is_weak(o):
            k = len(weak)
            weak.append(o)
            dt = dtypes[k] if dtypes is not None and k < len(dtypes) else None
            return tensor(o, dtype=dt)
        if isinstance(o, (np.generic, np.ndarray)):
            weak.append(None)
            return tensor(o)
        if pytree.is_registered(o):  # a TensorArray: its tensors as they are
            weak.extend([None] * len(tree_flatten(o)[0]))
        return o

    return pytree.tree_map(conv, obj, is_leaf=pytree.is_registered), weak


def _join_weak(branches):
    """The dtype each output leaf takes when the branches of a cond/switch give it: a Python
    number takes the dtype of the tensor the other branches return there (when it fits that
    dtype: an int fits a float tensor, a float does not fit an int tensor); numbers on every
    side combine as Python would (int and float give float32).

    ``branches`` is a list of ``(types, weak)``; returns one dtype or None per leaf (None: no
    Python number there, or dtypes that do not fit, which the caller reports)."""
    from d2s_runtime.dtypes import scalar_result
    targets = []
    for i in range(len(branches[0][0])):
        strong = {types[i].dtype for types, weak in branches if weak[i] is None}
        numbers = [weak[i] for _, weak in branches if weak[i] is not None]
        if not numbers or len(strong) > 1:
            targets.append(None)
        elif strong:
            (dt,) = strong
            targets.append(dt if all(scalar_result(dt, v) == dt for v in numbers) else None)
        else:
            dt = _default_dtype(numbers[0])
            for v in numbers[1:]:
                dt = scalar_result(dt, v)
            targets.append(dt)
    return targets


def _abstract(fn):
    """``(treedef, types, weak)`` of ``fn()``'s result (see ``_tensorize_weak``), traced into a
    throwaway block so nothing is computed; None when tracing it fails.

    Eager code uses it to learn the type a value would have in a program: the branch not
    taken, or a loop body on its initial carry (as a program builds it)."""
    b = STATE.builder
    scope = b.sub_block() if b is not None else ProgramBuilder()
    try:
        with scope, no_grad():
            out, weak = _tensorize_weak(fn())
            leaves, tree = tree_flatten(out)
            return tree, [_type_of(t) for t in leaves], weak
    except Exception:  # noqa: BLE001 - an untaken branch that cannot be traced: default dtypes
        return None


def _eager_branch(taken, others, operands):
    """Run branch ``taken``; its result as tensors, a Python number taking the dtype the other
    branches give that output (so eager code returns what a program would)."""
    out = taken(*operands)
    if isinstance(out, Tensor):
        return out
    conv, weak = _tensorize_weak(out)
    if weak.count(None) == len(weak):
        return conv
    leaves, tree = tree_flatten(conv)
    branches = [([_type_of(t) for t in leaves], weak)]
    for fn in others:
        info = _abstract(lambda fn=fn: fn(*operands))
        if info is not None and info[0] == tree:
            branches.append(info[1:])
    return _tensorize_weak(out, _join_weak(branches))[0]


_LEAF = (Tensor, bool, int, float, np.ndarray, np.generic)


def _same_structure(a, b):
    """Whether two carries have the same pytree structure, with tensors, arrays and Python
    numbers all as leaves (a TensorArray matches one of its own type, whatever it holds)."""
    a_leaves, a_def = pytree.tree_flatten(a, is_leaf=pytree.is_registered, leaf_types=_LEAF)
    b_leaves, b_def = pytree.tree_flatten(b, is_leaf=pytree.is_registered, leaf_types=_LEAF)
    if a_def != b_def:
        return False
    for x, y in zip(a_leaves, b_leaves):
        x_leaf, y_leaf = isinstance(x, _LEAF), isinstance(y, _LEAF)
        if x_leaf != y_leaf or (not x_leaf and type(x) is not type(y)):
            return False
    return True


def _check_carry(what, old, new):
    """Eager loops check the carry kept its structure (the final one against the initial
    one, so the check costs nothing per step), as a program must."""
    if not _same_structure(old, new):
        raise ControlFlowError(f"{what} must return a carry of the same structure as it takes: it takes "
                               f"{_describe(old)} and returns {_describe(new)}")


def _describe(o):
    leaves, treedef = pytree.tree_flatten(o, is_leaf=pytree.is_registered)
    return treedef.format([f"{x.dtype}{list(x.shape)}" if isinstance(x, Tensor) else repr(x) for x in leaves])


def _finish_carry(carry, step):
    """An eager loop's final carry as tensors: a Python number left in it gets the dtype a
    program gives it, that of ``step()`` (the body on the initial carry, traced abstractly)."""
    conv, weak = _tensorize_weak(carry)
    if all(w is None for w in weak):
        return conv
    info = _abstract(step)
    if info is None or info[0] != tree_flatten(conv)[1]:
        return conv
    targets = [t.dtype if w is not None else None for t, w in zip(info[1], weak)]
    return _tensorize_weak(carry, targets)[0]


def _weak_carry_types(types, weak, probe):
    """``types`` with each weak carry's dtype set to what the body makes of the Python number
    (``probe()``: the body's new carry from the initial one, Python numbers and all, traced
    abstractly). A loop carrying ``0`` that adds int32 tensors to it then carries int32, as
    eager code does."""
    if not any(weak):
        return types
    info = _abstract(probe)
    if info is None or len(info[1]) != len(types):
        return types
    return [TensorType(t.shape, o.dtype) if w and t.ndim == o.ndim else t
            for t, o, w in zip(types, info[1], weak)]


def _fmt_tree(treedef, types):
    """A readable form of a pytree of types, for error messages."""
    return treedef.format([str(t) for t in types])


# ------------------------------------------------------------------ helpers
def _is_symbolic(x):
    return isinstance(x, Tensor) and x.is_symbolic


def _type_of(t):
    if t.is_symbolic:
        return t._var.type
    return TensorType(t._data.shape, t._data.dtype.name)


def _widen(a, b):
    """The least type holding both ``a`` and ``b`` (dims that differ become unknown)."""
    return TensorType([x if x == y else None for x, y in zip(a.shape, b.shape)], a.dtype)


def _compatible(a, b):
    return a.dtype == b.dtype and a.ndim == b.ndim


def _builder():
    b = STATE.builder
    if b is None:
        raise RuntimeError("a symbolic tensor was used outside the program it belongs to")
    return b


def _sym(b, x):
    """The symbolic tensor in program ``b`` standing for op input ``x`` (for autograd edges)."""
    if x.is_symbolic:
        return x
    if b.reads_as_param(x):
        return b.param(x)
    return b.symbolic(b.program.block.lookup(b.constant(to_host(x._data))))


class _CFOp:
    """What ``autograd.node.record`` needs of an op: its name (the gradient rule's key)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def _record(name, op, inputs, outputs, **extra):
    """Attach an autograd node for control-flow op ``op`` when some input requires grad."""
    # In a forward-only build (to_static) nothing the caller passes requires grad, so an input
    # that does was made to inside the function (d2s.func.grad, d2s.grad): record it then too
    if not STATE.grad_enabled or not any(t.requires_grad for t in inputs):
        return
    record(_CFOp(name), tuple(inputs), {"op": op, **extra}, tuple(outputs))


def _trace_block(b, fn, in_types, convert_outputs=None):
    """Build ``fn`` into a fresh sub-block whose inputs have ``in_types``.

    Returns (block, output treedef, output leaves as names in the block, their types,
    captures {outer name: inner name})."""
    with b.sub_block() as blk:
        args = []
        for t in in_types:
            v = b._new_var(t)
            blk.inputs.append(v.name)
            args.append(b.symbolic(v))
        out = fn(args)
        if convert_outputs is not None:
            out = convert_outputs(out)
        leaves, treedef = tree_flatten(out)
        names = [b.var_of(t) for t in leaves]
        blk.outputs = names
        types = [blk.lookup(n).type for n in names]
    b.block_leaves[blk] = leaves
    return blk, treedef, names, types


# ------------------------------------------------------------------ in-place updates
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
        t._data, t._var = None, o._var
        t._version += 1
        _take_history(t, o)
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


def _merge_captures(b, blocks, n_explicit):
    """Give every block the same inputs: the explicit ones, then the union of all captures.

    Returns the outer names of the captures (in the current block) and their tensors."""
    # first-seen order, without a quadratic membership scan (programs may capture hundreds)
    order = list(dict.fromkeys(name for blk in blocks for name in b.captures.get(blk, {})))
    tensors = []
    for name in order:
        src = None
        for blk in blocks:
            found = b.capture_tensors.get(blk, {}).get(name)
            src = found if found is not None else src
        tensors.append(src)
    for blk in blocks:
        caps = b.captures.setdefault(blk, {})
        explicit = blk.inputs[:n_explicit]
        inner = []
        for name in order:
            if name not in caps:  # captured by another block only: an unused input here
                v = b._new_var(b.defined_in_var(name).type, blk)
                caps[name] = v.name
            inner.append(caps[name])
        blk.inputs = explicit + inner
    outer = [b.resolve(name, tensor=t) for name, t in zip(order, tensors)]
    tensors = [t if t is not None else b.symbolic(b.block.lookup(n)) for t, n in zip(tensors, outer)]
    return outer, tensors


def _new_outputs(b, types):
    vs = [b._new_var(t) for t in types]
    return vs, [b.symbolic(v) for v in vs]


# ------------------------------------------------------------------ cond
def cond(pred, true_fn, false_fn, *operands):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``.

    With a concrete ``pred`` this is a Python ``if``. With a symbolic ``pred`` (inside a program
    being built) both branches are traced into a ``cond`` op; they must return the same pytree
    structure with the same dtypes and ranks (dims that differ become unknown).

    Args:
        pred: a bool scalar (Python bool or one-element tensor).
        true_fn, false_fn: functions of ``*operands`` returning a pytree of tensors.
        operands: pytrees of tensors (and Python values, passed through unchanged).

    Python numbers among the outputs are weakly typed, as in JAX: one takes the dtype of the
    tensor the other branch returns in its place (``d2s.cond(p, lambda: 2., lambda: x)`` with
    float64 ``x`` gives float64), and the result is always a tensor, eagerly too (the branch
    not taken is then traced, without computing anything, to learn that dtype).

    Returns:
        The selected branch's result, with Python numbers as tensors.
    """
    if not _is_symbolic(pred):
        taken, other = (true_fn, false_fn) if pred else (false_fn, true_fn)
        return _eager_branch(taken, [other], operands)
    return _static_cond(pred, true_fn, false_fn, operands)


def _as_pred(pred, what):
    t = pred._var.type
    if any(s != 1 for s in t.shape):
        raise ControlFlowError(f"{what}: the predicate must be a scalar (one element), got a tensor of type {t}")
    if t.ndim:
        pred = d.reshape(pred, [])
    if t.dtype != "bool":
        pred = d.ne(pred, 0)
    return pred


def _static_cond(pred, true_fn, false_fn, operands, patches=None):
    """The ``cond`` op. ``patches``: a dict in which ``false_fn`` may leave ``"tree"``, the new
    output treedef of the true block after it added outputs to it (converted code turning a
    Python number of the true branch into a tensor, see ``d2s.convert.control_flow``)."""
    b = _builder()
    pred = _as_pred(pred, "d2s.cond")
    leaves, treedef = tree_flatten(operands)
    in_names = [b.var_of(t) for t in leaves]
    in_types = [b.block.lookup(n).type for n in in_names]

    (then_blk, t_tree, t_types), (else_blk, e_tree, e_types) = _trace_branches(
        b, [true_fn, false_fn], treedef, in_types)
    if patches and "tree" in patches:
        t_tree, t_types = patches["tree"], [then_blk.lookup(n).type for n in then_blk.outputs]
    if t_tree != e_tree or len(t_types) != len(e_types) or not all(
            _compatible(x, y) for x, y in zip(t_types, e_types)):
        raise ControlFlowError(
            "d2s.cond: the branches return different types:\n"
            f"  true_fn  returns {_fmt_tree(t_tree, t_types)}\n"
            f"  false_fn returns {_fmt_tree(e_tree, e_types)}\n"
            "both branches must return the same structure of tensors with the same dtypes and ranks "
            "(cast one branch, or return the same number of values from both)")
    n_out = len(t_types)
    objs = _inplace_outputs(b, [then_blk, else_blk])
    per_block, pairs, unknown = _alias_flags(b, [then_blk, else_blk], n_out)
    t_types = t_types + [then_blk.lookup(n).type for n in then_blk.outputs[n_out:]]
    e_types = e_types + [else_blk.lookup(n).type for n in else_blk.outputs[n_out:]]
    out_types = [_widen(x, y) for x, y in zip(t_types, e_types)]
    cap_names, cap_tensors = _merge_captures(b, [then_blk, else_blk], len(in_names))
    out_vars, outs = _new_outputs(b, out_types)
    op = Op("cond", [b.var_of(pred), *in_names, *cap_names], [v.name for v in out_vars],
            {}, {"then": then_blk, "else": else_blk})
    b.append_op(op)
    _record("cond", op, [pred, *[_sym(b, t) for t in leaves], *cap_tensors], outs)
    _repoint(b, objs, outs[n_out:n_out + len(objs)])
    outs = _kept_objects(b, per_block, outs[:n_out], pred, pairs, outs[n_out + len(objs):], unknown)
    views.join_branches(b, per_block, outs, pred)  # (views of one root in both branches stay views)
    return tree_unflatten(t_tree, outs)


def _trace_branches(b, fns, treedef, in_types, targets=None):
    """Trace each branch function into a sub-block; returns ``[(block, out treedef, out types)]``.

    Python numbers among the outputs become tensors of the dtype the other branches give
    that output (see ``_join_weak``): when the first tracing shows a number whose default
    dtype differs, the branches are traced again with the joined dtypes."""
    traced, weaks = [], []
    for fn in fns:
        weak = []

        def outputs(out, weak=weak):
            conv, w = _tensorize_weak(out, targets)
            weak.extend(w)
            return conv

        blk, tree, _, types = _trace_block(b, lambda args, fn=fn: fn(*tree_unflatten(treedef, args)),
                                           in_types, outputs)
        traced.append((blk, tree, types))
        weaks.append(weak)
    if targets is None and any(any(w is not None for w in weak) for weak in weaks) and \
            all(t[1] == traced[0][1] and len(t[2]) == len(traced[0][2]) for t in traced):
        joined = _join_weak([(t[2], w) for t, w in zip(traced, weaks)])
        if any(dt is not None and t[2][i].dtype != dt for t in traced for i, dt in enumerate(joined)):
            return _trace_branches(b, fns, treedef, in_types, joined)
    return traced


# ------------------------------------------------------------------ while
def while_loop(cond_fn, body_fn, loop_vars):
    """Run ``body_fn`` while ``cond_fn`` holds; returns the final loop vars.

    This is Paddle's convention (``paddle.static.nn.while_loop``): ``loop_vars`` is a list or
    tuple of loop vars (each a tensor, Python number or pytree of them), passed to the
    functions as separate arguments: ``cond_fn(*loop_vars)`` returns a bool scalar and
    ``body_fn(*loop_vars)`` returns the new loop vars, a sequence of the same length and
    structure (a single value is accepted when there is one loop var). Any other
    ``loop_vars`` (a tensor, a dict, a namedtuple) is passed as one argument:
    ``cond_fn(loop_vars)``, ``body_fn(loop_vars)``. JAX's convention, where a tuple carry is
    one argument too, is ``d2s.lax.while_loop(cond_fun, body_fun, init_val)``.

    While the condition is a Python value the loop runs in Python (inside a program, that
    unrolls it); once it is symbolic, a ``while`` op is built. Loop vars whose shapes change
    from one iteration to the next get unknown dims. A loop var given as a Python number is
    weakly typed: it takes the dtype the body makes of it (``0`` plus int32 tensors carries
    int32), and comes back as a tensor.

    Returns:
        The loop vars after the last iteration, with the structure of ``loop_vars``.
    """
    packed = isinstance(loop_vars, (list, tuple)) and not hasattr(loop_vars, "_fields")
    kind = type(loop_vars) if packed else None
    vals = list(loop_vars) if packed else [loop_vars]
    call_cond = (lambda v: cond_fn(*v)) if packed else (lambda v: cond_fn(v[0]))

    def call_body(v):
        out = body_fn(*v) if packed else body_fn(v[0])
        if not packed:
            return [out]
        if len(v) == 1 and not (isinstance(out, (list, tuple)) and len(out) == 1):
            return [out]
        if not isinstance(out, (list, tuple)) or len(out) != len(v):
            raise ControlFlowError(f"d2s.while_loop: body_fn must return {len(v)} loop vars (as a list or "
                                   f"tuple), got {type(out).__name__}"
                                   f"{f' of length {len(out)}' if isinstance(out, (list, tuple)) else ''}")
        return list(out)

    vals = run_while(call_cond, call_body, vals, "d2s.while_loop")
    if not packed:
        return vals[0]
    return kind(vals) if kind in (list, tuple) else kind(*vals)


def run_while(call_cond, call_body, vals, what):
    """The loop of ``while_loop`` over the list ``vals``: ``call_cond(vals)`` and
    ``call_body(vals) -> new list``. Python iterations while the condition is concrete, then a
    ``while`` op; an eager result has its Python numbers as tensors (see ``_finish_carry``)."""
    init = vals
    while True:
        p = _probe(call_cond, vals)
        if _is_symbolic(p):
            return _static_while(call_cond, call_body, vals)
        if not p:
            break
        vals = call_body(vals)
    _check_carry(f"{what}: body_fn", init, vals)
    return _finish_carry(vals, lambda: call_body(init))


def _probe(call_cond, vals):
    """The loop condition on ``vals``; inside a program it is traced into a throwaway block
    (when symbolic, the ``while`` op's own condition block recomputes it)."""
    b = STATE.builder
    if b is None:
        return call_cond(vals)
    with b.sub_block():
        return call_cond(vals)


class _PeelFirst(Exception):
    """The body updates in place a tensor that it then stops holding (``a += x; a = a * 2``):
    the first iteration updates the loop's entry tensor, later ones tensors of the loop's own."""

    def __init__(self, error):
        self.error = error


def _static_while(call_cond, call_body, vals, private=None, entry_flags=None):
    """The ``while`` op. ``private``: ids of loop-var tensors made for this loop alone (the
    results of its peeled first iteration), which no name outside it holds. ``entry_flags``:
    see ``_ObjectCarry``; by default the builder's ``entry_flags`` (set by the converted loop
    that called ``while_loop``, see ``d2s.convert.loops``), which loops nested in the body
    set for themselves."""
    if entry_flags is None:
        b = _builder()
        entry_flags = getattr(b, "entry_flags", None)
        b.entry_flags = None
    try:
        return _build_while(call_cond, call_body, vals, private, entry_flags)
    except _PeelFirst as p:
        if private is not None:
            raise p.error from None
        error = p.error
    # the first iteration runs on its own under a `cond` on the loop test; the loop then runs
    # on tensors of its own, which later iterations may update and drop as they like
    leaves, treedef = tree_flatten(_tensorize(vals))
    before = {id(t) for t in leaves}
    go = _as_pred_value(call_cond(tree_unflatten(treedef, leaves)))
    try:  # (each side on its own containers, rebuilt from the same tensors)
        first = cond(go, lambda: list(call_body(tree_unflatten(treedef, leaves))),
                     lambda: tree_unflatten(treedef, leaves))
    except ControlFlowError:
        raise error from None
    mine = {id(t) for t in tree_flatten(first)[0] if id(t) not in before}
    return _static_while(call_cond, call_body, first, mine, entry_flags)


def _build_while(call_cond, call_body, vals, private, entry_flags):
    b = _builder()
    weak = _weak_mask(vals)
    raw = vals
    vals = _tensorize(vals)
    leaves, treedef = tree_flatten(vals)
    weak = weak if len(weak) == len(leaves) else [False] * len(leaves)
    in_names = [b.var_of(t) for t in leaves]
    types = [b.block.lookup(n).type for n in in_names]
    types = _weak_carry_types(types, weak, lambda: call_body(raw))
    n = len(leaves)
    carried = _ObjectCarry(b, leaves, weak, private or (), entry_flags)
    for _ in range(_MAX_WIDEN):
        def cond_of(args):
            return _as_pred_value(call_cond(tree_unflatten(treedef, carried.enter(args))))

        def body_of(args):
            ins = tree_unflatten(treedef, carried.enter(args))
            out = _tensorize(call_body(ins), like=ins)
            return out, carried.extra_values(), carried.flag_values(tree_flatten(out)[0])

        all_types = types + carried.extra_types()
        cond_blk, c_tree, _, c_types = _trace_block(b, cond_of, all_types)
        body_blk, o_tree, _, o_types = _trace_block(b, body_of, all_types)
        carried.check_condition(cond_blk)
        if carried.share_updated() or carried.found_new(body_blk) or carried.split_classes(body_blk) or \
                carried.split_aliases(body_blk):
            continue  # more tensor objects to carry, or fewer to share: rebuild
        o_tree, o_types = o_tree.children[0], o_types[:n]
        promoted = _promote_weak(types, o_types, weak) if o_tree == treedef else None
        if promoted is not None:
            types = promoted  # a loop var that was a Python number changed dtype: rebuild
            continue
        if o_tree != treedef or len(o_types) != len(types) or not all(
                _compatible(x, y) for x, y in zip(types, o_types)):
            raise ControlFlowError(
                "d2s.while_loop: body_fn must return loop vars of the same structure, dtypes and ranks as "
                "it takes:\n"
                f"  loop vars  {_fmt_tree(treedef, types)}\n"
                f"  body_fn returns {_fmt_tree(o_tree, o_types)}\n"
                "cast the new values to the loop vars' dtypes (a loop var's shape may change; its dtype "
                "and rank may not)")
        if len(c_types) != 1 or c_types[0].dtype != "bool" or c_types[0].ndim != 0:
            raise ControlFlowError(f"d2s.while_loop: cond_fn must return one bool scalar, got "
                                   f"{_fmt_tree(c_tree, c_types)}")
        widened = [_widen(t, o) for t, o in zip(types, o_types)]
        if widened == types:
            break
        types = widened  # a loop var changed shape: rebuild with the changing dims unknown
    else:
        raise ControlFlowError(f"d2s.while_loop: the loop vars' types did not settle after {_MAX_WIDEN} "
                               f"rebuilds of the body ({_fmt_tree(treedef, types)})")
    kept = carried.check_body(body_blk)
    _cast_leaves(b, leaves, in_names, types)
    extra_names = [b.var_of(t) for t in carried.extra + carried.flag_init]
    all_types = types + carried.extra_types()
    cap_names, cap_tensors = _merge_captures(b, [cond_blk, body_blk], len(in_names) + len(extra_names))
    out_vars, outs = _new_outputs(b, all_types)
    op = Op("while", [*in_names, *extra_names, *cap_names], [v.name for v in out_vars], {},
            {"cond": cond_blk, "body": body_blk})
    b.append_op(op)
    _record("while", op, [*[_sym(b, t) for t in leaves + carried.extra + carried.flag_init], *cap_tensors], outs)
    # the loop vars' outside objects updated in place take their final value; so do the
    # outside tensors the body updated through another name (the extra loop vars)
    mutated = [(carried.objs[i], outs[i]) for i in carried.mutated_reps]
    ne = len(carried.extra)
    _repoint(b, [t for t, _ in mutated] + carried.extra, [o for _, o in mutated] + outs[n:n + ne])
    results = [carried.objs[i] if i in kept else o for i, o in enumerate(outs[:n])]
    for i, r in enumerate(carried.rep):
        if r is not None and r != i:  # one object in every iteration (split_classes): one result
            results[i] = results[r]
    views.loop_results(results, carried.body_out)  # (a name the body binds to a view)
    for (i, t), f in zip(carried.flags, outs[n + ne:]):
        # a name that may hold tensor object t (or the tensor loop var t holds) after an
        # iteration (see _ObjectCarry.split_aliases)
        b.link_maybe_alias(results[i], results[t] if isinstance(t, int) else t, f)
    own_flag = {i for i, t in carried.flags if t is carried.objs[i]}
    for i in sorted(carried.unsure - own_flag):
        # rebound on some runs only, no flag carried (nothing after the loop in the converted
        # function updates a tensor in place): an in-place update through it refuses
        b.link_maybe_alias(results[i], carried.objs[i], None)
    for i, j in carried.joined:
        # bound inside the body to a tensor the body updates: that tensor after a run of one
        # iteration or more, the name's own before-loop tensor after a run of none
        b.link_maybe_alias(results[i], j, None)
    return tree_unflatten(treedef, results)


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
        t._data, t._var, t.requires_grad, t.grad_fn, t._out_idx = None, a._var, False, None, 0
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


def _alias_error(message):
    return at_user_line(message)


def _as_pred_value(p):
    """A condition as one bool scalar tensor (a Python bool becomes a constant)."""
    if not isinstance(p, Tensor):
        p = tensor(bool(p))
    if not p.is_symbolic:
        return p if p.dtype == "bool" and p.ndim == 0 else tensor(bool(p))
    return _as_pred(p, "d2s.while_loop")


# ------------------------------------------------------------------ scan
def scan(fn, init, xs=None, length=None, reverse=False):
    """Loop ``fn`` over the leading axis of ``xs``, carrying a value (like ``jax.lax.scan``).

    ``fn(carry, x) -> (new_carry, y)``; returns ``(final_carry, ys)`` with the ``y``s stacked
    along a new leading axis. ``carry``, ``xs`` and ``y`` may be pytrees of tensors (or None,
    or empty tuples and dicts); ``xs`` may be None when ``length`` is given. numpy arrays and
    (nested) lists of numbers in ``xs`` are scanned like tensors. With ``reverse=True`` the
    steps run from the last element to the first (``ys`` keep the order of ``xs``).

    A carry given as a Python number is weakly typed: it takes the dtype the step makes of
    it (``0`` plus int32 slices carries int32), and comes back as a tensor; the new carry must
    keep the structure of the old one.

    Eagerly (no symbolic input) this is a Python loop; inside a program it builds one ``scan``
    op, whatever the length (which may be unknown).
    """
    return _scan(fn, init, xs, length, reverse, "d2s.scan")


def _scan(fn, init, xs, length, reverse, what, static=False):
    """``scan``; ``static`` builds the op inside a program even when every input is concrete
    (``fori_loop`` and ``map`` stay loops whatever they capture)."""
    xs = _as_scanned(xs)
    x_leaves, x_tree = tree_flatten(xs)
    c_leaves, _ = tree_flatten(init)
    if STATE.builder is not None and (static or any(_is_symbolic(t) for t in x_leaves + c_leaves)):
        return _static_scan(fn, init, xs, length, reverse, what)
    return _py_scan(fn, init, xs, length, reverse, what)


def _as_scanned(xs):
    """``xs`` with numpy arrays and lists of numbers (nested, rectangular) as tensors; tuples,
    dicts and lists holding tensors stay pytrees."""
    def numbers_only(o):
        if isinstance(o, list):
            return all(numbers_only(x) for x in o)
        return isinstance(o, (bool, int, float, np.generic))

    def is_leaf(o):
        return pytree.is_registered(o) or (isinstance(o, list) and len(o) > 0 and numbers_only(o))

    def conv(o):
        if isinstance(o, (np.ndarray, np.generic, list)):
            return tensor(o)
        return o

    return pytree.tree_map(conv, xs, is_leaf=is_leaf)


def _py_scan(fn, init, xs, length, reverse, what="d2s.scan"):
    x_leaves, x_tree = tree_flatten(xs)
    for x in x_leaves:
        if x.ndim == 0:
            raise ControlFlowError(f"{what}: every x must have a leading axis to scan over, got a 0-d {x.dtype} "
                                   "tensor")
    n = _scan_length(x_leaves, length)
    carry = init
    ys = [None] * n
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        out = fn(carry, tree_unflatten(x_tree, [x[t] for x in x_leaves]))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise ControlFlowError(f"{what}: fn(carry, x) must return a pair (new_carry, y)")
        carry, ys[t] = out
    _check_carry(f"{what}: fn", init, carry)

    def step():  # the step on the initial carry, traced into a throwaway block
        b = STATE.builder
        x0 = [b.symbolic(b._new_var(TensorType(x.shape[1:], str(x.dtype)))) for x in x_leaves]
        return fn(init, tree_unflatten(x_tree, x0))[0]

    carry = _finish_carry(carry, step)
    conv = [_tensorize_weak(y) for y in ys]
    if n == 0 or any(w is not None for _, weak in conv for w in weak):
        # the ys' dtypes where no step gave a tensor (no step at all, or Python numbers): those
        # of the step on the final carry, as the program's body computes them
        def y_step():
            b = STATE.builder
            c_leaves, c_tree = tree_flatten(carry)
            c_sym = [b.symbolic(b._new_var(_type_of(t))) for t in c_leaves]
            x0 = [b.symbolic(b._new_var(TensorType(x.shape[1:], str(x.dtype)))) for x in x_leaves]
            return fn(tree_unflatten(c_tree, c_sym), tree_unflatten(x_tree, x0))[1]

        info = _abstract(y_step)
        if n == 0:
            return carry, _empty_ys(fn, init, x_leaves, x_tree, info)
        steps = [([_type_of(t) for t in tree_flatten(c)[0]], weak) for c, weak in conv]
        if all(len(t) == len(steps[0][0]) for t, _ in steps):
            if info is not None and len(info[1]) == len(steps[0][0]):
                steps.append((info[1], [None] * len(info[1])))
            targets = _join_weak(steps)
            conv = [_tensorize_weak(y, targets) for y in ys]
    y_tree = tree_flatten(conv[0][0])[1]
    cols = list(zip(*[tree_flatten(c)[0] for c, _ in conv]))
    return carry, tree_unflatten(y_tree, [d.stack(list(c)) for c in cols])


def _empty_ys(fn, init, x_leaves, x_tree, info):
    """The stacked ys of a scan of no steps: empty tensors of the types a step gives."""
    if info is not None and all(None not in t.shape for t in info[1]):
        return tree_unflatten(info[0], [d.zeros([0, *t.shape], dtype=t.dtype) for t in info[1]])
    # (a step whose ys' shapes depend on data: learn them from one step on zeros)
    with no_grad():
        _, y0 = fn(init, tree_unflatten(x_tree, [d.zeros(list(x.shape[1:]), dtype=x.dtype) for x in x_leaves]))
    y_leaves, y_tree = tree_flatten(_tensorize(y0))
    return tree_unflatten(y_tree, [d.zeros([0, *y.shape], dtype=y.dtype) for y in y_leaves])


def _scan_length(x_leaves, length):
    lens = {int(x.shape[0]) for x in x_leaves if not isinstance(x.shape[0], Tensor)}
    if length is not None:
        lens.add(int(length))
    if len(lens) > 1:
        raise ControlFlowError(f"d2s.scan: xs have different leading dims {sorted(lens)} (and length={length})")
    if not lens:
        raise ControlFlowError("d2s.scan: give xs (tensors scanned along axis 0) or length")
    return lens.pop()


def _static_scan(fn, init, xs, length, reverse, what="d2s.scan"):
    b = _builder()
    weak = _weak_mask(init)
    raw_init = init
    init = _tensorize(init)
    c_leaves, c_tree = tree_flatten(init)
    weak = weak if len(weak) == len(c_leaves) else [False] * len(c_leaves)
    x_leaves, x_tree = tree_flatten(xs)
    c_names = [b.var_of(t) for t in c_leaves]
    x_names = [b.var_of(t) for t in x_leaves]
    x_types = [b.block.lookup(n).type for n in x_names]
    for t in x_types:
        if t.ndim == 0:
            raise ControlFlowError(f"{what}: every x must have a leading axis to scan over, got a 0-d {t}")
    lens = {t.shape[0] for t in x_types if t.shape[0] is not None}
    if length is not None:
        lens.add(int(length))
    if len(lens) > 1:
        raise ControlFlowError(f"{what}: xs have different leading dims {sorted(lens)}")
    if not x_types and length is None:
        raise ControlFlowError(f"{what}: give xs (tensors scanned along axis 0) or length")
    n = lens.pop() if lens else None
    slice_types = [TensorType(t.shape[1:], t.dtype) for t in x_types]
    types = [b.block.lookup(nm).type for nm in c_names]

    def step():  # the step on the initial carry, traced into a throwaway block
        x0 = [b.symbolic(b._new_var(t)) for t in slice_types]
        return fn(raw_init, tree_unflatten(x_tree, x0))[0]

    types = _weak_carry_types(types, weak, step)
    nc = len(types)
    y_tree = None
    for _ in range(_MAX_WIDEN):
        def body_of(args):
            carry = tree_unflatten(c_tree, args[:nc])
            out = fn(carry, tree_unflatten(x_tree, args[nc:]))
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise ControlFlowError(f"{what}: fn(carry, x) must return a pair (new_carry, y)")
            return (_tensorize(out[0], like=carry), _tensorize(out[1]))

        blk, o_tree, _, o_types = _trace_block(b, body_of, types + slice_types)
        b.block_leaves.pop(blk, None)
        if b.inplace_writes.pop(blk, None):
            raise _alias_error(f"{what}: fn updates in place a tensor from outside it; return the new value "
                               "as part of the carry instead")
        c_out_tree = o_tree.children[0]
        promoted = _promote_weak(types, o_types[:nc], weak) if c_out_tree == c_tree else None
        if promoted is not None:
            types = promoted  # a carry that was a Python number changed dtype: rebuild
            continue
        if c_out_tree != c_tree or not all(_compatible(x, y) for x, y in zip(types, o_types[:nc])):
            raise ControlFlowError(
                f"{what}: fn must return a carry of the same structure, dtypes and ranks as it takes:\n"
                f"  carry        {_fmt_tree(c_tree, types)}\n"
                f"  fn returns   {_fmt_tree(c_out_tree, o_types[:c_out_tree.num_leaves])}")
        y_tree = o_tree.children[1]
        widened = [_widen(t, o) for t, o in zip(types, o_types[:nc])]
        if widened == types:
            break
        types = widened
    else:
        raise ControlFlowError(f"{what}: the carry's types did not settle after {_MAX_WIDEN} rebuilds")
    _cast_leaves(b, c_leaves, c_names, types)
    y_types = [TensorType((n,) + tuple(t.shape), t.dtype) for t in o_types[nc:]]
    cap_names, cap_tensors = _merge_captures(b, [blk], nc + len(x_names))
    out_vars, outs = _new_outputs(b, types + y_types)
    attrs = {"n_carry": nc, "n_xs": len(x_names), "reverse": bool(reverse)}
    if not x_names:
        attrs["length"] = int(length)
    op = Op("scan", [*c_names, *x_names, *cap_names], [v.name for v in out_vars], attrs, {"body": blk})
    b.append_op(op)
    _record("scan", op, [*[_sym(b, t) for t in c_leaves], *[_sym(b, t) for t in x_leaves], *cap_tensors], outs)
    return tree_unflatten(c_tree, outs[:nc]), tree_unflatten(y_tree, outs[nc:])
