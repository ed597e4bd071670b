"""Activation checkpointing: trade compute for memory by recomputing a segment in backward.

``checkpoint(fn, *args)`` runs ``fn`` with grad off, so none of its intermediate activations
are kept; its one autograd node saves only the inputs. In backward the node reruns ``fn`` with
grad on (restoring the random state, so dropout draws the same mask) and backpropagates
through that fresh graph. Tensors ``fn`` reads from its closure (module parameters) get their
gradients accumulated into ``.grad`` during that inner backward, as in PyTorch's reentrant
checkpoint; pass tensors you need through ``d2s.grad`` as explicit arguments.
"""
from ..autograd.engine import backward as _backward
from ..autograd.function import Function, FunctionNode
from ..autograd.grad_mode import enable_grad
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "saved_tensor_bytes"]


def _rng_state():
    # every generator (numpy's and a device's): dropout on a GPU must redraw its mask too
    from d2s_runtime.ops import RNG
    return RNG.state()


def _set_rng_state(state):
    from d2s_runtime.ops import RNG
    if state is not None:
        RNG.set_state(state)


class CheckpointFunction(Function):
    """Forward without a graph; backward recomputes the forward with one and backpropagates."""

    @staticmethod
    def forward(ctx, fn, preserve_rng_state, *args):
        ctx.fn = fn
        ctx.rng = _rng_state() if preserve_rng_state else None
        ctx.save_for_backward(*args)
        return fn(*args)

    @staticmethod
    def backward(ctx, *grads):
        saved = ctx.saved_tensors
        inputs = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a for a in saved]
        here = _rng_state() if ctx.rng is not None else None
        _set_rng_state(ctx.rng)
        try:
            with enable_grad():
                outs = ctx.fn(*inputs)
        finally:
            _set_rng_state(here)
        outs = outs if isinstance(outs, tuple) else (outs,)
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            # No `inputs=` restriction: closure parameters must get their gradients here too.
            _backward([o for o, _ in pairs], [g for _, g in pairs])
        result = [None, None]
        for a in inputs:
            result.append(a.grad if isinstance(a, Tensor) and a.requires_grad else None)
        return tuple(result)


def checkpoint(fn, *args, preserve_rng_state=True):
    """Run ``fn(*args)`` keeping only ``args`` for backward; recompute ``fn`` during backward.

    Args:
        fn: a function of tensors returning a tensor or a tuple of tensors.
        *args: its arguments; tensors that require grad get gradients.
        preserve_rng_state: replay the same random draws (dropout masks) in the recomputation.
    Returns:
        What ``fn`` returns, with one autograd node (``CheckpointFunctionBackward``) behind it.
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: the first argument must be a function, got {type(fn).__name__}")
    return CheckpointFunction.apply(fn, preserve_rng_state, *args)


def checkpoint_sequential(functions, segments, x):
    """Run a list of single-input functions (or an ``nn.Sequential``) in ``segments`` checkpointed chunks."""
    functions = list(functions)
    if not 1 <= segments <= max(1, len(functions)):
        raise ValueError(f"checkpoint_sequential: segments must be between 1 and {len(functions)}, got {segments}")
    size = -(-len(functions) // segments)

    def run(chunk):
        def seg(h):
            for f in chunk:
                h = f(h)
            return h
        return seg

    for start in range(0, len(functions), size):
        x = checkpoint(run(functions[start:start + size]), x)
    return x


def saved_tensor_bytes(t):
    """Bytes of the distinct arrays the autograd graph behind ``t`` keeps alive for backward.

    Walks every node reachable from ``t.grad_fn`` (iteratively) and counts the arrays it saves:
    op inputs and outputs, and a custom Function's saved tensors. Each array is counted once.
    """
    seen_nodes, seen_arrays, total = set(), set(), 0
    stack = [t.grad_fn] if isinstance(t, Tensor) and t.grad_fn is not None else []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen_nodes or not hasattr(node, "op"):
            continue
        seen_nodes.add(id(node))
        held = list(node.inputs or ()) + list(node.outputs or ())
        if isinstance(node, FunctionNode) and node.ctx._saved:
            held += list(node.ctx._saved)
        for v in held:
            arr = v.array if isinstance(v, Tensor) else v
            if hasattr(arr, "nbytes") and id(arr) not in seen_arrays:
                seen_arrays.add(id(arr))
                total += int(arr.nbytes)
        stack.extend(n for n, _ in node.next_functions)
    return total
