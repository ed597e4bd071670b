"""The ``cond`` family: ``d2s.cond``'s builder, and every rule of the ``cond`` op on the d2s
side, declared here under its name as any op's are: how replay rebuilds it, its gradient, how
reach flags pass through it, its ONNX form, and a sample call (the op's runtime rules are in
``d2s_runtime/ops/control_flow.py``).

``cond`` is a public dispatcher with two halves (like AutoGraph's operators): with a concrete
predicate (a Python value, or a tensor holding data) it is plain Python, so eager autograd
sees the ops that ran; with a symbolic predicate, inside a program being built, it builds a
``cond`` op whose two blocks hold the traced branch functions. Values the functions read from
enclosing blocks become explicit op inputs (captures).
"""
from d2s_runtime.ir import Op

from .. import views
from ..autograd.registry import defgrad, float_cotangents_only, sample_call
from ..onnx.registry import onnx_structured
from ..pytree import tree_unflatten
from .cf_common import (ControlFlowError, _as_pred, _builder, _compatible, _is_symbolic, _merge_captures,
                        _new_outputs, _record, _sym, _trace_block, _widen, tree_flatten)
from .control_flow_grad import _is_float, _wants_grad, block_vjp
from .object_identity import _alias_flags, _inplace_outputs, _kept_objects, _repoint
from .reach import _Emitter, _and, _flag, _not, _or, _own, _static, _sub_reach
from .registry import reach_rule, replay_rule
from .replay import replay_block
from .weak_types import _eager_branch, _fmt_tree, _join_weak, _tensorize_weak

__all__ = ["cond", "static_cond"]


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


# ------------------------------------------------------------------ the op's rules
@replay_rule("cond")
def _cond_replay(op, args):
    """The builder again, its branches replaying the op's blocks."""
    then_blk, else_blk = op.blocks["then"], op.blocks["else"]
    out = cond(args[0], lambda *a: tuple(replay_block(then_blk, a)),
               lambda *a: tuple(replay_block(else_blk, a)), *args[1:])
    return list(out)


@defgrad("cond")
def _cond_grad(ctx, *gs):
    """A ``cond`` over the two branches' gradients (each the VJP of its block)."""
    op = ctx.attrs["op"]
    pred, args = ctx.inputs[0], list(ctx.inputs[1:])
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

    res = cond(pred, branch(op.blocks["then"]), branch(op.blocks["else"]),
               *args, *[cots[k] for k in cot_pos])
    out = [None] * len(ctx.inputs)
    for i, g in zip(wrt, res):
        out[1 + i] = g
    return tuple(out)


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
