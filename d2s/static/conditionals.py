"""The branches' family: ``d2s.cond``'s and ``d2s.switch``'s builders, and every rule of the
``cond`` and ``switch`` ops on the d2s side, declared here under its name as any op's are: how replay rebuilds it, its gradient, how
reach flags pass through it, its ONNX form, and a sample call (the op's runtime rules are in
``d2s_runtime/ops/control_flow.py``).

``cond`` is a public dispatcher with two halves (like AutoGraph's operators): with a concrete
predicate (a Python value, or a tensor holding data) it is plain Python, so eager autograd
sees the ops that ran; with a symbolic predicate, inside a program being built, it builds a
``cond`` op whose two blocks hold the traced branch functions. Values the functions read from
enclosing blocks become explicit op inputs (captures).
"""
import numpy as np

from d2s_runtime.ir import Op
from d2s_runtime.ops.control_flow import SWITCH_LAYOUT

from .. import ops as d, views
from ..autograd.registry import defgrad, float_cotangents_only, sample_call
from ..onnx.export import GraphCtx, ValueType
from ..onnx.registry import i64, onnx_structured
from ..pytree import tree_unflatten
from ..tensor import Tensor
from .cf_common import (ControlFlowError, _as_pred, _builder, _compatible, _index_dtype, _is_symbolic,
                        _merge_captures, _new_outputs, _record, _sym, _trace_block, _widen, tree_flatten)
from .control_flow_grad import _is_float, _wants_grad, block_vjp
from .object_identity import _alias_flags, _inplace_outputs, _kept_objects, _outside, _repoint, alias_targets
from .reach import _Emitter, _and, _flag, _not, _or, _own, _static, _sub_reach
from .registry import reach_rule, replay_rule
from .replay import replay_block
from .weak_types import _abstract, _eager_branch, _fmt_tree, _join_weak, _tensorize_weak

__all__ = ["cond", "static_cond", "switch", "static_switch"]


# ------------------------------------------------------------------ the builder
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
    return static_cond(pred, true_fn, false_fn, operands)


def static_cond(pred, true_fn, false_fn, operands, patches=None):
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


def switch(index, branches, *operands):
    """``branches[index](*operands)`` (like ``jax.lax.switch``).

    ``index`` is an integer scalar (Python int or tensor); it is clamped into
    ``[0, len(branches) - 1]``, as JAX does, so an out-of-range index picks the first or last
    branch. With a concrete index only that branch runs; with a symbolic one every branch is
    traced into a block of one ``switch`` op. The branches must return the same pytree
    structure with the same dtypes and ranks; Python numbers among the outputs take the dtype
    the other branches give (the result is always a tensor, as for ``d2s.cond``).

    Returns:
        The selected branch's result.
    """
    branches = list(branches)
    if not branches:
        raise ControlFlowError("d2s.switch: give at least one branch")
    for k, f in enumerate(branches):
        if not callable(f):
            raise ControlFlowError(f"d2s.switch: branch {k} is not callable ({type(f).__name__})")
    dtype = _index_dtype("d2s.switch", index) if not isinstance(index, (bool, np.bool_)) else "int64"
    n = len(branches)
    if not _is_symbolic(index):
        k = min(max(int(index), 0), n - 1)
        return _eager_branch(branches[k], branches[:k] + branches[k + 1:], operands)
    if n == 1:
        return _eager_branch(branches[0], [], operands)
    return static_switch(d.cast(index, dtype), branches, operands)


