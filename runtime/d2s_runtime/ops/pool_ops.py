"""Pooling and resampling primitives on NCHW inputs: ``max_pool2d`` (padding, dilation,
ceil_mode; its indices), ``avg_pool2d`` (ceil_mode, count_include_pad, divisor_override),
``adaptive_avg_pool2d``, ``adaptive_max_pool2d``, ``interpolate`` (nearest, nearest-exact,
linear over 1, 2 or 3 spatial dims) and ``pixel_shuffle``/``pixel_unshuffle``, each with its
gradient primitive where it has one. One-dimensional pooling is these with a height of 1.

Window kernels loop over the kH*kW taps of the window, each tap one strided slice of the whole
batch (never over pixels, channels or the batch); output sizes follow PyTorch's formulas.
"""
import numpy as np

from .conv_ops import pair
from .registry import ShapeError, TensorType, defop
from .rules import fmt_shape


def _check4(op, x):
    if x.ndim != 4:
        raise ShapeError(f"{op}: needs input (N, C, H, W), got {fmt_shape(x.shape)}")


def pool_out(op, n, k, s, p, d, ceil_mode):
    """PyTorch's pooling output length along one dim (None if ``n`` is unknown)."""
    if n is None:
        return None
    span = d * (k - 1) + 1
    num = n + 2 * p - span
    # (ceil_mode keeps a last window that reaches past the input, even when that is the only one)
    out = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:  # the last window must start inside the input or left padding
        out -= 1
    if out < 1:
        raise ShapeError(f"{op}: input size {n} (padding {p}) is smaller than the kernel size {k}"
                         + (f" with dilation {d}" if d != 1 else ""))
    return out


def _pool_attrs(op, kernel_size, stride, padding, dilation=1):
    kh, kw = pair(kernel_size, f"{op} kernel_size")
    sh, sw = pair(kernel_size if stride is None or stride == [] else stride, f"{op} stride")
    ph, pw = pair(padding, f"{op} padding")
    dh, dw = pair(dilation, f"{op} dilation")
    if min(kh, kw, sh, sw, dh, dw) < 1 or min(ph, pw) < 0:
        raise ShapeError(f"{op}: kernel_size, stride and dilation must be positive and padding non-negative, got "
                         f"kernel_size {kernel_size}, stride {stride}, padding {padding}, dilation {dilation}")
    if 2 * ph > kh or 2 * pw > kw:
        raise ShapeError(f"{op}: padding {padding} must be at most half the kernel size {kernel_size} "
                         "(as in PyTorch)")
    return (kh, kw), (sh, sw), (ph, pw), (dh, dw)


def _lowest(dtype):
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min if dtype.kind in "iu" else False


def _padded(xp, x, pads, outs, k, s, d, value):
    """x padded by ``pads`` on each side, plus what ceil_mode's last windows reach past the right."""
    (ph, pw), (ho, wo), (kh, kw), (sh, sw), (dh, dw) = pads, outs, k, s, d
    eh = max(0, (ho - 1) * sh + dh * (kh - 1) + 1 - (x.shape[2] + 2 * ph))
    ew = max(0, (wo - 1) * sw + dw * (kw - 1) + 1 - (x.shape[3] + 2 * pw))
    if not (ph or pw or eh or ew):
        return x
    return xp.pad(x, ((0, 0), (0, 0), (ph, ph + eh), (pw, pw + ew)), constant_values=value)


