"""JAX-style function transforms over pytrees: ``grad``, ``value_and_grad``, ``jacrev``,
``jacfwd`` and ``hessian``.

A pytree is nested tuples, lists and dicts whose leaves are tensors (numpy arrays and Python
numbers are accepted and become tensors). Transforms compose: ``hessian(f)`` is
``jacfwd(jacrev(f))``. Each transform copies the differentiated arguments into fresh leaves,
so the caller's tensors are untouched. Inside another transform (or when an argument already
requires grad) results stay differentiable, which is what makes nesting work; at the
outermost level they come back detached, as plain values.

``jacfwd`` is forward mode by the double-vjp trick: the vjp ``u -> u^T J`` is linear in ``u``,
so differentiating it with respect to ``u`` along a tangent ``t`` gives ``J t``, one pass per
input element, with no separate forward-mode rules to keep in sync.
"""
import functools

import numpy as np

from . import pytree
from .autograd.engine import grad as _autograd_grad
from .autograd.grad_mode import enable_grad
from .ops import reshape, stack, zeros, zeros_like
from .tensor import Tensor, tensor

__all__ = ["grad", "value_and_grad", "jacrev", "jacfwd", "hessian", "tree_flatten", "tree_unflatten", "functional_call"]

_depth = [0]  # how many transforms are running around the current call


# ------------------------------------------------------------------ pytrees
def tree_flatten(tree):
    """(list of leaves, treedef) for nested tuples/lists/dicts; dict keys in sorted order, as in JAX."""
    return pytree.tree_flatten(tree, sort_keys=True)


def tree_unflatten(treedef, leaves):
    """Inverse of :func:`tree_flatten`."""
    return pytree.tree_unflatten(treedef, leaves)


# ------------------------------------------------------------------ helpers
def _argnums(argnums, nargs, fn_name):
    many = isinstance(argnums, (tuple, list))
    nums = tuple(argnums) if many else (argnums,)
    for a in nums:
        if not isinstance(a, int) or not -nargs <= a < nargs:
            raise ValueError(f"{fn_name}: argnums {argnums!r} out of range for a call with {nargs} positional arguments")
    return tuple(a % nargs for a in nums), many


def _to_tensor(x, fn_name):
    if isinstance(x, Tensor):
        t = x
    else:
        try:
            t = tensor(x)
        except TypeError:
            raise TypeError(f"{fn_name}: differentiated arguments must hold tensors, arrays or numbers, "
                            f"got {type(x).__name__}") from None
    if not t.dtype.is_floating_point:
        raise TypeError(f"{fn_name}: can only differentiate with respect to floating point values, "
                        f"got {t.dtype}; cast it first (x.float())")
    return t


def _fresh(x, fn_name):
    """A leaf we can differentiate with respect to; stays connected when x is being tracked."""
    t = _to_tensor(x, fn_name)
    if t.requires_grad:
        return t * 1  # an alias node: gradients stop here for this transform, flow on for outer ones
    return t.detach().requires_grad_(True)


def _prepare(args, argnums, fn_name):
    """(new args, flat leaves of the differentiated args, treedefs) with fresh leaves swapped in."""
    args = list(args)
    flat, defs = [], []
    for a in argnums:
        leaves, treedef = tree_flatten(args[a])
        leaves = [_fresh(x, fn_name) for x in leaves]
        args[a] = tree_unflatten(treedef, leaves)
        flat.append(leaves)
        defs.append(treedef)
    return args, flat, defs


def _nested(flat_inputs):
    return _depth[0] > 1 or any(x.grad_fn is not None for leaves in flat_inputs for x in leaves)


def _vjp_leaves(outputs, cotangents, inputs, create_graph):
    """d(sum <out, cot>)/d(inputs), zeros for inputs the outputs do not depend on."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if isinstance(o, Tensor) and o.requires_grad]
    if not pairs:
        return [zeros_like(x) for x in inputs]
    gs = _autograd_grad([o for o, _ in pairs], list(inputs), [c for _, c in pairs], retain_graph=True,
                        create_graph=create_graph, allow_unused=True)
    return [zeros_like(x) if g is None else g for g, x in zip(gs, inputs)]


def _mark_transform(wrapper, f, again):
    """Tag ``wrapper`` as this module's transform of ``f``: ``to_static`` (and converted code
    calling it) then applies the transform ``again(converted f)`` inside the program instead of
    converting this module's own source or unwrapping it to ``f`` (``__wrapped__``)."""
    wrapper.__d2s_transform__ = again
    wrapper.__d2s_transform_of__ = f
    wrapper.__dict__.pop("__d2s_converted__", None)  # copied from f by functools.wraps
    return wrapper