def _typed_branches(branches, operands):
    """The branches returning tensors of the dtypes joined over all of them (a Python number
    takes the dtype the other branches give that output), so every ``cond`` of the tree
    sees matching dtypes."""
    infos = [_abstract(lambda f=f: f(*operands)) for f in branches]
    targets = None
    if all(i is not None for i in infos):
        first = infos[0]
        for k, info in enumerate(infos[1:], 1):
            if info[0] != first[0] or [t.ndim for t in info[1]] != [t.ndim for t in first[1]]:
                raise ControlFlowError(
                    "d2s.switch: the branches return different types:\n"
                    f"  branch 0 returns {_fmt_tree(first[0], first[1])}\n"
                    f"  branch {k} returns {_fmt_tree(info[0], info[1])}\n"
                    "every branch must return the same structure of tensors with the same dtypes and ranks")
        if any(w is not None for i in infos for w in i[2]):
            targets = _join_weak([(i[1], i[2]) for i in infos])
    return [lambda *ops, f=f: _tensorize_weak(f(*ops), targets)[0] for f in branches]


def static_switch(index, branches, operands):
    """The ``switch`` op: every branch traced into a block of its own, ``index`` (an integer
    scalar tensor, clamped by the op) picking one. Where a branch updates a tensor from outside
    in place, returns one (or a view of one), or may alias one, the branches are instead
    chosen by a balanced tree of ``cond`` ops, which keep eager code's objects as ``cond`` does."""
    b = _builder()
    wrapped = _typed_branches(branches, operands)
    leaves, treedef = tree_flatten(operands)
    in_names = [b.var_of(t) for t in leaves]
    in_types = [b.block.lookup(n).type for n in in_names]
    traced = _trace_branches(b, wrapped, treedef, in_types)
    first_tree, first_types = traced[0][1], traced[0][2]
    for k, (_, tree, types) in enumerate(traced[1:], 1):
        if tree != first_tree or len(types) != len(first_types) or not all(
                _compatible(x, y) for x, y in zip(first_types, types)):
            raise ControlFlowError(
                "d2s.switch: the branches return different types:\n"
                f"  branch 0 returns {_fmt_tree(first_tree, first_types)}\n"
                f"  branch {k} returns {_fmt_tree(tree, types)}\n"
                "every branch must return the same structure of tensors with the same dtypes and ranks")
    blocks = [blk for blk, _, _ in traced]
    if not _values_only(b, blocks, len(first_types)):
        for blk in blocks:  # (the blocks are dropped: the tree of conds traces the branches again)
            b.inplace_writes.pop(blk, None)
            b.block_leaves.pop(blk, None)
        return _switch_by_conds(index, wrapped, operands)
    for blk in blocks:
        b.block_leaves.pop(blk, None)
    out_types = list(first_types)
    for _, _, types in traced[1:]:
        out_types = [_widen(x, y) for x, y in zip(out_types, types)]
    cap_names, cap_tensors = _merge_captures(b, blocks, len(in_names))
    out_vars, outs = _new_outputs(b, out_types)
    op = Op("switch", [b.var_of(index), *in_names, *cap_names], [v.name for v in out_vars],
            {"branches": len(blocks)}, {f"branch{j}": blk for j, blk in enumerate(blocks)})
    b.append_op(op)
    _record("switch", op, [index, *[_sym(b, t) for t in leaves], *cap_tensors], outs)
    return tree_unflatten(first_tree, outs)


def _values_only(b, blocks, n_out):
    """Whether the branches' results are new values only: no tensor from outside a branch is
    updated in place in it, returned as it is, returned as a view, or may be one of its results
    through a maybe-alias link (those need ``cond``'s object tracking)."""
    for blk in blocks:
        if b.inplace_writes.get(blk):
            return False
        leaves = b.block_leaves.get(blk)
        if leaves is None:
            return False
        for t in leaves[:n_out]:
            if not isinstance(t, Tensor):
                continue
            if _outside(b, t) or t._view is not None:
                return False
            if b.maybe_aliases and alias_targets(b, t, blk, lambda x, t=t: x is not t):
                return False
    return True


def _switch_by_conds(index, wrapped, operands):
    """``switch`` as a balanced tree of ``cond`` ops on the clamped index."""
    n = len(wrapped)
    index = d.clip(index, 0, n - 1)

    def pick(lo, hi):
        if hi - lo == 1:
            return wrapped[lo]
        mid = (lo + hi) // 2
        left, right = pick(lo, mid), pick(mid, hi)
        return lambda *ops: cond(index < mid, left, right, *ops)

    return pick(0, n)(*operands)


