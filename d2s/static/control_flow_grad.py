"""What the structured ops' gradient rules share (``block_vjp``: the VJP of a sub-block, by
replaying it), and the gradient rules of tensor lists and ``reshape_dims``.

Like every rule, they are written in d2s ops, so they append ops when they run during static
backward. A structured op's rule (declared in its family module: ``conditionals``,
``while_loops``, ``scans``) replays the op's own sub-blocks (``replay_block``) on fresh leaf
tensors inside new sub-blocks and asks the engine for the vector-Jacobian product there:

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
from ..autograd.registry import defgrad, nondiff
from ..dispatch import apply
from ..tensor import Tensor
from .replay import replay_block, slice_block

nondiff("list_new", "list_len", "stack_new", "stack_push", "stack_pop", "stack_rows", "list_index_check")


def _is_float(t):
    return isinstance(t, Tensor) and t.dtype.is_floating_point


def _wants_grad(t):
    return isinstance(t, Tensor) and t.requires_grad and t.dtype.is_floating_point


def _leaf(t):
    """A new leaf tensor (requires grad, no history) naming the same value as ``t``."""
    leaf = Tensor._make(t.array, t._var)
    leaf.requires_grad = True
    return leaf


def _shape_of(t):
    return t._var.type.shape if t.is_symbolic else t.array.shape


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
