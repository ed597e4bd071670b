"""Neural-network ops: the softmax family, logsumexp, cumsum, one_hot, and the primitives
behind ``d2s.nn`` layers (dropout, embedding) (runtime: ``d2s_runtime/ops/nn_ops.py``): for each
op its public wrapper, its gradient rule and its ONNX converter. Convolution, pooling and
normalization are their own families (``conv``, ``pooling``, ``norm``), gather and scatter_add
live with indexing; ``conv2d``, ``max_pool2d``, ``gather`` and ``scatter_add`` are re-exported
here for older imports.
"""
import numpy as np

from ..autograd.registry import grad_rule, non_differentiable, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter, onnx_unsupported
from ..tensor import Tensor, tensor, tensor_method
from .creation import zeros_like
from . import _dim_args
from .elementwise import cast, exp, ge, gt, le, logical_and, where
from .reduce import _reduce_onnx, _reduction_operands, sum
from .indexing import gather, scatter_add  # noqa: F401  (their home before d2s.ops.indexing)
from .shape import concat, reshape, split, stop_gradient
from ._util import _as_tensor, _axes, _is_diff, _static_shape
from .conv import conv2d  # noqa: F401  (d2s.ops.nn.conv2d, as before the conv family)
from .pooling import max_pool2d  # noqa: F401


non_differentiable("one_hot", reason="a one-hot encoding is integers")
non_differentiable("dropout_mask", reason="a random mask carries no gradient (dropout multiplies by it)")
onnx_unsupported("dropout_mask", reason="dropout draws random masks; call model.eval() before exporting")
onnx_converter("logsumexp")(_reduce_onnx("ReduceLogSumExp"))
shape_only("softmax", 0)  # their rules read the output, not the input
shape_only("log_softmax", 0)


# ------------------------------------------------------------------ wrappers
def _softmax_input(fn, x, dtype):
    x = _as_tensor(x)
    dt = _dim_args.dtype_name(dtype)
    return x if dt is None or x.dtype == dt else cast(x, dt)


def _softmax_dim(fn, dim, axis):
    d = _dim_args.one_dim(fn, dim, axis)
    return -1 if d is None else d


@tensor_method()
def softmax(input, dim=None, dtype=None, *, axis=None, **unsupported):
    """exp(x) / sum(exp(x)) along ``dim`` (default: the last), computed stably (the max is
    subtracted first); ``dtype`` casts the input first, as in PyTorch."""
    _dim_args.no_extra("softmax", unsupported)
    return apply("softmax", _softmax_input("softmax", input, dtype), axis=_softmax_dim("softmax", dim, axis))


@tensor_method()
def log_softmax(input, dim=None, dtype=None, *, axis=None, **unsupported):
    """log(softmax(x)) along ``dim`` (default: the last), computed stably without forming softmax;
    ``dtype`` casts the input first."""
    _dim_args.no_extra("log_softmax", unsupported)
    return apply("log_softmax", _softmax_input("log_softmax", input, dtype),
                 axis=_softmax_dim("log_softmax", dim, axis))


@tensor_method()
def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=None, **unsupported):
    """log(sum(exp(x))) over ``dim`` (an int, a tuple; None: all), computed stably; integer
    inputs give float32, as in PyTorch."""
    _dim_args.no_extra("logsumexp", unsupported)
    return apply("logsumexp", _as_tensor(input), axes=_dim_args.dims("logsumexp", dim, axis),
                 keepdims=_dim_args.keep("logsumexp", keepdim, keepdims))


@tensor_method()
def cumsum(input, dim=None, *, dtype=None, axis=None, **unsupported):
    """Running sum along ``dim``; bool and int32 inputs sum in int64 (as PyTorch); ``dtype``
    casts the input first (and gives the result that dtype)."""
    _dim_args.no_extra("cumsum", unsupported)
    d = _dim_args.one_dim("cumsum", dim, axis)
    if d is None:
        raise TypeError("d2s.cumsum() missing its dim argument (the dim to run along)")
    x = _softmax_input("cumsum", input, dtype)
    out = apply("cumsum", x, axis=d)
    return out if dtype is None or out.dtype == x.dtype else cast(out, x.dtype)


def one_hot(x, num_classes=-1):
    """int64 one-hot encoding of integer class ids, with a new last dim of ``num_classes``.

    ``num_classes=-1`` takes ``max(x) + 1``, which needs a concrete tensor.
    """
    x = _index_tensor(x)
    if num_classes is None or int(num_classes) < 0:
        if x.is_symbolic:
            raise ValueError("one_hot: num_classes must be given for a symbolic tensor "
                             "(the largest id is only known when the program runs)")
        num_classes = int(x._concrete("one_hot without num_classes").max()) + 1 if x.numel() else 0
    return apply("one_hot", x, num_classes=int(num_classes))


def _index_tensor(index):
    if isinstance(index, Tensor):
        return index
    arr = np.asarray(index)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"index must hold integers, got {arr.dtype}")
    return tensor(arr.astype(np.int64))


# ------------------------------------------------------------------ layer primitives
def dropout(x, p=0.5, training=True):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) (training only)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1], got {p}")
    x = _as_tensor(x)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    return x * apply("dropout_mask", x, p=float(p))


def embedding(ids, weight):
    """Rows of ``weight`` (num_embeddings, dim) picked by integer ``ids``: shape ids.shape + (dim,)."""
    ids = _index_tensor(ids)
    if not str(ids.dtype).startswith("int"):
        raise TypeError(f"embedding: ids must be an integer tensor, got {ids.dtype}")
    weight = _as_tensor(weight)
    # PyTorch raises for an id outside [0, num_embeddings), where numpy would wrap a negative one
    ids = apply("index_check", ids, weight, axis=0, op="embedding")
    return apply("getitem", weight, ids, index=[["t", 0]])




