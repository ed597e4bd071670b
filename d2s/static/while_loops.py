"""The ``while`` family: ``d2s.while_loop``'s builder, and every rule of the ``while`` op on
the d2s side, declared here under its name as any op's are: how replay rebuilds it, its
gradient, how reach flags pass through it, its ONNX form, and a sample call (the op's runtime
rules are in ``d2s_runtime/ops/control_flow.py``).

While the condition is a Python value the loop runs in Python (inside a program, that unrolls
it); once it is symbolic, a ``while`` op is built, its condition and body blocks traced from
the functions, with the carries' types widened until they settle. Tensor objects the body
updates in place keep their identity through the loop (``object_identity.ObjectCarry``).
"""
from d2s_runtime.ir import Op, Var
from d2s_runtime.passes import is_effect

from .. import ops as d, views
from .._state import STATE
from ..autograd.registry import defgrad, float_cotangents_only, sample_call
from ..dispatch import apply
from ..onnx.control_flow import fresh_like, inline_block, loop_header
from ..onnx.export import GraphCtx
from ..onnx.registry import onnx_structured
from ..pytree import tree_unflatten
from ..tensor import Tensor, tensor
from .cf_common import (ControlFlowError, _MAX_WIDEN, _as_pred, _builder, _compatible, _is_symbolic, _lay_out,
                        _merge_captures, _new_outputs, _record, _sym, _trace_block, _widen, tree_flatten)
from .conditionals import cond
from .control_flow_grad import _is_float, _wants_grad, block_vjp
from .object_identity import _ObjectCarry, _PeelFirst, _repoint
from .reach import _acc, _flag, loop_reach
from .registry import reach_rule, replay_rule
from .replay import replay_block, slice_block
from .weak_types import (_cast_leaves, _check_carry, _finish_carry, _fmt_tree, _promote_weak, _tensorize,
                         _weak_carry_types, _weak_mask)

__all__ = ["while_loop", "run_while"]


# ------------------------------------------------------------------ the builder
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
    # each loop var's memory layout on every iteration (d2s/layouts.py): its initial value's, or
    # unknown where the body gives it another (settled with the types below)
    lays = [views.layout_of(t) for t in leaves]
    out_lays = []
    for _ in range(_MAX_WIDEN):
        def cond_of(args):
            _lay_out(b, args, lays)
            return _as_pred_value(call_cond(tree_unflatten(treedef, carried.enter(args))))

        def body_of(args):
            _lay_out(b, args, lays)
            ins = tree_unflatten(treedef, carried.enter(args))
            out = _tensorize(call_body(ins), like=ins)
            out_lays[:] = [views.layout_of(t) if isinstance(t, Tensor) else None for t in tree_flatten(out)[0]]
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
        settled = [views._same_layout(a, c) for a, c in zip(lays, out_lays)]
        if widened == types and all(a is c for a, c in zip(settled, lays)):
            break
        types = widened  # a loop var changed shape: rebuild with the changing dims unknown
        lays = settled  # (or layout: rebuild with it unknown)
    else:
        raise ControlFlowError(f"d2s.while_loop: the loop vars' types did not settle after {_MAX_WIDEN} "
                               f"rebuilds of the body ({_fmt_tree(treedef, types)})")
    kept = carried.check_body(body_blk)
    _cast_leaves(b, leaves, in_names, types)
    extra_names = [b.var_of(t) for t in carried.extra + carried.flag_init]
    all_types = types + carried.extra_types()
    cap_names, cap_tensors = _merge_captures(b, [cond_blk, body_blk], len(in_names) + len(extra_names))
    out_vars, outs = _new_outputs(b, all_types)
    _lay_out(b, outs[:n], lays)
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


def _as_pred_value(p):
    """A condition as one bool scalar tensor (a Python bool becomes a constant)."""
    if not isinstance(p, Tensor):
        p = tensor(bool(p))
    if not p.is_symbolic:
        return p if p.dtype == "bool" and p.ndim == 0 else tensor(bool(p))
    return _as_pred(p, "d2s.while_loop")


