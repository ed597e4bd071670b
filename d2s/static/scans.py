"""The ``scan`` family: ``d2s.scan``'s builder, and every rule of the ``scan`` op on the d2s
side, declared here under its name as any op's are: how replay rebuilds it, its gradient, how
reach flags pass through it, its ONNX form, and a sample call (the op's runtime rules are in
``d2s_runtime/ops/control_flow.py``).

Eagerly (no symbolic input) a scan is a Python loop; inside a program it builds one ``scan``
op, whatever the length (which may be unknown), its body traced from the step function with
the carries' types widened until they settle.
"""
import numpy as np

from d2s_runtime.ir import Op, Var
from d2s_runtime.ops import TensorType

from .. import layouts as _layouts, ops as d, pytree, views
from .._state import STATE
from ..autograd.grad_mode import no_grad
from ..autograd.registry import defgrad, float_cotangents_only, sample_call
from ..dispatch import apply
from ..onnx.control_flow import fresh_like, loop_header, trip_count
from ..onnx.export import GraphCtx
from ..onnx.registry import i64, onnx_structured
from ..pytree import tree_unflatten
from ..tensor import Tensor, tensor
from .cf_common import (ControlFlowError, _MAX_WIDEN, _alias_error, _builder, _compatible, _is_symbolic, _lay_out,
                        _merge_captures, _new_outputs, _record, _sym, _trace_block, _type_of, _widen, tree_flatten)
from .control_flow_grad import _is_float, _shape_of, _wants_grad, block_vjp
from .reach import _INT, _flag, loop_reach
from .registry import reach_rule, replay_rule
from .replay import replay_block, slice_block
from .weak_types import (_abstract, _cast_leaves, _check_carry, _finish_carry, _fmt_tree, _join_weak, _promote_weak,
                         _tensorize, _tensorize_weak, _weak_carry_types, _weak_mask)

__all__ = ["scan"]


# ------------------------------------------------------------------ the builder
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


def _step_boundary(carry):
    """The carry a step reads, through one identity node per tensor that takes gradients: the
    gradients of the step's uses of it are summed there first, then added to what the carry's
    other uses (the stacked ys) give, as the scan op's gradient sums them (its reverse loop adds
    each step's body gradient, already summed, to the ys' cotangent). Without it, eager autograd
    added the uses one by one to the ys' gradient, and a GRU's (its state read twice per step)
    converted gradients differed from eager's in the last bits."""
    if not STATE.grad_enabled:
        return carry
    leaves, tree = pytree.tree_flatten(carry)
    if not any(isinstance(t, Tensor) and t.requires_grad for t in leaves):
        return carry
    return tree_unflatten(tree, [d.identity(t) if isinstance(t, Tensor) and t.requires_grad else t for t in leaves])


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
        out = fn(_step_boundary(carry), tree_unflatten(x_tree, [x[t] for x in x_leaves]))
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
    # the carries' memory layouts on every step (d2s/layouts.py; settled with their types) and
    # the slices' (views of the xs)
    lays = [views.layout_of(t) for t in c_leaves]
    x_lays = [_slice_layout(t) for t in x_leaves]
    out_lays = []
    for _ in range(_MAX_WIDEN):
        def body_of(args):
            _lay_out(b, args, lays + x_lays)
            carry = tree_unflatten(c_tree, args[:nc])
            out = fn(carry, tree_unflatten(x_tree, args[nc:]))
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise ControlFlowError(f"{what}: fn(carry, x) must return a pair (new_carry, y)")
            new_carry = _tensorize(out[0], like=carry)
            out_lays[:] = [views.layout_of(t) if isinstance(t, Tensor) else None for t in tree_flatten(new_carry)[0]]
            return (new_carry, _tensorize(out[1]))

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
        settled = [views._same_layout(a, c) for a, c in zip(lays, out_lays)]
        if widened == types and all(a is c for a, c in zip(settled, lays)):
            break
        types = widened
        lays = settled
    else:
        raise ControlFlowError(f"{what}: the carry's types did not settle after {_MAX_WIDEN} rebuilds")
    _cast_leaves(b, c_leaves, c_names, types)
    y_types = [TensorType((n,) + tuple(t.shape), t.dtype) for t in o_types[nc:]]
    cap_names, cap_tensors = _merge_captures(b, [blk], nc + len(x_names))
    out_vars, outs = _new_outputs(b, types + y_types)
    _lay_out(b, outs[:nc], lays)
    attrs = {"n_carry": nc, "n_xs": len(x_names), "reverse": bool(reverse)}
    if not x_names:
        attrs["length"] = int(length)
    op = Op("scan", [*c_names, *x_names, *cap_names], [v.name for v in out_vars], attrs, {"body": blk})
    b.append_op(op)
    _record("scan", op, [*[_sym(b, t) for t in c_leaves], *[_sym(b, t) for t in x_leaves], *cap_tensors], outs)
    return tree_unflatten(c_tree, outs[:nc]), tree_unflatten(y_tree, outs[nc:])


