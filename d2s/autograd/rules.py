"""Gradient rules, one per primitive, written in d2s ops (see ``node.py`` for the contract).

Because they are ordinary d2s code, the same rules run eagerly, append ops to a program for
static backward, and record their own graph for higher-order derivatives.
"""
from .. import ops as d
from ..tensor import Tensor
from .node import defgrad, nondiff, shape_only

nondiff("eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_not",
        "argmax", "argmin", "reduce_any", "reduce_all", "sign", "floor", "floordiv", "stop_gradient",
        "full", "arange", "linspace", "eye", "rand", "randn", "randint", "dim", "constant", "full_like",
        "guard", "print", "assert", "full_dims", "arange_dyn")
# Rules that read only the shapes of these inputs (positions), never their values.
for _op in ("neg", "reshape", "transpose", "expand_dims", "squeeze", "broadcast_to", "reduce_sum",
            "reduce_mean", "cast", "to_device", "getitem"):
    shape_only(_op, 0)
for _op in ("add", "sub", "setitem", "index_add"):
    shape_only(_op, 0, 1)
# Rules that read only the op's output (y = exp(x): dx = g * y), not its input.
for _op in ("exp", "sqrt", "tanh", "sigmoid", "softmax", "log_softmax"):
    shape_only(_op, 0)


def _shape(x):
    """Static shape of an op input (Tensor, array or Python scalar); None marks unknown dims."""
    if isinstance(x, Tensor):
        return x._var.type.shape if x._data is None else x._data.shape
    return getattr(x, "shape", ())


def _is_diff(x):
    return isinstance(x, Tensor) and x.requires_grad


def unbroadcast(g, shape):
    """Sum ``g`` down to ``shape``: the gradient of NumPy broadcasting."""
    gshape = _shape(g)
    if tuple(gshape) == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        g = d.sum(g, axis=axes, keepdims=True)
    if lead or _shape(g) != tuple(shape):
        g = d.reshape(g, [1 if s == 1 else -1 if s is None else s for s in shape]) if None in shape else d.reshape(g, list(shape))
    return g


def _pair(ctx, ga, gb):
    a, b = ctx.inputs
    return (unbroadcast(ga, _shape(a)) if _is_diff(a) else None,
            unbroadcast(gb, _shape(b)) if _is_diff(b) else None)


@defgrad("add")
def _add(ctx, g):
    return _pair(ctx, g, g)


@defgrad("sub")
def _sub(ctx, g):
    return _pair(ctx, g, -g if _is_diff(ctx.inputs[1]) else None)


@defgrad("mul")
def _mul(ctx, g):
    a, b = ctx.inputs
    return _pair(ctx, g * b if _is_diff(a) else None, g * a if _is_diff(b) else None)


@defgrad("div")
def _div(ctx, g):
    a, b = ctx.inputs
    return _pair(ctx, g / b if _is_diff(a) else None, -g * a / (b * b) if _is_diff(b) else None)


@defgrad("pow")
def _pow(ctx, g):
    a, b = ctx.inputs
    ga = g * b * a ** (b - 1) if _is_diff(a) else None
    gb = None
    if _is_diff(b):
        # d(a^b)/db = a^b log a, taken as 0 where a == 0 (the limit used by PyTorch and JAX)
        safe = d.where(a > 0, a, 1)
        gb = g * ctx.outputs[0] * d.log(safe)
    return _pair(ctx, ga, gb)


@defgrad("mod")
def _mod(ctx, g):
    # a % b = a - floor(a / b) * b, and floor is flat almost everywhere
    a, b = ctx.inputs
    return _pair(ctx, g if _is_diff(a) else None, -g * d.floor(a / b) if _is_diff(b) else None)


