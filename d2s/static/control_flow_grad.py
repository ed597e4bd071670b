"""Gradient rules of the control-flow ops, tensor lists and ``reshape_dims``.

Like every rule, they are written in d2s ops, so they append ops when they run during static
backward. A control-flow op's rule replays the op's own sub-blocks (``replay_block``) on fresh
leaf tensors inside new sub-blocks and asks the engine for the vector-Jacobian product there:

* ``cond``: a ``cond`` over the two branches' gradients;
* ``while``: the forward loop runs again, pushing each iteration's carries onto stacks
  (``stack_push``: ragged, so carries may change shape; and counting iterations); a backward ``while`` then pops them, one body VJP per iteration,
  for exactly the recorded trip count. A push costs amortized O(size of the carry) and a pop
  returns views (see ``d2s_runtime/ops/tensor_list.py``), so the gradient of a T-step loop
  costs O(T) steps, not O(T²);
* ``scan``: the forward scan runs again, also emitting each step's incoming carry; a reverse
  ``scan`` over those saved carries then runs one body VJP per step.
"""
from .. import ops as d
from .._state import STATE
from ..autograd.engine import grad
from ..autograd.grad_mode import enable_grad
from ..autograd.registry import defgrad, nondiff, sample_call
from ..dispatch import apply
from ..tensor import Tensor, tensor
from .control_flow import cond, scan, while_loop
from .replay import replay_block, slice_block

nondiff("list_new", "list_len", "stack_new", "stack_push", "stack_pop", "stack_rows", "list_index_check")


# Example calls of the structured ops (d2s.autograd.registry.sample_call): each builds its op
# when its input is symbolic (the registry test converts it; the ONNX test exports it)
def cond_sample(x):
    """A ``cond`` on a tensor predicate, one branch squaring its operand, the other shifting it."""
    return cond(x.sum() > 0, lambda v: v * v, lambda v: v - 1.0, x)


def while_sample(x):
    """A ``while`` of three steps carrying a counter and ``x``, squared and shifted each step."""
    return while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * v + 0.5), (tensor(0), x))[1]


def scan_sample(x):
    """A ``scan`` over the rows of ``x``, carrying a running product-plus-one of them."""
    return scan(lambda c, xi: (c * xi + 1.0, c + xi), x[0], x)[1]


sample_call("cond", cond_sample, (3,))
sample_call("while", while_sample, (3,))
sample_call("scan", scan_sample, (4, 3))


def _is_float(t):
    return isinstance(t, Tensor) and t.dtype.is_floating_point


def _wants_grad(t):
    return isinstance(t, Tensor) and t.requires_grad and t.dtype.is_floating_point


def _leaf(t):
    """A new leaf tensor (requires grad, no history) naming the same value as ``t``."""
    leaf = Tensor._make(t._data, t._var)
    leaf.requires_grad = True
    return leaf


def _shape_of(t):
    return t._var.type.shape if t.is_symbolic else t._data.shape


def block_vjp(block, values, cotangents, wrt):
    """VJP of IR ``block`` at ``values``: the gradients, w.r.t. ``values[i]`` for ``i`` in
    ``wrt``, of the block's outputs weighted by ``cotangents`` (one per output; None where an
    output carries no gradient). Returns one tensor per ``wrt`` entry (zeros where unused)."""
    create_graph = STATE.grad_enabled
    values = list(values)
    leaves = []
    for i in wrt:
        values[i] = _leaf(values[i])
        leaves.append(values[i])
    ops, _ = slice_block(block, [k for k, g in enumerate(cotangents) if g is not None])
    with enable_grad():
        outs = replay_block(block, values, ops)
    pairs = [(o, g) for o, g in zip(outs, cotangents)
             if g is not None and isinstance(o, Tensor) and o.requires_grad and _is_float(o)]
    grads = [None] * len(leaves)
    if pairs and leaves:
        grads = grad([o for o, _ in pairs], leaves, grad_outputs=[d.cast(g, o.dtype) for o, g in pairs],
                     allow_unused=True, create_graph=create_graph)
    return [d.zeros_like(x) if g is None else g for g, x in zip(grads, leaves)]


# ------------------------------------------------------------------ cond
@defgrad("cond")
def _cond_grad(ctx, *gs):
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


# ------------------------------------------------------------------ while
@defgrad("while")
def _while_grad(ctx, *gs):
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


# ------------------------------------------------------------------ scan
@defgrad("scan")
def _scan_grad(ctx, *gs):
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


# ------------------------------------------------------------------ tensor lists, reshape_dims
@defgrad("list_push")
def _list_push_grad(ctx, g):
    rest, gx = apply("list_pop", g)
    return (rest, gx)


@defgrad("list_pop")
def _list_pop_grad(ctx, g_rest, g_x):
    return (apply("list_push", g_rest, g_x),)


@defgrad("list_get")
def _list_get_grad(ctx, g):
    lst, i = ctx.inputs
    # scatter-add g at position i (an index array input, so a negative i counts from the end)
    g_list = apply("index_add", d.zeros_like(lst), d.unsqueeze(g, 0), d.reshape(i, [1]), index=[["t", 0]])
    return (g_list, None)


@defgrad("list_stack")
def _list_stack_grad(ctx, g):
    return (g,)


@defgrad("reshape_dims")
def _reshape_dims_grad(ctx, g):
    x = ctx.inputs[0]
    return (apply("reshape_like", g, d.stop_gradient(x)),) + (None,) * (len(ctx.inputs) - 1)