def _taps(xp, xpad, k, s, d, outs):
    """(i, j, view) for each kernel tap: the (N, C, Ho, Wo) inputs that tap sees."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = k, s, d, outs
    for i in range(kh):
        for j in range(kw):
            yield i, j, xpad[:, :, i * dh:i * dh + (ho - 1) * sh + 1:sh, j * dw:j * dw + (wo - 1) * sw + 1:sw]


def _scatter(xp, parts, x_shape, pads, outs, k, s, d, dtype):
    """The (N, C, H, W) sum of per-tap (N, C, Ho, Wo) gradients placed at the inputs each tap read."""
    (ph, pw), (ho, wo), (kh, kw), (sh, sw), (dh, dw) = pads, outs, k, s, d
    n, c, h, w = x_shape
    hp = max(h + 2 * ph, (ho - 1) * sh + dh * (kh - 1) + 1)
    wp = max(w + 2 * pw, (wo - 1) * sw + dw * (kw - 1) + 1)
    dx = xp.zeros((n, c, hp, wp), dtype=dtype)
    for i, j, part in parts:
        dx[:, :, i * dh:i * dh + (ho - 1) * sh + 1:sh, j * dw:j * dw + (wo - 1) * sw + 1:sw] += part
    return dx[:, :, ph:ph + h, pw:pw + w]


# ------------------------------------------------------------------ max_pool2d
def _max_geometry(op, shape, kernel_size, stride, padding, dilation, ceil_mode):
    k, s, p, d = _pool_attrs(op, kernel_size, stride, padding, dilation)
    outs = tuple(pool_out(op, shape[2 + a], k[a], s[a], p[a], d[a], ceil_mode) for a in range(2))
    return k, s, p, d, outs


def _max_pool2d_infer(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    _check4("max_pool2d", x)
    *_, outs = _max_geometry("max_pool2d", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    return TensorType(x.shape[:2] + outs, x.dtype)


@defop("max_pool2d", _max_pool2d_infer)
def _max_pool2d(xp, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Max over each kernel window of NCHW ``x`` (padding never wins: it is -inf; NaN wins)."""
    k, s, p, d, outs = _max_geometry("max_pool2d", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    xpad = _padded(xp, x, p, outs, k, s, d, _lowest(x.dtype))
    out = None
    for _, _, v in _taps(xp, xpad, k, s, d, outs):
        out = v.copy() if out is None else xp.maximum(out, v, out=out)
    return out


def _argmax_taps(xp, x, k, s, p, d, outs):
    """(out, winning tap per output (int32)): ties go to the first tap in row-major order and
    a NaN wins over numbers (the last NaN), as PyTorch's CPU kernel picks them. Every step
    writes into buffers made once (no array allocated per tap)."""
    xpad = _padded(xp, x, p, outs, k, s, d, _lowest(x.dtype))
    best = arg = better = nan = cur = None
    for i, j, tap in _taps(xp, xpad, k, s, d, outs):
        if best is None:
            best, arg = tap.copy(), xp.zeros(tap.shape, dtype="int32")
            better, nan, cur = xp.empty(tap.shape, dtype=bool), xp.empty(tap.shape, dtype=bool), xp.empty_like(best)
            continue
        # one contiguous copy of the strided tap: numpy's isnan and masked copies are many
        # times slower on strided views than this copy
        xp.copyto(cur, tap)
        v = cur
        xp.greater(v, best, out=better)
        if x.dtype.kind == "f":  # PyTorch: ``if (val > maxval || isnan(val))``
            xp.isnan(v, out=nan)
            xp.logical_or(better, nan, out=better)
        xp.copyto(best, v, where=better)
        xp.copyto(arg, i * k[1] + j, where=better)
    return best, arg


def _max_pool2d_grad_infer(g, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    return TensorType(x.shape, g.dtype)


@defop("max_pool2d_grad", _max_pool2d_grad_infer)
def _max_pool2d_grad(xp, g, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """d max_pool2d / d x: each window's gradient goes to its first maximum (PyTorch's choice).

    Taps are visited in row-major order; a tap takes the gradient where it equals the window's
    maximum and no earlier tap did. Everything is branch-free array arithmetic into buffers made
    once (numpy's masked selects are several times slower). Windows holding a NaN (PyTorch then
    picks the last NaN) take the slower argmax path."""
    k, s, p, d, outs = _max_geometry("max_pool2d", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    xpad = _padded(xp, x, p, outs, k, s, d, _lowest(x.dtype))
    out = None
    for _, _, tap in _taps(xp, xpad, k, s, d, outs):
        out = tap.copy() if out is None else xp.maximum(out, tap, out=out)
    if x.dtype.kind == "f" and bool(xp.isnan(out).any()):
        return _max_pool2d_grad_argmax(xp, g, x, k, s, p, d, outs)
    free = xp.ones(out.shape, dtype=bool)  # windows whose maximum no earlier tap took
    hit, part = xp.empty(out.shape, dtype=bool), xp.empty(g.shape, dtype=g.dtype)

    def parts():
        for i, j, tap in _taps(xp, xpad, k, s, d, outs):
            xp.equal(tap, out, out=hit)
            xp.logical_and(hit, free, out=hit)
            xp.logical_xor(free, hit, out=free)
            xp.multiply(g, hit, out=part)
            yield i, j, part
    return _scatter(xp, parts(), x.shape, p, outs, k, s, d, g.dtype)


def _max_pool2d_grad_argmax(xp, g, x, k, s, p, d, outs):
    _, arg = _argmax_taps(xp, x, k, s, p, d, outs)
    hit, part = xp.empty(arg.shape, dtype=bool), xp.empty(g.shape, dtype=g.dtype)

    def parts():
        for i in range(k[0]):
            for j in range(k[1]):
                xp.equal(arg, i * k[1] + j, out=hit)
                xp.multiply(g, hit, out=part)
                yield i, j, part
    return _scatter(xp, parts(), x.shape, p, outs, k, s, d, g.dtype)


def _max_pool2d_indices_infer(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    return TensorType(_max_pool2d_infer(x, kernel_size, stride, padding, dilation, ceil_mode).shape, "int64")


@defop("max_pool2d_indices", _max_pool2d_indices_infer)
def _max_pool2d_indices(xp, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Where each window's maximum is: ``h * W + w`` in its (H, W) plane (return_indices=True)."""
    k, s, p, d, outs = _max_geometry("max_pool2d", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    _, arg = _argmax_taps(xp, x, k, s, p, d, outs)
    ti, tj = arg // k[1], arg % k[1]
    rows = xp.arange(outs[0]).reshape(-1, 1) * s[0] - p[0] + ti * d[0]
    cols = xp.arange(outs[1]).reshape(1, -1) * s[1] - p[1] + tj * d[1]
    return (rows * x.shape[3] + cols).astype("int64")


# ------------------------------------------------------------------ avg_pool2d
def avg_geometry(shape, kernel_size, stride, padding, ceil_mode):
    k, s, p, d = _pool_attrs("avg_pool2d", kernel_size, stride, padding)
    outs = tuple(pool_out("avg_pool2d", shape[2 + a], k[a], s[a], p[a], 1, ceil_mode) for a in range(2))
    return k, s, p, d, outs


def _divisors(xp, n, out, k, s, p, count_include_pad):
    """PyTorch's divisor of each output position along one dim: the window's length clipped to
    the padded input (count_include_pad) or to the input itself."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, n + p)
    size = end - start
    if not count_include_pad:
        size = np.minimum(end, n) - np.maximum(start, 0)
    return size


def avg_divisor(xp, shape, k, s, p, outs, count_include_pad, divisor_override, dtype):
    if divisor_override:
        return xp.asarray(float(divisor_override), dtype=dtype)
    dh = _divisors(xp, shape[2], outs[0], k[0], s[0], p[0], count_include_pad)
    dw = _divisors(xp, shape[3], outs[1], k[1], s[1], p[1], count_include_pad)
    return xp.asarray((dh[:, None] * dw[None, :]).astype(dtype))


def _avg_pool2d_infer(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                      divisor_override=None):
    _check4("avg_pool2d", x)
    *_, outs = avg_geometry(x.shape, kernel_size, stride, padding, ceil_mode)
    dtype = x.dtype if x.dtype.startswith("float") else "float32"
    return TensorType(x.shape[:2] + outs, dtype)


@defop("avg_pool2d", _avg_pool2d_infer)
def _avg_pool2d(xp, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    """Mean over each kernel window of NCHW ``x``, with PyTorch's divisor (see ``_divisors``)."""
    k, s, p, d, outs = avg_geometry(x.shape, kernel_size, stride, padding, ceil_mode)
    if x.dtype.kind != "f":
        x = x.astype("float32")
    xpad = _padded(xp, x, p, outs, k, s, d, 0)
    out = None
    for _, _, v in _taps(xp, xpad, k, s, d, outs):
        out = v.copy() if out is None else xp.add(out, v, out=out)
    out /= avg_divisor(xp, x.shape, k, s, p, outs, count_include_pad, divisor_override, x.dtype)
    return out


def _avg_pool2d_grad_infer(g, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                           divisor_override=None):
    return TensorType(x.shape, g.dtype)


@defop("avg_pool2d_grad", _avg_pool2d_grad_infer)
def _avg_pool2d_grad(xp, g, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                     divisor_override=None):
    """d avg_pool2d / d x (``x`` gives only the shape): each window's gradient shared by its inputs."""
    k, s, p, d, outs = avg_geometry(x.shape, kernel_size, stride, padding, ceil_mode)
    share = g / avg_divisor(xp, x.shape, k, s, p, outs, count_include_pad, divisor_override, g.dtype)
    parts = ((i, j, share) for i in range(k[0]) for j in range(k[1]))
    return _scatter(xp, parts, x.shape, p, outs, k, s, d, g.dtype)


# ------------------------------------------------------------------ adaptive pooling
def _adaptive_size(op, x_shape, output_size):
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size, output_size]
    if len(sizes) != 2:
        raise ShapeError(f"{op}: output_size needs one int or two, got {output_size!r}")
    out = tuple(x_shape[2 + a] if sizes[a] is None else int(sizes[a]) for a in range(2))
    if any(o is not None and o < 0 for o in out):
        raise ShapeError(f"{op}: output_size must be non-negative, got {output_size!r}")
    return out


def _windows_1d(n, out):
    """PyTorch's adaptive windows along one dim: [floor(i*n/out), ceil((i+1)*n/out))."""
    i = np.arange(out)
    return (i * n) // out, -((-(i + 1) * n) // out)


def avg_matrix(n, out, dtype):
    start, end = _windows_1d(n, out)
    m = np.zeros((out, n), dtype=dtype)
    for o in range(out):  # one row per output position of one dim (a small matrix)
        m[o, start[o]:end[o]] = 1.0 / (end[o] - start[o])
    return m


def _adaptive_avg_pool2d_infer(x, output_size):
    _check4("adaptive_avg_pool2d", x)
    out = _adaptive_size("adaptive_avg_pool2d", x.shape, output_size)
    return TensorType(x.shape[:2] + out, x.dtype if x.dtype.startswith("float") else "float32")


@defop("adaptive_avg_pool2d", _adaptive_avg_pool2d_infer)
def _adaptive_avg_pool2d(xp, x, output_size):
    """Mean over PyTorch's adaptive windows of NCHW ``x``: a reshape-mean when the sizes divide,
    else a product with each dim's (out, in) averaging matrix."""
    if x.dtype.kind != "f":
        x = x.astype("float32")
    n, c, h, w = x.shape
    ho, wo = _adaptive_size("adaptive_avg_pool2d", x.shape, output_size)
    if ho and wo and h % ho == 0 and w % wo == 0:
        return x.reshape(n, c, ho, h // ho, wo, w // wo).mean(axis=(3, 5))
    mh = xp.asarray(avg_matrix(h, ho, x.dtype))
    mw = xp.asarray(avg_matrix(w, wo, x.dtype))
    return xp.matmul(xp.matmul(mh, x), mw.T)


def _adaptive_avg_pool2d_grad_infer(g, x, output_size):
    return TensorType(x.shape, g.dtype)


@defop("adaptive_avg_pool2d_grad", _adaptive_avg_pool2d_grad_infer)
def _adaptive_avg_pool2d_grad(xp, g, x, output_size):
    """d adaptive_avg_pool2d / d x (``x`` gives only the shape)."""
    n, c, h, w = x.shape
    ho, wo = g.shape[2], g.shape[3]
    mh = xp.asarray(avg_matrix(h, ho, g.dtype))
    mw = xp.asarray(avg_matrix(w, wo, g.dtype))
    return xp.ascontiguousarray(xp.matmul(xp.matmul(mh.T, g), mw))


def _adaptive_index(n, out):
    """(out, L) input positions of each adaptive window along one dim, the last repeated to pad
    shorter windows to the longest length L (a repeat never changes a maximum)."""
    start, end = _windows_1d(n, out)
    length = int((end - start).max()) if out else 1
    idx = start[:, None] + np.arange(length)[None, :]
    return np.minimum(idx, (end - 1)[:, None])


def _adaptive_argmax(xp, x, output_size):
    """(max values, flat h*W+w index of the first maximum) over adaptive windows."""
    n, c, h, w = x.shape
    ho, wo = _adaptive_size("adaptive_max_pool2d", x.shape, output_size)
    ih, iw = _adaptive_index(h, ho), _adaptive_index(w, wo)
    flat = (ih[:, None, :, None] * w + iw[None, :, None, :]).reshape(ho, wo, -1)  # (Ho, Wo, Lh*Lw)
    vals = x.reshape(n, c, h * w)[:, :, xp.asarray(flat)]  # (N, C, Ho, Wo, Lh*Lw)
    if x.dtype.kind == "f":  # a NaN is the maximum (as in PyTorch)
        nan = xp.isnan(vals)
        pick = xp.where(nan.any(axis=-1), xp.argmax(nan, axis=-1), xp.argmax(vals, axis=-1))
    else:
        pick = xp.argmax(vals, axis=-1)
    best = xp.take_along_axis(vals, pick[..., None], axis=-1)[..., 0]
    where = xp.take_along_axis(xp.broadcast_to(xp.asarray(flat), vals.shape), pick[..., None], axis=-1)[..., 0]
    return best, where


def _adaptive_max_pool2d_infer(x, output_size):
    _check4("adaptive_max_pool2d", x)
    out = _adaptive_size("adaptive_max_pool2d", x.shape, output_size)
    if any(d is None for d in out):
        raise ShapeError("adaptive_max_pool2d: output_size None needs the input's size to be known")
    return TensorType(x.shape[:2] + out, x.dtype)


@defop("adaptive_max_pool2d", _adaptive_max_pool2d_infer)
def _adaptive_max_pool2d(xp, x, output_size):
    """Max over PyTorch's adaptive windows of NCHW ``x``."""
    return _adaptive_argmax(xp, x, output_size)[0]


def _adaptive_max_pool2d_indices_infer(x, output_size):
    return TensorType(_adaptive_max_pool2d_infer(x, output_size).shape, "int64")


@defop("adaptive_max_pool2d_indices", _adaptive_max_pool2d_indices_infer)
def _adaptive_max_pool2d_indices(xp, x, output_size):
    """Where each adaptive window's maximum is: ``h * W + w`` in its (H, W) plane."""
    return _adaptive_argmax(xp, x, output_size)[1].astype("int64")


def _adaptive_max_pool2d_grad_infer(g, x, output_size):
    return TensorType(x.shape, g.dtype)


@defop("adaptive_max_pool2d_grad", _adaptive_max_pool2d_grad_infer)
def _adaptive_max_pool2d_grad(xp, g, x, output_size):
    """d adaptive_max_pool2d / d x: each window's gradient goes to its first maximum (windows
    may overlap, so the gradients of one input add up)."""
    n, c, h, w = x.shape
    _, where = _adaptive_argmax(xp, x, output_size)
    base = (xp.arange(n * c) * (h * w)).reshape(n, c, 1, 1)
    flat = (where + base).reshape(-1)
    dx = xp.bincount(flat, weights=g.reshape(-1).astype("float64"), minlength=n * c * h * w)
    return dx.astype(g.dtype).reshape(n, c, h, w)


# ------------------------------------------------------------------ interpolate
_MODES = ("nearest", "nearest-exact", "linear")


def interp_sizes(op, in_shape, size, scales):
    """The output spatial sizes from ``size`` or ``scales`` (floor(in * scale), as PyTorch)."""
    nsp = len(in_shape) - 2
    if size is not None:
        out = list(size)
    elif scales is not None:
        out = [None if n is None else int(np.floor(n * float(sc))) for n, sc in zip(in_shape[2:], scales)]
    else:
        raise ShapeError(f"{op}: needs size or scales")
    if len(out) != nsp:
        raise ShapeError(f"{op}: {len(out)} output sizes for an input with {nsp} spatial dims "
                         f"{fmt_shape(in_shape)}")
    if any(o is not None and o <= 0 for o in out):
        raise ShapeError(f"{op}: output size {out} must be positive (input {fmt_shape(in_shape)})")
    return [None if o is None else int(o) for o in out]


def _interp_infer(x, size=None, scales=None, mode="nearest", align_corners=False):
    if x.ndim not in (3, 4, 5):
        raise ShapeError(f"interpolate: needs input (N, C, ...) with 1 to 3 spatial dims, got {fmt_shape(x.shape)}")
    if mode not in _MODES:
        raise ShapeError(f"interpolate: mode {mode!r} is not one of {_MODES}")
    out = interp_sizes("interpolate", x.shape, size, scales)
    dtype = x.dtype if x.dtype.startswith("float") else "float32"
    return TensorType(x.shape[:2] + tuple(out), dtype)


def _source_index(n, out, scale, mode, align_corners, dtype):
    """PyTorch's source positions of one dim: (i0, i1, l0, l1) so that output o reads
    ``x[i0] * l0 + x[i1] * l1`` (nearest modes: l0 = l1 = None). ``scale`` is the user's scale
    factor or None (then in/out is used); coordinates are computed in the precision PyTorch's
    CPU kernels use (float32 for nearest, the input's for linear)."""
    o = np.arange(out)
    if mode in ("nearest", "nearest-exact"):
        ratio = np.float32(1.0 / scale) if scale else np.float32(n) / np.float32(out)
        if mode == "nearest-exact":  # floorf((o + 0.5) * scale): a double product rounded to float
            i0 = np.floor(((o + 0.5) * np.float64(ratio)).astype(np.float32)).astype(np.int64)
        elif out == n:
            i0 = o
        elif out == 2 * n:
            i0 = o >> 1
        else:
            i0 = np.floor(o.astype(np.float32) * ratio).astype(np.int64)
        i0 = np.minimum(i0, n - 1)
        return i0, i0, None, None
    acc = np.dtype(dtype).type
    if out == n:
        return o, o, np.ones(out, dtype), np.zeros(out, dtype)
    if align_corners:
        ratio = acc(n - 1) / acc(out - 1) if out > 1 else acc(0)
        src = ratio * o.astype(dtype)
    else:
        ratio = acc(1.0 / scale) if scale else acc(n) / acc(out)
        src = np.maximum(ratio * (o.astype(dtype) + acc(0.5)) - acc(0.5), acc(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    i1 = np.minimum(i0 + 1, n - 1)
    l1 = np.clip(src - i0.astype(dtype), 0, 1).astype(dtype)
    return i0, i1, (acc(1) - l1).astype(dtype), l1


def _interp_plan(x_shape, size, scales, mode, align_corners, dtype):
    out = interp_sizes("interpolate", x_shape, size, scales)
    plan = []
    for a, (n, o) in enumerate(zip(x_shape[2:], out)):
        sc = None if scales is None or scales[a] is None else float(scales[a])
        plan.append(_source_index(n, o, sc, mode, align_corners, dtype))
    return plan


def _along(xp, x, axis, idx, w0, w1):
    """One dim resampled: gather (and, with weights, blend two gathers)."""
    a = xp.take(x, xp.asarray(idx[0]), axis=axis)
    if w0 is None:
        return a
    shape = [1] * x.ndim
    shape[axis] = -1
    b = xp.take(x, xp.asarray(idx[1]), axis=axis)
    return a * xp.asarray(w0).reshape(shape) + b * xp.asarray(w1).reshape(shape)


@defop("interpolate", _interp_infer)
def _interpolate(xp, x, size=None, scales=None, mode="nearest", align_corners=False):
    """NC... ``x`` resampled over its spatial dims (nearest, nearest-exact or (bi/tri)linear), with
    PyTorch's source coordinates; the last dim is resampled first, as PyTorch nests them."""
    if x.dtype.kind != "f":
        x = x.astype("float32")
    plan = _interp_plan(x.shape, size, scales, mode, align_corners, x.dtype)
    out = x
    for a in reversed(range(len(plan))):
        i0, i1, w0, w1 = plan[a]
        out = _along(xp, out, 2 + a, (i0, i1), w0, w1)
    return out


def _interp_matrix(n, plan, dtype):
    """The (out, in) matrix of one dim's resampling (the adjoint is its transpose)."""
    i0, i1, w0, w1 = plan
    m = np.zeros((len(i0), n), dtype=dtype)
    rows = np.arange(len(i0))
    if w0 is None:
        m[rows, i0] = 1
    else:
        np.add.at(m, (rows, i0), w0)  # i0 == i1 at the border: both weights land there
        np.add.at(m, (rows, i1), w1)
    return m


def _interp_grad_infer(g, x, size=None, scales=None, mode="nearest", align_corners=False):
    return TensorType(x.shape, g.dtype)


@defop("interpolate_grad", _interp_grad_infer)
def _interpolate_grad(xp, g, x, size=None, scales=None, mode="nearest", align_corners=False):
    """d interpolate / d x (``x`` gives only the shape): each dim's resampling matrix,
    transposed, applied as one matrix product per dim."""
    plan = _interp_plan(x.shape, size, scales, mode, align_corners, g.dtype)
    out = g
    for a in range(len(plan)):
        m = xp.asarray(_interp_matrix(x.shape[2 + a], plan[a], g.dtype))
        moved = xp.moveaxis(out, 2 + a, -1)
        out = xp.moveaxis(xp.matmul(moved, m), -1, 2 + a)
    return xp.ascontiguousarray(out)


# ------------------------------------------------------------------ pixel shuffle
def _shuffle_infer(x, upscale_factor):
    r = int(upscale_factor)
    if x.ndim < 3:
        raise ShapeError(f"pixel_shuffle: needs input (*, C*r*r, H, W), got {fmt_shape(x.shape)}")
    c, h, w = x.shape[-3:]
    if c is not None and c % (r * r):
        raise ShapeError(f"pixel_shuffle: {c} channels in {fmt_shape(x.shape)} are not divisible by "
                         f"upscale_factor^2 = {r * r}")
    return TensorType(x.shape[:-3] + (None if c is None else c // (r * r), None if h is None else h * r,
                                      None if w is None else w * r), x.dtype)


@defop("pixel_shuffle", _shuffle_infer, movement=True)
def _pixel_shuffle(xp, x, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): channel c*r*r + i*r + j moves to row offset i, column j."""
    r = int(upscale_factor)
    *lead, c, h, w = x.shape
    y = x.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    k = len(lead)
    y = y.transpose(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    return xp.ascontiguousarray(y).reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def _unshuffle_infer(x, downscale_factor):
    r = int(downscale_factor)
    if x.ndim < 3:
        raise ShapeError(f"pixel_unshuffle: needs input (*, C, H*r, W*r), got {fmt_shape(x.shape)}")
    c, h, w = x.shape[-3:]
    if (h is not None and h % r) or (w is not None and w % r):
        raise ShapeError(f"pixel_unshuffle: height and width of {fmt_shape(x.shape)} must be divisible by "
                         f"downscale_factor {r}")
    return TensorType(x.shape[:-3] + (None if c is None else c * r * r, None if h is None else h // r,
                                      None if w is None else w // r), x.dtype)


@defop("pixel_unshuffle", _unshuffle_infer, movement=True)
def _pixel_unshuffle(xp, x, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of pixel_shuffle."""
    r = int(downscale_factor)
    *lead, c, h, w = x.shape
    y = x.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    k = len(lead)
    y = y.transpose(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return xp.ascontiguousarray(y).reshape(tuple(lead) + (c * r * r, h // r, w // r))
