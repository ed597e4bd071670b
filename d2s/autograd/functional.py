"""Whole-function derivatives with ``torch.autograd.functional`` semantics.

``jacobian``, ``hessian``, ``vjp`` and ``jvp`` take a function of tensors and the point at
which to differentiate (a tensor or a tuple of tensors). The point is copied into fresh
leaves, so the caller's tensors and their ``.grad`` are never touched. ``jvp`` uses the
double-vjp trick (the vjp is linear in its cotangent, so differentiating it with respect to
the cotangent gives the jvp), so it needs no forward-mode rules.
"""
from ..ops import ones_like, reshape, stack, zeros, zeros_like
from ..tensor import Tensor, tensor
from .engine import grad as _grad
from .grad_mode import enable_grad

__all__ = ["jacobian", "hessian", "vjp", "jvp"]


def _as_tuple(x, what, fn_name):
    """(tuple of tensors, whether the caller passed a tuple)."""
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    out = []
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            try:
                t = tensor(t)
            except TypeError:
                raise TypeError(f"{fn_name}: {what} {i} must be a tensor, got {type(t).__name__}") from None
        out.append(t)
    return tuple(out), is_tuple


def _grad_inputs(inputs, create_graph, fn_name):
    """Fresh leaves holding the inputs' values (kept in the graph when create_graph is set)."""
    out = []
    for i, t in enumerate(inputs):
        if not t.dtype.is_floating_point:
            raise TypeError(f"{fn_name}: input {i} must be a floating point tensor to be differentiated, "
                            f"got {t.dtype}; cast it first (x.float())")
        if create_graph and t.requires_grad:
            out.append(t * 1)  # stays connected to the caller's graph for higher derivatives
        else:
            out.append(t.detach().requires_grad_(True))
    return tuple(out)


def _grads(outputs, inputs, grad_outputs, create_graph):
    """d2s.grad that gives zeros (not None) for inputs an output does not depend on."""
    diff = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not diff:
        return tuple(zeros_like(x) for x in inputs)
    gs = _grad([o for o, _ in diff], list(inputs), [g for _, g in diff], retain_graph=True,
               create_graph=create_graph, allow_unused=True)
    return tuple(zeros_like(x) if g is None else g for g, x in zip(gs, inputs))