def _out(t, keep):
    return t if keep else t.detach()


class _Transform:
    """Counts nesting so inner transforms keep their results differentiable."""

    def __enter__(self):
        _depth[0] += 1

    def __exit__(self, *exc):
        _depth[0] -= 1
        return False


def _scalar_output(out, fn_name):
    if not isinstance(out, Tensor):
        raise TypeError(f"{fn_name}: the function must return a scalar tensor, got {type(out).__name__}"
                        + (" (with has_aux=True it must return (scalar, aux))" if isinstance(out, tuple) else ""))
    if out.numel() != 1:
        raise TypeError(f"{fn_name}: the function must return a scalar (one-element) tensor, got shape "
                        f"{tuple(out.shape)}; use jacrev for non-scalar outputs")
    if not out.dtype.is_floating_point:
        raise TypeError(f"{fn_name}: the function must return a floating point scalar, got {out.dtype}")
    return out


# ------------------------------------------------------------------ transforms
def value_and_grad(f, argnums=0, has_aux=False):
    """Like :func:`grad`, but the returned function gives ``(value, grad)``
    (``((value, aux), grad)`` with ``has_aux``)."""

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        nums, many = _argnums(argnums, len(args), "value_and_grad")
        with _Transform(), enable_grad():
            new_args, flat, defs = _prepare(args, nums, "value_and_grad")
            res = f(*new_args, **kwargs)
            if has_aux:
                if not (isinstance(res, (tuple, list)) and len(res) == 2):
                    raise TypeError("value_and_grad: with has_aux=True the function must return (scalar, aux)")
                out, aux = res
            else:
                out, aux = res, None
            out = _scalar_output(out, "value_and_grad")
            keep = _nested(flat)
            all_inputs = [x for leaves in flat for x in leaves]
            gs = _vjp_leaves([out], [None], all_inputs, create_graph=keep)
        grads, pos = [], 0
        for leaves, treedef in zip(flat, defs):
            grads.append(tree_unflatten(treedef, [_out(g, keep) for g in gs[pos:pos + len(leaves)]]))
            pos += len(leaves)
        g = tuple(grads) if many else grads[0]
        value = _out(out, keep)
        if has_aux:
            return (value, aux), g
        return value, g

    return _mark_transform(wrapper, f, functools.partial(value_and_grad, argnums=argnums, has_aux=has_aux))


def grad(f, argnums=0, has_aux=False):
    """The gradient of scalar-valued ``f`` with respect to argument(s) ``argnums``.

    Args:
        f: a function returning a scalar tensor (or ``(scalar, aux)`` with ``has_aux``).
        argnums: an int or a tuple of ints; the arguments may be pytrees.
        has_aux: ``f`` returns ``(scalar, aux)``; the transformed function then returns ``(grad, aux)``.
    Returns:
        A function returning gradients shaped like the chosen arguments (a tuple for a tuple of
        argnums).
    """
    vg = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        (value_aux), g = vg(*args, **kwargs)
        if has_aux:
            return g, value_aux[1]
        return g

    return _mark_transform(wrapper, f, functools.partial(grad, argnums=argnums, has_aux=has_aux))


def jacrev(f, argnums=0, has_aux=False):
    """The Jacobian of ``f`` by reverse mode (one backward pass per output element).

    For each output leaf of shape ``O`` and input leaf of shape ``I`` the block has shape
    ``O + I``; blocks are arranged as the output pytree of input pytrees (JAX's layout).
    """

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        nums, many = _argnums(argnums, len(args), "jacrev")
        with _Transform(), enable_grad():
            new_args, flat, defs = _prepare(args, nums, "jacrev")
            res = f(*new_args, **kwargs)
            out, aux = _split_aux(res, has_aux, "jacrev")
            keep = _nested(flat)
            inputs = [x for leaves in flat for x in leaves]
            out_leaves, out_def = tree_flatten(out)
            blocks = [_reverse_blocks(_to_tensor(o, "jacrev") if not isinstance(o, Tensor) else o, inputs, keep)
                      for o in out_leaves]
        result = tree_unflatten(out_def, [_regroup([_out(b, keep) for b in row], flat, defs, many)
                                          for row in blocks])
        return (result, aux) if has_aux else result

    return _mark_transform(wrapper, f, functools.partial(jacrev, argnums=argnums, has_aux=has_aux))