def _slice_layout(x):
    """The layout of ``x[t]``, a step's slice of scanned tensor ``x`` (None: row-major)."""
    lay = views.layout_of(x) if isinstance(x, Tensor) else None
    if lay is None or lay is _layouts.UNKNOWN:
        return lay
    return lay[0] if lay.ndim > 1 else None


# ------------------------------------------------------------------ the op's rules
@replay_rule("scan")
def _scan_replay(op, args):
    """The builder again, its step replaying the op's body block."""
    nc, nx = op.attrs["n_carry"], op.attrs["n_xs"]
    caps = args[nc + nx:]
    body_blk = op.blocks["body"]

    def step(carry, x):
        out = replay_block(body_blk, [*carry, *x, *caps])
        return tuple(out[:nc]), tuple(out[nc:])

    carry, ys = scan(step, tuple(args[:nc]), tuple(args[nc:nc + nx]), length=op.attrs.get("length"),
                     reverse=op.attrs.get("reverse", False))
    return list(carry) + list(ys)


@defgrad("scan")
def _scan_grad(ctx, *gs):
    """The forward scan runs again, also emitting each step's incoming carry; a reverse ``scan``
    over those saved carries then runs one body VJP per step."""
    op = ctx.attrs["op"]
    nc, nx = op.attrs["n_carry"], op.attrs["n_xs"]
    reverse, length = op.attrs.get("reverse", False), op.attrs.get("length")
    carries, xs, caps = (list(ctx.inputs[:nc]), list(ctx.inputs[nc:nc + nx]), list(ctx.inputs[nc + nx:]))
    body = op.blocks["body"]
    ny = len(op.outputs) - nc
    wrt_c = [i for i in range(nc) if _is_float(carries[i])]
    wrt_x = [i for i in range(nx) if _wants_grad(xs[i])]
    wrt_k = [j for j, c in enumerate(caps) if _wants_grad(c)]
    if not wrt_x and not wrt_k and not any(_wants_grad(carries[i]) for i in wrt_c):
        return (None,) * len(ctx.inputs)

    # forward again, also emitting each step's incoming carries: stacked along the scan axis,
    # or, for a carry whose shape changes from step to step (its type widened), pushed onto a
    # ragged stack carried along, which the backward scan pops
    y_cots = [g if _is_float(g) else None for g in gs[nc:]]
    y_pos = [j for j in range(ny) if y_cots[j] is not None]
    # (only the carries the body's VJP reads are saved, as for a while)
    _, read = slice_block(body, wrt_c + [nc + j for j in y_pos])
    kept = [i for i in range(nc) if i in read or i in wrt_c]
    body_types = [body.lookup(name).type for name in body.inputs[:nc]]
    ragged = {i: k for k, i in enumerate(i for i in kept
                                         if tuple(body_types[i].shape) != tuple(_shape_of(carries[i])))}
    regular = [i for i in kept if i not in ragged]

    def fwd_step(cs, x):
        c, stk = cs[:nc], cs[nc:]
        out = replay_block(body, [*c, *x, *caps])
        pushed = []
        for i, k in ragged.items():
            pushed.extend(apply("stack_push", stk[2 * k], stk[2 * k + 1], c[i]))
        return (*out[:nc], *pushed), tuple(c[i] for i in regular)

    empty = [t for i in ragged for t in apply("stack_new", carries[i])]
    fwd_final, saved = scan(fwd_step, (*carries, *empty), tuple(xs), length=length, reverse=reverse)
    stacks = list(fwd_final[nc:])
    n_reg = len(regular)
    n_ct = len(wrt_c)
    n_acc = len(wrt_k)

    def bwd_step(carry, x):
        ct, acc, stk = carry[:n_ct], carry[n_ct:n_ct + n_acc], carry[n_ct + n_acc:]
        x_t, gy = x[n_reg:n_reg + nx], x[n_reg + nx:]
        c_t, new_stk = [None] * nc, []
        for i, v in zip(regular, x[:n_reg]):
            c_t[i] = v
        for i, k in ragged.items():
            buf, shapes, c_t[i] = apply("stack_pop", stk[2 * k], stk[2 * k + 1], shape=list(body_types[i].shape))
            new_stk += [buf, shapes]
        cots = [None] * (nc + ny)
        for i, g in zip(wrt_c, ct):
            cots[i] = g
        for j, g in zip(y_pos, gy):
            cots[nc + j] = g
        wrt = wrt_c + [nc + i for i in wrt_x] + [nc + nx + j for j in wrt_k]
        grads = block_vjp(body, [*c_t, *x_t, *caps], cots, wrt)
        g_c, g_x, g_k = grads[:n_ct], grads[n_ct:n_ct + len(wrt_x)], grads[n_ct + len(wrt_x):]
        return (*g_c, *[a + g for a, g in zip(acc, g_k)], *new_stk), tuple(g_x)

    ct0 = [d.cast(gs[i], carries[i].dtype) for i in wrt_c]
    acc0 = [d.zeros_like(caps[j]) for j in wrt_k]
    seq = (*saved, *xs, *[y_cots[j] for j in y_pos])
    final, gxs = scan(bwd_step, (*ct0, *acc0, *stacks), seq, length=length, reverse=not reverse)
    out = [None] * len(ctx.inputs)
    for i, g in zip(wrt_c, final[:n_ct]):
        out[i] = g if _wants_grad(carries[i]) else None
    for i, g in zip(wrt_x, gxs):
        out[nc + i] = g
    for j, g in zip(wrt_k, final[n_ct:]):
        out[nc + nx + j] = g
    return tuple(out)