# ------------------------------------------------------------------ the op's rules
@replay_rule("while")
def _while_replay(op, args):
    """The builder again, its condition and body replaying the op's blocks."""
    n = len(op.outputs)
    caps = args[n:]
    cond_blk, body_blk = op.blocks["cond"], op.blocks["body"]
    return list(while_loop(lambda *c: replay_block(cond_blk, [*c, *caps])[0],
                           lambda *c: tuple(replay_block(body_blk, [*c, *caps])), tuple(args[:n])))


@defgrad("while")
def _while_grad(ctx, *gs):
    """The forward loop runs again, pushing each iteration's carries onto stacks (ragged: carries
    may change shape; counting iterations); a backward ``while`` then pops them, one body VJP
    per iteration, for exactly the recorded trip count. A push costs amortized O(size of the
    carry) and a pop returns views (see ``d2s_runtime/ops/tensor_list.py``), so the gradient of
    a T-step loop costs O(T) steps, not O(T²)."""
    op = ctx.attrs["op"]
    n = len(op.outputs)
    carries, caps = list(ctx.inputs[:n]), list(ctx.inputs[n:])
    wrt_c = [i for i in range(n) if _is_float(carries[i])]
    wrt_k = [j for j, c in enumerate(caps) if _wants_grad(c)]
    if not wrt_k and not any(_wants_grad(carries[i]) for i in wrt_c):
        return (None,) * len(ctx.inputs)
    cond_blk, body_blk = op.blocks["cond"], op.blocks["body"]

    # forward again, keeping every iteration's incoming carries on stacks
    def fwd_cond(*v):
        return replay_block(cond_blk, [*v[:n], *caps])[0]

    # (ragged stacks: a carry's shape may change from one iteration to the next, as a loop
    # var that grows or a tensor list the loop appends to does)
    # (only the carries the body's VJP reads: a bool flag or counter feeding only itself is not)
    _, read = slice_block(body_blk, wrt_c)
    kept = [i for i in range(n) if i in read or i in wrt_c]
    m = len(kept)

    def fwd_body(*v):
        c, stacks, k = v[:n], v[n:n + 2 * m], v[n + 2 * m]
        pushed = []
        for s, i in enumerate(kept):
            pushed.extend(apply("stack_push", stacks[2 * s], stacks[2 * s + 1], c[i]))
        return (*replay_block(body_blk, [*c, *caps]), *pushed, k + 1)

    zero = d.zeros([], dtype="int64")
    empty = [t for i in kept for t in apply("stack_new", carries[i])]
    fwd = while_loop(fwd_cond, fwd_body, (*carries, *empty, zero))
    stacks, count = list(fwd[n:n + 2 * m]), fwd[n + 2 * m]
    carry_types = [body_blk.lookup(name).type for name in body_blk.inputs[:n]]

    # backward: pop the carries in reverse order, one body VJP per iteration
    n_ct = len(wrt_c)

    def bwd_cond(k, *rest):
        return k > 0

    def bwd_body(k, *v):
        stk, ct, acc = v[:2 * m], v[2 * m:2 * m + n_ct], v[2 * m + n_ct:]
        popped = [apply("stack_pop", stk[2 * s], stk[2 * s + 1], shape=list(carry_types[i].shape))
                  for s, i in enumerate(kept)]
        c_i = [None] * n
        for i, p in zip(kept, popped):
            c_i[i] = p[2]
        cots = [None] * n
        for i, g in zip(wrt_c, ct):
            cots[i] = g
        grads = block_vjp(body_blk, [*c_i, *caps], cots, wrt_c + [n + j for j in wrt_k])
        new_acc = [a + g for a, g in zip(acc, grads[n_ct:])]
        return (k - 1, *[t for p in popped for t in p[:2]], *grads[:n_ct], *new_acc)

    ct0 = [d.cast(gs[i], carries[i].dtype) for i in wrt_c]
    acc0 = [d.zeros_like(caps[j]) for j in wrt_k]
    res = while_loop(bwd_cond, bwd_body, (count, *stacks, *ct0, *acc0))
    ct, acc = res[1 + 2 * m:1 + 2 * m + n_ct], res[1 + 2 * m + n_ct:]
    out = [None] * len(ctx.inputs)
    for i, g in zip(wrt_c, ct):
        out[i] = g if _wants_grad(carries[i]) else None
    for j, g in zip(wrt_k, acc):
        out[n + j] = g
    return tuple(out)