@defgrad("maximum", "minimum")
def _maxmin(ctx, g):
    a, b = ctx.inputs
    pick_a = (a >= b) if ctx.op == "maximum" else (a <= b)
    pick_a = d.cast(pick_a, g.dtype)
    # ties split the gradient evenly, as PyTorch does
    tie = d.cast(d.eq(a, b), g.dtype)
    wa = pick_a - tie * 0.5
    return _pair(ctx, g * wa if _is_diff(a) else None, g * (1 - wa) if _is_diff(b) else None)


@defgrad("neg")
def _neg(ctx, g):
    return (-g,)


@defgrad("exp")
def _exp(ctx, g):
    return (g * ctx.outputs[0],)


@defgrad("log")
def _log(ctx, g):
    return (g / ctx.inputs[0],)


@defgrad("sqrt")
def _sqrt(ctx, g):
    return (g / (2 * ctx.outputs[0]),)


@defgrad("sin")
def _sin(ctx, g):
    return (g * d.cos(ctx.inputs[0]),)


@defgrad("cos")
def _cos(ctx, g):
    return (-g * d.sin(ctx.inputs[0]),)


@defgrad("tanh")
def _tanh(ctx, g):
    y = ctx.outputs[0]
    return (g * (1 - y * y),)


@defgrad("sigmoid")
def _sigmoid(ctx, g):
    y = ctx.outputs[0]
    return (g * y * (1 - y),)


@defgrad("relu")
def _relu(ctx, g):
    return (g * d.cast(ctx.inputs[0] > 0, g.dtype),)


@defgrad("abs")
def _abs(ctx, g):
    return (g * d.sign(ctx.inputs[0]),)


@defgrad("clip")
def _clip(ctx, g):
    x = ctx.inputs[0]
    lo, hi = ctx.attrs.get("lo"), ctx.attrs.get("hi")
    keep = None
    if lo is not None:
        keep = x >= lo
    if hi is not None:
        keep = (x <= hi) if keep is None else keep & (x <= hi)
    return (g if keep is None else g * d.cast(keep, g.dtype),)


@defgrad("where")
def _where(ctx, g):
    c, a, b = ctx.inputs
    zero = d.zeros_like(g)
    ga = unbroadcast(d.where(c, g, zero), _shape(a)) if _is_diff(a) else None
    gb = unbroadcast(d.where(c, zero, g), _shape(b)) if _is_diff(b) else None
    return (None, ga, gb)


@defgrad("cast")
def _cast(ctx, g):
    x = ctx.inputs[0]
    return (d.cast(g, x.dtype) if _is_diff(x) else None,)


@defgrad("to_device")
def _to_device(ctx, g):
    return (d.to_device(g, ctx.inputs[0].device),)


# ------------------------------------------------------------------ linear algebra
@defgrad("matmul")
def _matmul(ctx, g):
    a, b = ctx.inputs
    sa, sb = _shape(a), _shape(b)
    ga = gb = None
    if len(sa) == 1 and len(sb) == 1:
        return (g * b if _is_diff(a) else None, g * a if _is_diff(b) else None)
    if len(sa) == 1:  # (k) @ (..., k, n) -> (..., n)
        if _is_diff(a):
            ga = unbroadcast(d.matmul(d.unsqueeze(g, -2), d.transpose(b, -1, -2)), (1,) + tuple(sa))
            ga = d.reshape(ga, list(sa))
        if _is_diff(b):
            gb = unbroadcast(d.unsqueeze(a, -1) * d.unsqueeze(g, -2), sb)
        return ga, gb
    if len(sb) == 1:  # (..., m, k) @ (k) -> (..., m)
        if _is_diff(a):
            ga = unbroadcast(d.unsqueeze(g, -1) * b, sa)
        if _is_diff(b):
            gb = d.reshape(unbroadcast(d.matmul(d.transpose(a, -1, -2), d.unsqueeze(g, -1)), tuple(sb) + (1,)), list(sb))
        return ga, gb
    if _is_diff(a):
        ga = unbroadcast(d.matmul(g, d.transpose(b, -1, -2)), sa)
    if _is_diff(b):
        gb = unbroadcast(d.matmul(d.transpose(a, -1, -2), g), sb)
    return ga, gb