float_cotangents_only("scan")


@reach_rule("scan")
def _scan_reach(block, op, outs, flow, namer):
    """Through the body (see ``reach.loop_reach``), used when the scan has steps."""
    loop_reach(block, op, outs, flow, namer, lambda block, op, namer, body, accs: _scan_entered(block, op, namer),
               _scan_extend)


def _scan_extend(op, n_carry, added, namer):
    op.attrs["n_carry"] = n_carry + added


def _scan_entered(block, op, namer):
    """Whether ``scan`` op ``op`` runs its body at all: its length is not zero (a var of
    ``block`` when the length is known only at run time)."""
    nc, nx = op.attrs["n_carry"], op.attrs["n_xs"]
    if not nx:
        return bool(op.attrs.get("length", 1))
    xs = op.inputs[nc]
    length = block.lookup(xs).type.shape[0]
    if length is not None:
        return length > 0
    n, zero, nonzero = namer(), namer(), _flag(block, namer)
    block.vars[n], block.vars[zero] = Var(n, _INT), Var(zero, _INT)
    block.ops += [Op("dim", [xs], [n], {"axis": 0}),
                  Op("constant", [], [zero], {"value": 0, "dtype": "int64", "shape": []}),
                  Op("gt", [n, zero], [nonzero])]
    return nonzero


@onnx_structured("scan")
def _scan_onnx(ex, g, op):
    """``Loop`` with a trip count (the xs' leading dim, or ``length``): step ``t`` gathers
    ``xs[i][t]``; the ``y`` slices are Loop scan outputs, stacked in iteration order (a
    ``reverse`` scan walks ``t = T-1..0`` and flips its stacked ys afterwards)."""
    nc, nx = op.attrs["n_carry"], op.attrs["n_xs"]
    reverse = bool(op.attrs.get("reverse", False))
    body_b = op.blocks["body"]
    init, xs, caps = op.inputs[:nc], op.inputs[nc:nc + nx], op.inputs[nc + nx:]
    trip = trip_count(g, op, xs)
    it, cin = loop_header(ex, g)
    carry_in = fresh_like(ex, g, body_b.inputs[:nc])
    sub = GraphCtx(ex, g.types)
    t = it
    if reverse:  # t = trip - 1 - iter
        last, t = sub.tmp(), sub.tmp()
        sub.node("Sub", [trip, sub.const(i64(1))], [last])
        sub.node("Sub", [last, it], [t])
    slices = []
    for x in xs:
        s = sub.tmp()
        sub.node("Gather", [x, t], [s], axis=0)
        slices.append(s)
    for inner, outer in zip(body_b.inputs, carry_in + slices + list(caps)):
        sub.node("Identity", [outer], [inner])
    ex.emit_block(sub, body_b)
    outs = fresh_like(ex, g, [cin] + list(body_b.outputs))
    for src, dst in zip([cin] + list(body_b.outputs), outs):
        sub.node("Identity", [src], [dst])
    body = ex.helper.make_graph(sub.nodes, ex.fresh() + "_scan_body",
                                [sub.value_info(it), sub.value_info(cin)] + [sub.value_info(c) for c in carry_in],
                                [sub.value_info(m) for m in outs])
    ys = op.outputs[nc:]
    stacked = fresh_like(ex, g, ys) if reverse else list(ys)
    g.node("Loop", [trip, g.const(np.asarray(True))] + list(init), list(op.outputs[:nc]) + stacked, body=body)
    for s, y in zip(stacked, ys) if reverse else ():
        g.node("Slice", [s, g.const(i64([-1])), g.const(i64([np.iinfo(np.int64).min])), g.const(i64([0])),
                         g.const(i64([-1]))], [y])


# (an example call: the registry test converts it, the ONNX test exports it)
def scan_sample(x):
    """A ``scan`` over the rows of ``x``, carrying a running product-plus-one of them."""
    return scan(lambda c, xi: (c * xi + 1.0, c + xi), x[0], x)[1]


sample_call("scan", scan_sample, (4, 3))