# ------------------------------------------------------------------ gradient rules
@grad_rule("softmax")
def _softmax_grad(ctx, g):
    y = ctx.outputs[0]
    axis = ctx.attrs.get("axis", -1)
    gy = g * y
    return (gy - y * sum(gy, axis=axis, keepdims=True),)


@grad_rule("log_softmax")
def _log_softmax_grad(ctx, g):
    y = ctx.outputs[0]
    axis = ctx.attrs.get("axis", -1)
    return (g - exp(y) * sum(g, axis=axis, keepdims=True),)


@grad_rule("logsumexp")
def _logsumexp_grad(ctx, g):
    x, y, g = _reduction_operands(ctx, g)
    return (g * exp(x - y),)


@grad_rule("cumsum")
def _cumsum_grad(ctx, g):
    return (apply("cumsum", g, axis=ctx.attrs["axis"], reverse=not ctx.attrs.get("reverse", False)),)




# ------------------------------------------------------------------ ONNX
def _softmax_family_onnx(onnx_name):
    """Softmax/LogSoftmax, and NaN for a whole slice holding NaN or +inf (d2s and PyTorch: the NaN
    spreads through the slice's sum, inf - inf is NaN; onnxruntime's kernels give numbers there)."""
    def conv(g, op):
        dt, axis = g.dtype(op.outputs[0]), int(op.attrs.get("axis", -1))
        x = g.cast(op.inputs[0], dt)
        if not g.shape(x):  # one element: no slice to spoil
            g.node(onnx_name, [x], op.outputs, axis=axis)
            return
        r, isn, isinf, bad, flag, anybad, anyb = (g.tmp() for _ in range(7))
        g.node(onnx_name, [x], [r], axis=axis)
        g.node("IsNaN", [x], [isn])
        g.node("IsInf", [x], [isinf], detect_negative=0)
        g.node("Or", [isn, isinf], [bad])
        g.node("Cast", [bad], [flag], to=g.onnx_dtype(dt))
        g.node("ReduceMax", [flag, g.const(i64([axis]))], [anybad], keepdims=1)
        g.node("Cast", [anybad], [anyb], to=g.onnx_dtype("bool"))
        if not op.attrs.get("zero_dead_rows"):
            g.node("Where", [anyb, g.const(np.asarray(np.nan, dtype=dt)), r], op.outputs)
            return
        # attention's softmax: a slice of -inf only gives zeros
        checked, top, dead = g.tmp(), g.tmp(), g.tmp()
        g.node("Where", [anyb, g.const(np.asarray(np.nan, dtype=dt)), r], [checked])
        g.node("ReduceMax", [x, g.const(i64([axis]))], [top], keepdims=1)
        g.node("Equal", [top, g.const(np.asarray(-np.inf, dtype=dt))], [dead])
        g.node("Where", [dead, g.const(np.zeros((), dtype=dt)), checked], op.outputs)
    return conv


onnx_converter("softmax")(_softmax_family_onnx("Softmax"))
onnx_converter("log_softmax")(_softmax_family_onnx("LogSoftmax"))


@onnx_converter("cumsum")
def _cumsum_onnx(g, op):
    x = g.cast(op.inputs[0], g.dtype(op.outputs[0]))
    if not g.shape(op.inputs[0]):
        g.node("Identity", [x], op.outputs)
        return
    g.node("CumSum", [x, g.const(i64(op.attrs["axis"]))], op.outputs,
           reverse=int(bool(op.attrs.get("reverse", False))))


@onnx_converter("one_hot")
def _one_hot_onnx(g, op):
    vals = g.const(np.asarray([0, 1], dtype=g.dtype(op.outputs[0])))
    g.node("OneHot", [op.inputs[0], g.const(np.asarray(op.attrs["num_classes"], dtype=np.int64)), vals],
           op.outputs, axis=-1)


# ------------------------------------------------------------------ hardshrink, prelu (also F.* and Tensor methods)
@tensor_method()
def hardshrink(input, lambd=0.5):
    """0 on ``[-lambd, lambd]``, ``x`` elsewhere, as ``torch.hardshrink`` / ``F.hardshrink`` /
    ``Tensor.hardshrink``."""
    x = _as_tensor(input)
    inside = logical_and(ge(x, -lambd), le(x, lambd))
    return where(inside, zeros_like(x), x)


@tensor_method()
def prelu(input, weight):
    """``leaky_relu`` with a learned slope per channel (dim 1; one slope for all when ``weight``
    has one element), as ``torch.prelu`` / ``F.prelu`` / ``Tensor.prelu``."""
    x, w = _as_tensor(input), _as_tensor(weight)
    if w.ndim > 1:
        raise ValueError(f"prelu: weight must be 0-d or 1-d, got shape {tuple(w.shape)}")
    n = _static_shape(w)[0] if w.ndim else 1
    xs = _static_shape(x)
    c = xs[1] if len(xs) >= 2 else None
    if n is not None and n > 1 and (c != n if c is not None else x.ndim < 2):
        # (an input of fewer than 2 dims has one channel, as PyTorch counts it)
        raise ValueError(f"prelu: weight has {n} slopes but the input has {1 if c is None else c} channels "
                         f"(dim 1 of its {x.ndim}-d shape)")
    if w.ndim == 1 and x.ndim >= 2:
        w = reshape(w, [-1] + [1] * (x.ndim - 2))  # one slope per channel (dim 1), or one for all
    elif w.ndim == 1 and x.ndim == 0:
        w = reshape(w, [])  # a 0-d input stays 0-d
    return where(gt(x, 0), x, w * x)