# ------------------------------------------------------------------ reductions
def _expand_reduced(g, x, axes, keepdims):
    """Put reduced axes back (size 1) so ``g`` broadcasts against input ``x``."""
    nd = len(_shape(x))
    if not keepdims and nd:
        ax = range(nd) if axes is None else sorted(a % nd for a in axes)
        for a in ax:
            g = d.unsqueeze(g, a)
    return g


@defgrad("reduce_sum")
def _sum(ctx, g):
    x = ctx.inputs[0]
    g = _expand_reduced(g, x, ctx.attrs.get("axes"), ctx.attrs.get("keepdims", False))
    return (g * d.ones_like(x) if None in _shape(x) else d.broadcast_to(g, _shape(x)),)


@defgrad("reduce_mean")
def _mean(ctx, g):
    x = ctx.inputs[0]
    shape = _shape(x)
    axes = ctx.attrs.get("axes")
    n_in = d.ones_like(x)
    g = _expand_reduced(g, x, axes, ctx.attrs.get("keepdims", False))
    ax = range(len(shape)) if axes is None or not shape else [a % len(shape) for a in axes]
    if None in [shape[a] for a in ax]:
        count = d.sum(n_in, axis=list(ax), keepdims=True)
        return (g * n_in / count,)
    n = 1
    for a in ax:
        n *= shape[a]
    return (g * n_in / n if None in shape else d.broadcast_to(g / n, shape),)


def reduction_operands(ctx, g):
    """(input, output, gradient) of a reduction, output and gradient with the reduced axes put
    back as size 1 so they broadcast against the input."""
    x, y = ctx.inputs[0], ctx.outputs[0]
    axes, keep = ctx.attrs.get("axes"), ctx.attrs.get("keepdims", False)
    return x, _expand_reduced(y, x, axes, keep), _expand_reduced(g, x, axes, keep)


@defgrad("reduce_max", "reduce_min")
def _maxmin_reduce(ctx, g):
    x, y, g = reduction_operands(ctx, g)
    axes = ctx.attrs.get("axes")
    hit = d.cast(d.eq(x, y), g.dtype)
    # ties share the gradient evenly
    count = d.sum(hit, axis=axes, keepdims=True)
    return (g * hit / count,)


@defgrad("reduce_prod")
def _prod(ctx, g):
    x, y, g = reduction_operands(ctx, g)
    axes = ctx.attrs.get("axes")
    # y / x is wrong where x == 0: there, multiply the other factors directly
    nonzero = d.ne(x, 0)
    safe = d.where(nonzero, x, 1)
    others = d.prod(safe, axis=axes, keepdims=True)
    zeros = d.sum(d.cast(d.logical_not(nonzero), x.dtype), axis=axes, keepdims=True)
    grad_nz = d.where(d.eq(zeros, 0), y / safe, d.zeros_like(y))
    grad_z = d.where(d.eq(zeros, 1), others, d.zeros_like(others))
    return (g * d.where(nonzero, grad_nz, grad_z),)


# ------------------------------------------------------------------ shapes
@defgrad("reshape")
def _reshape(ctx, g):
    shape = _shape(ctx.inputs[0])
    if shape.count(None) <= 1:
        return (d.reshape(g, [-1 if s is None else s for s in shape]),)
    from ..dispatch import apply
    return (apply("reshape_like", g, d.stop_gradient(ctx.inputs[0])),)


@defgrad("transpose")
def _transpose(ctx, g):
    perm = ctx.attrs.get("perm")
    if perm is None:
        return (d.transpose(g),)
    nd = len(perm)
    inv = [0] * nd
    for i, p in enumerate(perm):
        inv[p % nd] = i
    return (d.transpose(g, inv),)


@defgrad("reshape_like")
def _reshape_like(ctx, g):
    from ..dispatch import apply
    return (apply("reshape_like", g, d.stop_gradient(ctx.inputs[0])), None)