def _reverse_blocks(out, inputs, keep):
    n = out.numel()
    if n == 0 or not out.requires_grad:
        return [zeros(*(tuple(out.shape) + tuple(x.shape)), dtype=x.dtype, device=x.device) for x in inputs]
    rows = [[] for _ in inputs]
    for k in range(n):
        seed = _onehot(out, k)
        for i, g in enumerate(_vjp_leaves([out], [seed], inputs, create_graph=keep)):
            rows[i].append(g)
    return [reshape(stack(r), list(out.shape) + list(x.shape)) for r, x in zip(rows, inputs)]


def jacfwd(f, argnums=0, has_aux=False):
    """The Jacobian of ``f`` by forward mode (one pass per input element, double-vjp trick).

    Same layout as :func:`jacrev`: blocks of shape ``out.shape + in.shape``.
    """

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        nums, many = _argnums(argnums, len(args), "jacfwd")
        with _Transform(), enable_grad():
            new_args, flat, defs = _prepare(args, nums, "jacfwd")
            res = f(*new_args, **kwargs)
            out, aux = _split_aux(res, has_aux, "jacfwd")
            keep = _nested(flat)
            inputs = [x for leaves in flat for x in leaves]
            out_leaves, out_def = tree_flatten(out)
            out_leaves = [o if isinstance(o, Tensor) else _to_tensor(o, "jacfwd") for o in out_leaves]
            diff = [o for o in out_leaves if o.requires_grad]
            # The vjp with symbolic cotangents us: linear in us, so d/dus along a tangent is the jvp.
            us = [zeros_like(o).requires_grad_(True) for o in diff]
            vjps = _vjp_leaves(diff, us, inputs, create_graph=True) if diff else []
            columns = []  # columns[i][k]: the jvp along input i's element k, one entry per diff output
            for i, x in enumerate(inputs):
                cols = []
                for k in range(x.numel()):
                    tangent = _onehot(x, k)
                    if vjps and vjps[i].requires_grad:
                        cols.append(_vjp_leaves([vjps[i]], [tangent], us, create_graph=keep))
                    else:
                        cols.append([zeros_like(o) for o in diff])
                columns.append(cols)
            blocks = []
            for o in out_leaves:
                row = []
                for i, x in enumerate(inputs):
                    shape = list(o.shape) + list(x.shape)
                    if not o.requires_grad or x.numel() == 0 or o.numel() == 0:
                        row.append(zeros(*shape, dtype=x.dtype, device=x.device))
                        continue
                    j = _index_of(diff, o)
                    cols = [reshape(c[j], [-1]) for c in columns[i]]
                    # stacked along the last axis: element k of the input is the trailing index
                    row.append(reshape(stack(cols, axis=-1), shape))
                blocks.append(row)
        result = tree_unflatten(out_def, [_regroup([_out(b, keep) for b in row], flat, defs, many)
                                          for row in blocks])
        return (result, aux) if has_aux else result

    return _mark_transform(wrapper, f, functools.partial(jacfwd, argnums=argnums, has_aux=has_aux))


def hessian(f, argnums=0, has_aux=False):
    """The Hessian of scalar-valued ``f``: ``jacfwd(jacrev(f))``."""
    return jacfwd(jacrev(f, argnums, has_aux=has_aux), argnums, has_aux=has_aux)


def _index_of(items, target):
    for i, t in enumerate(items):
        if t is target:
            return i
    raise ValueError("internal: output not found")


def _onehot(ref, k):
    arr = np.zeros(ref.numel(), dtype=str(ref.dtype))
    arr[k] = 1
    return tensor(arr.reshape(ref.shape), device=ref.device)


def _split_aux(res, has_aux, fn_name):
    if not has_aux:
        return res, None
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"{fn_name}: with has_aux=True the function must return (output, aux)")
    return res[0], res[1]


def _regroup(blocks, flat, defs, many):
    """Blocks for one output leaf (one per input leaf) -> the argument pytree(s) layout."""
    trees, pos = [], 0
    for leaves, treedef in zip(flat, defs):
        trees.append(tree_unflatten(treedef, blocks[pos:pos + len(leaves)]))
        pos += len(leaves)
    return tuple(trees) if many else trees[0]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """PyTorch's ``torch.func.functional_call``: ``module`` called with some parameters and
    buffers replaced (see :func:`d2s.nn.utils.stateless.functional_call`)."""
    from .nn.utils.stateless import functional_call as call  # d2s.func imports no layers until this is called
    return call(module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights, strict=strict)