# ------------------------------------------------------------------ the op's rules
@replay_rule("cond")
def _cond_replay(op, args):
    """The builder again, its branches replaying the op's blocks."""
    then_blk, else_blk = op.blocks["then"], op.blocks["else"]
    out = cond(args[0], lambda *a: tuple(replay_block(then_blk, a)),
               lambda *a: tuple(replay_block(else_blk, a)), *args[1:])
    return list(out)


def _branches_grad(ctx, gs, build):
    """The gradient of a branching op (``cond``, ``switch``): the same op again, built by
    ``build(branch_fns, *operands)``, each branch the VJP of its block for the float cotangents
    ``gs``; input 0 (the predicate or index) gets none."""
    args = list(ctx.inputs[1:])
    wrt = [i for i, a in enumerate(args) if _wants_grad(a)]
    if not wrt:
        return (None,) * len(ctx.inputs)
    n = len(args)
    cots = [g if _is_float(g) else None for g in gs]
    cot_pos = [k for k, g in enumerate(cots) if g is not None]

    def branch(block):
        def f(*vals):
            cs = [None] * len(cots)
            for k, v in zip(cot_pos, vals[n:]):
                cs[k] = v
            return tuple(block_vjp(block, vals[:n], cs, wrt))
        return f

    res = build(branch, *args, *[cots[k] for k in cot_pos])
    out = [None] * len(ctx.inputs)
    for i, g in zip(wrt, res):
        out[1 + i] = g
    return tuple(out)


@defgrad("cond")
def _cond_grad(ctx, *gs):
    """A ``cond`` over the two branches' gradients (each the VJP of its block)."""
    blocks = ctx.attrs["op"].blocks
    return _branches_grad(ctx, gs, lambda branch, *ops: cond(ctx.inputs[0], branch(blocks["then"]),
                                                              branch(blocks["else"]), *ops))


float_cotangents_only("cond")


@reach_rule("cond")
def _cond_reach(block, op, outs, flow, namer):
    """A ``cond`` selects its branch's reachability with its predicate; where a branch's own
    reachability depends on a nested predicate, the branch computes it and the ``cond``
    returns it as an extra output."""
    pred = op.inputs[0]
    then_b, else_b = op.blocks["then"], op.blocks["else"]
    d_then, d_else = _sub_reach(then_b, namer), _sub_reach(else_b, namer)
    emit_then, emit_else = _Emitter(then_b, namer), _Emitter(else_b, namer)
    for j, name in enumerate(op.inputs[1:]):
        for k, ks in enumerate(outs):
            if not ks:
                continue
            e_t = d_then.get(j, {}).get(k, False)
            e_e = d_else.get(j, {}).get(k, False)
            if _static(e_t) and _static(e_e):
                when = _or(_and(pred, e_t), _and(_not(pred), e_e))
            else:
                # the branch decides: each computes its flag and the cond returns the taken one's
                then_b.outputs.append(_own(then_b, emit_then(e_t), namer))
                else_b.outputs.append(_own(else_b, emit_else(e_e), namer))
                when = _flag(block, namer)
                op.outputs.append(when)
            flow(name, ks, when)


@onnx_structured("cond")
def _cond_onnx(ex, g, op):
    """``If``: both branches become subgraphs; a branch's inputs (the operands, then the
    captures) are bound by ``Identity`` to the outer values, which ONNX subgraphs may read."""
    bound = op.inputs[1:]
    then_g, _ = ex.subgraph(g, op.blocks["then"], bound, ex.fresh() + "_then")
    else_g, _ = ex.subgraph(g, op.blocks["else"], bound, ex.fresh() + "_else")
    g.node("If", [g.cast(op.inputs[0], "bool")], op.outputs, then_branch=then_g, else_branch=else_g)