def _finish(t, create_graph):
    return t if create_graph else t.detach()


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """Vector-Jacobian product of ``func`` at ``inputs``.

    Args:
        func: takes tensors (one per input) and returns a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        v: the cotangent, shaped like ``func``'s output; may be omitted for a one-element output.
        create_graph: keep the results differentiable.
    Returns:
        ``(func_output, vjp)``: ``vjp`` has the structure of ``inputs``.
    """
    inputs, in_tuple = _as_tuple(inputs, "input", "vjp")
    with enable_grad():
        xs = _grad_inputs(inputs, create_graph, "vjp")
        out = func(*xs)
        outs, out_tuple = _as_tuple(out, "output", "vjp")
        if v is None:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError("vjp: v may be omitted only when func returns a single one-element tensor; "
                                   f"it returned shapes {[tuple(o.shape) for o in outs]}")
            vs = (ones_like(outs[0]),)
        else:
            vs, _ = _as_tuple(v, "v", "vjp")
            _check_like(vs, outs, "vjp", "v", "func's output")
        res = _grads(outs, xs, vs, create_graph)
    out_vals = tuple(_finish(o, create_graph) for o in outs)
    res = tuple(_finish(r, create_graph) for r in res)
    return (out_vals if out_tuple else out_vals[0]), (res if in_tuple else res[0])


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """Jacobian-vector product of ``func`` at ``inputs`` (forward-mode, by the double-vjp trick).

    Args:
        func: takes tensors (one per input) and returns a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        v: the tangent, shaped like ``inputs``; may be omitted for a single one-element input.
    Returns:
        ``(func_output, jvp)``: ``jvp`` has the structure of ``func``'s output.
    """
    inputs, in_tuple = _as_tuple(inputs, "input", "jvp")
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("jvp: v may be omitted only for a single one-element input")
        vs = (ones_like(inputs[0]),)
    else:
        vs, _ = _as_tuple(v, "v", "jvp")
        _check_like(vs, inputs, "jvp", "v", "inputs")
    with enable_grad():
        xs = _grad_inputs(inputs, create_graph, "jvp")
        out = func(*xs)
        outs, out_tuple = _as_tuple(out, "output", "jvp")
        us = tuple(zeros_like(o).requires_grad_(True) if o.dtype.is_floating_point else zeros_like(o)
                   for o in outs)
        gs = _grads(outs, xs, us, create_graph=True)
        res = _grads(gs, us, vs, create_graph)
    out_vals = tuple(_finish(o, create_graph) for o in outs)
    res = tuple(_finish(r, create_graph) for r in res)
    return (out_vals if out_tuple else out_vals[0]), (res if out_tuple else res[0])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False):
    """The Jacobian of ``func`` at ``inputs``, one reverse pass per output element.

    Returns a tensor of shape ``output.shape + input.shape`` for one input and one output;
    a tuple over inputs when ``inputs`` is a tuple; a tuple over outputs (of those) when
    ``func`` returns a tuple.
    """
    inputs, in_tuple = _as_tuple(inputs, "input", "jacobian")
    with enable_grad():
        xs = _grad_inputs(inputs, create_graph, "jacobian")
        outs, out_tuple = _as_tuple(func(*xs), "output", "jacobian")
        table = [_jacobian_of(o, xs, create_graph) for o in outs]
    table = [tuple(_finish(j, create_graph) for j in row) for row in table]
    rows = [row if in_tuple else row[0] for row in table]
    return tuple(rows) if out_tuple else rows[0]


def _jacobian_of(out, xs, create_graph):
    """One tuple entry per input: d out / d x, shaped out.shape + x.shape."""
    import numpy as np

    n = out.numel()
    if n == 0 or not out.requires_grad:
        return tuple(zeros(*(tuple(out.shape) + tuple(x.shape)), dtype=x.dtype, device=x.device) for x in xs)
    rows = [[] for _ in xs]
    for k in range(n):
        onehot = np.zeros(n, dtype=str(out.dtype))
        onehot[k] = 1
        seed = tensor(onehot.reshape(out.shape), device=out.device)
        for i, g in enumerate(_grads((out,), xs, (seed,), create_graph)):
            rows[i].append(g)
    return tuple(reshape(stack(r), list(out.shape) + list(x.shape)) for r, x in zip(rows, xs))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False):
    """The Hessian of scalar-valued ``func`` at ``inputs``.

    Returns a tensor of shape ``input.shape + input.shape`` for one input, or a tuple of
    tuples ``H[i][j] = d^2 f / dx_i dx_j`` for a tuple of inputs.
    """
    inputs, in_tuple = _as_tuple(inputs, "input", "hessian")

    def gradient(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("hessian: func must return a single one-element tensor, got "
                               f"{tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__}")
        out = reshape(out, [])
        return _grads((out,), xs, (None,), create_graph=True) if out.requires_grad else tuple(
            x * 0 for x in xs)

    res = jacobian(gradient, inputs, create_graph=create_graph)
    return res if in_tuple else res[0][0]


def _check_like(vs, refs, fn_name, what, ref_name):
    if len(vs) != len(refs):
        raise RuntimeError(f"{fn_name}: {what} has {len(vs)} entries but {ref_name} has {len(refs)}")
    for i, (v, r) in enumerate(zip(vs, refs)):
        if tuple(v.shape) != tuple(r.shape):
            raise RuntimeError(f"{fn_name}: {what} entry {i} has shape {tuple(v.shape)} but {ref_name} "
                               f"entry {i} has shape {tuple(r.shape)}; they must match")