float_cotangents_only("while")


@reach_rule("while")
def _while_reach(block, op, outs, flow, namer):
    """Through the body (see ``reach.loop_reach``), used when the loop runs at least once."""
    loop_reach(block, op, outs, flow, namer, _while_entered, _while_extend)


def _while_entered(block, op, namer, body, accs):
    if _plain_cond(op):
        return _entered(block, op, namer)
    # a cond that cannot run again outside the loop: a bool carry set by the body says
    entered = _flag(block, namer)
    accs.append(_acc(body, namer, entered, False, lambda ran: True))
    return entered


def _while_extend(op, n_carry, added, namer):
    """The cond block takes the new carries too (unused there)."""
    cond = op.blocks["cond"]
    cond.inputs[n_carry:n_carry] = [_flag(cond, namer) for _ in range(added)]


def _plain_cond(op):
    """Whether the cond block of ``op`` (a ``while``) can be evaluated again outside the loop
    (no sub-blocks, no effects)."""
    return not any(o.blocks or is_effect(o) for o in op.blocks["cond"].ops)


def _entered(block, op, namer):
    """A var of ``block`` saying whether ``op`` (a ``while`` whose cond is plain) runs its body
    at all: its cond block evaluated once more on the initial values."""
    cond = op.blocks["cond"]
    rename = dict(zip(cond.inputs, op.inputs))
    for o in cond.ops:
        outs = []
        for n in o.outputs:
            rename[n] = fresh = namer()
            block.vars[fresh] = Var(fresh, cond.vars[n].type)
            outs.append(fresh)
        block.ops.append(Op(o.type, [rename[i] for i in o.inputs], outs, dict(o.attrs)))
    return rename[cond.outputs[0]]


@onnx_structured("while")
def _while_onnx(ex, g, op):
    """``Loop`` with no trip count: the condition runs once before the loop (inlined into the
    enclosing graph, with fresh names: ONNX wants every name defined once in the whole model)
    and again at the end of each body iteration, on the new carries."""
    n = len(op.outputs)
    cond_b, body_b = op.blocks["cond"], op.blocks["body"]
    init, caps = op.inputs[:n], op.inputs[n:]
    first = inline_block(ex, g, cond_b, list(init) + list(caps))[0]
    it, cin = loop_header(ex, g)
    carry_in = fresh_like(ex, g, body_b.inputs[:n])
    sub = GraphCtx(ex, g.types)
    for inner, outer in zip(body_b.inputs, carry_in + list(caps)):
        sub.node("Identity", [outer], [inner])
    ex.emit_block(sub, body_b)
    again = inline_block(ex, sub, cond_b, list(body_b.outputs) + list(caps))[0]
    outs = fresh_like(ex, g, [again] + list(body_b.outputs))
    for src, dst in zip([again] + list(body_b.outputs), outs):
        sub.node("Identity", [src], [dst])
    body = ex.helper.make_graph(sub.nodes, ex.fresh() + "_while_body",
                                [sub.value_info(it), sub.value_info(cin)] + [sub.value_info(c) for c in carry_in],
                                [sub.value_info(m) for m in outs])
    g.node("Loop", ["", g.cast(first, "bool")] + list(init), op.outputs, body=body)


# (an example call: the registry test converts it, the ONNX test exports it)
def while_sample(x):
    """A ``while`` of three steps carrying a counter and ``x``, squared and shifted each step."""
    return while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * v + 0.5), (tensor(0), x))[1]


sample_call("while", while_sample, (3,))