# (an example call: the registry test converts it, the ONNX test exports it)
def cond_sample(x):
    """A ``cond`` on a tensor predicate, one branch squaring its operand, the other shifting it."""
    return cond(x.sum() > 0, lambda v: v * v, lambda v: v - 1.0, x)


sample_call("cond", cond_sample, (3,))


# ------------------------------------------------------------------ switch's rules
@replay_rule("switch")
def _switch_replay(op, args):
    """The builder again, its branches replaying the op's blocks."""
    fns = [lambda *a, blk=blk: tuple(replay_block(blk, a)) for blk in SWITCH_LAYOUT.branches(op)]
    return list(switch(args[0], fns, *args[1:]))


@defgrad("switch")
def _switch_grad(ctx, *gs):
    """A ``switch`` over the branches' gradients (each the VJP of its block)."""
    blocks = SWITCH_LAYOUT.branches(ctx.attrs["op"])
    return _branches_grad(ctx, gs, lambda branch, *ops: switch(ctx.inputs[0], [branch(b) for b in blocks], *ops))


float_cotangents_only("switch")


@reach_rule("switch")
def _switch_reach(block, op, outs, flow, namer):
    """A value reaches an output when the taken branch passes it on: where every branch agrees
    (always, or never) that is known now; otherwise each branch computes its flag and the
    ``switch`` returns the taken one's as an extra output."""
    blocks = SWITCH_LAYOUT.branches(op)
    reach = [_sub_reach(blk, namer) for blk in blocks]
    emits = [_Emitter(blk, namer) for blk in blocks]
    for j, name in enumerate(op.inputs[1:]):
        for k, ks in enumerate(outs):
            if not ks:
                continue
            exprs = [r.get(j, {}).get(k, False) for r in reach]
            if all(_static(e) for e in exprs) and len(set(exprs)) == 1:
                when = exprs[0]
            else:
                for blk, emit, e in zip(blocks, emits, exprs):
                    blk.outputs.append(_own(blk, emit(e), namer))
                when = _flag(block, namer)
                op.outputs.append(when)
            flow(name, ks, when)


@onnx_structured("switch")
def _switch_onnx(ex, g, op):
    """Nested ``If`` nodes on the index clamped into range (ONNX has no n-way branch): branch
    ``j`` when the index equals ``j``, else the rest."""
    blocks = SWITCH_LAYOUT.branches(op)
    bound = op.inputs[1:]
    k = g.tmp()
    g.node("Clip", [g.cast(op.inputs[0], "int64"), g.const(i64(0)), g.const(i64(len(blocks) - 1))], [k])
    g.types[k] = ValueType((), "int64")

    def select(ctx, j, outputs):
        then_g, _ = ex.subgraph(ctx, blocks[j], bound, ex.fresh() + f"_branch{j}")
        if j == len(blocks) - 2:
            else_g, _ = ex.subgraph(ctx, blocks[j + 1], bound, ex.fresh() + f"_branch{j + 1}")
        else:
            sub = GraphCtx(ex, ctx.types)
            inner = []
            for o in outputs:
                m = ex.fresh()
                ctx.types[m] = ctx.types[o]
                inner.append(m)
            select(sub, j + 1, inner)
            else_g = ex.helper.make_graph(sub.nodes, ex.fresh() + "_switch", [], [sub.value_info(m) for m in inner])
        eq = ctx.tmp()
        ctx.node("Equal", [k, ctx.const(i64(j))], [eq])
        ctx.types[eq] = ValueType((), "bool")
        ctx.node("If", [eq], outputs, then_branch=then_g, else_branch=else_g)

    select(g, 0, list(op.outputs))


# (an example call: the registry test converts it, the ONNX test exports it)
def switch_sample(x):
    """A ``switch`` on an index computed from ``x``, its three branches scaling, shifting and squaring ``x``."""
    index = d.cast(x.sum() > 0, "int64") + d.cast(x.sum() > 1, "int64")
    return switch(index, [lambda v: v * 2.0, lambda v: v - 1.0, lambda v: v * v], x)


sample_call("switch", switch_sample, (3,))