@defgrad("expand_dims")
def _expand_dims(ctx, g):
    return (d.squeeze(g, ctx.attrs["axis"]),)


@defgrad("squeeze")
def _squeeze(ctx, g):
    return (d.reshape(g, [-1 if s is None else s for s in _shape(ctx.inputs[0])]),)


@defgrad("broadcast_to")
def _broadcast_to(ctx, g):
    return (unbroadcast(g, _shape(ctx.inputs[0])),)


@defgrad("concat")
def _concat(ctx, g):
    axis = ctx.attrs.get("axis", 0)
    sizes = [_shape(x)[axis] for x in ctx.inputs]
    if len(sizes) == 1:
        parts = (g,)
    elif None in sizes:  # sizes known only when the program runs
        from ..dispatch import apply
        parts = apply("split_like", g, *[d.stop_gradient(x) for x in ctx.inputs], axis=axis)
    else:
        parts = d.split(g, sizes, axis=axis)
    return tuple(p if _is_diff(x) else None for p, x in zip(parts, ctx.inputs))


@defgrad("split_like")
def _split_like(ctx, *gs):
    return (d.concat(list(gs), axis=ctx.attrs.get("axis", 0)),) + (None,) * (len(ctx.inputs) - 1)


@defgrad("stack")
def _stack(ctx, g):
    axis = ctx.attrs.get("axis", 0)
    n = len(ctx.inputs)
    parts = d.split(g, [1] * n, axis=axis) if n > 1 else (g,)
    return tuple(d.squeeze(p, axis) if _is_diff(x) else None for p, x in zip(parts, ctx.inputs))


@defgrad("split")
def _split(ctx, *gs):
    return (d.concat(list(gs), axis=ctx.attrs.get("axis", 0)),)


@defgrad("getitem")
def _getitem(ctx, g):
    x = ctx.inputs[0]
    extra = ctx.inputs[1:]
    zero = d.zeros_like(x)
    return (_scatter(zero, g, extra, ctx.attrs["index"]),) + (None,) * len(extra)


def _scatter(base, g, extra, spec):
    """``base`` with ``g`` added at ``index`` (repeated integer indices accumulate)."""
    from ..dispatch import apply
    return apply("index_add", base, g, *extra, index=spec)


@defgrad("index_add")
def _index_add(ctx, g):
    x, v = ctx.inputs[:2]
    extra = ctx.inputs[2:]
    gv = None
    if _is_diff(v):
        from ..dispatch import apply
        gv = unbroadcast(apply("getitem", g, *extra, index=ctx.attrs["index"]), _shape(v))
    return (g if _is_diff(x) else None, gv) + (None,) * len(extra)


@defgrad("setitem")
def _setitem(ctx, g):
    x, v = ctx.inputs[:2]
    extra = ctx.inputs[2:]
    from ..dispatch import apply
    spec = ctx.attrs["index"]
    gx = apply("setitem", g, 0.0, *extra, index=spec) if _is_diff(x) else None
    gv = unbroadcast(apply("getitem", g, *extra, index=spec), _shape(v)) if _is_diff(v) else None
    return (gx, gv) + (None,) * len(extra)


# ------------------------------------------------------------------ pad, identity
nondiff("shape", "randint_dyn")
shape_only("pad_grad", 0)


@defgrad("pad")
def _pad(ctx, g):
    from ..dispatch import apply
    return (apply("pad_grad", g, pads=ctx.attrs["pads"], mode=ctx.attrs.get("mode", "constant")),)


@defgrad("pad_grad")
def _pad_grad(ctx, g):
    # pad_grad is linear in its input and the transpose of pad, so its own gradient is pad
    # (with zeros as the fill: the constant does not depend on the input)
    from ..dispatch import apply
    return (apply("pad", g, pads=ctx.attrs["pads"], mode=ctx.attrs.get("mode", "constant"), value=0),)


@defgrad("identity")
def _identity(ctx, g):
    return (g,)
