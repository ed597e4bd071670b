"""Neural-network ops: the softmax family, logsumexp, cumsum, gather/scatter_add, one_hot,
and the primitives behind ``d2s.nn`` layers (dropout, embedding) (runtime:
``d2s_runtime/ops/nn_ops.py``): for each op its public wrapper, its gradient rule and its ONNX
converter. Convolution, pooling and normalization are their own families (``conv``,
``pooling``, ``norm``); ``conv2d`` and ``max_pool2d`` are re-exported here for older imports.
"""
import numpy as np

from ..autograd.registry import grad_rule, non_differentiable, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter, onnx_unsupported
from ..tensor import Tensor, tensor, tensor_method
from .creation import zeros_like
from .elementwise import exp
from .reduce import _reduce_onnx, _reduction_operands, sum
from ._util import _as_tensor, _axes, _is_diff
from .conv import conv2d  # noqa: F401  (d2s.ops.nn.conv2d, as before the conv family)
from .pooling import max_pool2d  # noqa: F401


non_differentiable("one_hot", reason="a one-hot encoding is integers")
non_differentiable("dropout_mask", reason="a random mask carries no gradient (dropout multiplies by it)")
onnx_unsupported("dropout_mask", reason="dropout draws random masks; call model.eval() before exporting")
onnx_converter("logsumexp")(_reduce_onnx("ReduceLogSumExp"))
shape_only("softmax", 0)  # their rules read the output, not the input
shape_only("log_softmax", 0)


# ------------------------------------------------------------------ wrappers
@tensor_method()
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis``, computed stably (the max is subtracted first)."""
    return apply("softmax", _as_tensor(x), axis=int(axis))


@tensor_method()
def log_softmax(x, axis=-1):
    """log(softmax(x)) along ``axis``, computed stably without forming softmax."""
    return apply("log_softmax", _as_tensor(x), axis=int(axis))


@tensor_method()
def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over ``axis`` (None: all), computed stably."""
    return apply("logsumexp", _as_tensor(x), axes=_axes(axis), keepdims=bool(keepdims))


@tensor_method()
def cumsum(x, axis):
    """Running sum along ``axis``; bool and int32 inputs sum in int64 (as numpy does)."""
    return apply("cumsum", _as_tensor(x), axis=int(axis))


@tensor_method()
def gather(x, axis, index):
    """Values of ``x`` picked along ``axis`` by ``index`` (torch.gather / take_along_axis).

    ``index`` has as many dims as ``x``; the result has ``index``'s shape, and
    ``out[i][j] = x[index[i][j]][j]`` for ``axis=0``.
    """
    return apply("gather", _as_tensor(x), _index_tensor(index), axis=int(axis))


def scatter_add(x, axis, index, src):
    """A copy of ``x`` with ``src`` added at ``index`` along ``axis`` (repeated indices add up)."""
    return apply("scatter_add", _as_tensor(x), _index_tensor(index), _as_tensor(src), axis=int(axis))


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
    return apply("getitem", _as_tensor(weight), ids, index=[["t", 0]])




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


@grad_rule("gather")
def _gather_grad(ctx, g):
    x, index = ctx.inputs
    axis = ctx.attrs["axis"]
    return (apply("scatter_add", zeros_like(x), index, g, axis=axis), None)


@grad_rule("scatter_add")
def _scatter_add_grad(ctx, g):
    base, index, src = ctx.inputs
    axis = ctx.attrs["axis"]
    gsrc = None
    if _is_diff(src):
        gsrc = apply("gather", g, index, axis=axis)
        if tuple(gsrc.shape) != tuple(src.shape):  # src larger than index: the rest was never read
            gsrc = _pad_to(gsrc, src)
    return (g if _is_diff(base) else None, None, gsrc)


def _pad_to(g, like):
    """``g`` placed in the leading corner of zeros shaped like ``like``."""
    spec = [["s", 0, n, None] for n in g.shape]
    return apply("index_add", zeros_like(like), g, index=spec)


# ------------------------------------------------------------------ ONNX
@onnx_converter("softmax")
def _softmax_onnx(g, op):
    g.node("Softmax", [g.cast(op.inputs[0], g.dtype(op.outputs[0]))], op.outputs, axis=int(op.attrs.get("axis", -1)))


@onnx_converter("log_softmax")
def _log_softmax_onnx(g, op):
    g.node("LogSoftmax", [g.cast(op.inputs[0], g.dtype(op.outputs[0]))], op.outputs,
           axis=int(op.attrs.get("axis", -1)))


@onnx_converter("cumsum")
def _cumsum_onnx(g, op):
    x = g.cast(op.inputs[0], g.dtype(op.outputs[0]))
    if not g.shape(op.inputs[0]):
        g.node("Identity", [x], op.outputs)
        return
    g.node("CumSum", [x, g.const(i64(op.attrs["axis"]))], op.outputs,
           reverse=int(bool(op.attrs.get("reverse", False))))


def _cropped_to(g, x, like, axis):
    """``x`` cut to ``like``'s size on every dim but ``axis`` (torch.gather reads that corner)."""
    nd = len(g.shape(x))
    if all(a == b and a is not None for i, (a, b) in enumerate(zip(g.shape(x), g.shape(like))) if i != axis):
        return x
    shp, t = g.tmp(), g.tmp()
    g.node("Shape", [like], [shp])
    others = [i for i in range(nd) if i != axis]
    ends = g.tmp()
    g.node("Gather", [shp, g.const(i64(others))], [ends], axis=0)
    g.node("Slice", [x, g.const(i64([0] * len(others))), ends, g.const(i64(others))], [t])
    g.types[t] = g.types[x].__class__(g.shape(like), g.dtype(x))
    return t


@onnx_converter("gather")
def _gather_onnx(g, op):
    x, index = op.inputs
    axis = int(op.attrs["axis"]) % len(g.shape(x))
    g.node("GatherElements", [_cropped_to(g, x, index, axis), g.cast(index, "int64")], op.outputs, axis=axis)


@onnx_converter("scatter_add")
def _scatter_add_onnx(g, op):
    base, index, src = op.inputs
    axis = int(op.attrs["axis"]) % len(g.shape(base))
    # d2s adds src[:index.shape] (every dim, the axis included)
    src = _cropped_to(g, src, index, -1)
    g.node("ScatterElements", [base, g.cast(index, "int64"), g.cast(src, g.dtype(base))], op.outputs,
           axis=axis, reduction="add")


@onnx_converter("one_hot")
def _one_hot_onnx(g, op):
    vals = g.const(np.asarray([0, 1], dtype=g.dtype(op.outputs[0])))
    g.node("OneHot", [op.inputs[0], g.const(np.asarray(op.attrs["num_classes"], dtype=np.int64)), vals],
           op.outputs, axis=-1)
