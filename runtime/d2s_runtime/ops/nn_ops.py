"""Neural-network primitives: stable softmax family, cumsum, one-hot,
2-d convolution and max pooling (with their gradient primitives), dropout masks.

Convolution and pooling work on NCHW inputs and OIHW weights through im2col windows made
with ``as_strided`` (numpy and cupy both have it), so one kernel serves both devices.
"""
import numpy as np

from ..dtypes import is_floating, result_type
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


# ------------------------------------------------------------------ conv2d and max_pool2d
def pair(v, name="value"):
    """(a, b) from an int or a pair of ints."""
    if isinstance(v, (list, tuple)):
        if len(v) != 2:
            raise ShapeError(f"{name} needs one int or two, got {v!r}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _out_dim(op, n, k, s, p):
    if n is None:
        return None
    out = (n + 2 * p - k) // s + 1
    if out <= 0:
        raise ShapeError(f"{op}: input size {n} (padding {p}) is smaller than the kernel size {k}")
    return out


def _windows(xp, x, kh, kw, sh, sw):
    """(N, C, Ho, Wo, kh, kw) view of the kernel windows of (N, C, H, W) input ``x``."""
    n, c, h, w = x.shape
    ho, wo = (h - kh) // sh + 1, (w - kw) // sw + 1
    if ho <= 0 or wo <= 0:
        raise ValueError(f"input {h}x{w} (padded) is smaller than the kernel {kh}x{kw}")
    s0, s1, s2, s3 = x.strides
    return xp.lib.stride_tricks.as_strided(x, (n, c, ho, wo, kh, kw), (s0, s1, s2 * sh, s3 * sw, s2, s3))


def _pad(xp, x, ph, pw, value=0):
    if not (ph or pw):
        return xp.ascontiguousarray(x)
    return xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


def _conv2d_infer(x, w, stride=1, padding=0):
    if x.ndim != 4 or w.ndim != 4:
        raise ShapeError(f"conv2d: needs input (N, C, H, W) and weight (O, C, kH, kW), got "
                         f"{fmt_shape(x.shape)} and {fmt_shape(w.shape)}")
    if x.shape[1] is not None and w.shape[1] is not None and x.shape[1] != w.shape[1]:
        raise ShapeError(f"conv2d: input {fmt_shape(x.shape)} has {x.shape[1]} channels but weight "
                         f"{fmt_shape(w.shape)} expects {w.shape[1]}")
    (sh, sw), (ph, pw) = pair(stride, "conv2d stride"), pair(padding, "conv2d padding")
    kh, kw = w.shape[2], w.shape[3]
    if kh is None or kw is None:
        raise ShapeError(f"conv2d: the kernel size must be known, weight is {fmt_shape(w.shape)}")
    return TensorType((x.shape[0], w.shape[0], _out_dim("conv2d", x.shape[2], kh, sh, ph),
                       _out_dim("conv2d", x.shape[3], kw, sw, pw)), result_type(x.dtype, w.dtype))


@defop("conv2d", _conv2d_infer)
def _conv2d(xp, x, w, stride=1, padding=0):
    """Cross-correlation of NCHW ``x`` with OIHW ``w`` (no bias), via im2col windows."""
    (sh, sw), (ph, pw) = pair(stride), pair(padding)
    cols = _windows(xp, _pad(xp, x, ph, pw), w.shape[2], w.shape[3], sh, sw)
    out = xp.tensordot(cols, w, axes=([1, 4, 5], [1, 2, 3]))  # (N, Ho, Wo, O)
    return xp.ascontiguousarray(out.transpose(0, 3, 1, 2))


def _conv2d_grad_input_infer(g, w, x, stride=1, padding=0):
    return TensorType(x.shape, g.dtype)


@defop("conv2d_grad_input", _conv2d_grad_input_infer)
def _conv2d_grad_input(xp, g, w, x, stride=1, padding=0):
    """d conv2d / d x for output gradient ``g``; ``x`` gives only the input's shape."""
    (sh, sw), (ph, pw) = pair(stride), pair(padding)
    n, c, h, wd = x.shape
    kh, kw = w.shape[2], w.shape[3]
    ho, wo = g.shape[2], g.shape[3]
    dcols = xp.tensordot(g, w, axes=([1], [0]))  # (N, Ho, Wo, C, kh, kw)
    dx = xp.zeros((n, c, h + 2 * ph, wd + 2 * pw), dtype=g.dtype)
    for i in range(kh):
        for j in range(kw):
            dx[:, :, i:i + sh * ho:sh, j:j + sw * wo:sw] += dcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return dx[:, :, ph:ph + h, pw:pw + wd]


def _conv2d_grad_weight_infer(g, x, w, stride=1, padding=0):
    return TensorType(w.shape, g.dtype)


@defop("conv2d_grad_weight", _conv2d_grad_weight_infer)
def _conv2d_grad_weight(xp, g, x, w, stride=1, padding=0):
    """d conv2d / d w for output gradient ``g``; ``w`` gives only the weight's shape."""
    (sh, sw), (ph, pw) = pair(stride), pair(padding)
    cols = _windows(xp, _pad(xp, x, ph, pw), w.shape[2], w.shape[3], sh, sw)
    return xp.tensordot(g, cols, axes=([0, 2, 3], [0, 2, 3])).astype(g.dtype, copy=False)  # (O, C, kh, kw)


def _pool_attrs(kernel_size, stride, padding):
    kh, kw = pair(kernel_size, "max_pool2d kernel_size")
    sh, sw = pair(kernel_size if stride is None else stride, "max_pool2d stride")
    ph, pw = pair(padding, "max_pool2d padding")
    return kh, kw, sh, sw, ph, pw


def _max_pool2d_infer(x, kernel_size, stride=None, padding=0):
    if x.ndim != 4:
        raise ShapeError(f"max_pool2d: needs input (N, C, H, W), got {fmt_shape(x.shape)}")
    kh, kw, sh, sw, ph, pw = _pool_attrs(kernel_size, stride, padding)
    if ph * 2 > kh or pw * 2 > kw:
        raise ShapeError(f"max_pool2d: padding {padding} must be at most half the kernel size {kernel_size}")
    return TensorType((x.shape[0], x.shape[1], _out_dim("max_pool2d", x.shape[2], kh, sh, ph),
                       _out_dim("max_pool2d", x.shape[3], kw, sw, pw)), x.dtype)


def _lowest(x):
    return -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min if x.dtype.kind in "iu" else False


def _pool_windows(xp, x, kernel_size, stride, padding):
    kh, kw, sh, sw, ph, pw = _pool_attrs(kernel_size, stride, padding)
    win = _windows(xp, _pad(xp, x, ph, pw, _lowest(x)), kh, kw, sh, sw)
    return win.reshape(win.shape[:4] + (kh * kw,))


@defop("max_pool2d", _max_pool2d_infer)
def _max_pool2d(xp, x, kernel_size, stride=None, padding=0):
    """Max over each kernel window of NCHW ``x`` (padding never wins: it is -inf)."""
    return xp.max(_pool_windows(xp, x, kernel_size, stride, padding), axis=-1)


def _max_pool2d_grad_infer(g, x, kernel_size, stride=None, padding=0):
    return TensorType(x.shape, g.dtype)


@defop("max_pool2d_grad", _max_pool2d_grad_infer)
def _max_pool2d_grad(xp, g, x, kernel_size, stride=None, padding=0):
    """d max_pool2d / d x: each window's gradient goes to its (first) maximum."""
    kh, kw, sh, sw, ph, pw = _pool_attrs(kernel_size, stride, padding)
    arg = xp.argmax(_pool_windows(xp, x, kernel_size, stride, padding), axis=-1)  # (N, C, Ho, Wo)
    n, c, h, w = x.shape
    ho, wo = g.shape[2], g.shape[3]
    dx = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=g.dtype)
    for i in range(kh):
        for j in range(kw):
            dx[:, :, i:i + sh * ho:sh, j:j + sw * wo:sw] += g * (arg == i * kw + j)
    return dx[:, :, ph:ph + h, pw:pw + w]


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
