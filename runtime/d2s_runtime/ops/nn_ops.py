"""Neural-network primitives: stable softmax family, cumsum, one-hot, dropout masks.
Convolution, pooling and normalization have their own modules (``conv_ops``, ``pool_ops``,
``norm_ops``); gather and scatter live in ``indexing.py``.
"""
import numpy as np

from ..dtypes import is_floating
from .creation import RNG
from .registry import ShapeError, TensorType, deflowering, defop
from .rules import fmt_shape, norm_axes, reduce_shape


def _float_dtype(op, t):
    """Floating inputs keep their dtype; bool and int inputs compute in float32 (as exp does)."""
    return t.dtype if is_floating(t.dtype) else "float32"


def _as_float(x):
    return x if x.dtype.kind == "f" else x.astype("float32")


def _one_axis(op, axis, ndim):
    if not -max(ndim, 1) <= axis < max(ndim, 1):  # a 0-d tensor takes axis 0 or -1
        raise ShapeError(f"{op}: axis {axis} is out of range for a tensor with {ndim} dims")
    return axis % ndim if ndim else 0


# ------------------------------------------------------------------ softmax family
def _shift(xp, x, axis):
    """The max along ``axis`` (kept), the shift that keeps exp from overflowing; 0 where the axis
    is empty (an empty softmax is empty and an empty logsumexp -inf, as in PyTorch, where the
    max of nothing would raise)."""
    if x.size == 0:
        shape = list(x.shape)
        for a in ([axis] if isinstance(axis, int) else range(x.ndim) if axis is None else axis):
            shape[a] = 1
        return xp.zeros(shape, x.dtype)
    return xp.max(x, axis=axis, keepdims=True)


def _softmax_infer(x, axis=-1):
    _one_axis("softmax", axis, x.ndim)
    return TensorType(x.shape, _float_dtype("softmax", x))


@defop("softmax", _softmax_infer, float_inputs=True)
def _softmax(xp, x, axis=-1):
    """exp(x - max) / sum: subtracting the max keeps exp from overflowing."""
    x = _as_float(x)
    z = x - _shift(xp, x, axis)
    e = xp.exp(z)
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax_infer(x, axis=-1):
    _one_axis("log_softmax", axis, x.ndim)
    return TensorType(x.shape, _float_dtype("log_softmax", x))


@defop("log_softmax", _log_softmax_infer, float_inputs=True)
def _log_softmax(xp, x, axis=-1):
    """``log(softmax(x))`` along ``axis``, computed stably."""
    x = _as_float(x)
    if x.size == 0:
        return x.copy()
    z = x - _shift(xp, x, axis)
    return z - xp.log(xp.sum(xp.exp(z), axis=axis, keepdims=True))


def _logsumexp_infer(x, axes=None, keepdims=False):
    ax = norm_axes(axes, x.ndim, "logsumexp")
    return TensorType(reduce_shape(x.shape, ax, keepdims), _float_dtype("logsumexp", x))


@defop("logsumexp", _logsumexp_infer, float_inputs=True)
def _logsumexp(xp, x, axes=None, keepdims=False):
    """``log(sum(exp(x)))`` over ``axes``, computed stably (an all -inf slice gives -inf)."""
    x = _as_float(x)
    ax = None if axes is None or x.ndim == 0 else tuple(axes)
    m = _shift(xp, x, ax)
    # an all -inf slice would give -inf - -inf = nan; shift by 0 there instead
    m = xp.where(xp.isfinite(m), m, 0).astype(x.dtype, copy=False)
    total = xp.sum(xp.exp(x - m), axis=ax, keepdims=True)
    if xp is np:
        with np.errstate(divide="ignore"):  # log(0) = -inf is the right answer there
            out = xp.log(total) + m
    else:
        out = xp.log(total) + m
    if not keepdims:
        out = xp.squeeze(out, axis=ax) if ax is not None else out.reshape(())
    return out.astype(x.dtype, copy=False)


# ------------------------------------------------------------------ cumsum
def _cumsum_infer(x, axis, reverse=False):
    _one_axis("cumsum", axis, x.ndim)
    dtype = "int64" if x.dtype in ("bool", "int32", "uint8", "int8", "int16") else x.dtype
    return TensorType(x.shape, dtype)


@defop("cumsum", _cumsum_infer)
def _cumsum(xp, x, axis, reverse=False):
    """Running sum along ``axis``; ``reverse`` sums from the end (the gradient of cumsum)."""
    dtype = "int64" if x.dtype.name in ("bool", "int32", "uint8", "int8", "int16") else x.dtype
    if x.ndim == 0:
        return x.astype(dtype)
    if reverse:
        x = xp.flip(x, axis=axis)
    out = xp.cumsum(x, axis=axis, dtype=dtype)
    return xp.flip(out, axis=axis) if reverse else out


# ------------------------------------------------------------------ one_hot
def _one_hot_infer(x, num_classes):
    if not x.dtype.startswith("int"):
        raise ShapeError(f"one_hot: needs an integer tensor of class ids, got {x.dtype}")
    return TensorType(x.shape + (int(num_classes),), "int64")


@defop("one_hot", _one_hot_infer)
def _one_hot(xp, x, num_classes):
    """Class ids as one-hot int64 rows of ``num_classes`` entries."""
    if x.dtype.kind not in "iu":
        raise ValueError(f"one_hot: needs an integer tensor of class ids, got {x.dtype}")
    if x.size and (int(x.min()) < 0 or int(x.max()) >= num_classes):
        raise ValueError(f"one_hot: class ids must lie in [0, {num_classes}), got values in "
                         f"[{int(x.min())}, {int(x.max())}]")
    return (x[..., None] == xp.arange(num_classes)).astype("int64")


# ------------------------------------------------------------------ dropout
def _dropout_mask_infer(x, p):
    return TensorType(x.shape, _float_dtype("dropout", x))


@defop("dropout_mask", _dropout_mask_infer, random=True)
def _dropout_mask(xp, x, p):
    """Random keep-mask shaped like x, already scaled by 1/(1-p): ``dropout(x) = x * mask``."""
    with RNG.lock:
        gen = RNG.get(xp)
        draw = getattr(gen, "random", None) or gen.random_sample  # numpy Generator / cupy RandomState
        keep = draw(x.shape) >= p
    return (keep / (1.0 - p)).astype(_as_float(x).dtype, copy=False)


@deflowering("softmax", "native")
def _softmax_native(e, x, axis=-1):
    return e.softmax(x, axis, log=False)


@deflowering("log_softmax", "native")
def _log_softmax_native(e, x, axis=-1):
    return e.softmax(x, axis, log=True)


@deflowering("cumsum", "native")
def _cumsum_native(e, x, axis, reverse=False):
    return e.cumsum(x, axis, reverse)


@deflowering("logsumexp", "native")
def _logsumexp_native(e, x, axes=None, keepdims=False):
    return e.logsumexp(x, axes, keepdims)
