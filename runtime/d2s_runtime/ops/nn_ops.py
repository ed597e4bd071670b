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
    if type(x) is np.ndarray:  # (np.max's own reduction, without its wrapper)
        return np.maximum.reduce(x, axis=axis, keepdims=True)
    return xp.max(x, axis=axis, keepdims=True)


def _softmax_infer(x, axis=-1, zero_dead_rows=False):
    _one_axis("softmax", axis, x.ndim)
    return TensorType(x.shape, _float_dtype("softmax", x))


@defop("softmax", _softmax_infer, float_inputs=True)
def _softmax(xp, x, axis=-1, zero_dead_rows=False):
    """exp(x - max) / sum: subtracting the max keeps exp from overflowing. ``zero_dead_rows``:
    a slice whose every element is -inf gives zeros (attention's rows that may attend nowhere,
    as PyTorch's attention kernels give them) instead of NaN; the other slices are unchanged."""
    if type(x) is np.ndarray and x.ndim and x.size and x.dtype.kind == "f":
        # (a non-empty float numpy array: the steps below without their checks)
        m = np.maximum.reduce(x, axis=axis, keepdims=True)
        dead = _dead_rows(np, m) if zero_dead_rows else None
        z = x - m
        np.exp(z, out=z)
        s = np.add.reduce(z, axis=axis, keepdims=True)
        if dead is not None:
            s[dead] = 1  # the exps of a dead slice are all 0 (its shift was 0): 0 / 1
        z /= s
        return z
    x = _as_float(x)
    m = _shift(xp, x, axis)
    dead = _dead_rows(xp, m) if zero_dead_rows and getattr(m, "ndim", 0) else None
    z = x - m
    # (in place: the same elementwise values as ``e = exp(z); e / sum(e)``, two arrays fewer)
    if type(z) is not xp.ndarray:  # (0-d operands give a scalar)
        e = xp.exp(z)
        s = xp.sum(e, axis=axis, keepdims=True)
        return e / (xp.where(s == 0, 1, s) if zero_dead_rows else s)
    e = xp.exp(z, out=z)
    s = np.add.reduce(e, axis=axis, keepdims=True) if type(e) is np.ndarray else xp.sum(e, axis=axis, keepdims=True)
    if dead is not None:
        s[dead] = 1
    e /= s
    return e


def _dead_rows(xp, m):
    """Where the max ``m`` (kept dims) is -inf, as a mask (its shift set to 0 so that exp gives
    0, not NaN), or None where there is no such slice."""
    dead = m == -np.inf
    if not bool(dead.any()):
        return None
    m[dead] = 0
    return dead


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


# PyTorch's CPU running sums and products accumulate a float16 / float32 tensor in float32 /
# float64 (its acc_type) and round each output: summing in the tensor's own dtype differs in the
# last bits of most elements of a long row
CUMULATIVE_ACC = {"float16": "float32", "float32": "float64"}


@defop("cumsum", _cumsum_infer)
def _cumsum(xp, x, axis, reverse=False):
    """Running sum along ``axis``; ``reverse`` sums from the end (the gradient of cumsum)."""
    dtype = "int64" if x.dtype.name in ("bool", "int32", "uint8", "int8", "int16") else x.dtype
    if x.ndim == 0:
        return x.astype(dtype)
    if reverse:
        x = xp.flip(x, axis=axis)
    acc = CUMULATIVE_ACC.get(str(dtype))
    out = xp.cumsum(x, axis=axis, dtype=dtype) if acc is None else \
        xp.cumsum(x, axis=axis, dtype=acc).astype(dtype)
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


# ------------------------------------------------------------------ native lowerings (the whole body of each)
def _softmax_body(e, x, axis, log, zero_dead_rows=False):
    """(log-)softmax along ``axis``, one pass per row for the max, one for the sum of exps
    (float64), one for the output; the kernel's formula (max-shifted), numpy's NaN/inf."""
    odt = e.out.dtype
    if odt not in ("float32", "float64") or x.ndim == 0:
        e.unsupported("softmax of a 0-d or non-float result")
    a = e.int(axis, "axis")
    if not -x.ndim <= a < x.ndim:
        e.unsupported("axis out of range")
    a %= x.ndim
    x = e.contiguous(e.array(x))
    if x.dtype != odt:
        c = e.fresh()
        e.emit(e.indent, f"{c} = {x.name}.astype({e.np_type(odt)})")
        x = e.new_array(c, odt, x.shape)
    ind = e.indent
    outer = " * ".join(f"{x.name}.shape[{j}]" for j in range(a)) or "1"
    inner = " * ".join(f"{x.name}.shape[{j}]" for j in range(a + 1, x.ndim)) or "1"
    xr, out, o, i, k, m, s, v = (e.fresh() for _ in range(8))
    e.emit(ind, f"{xr} = {x.name}.reshape(({outer}, {x.name}.shape[{a}], {inner}))")
    e.emit(ind, f"{out} = np.empty_like({xr})")
    k_inf = e.const(-np.inf, odt)
    e.emit(ind, f"for {o} in range({xr}.shape[0]):")
    e.emit(ind + 1, f"for {i} in range({xr}.shape[2]):")
    b = ind + 2
    e.emit(b, f"{m} = {k_inf}")
    e.emit(b, f"for {k} in range({xr}.shape[1]):")
    e.emit(b + 1, f"{m} = L.maximum({m}, {xr}[{o}, {k}, {i}])")
    if zero_dead_rows:  # a slice of -inf only: shift 0, so its exps are 0 and its sum is made 1
        e.emit(b, f"if {m} == {k_inf}:")
        e.emit(b + 1, f"{m} = {e.const(0, odt)}")
    e.emit(b, f"{s} = 0.0")
    e.emit(b, f"for {k} in range({xr}.shape[1]):")
    e.emit(b + 1, f"{v} = np.exp({xr}[{o}, {k}, {i}] - {m})")
    if not log:
        e.emit(b + 1, f"{out}[{o}, {k}, {i}] = {v}")
    e.emit(b + 1, f"{s} = {s} + np.float64({v})")
    if zero_dead_rows:
        e.emit(b, f"if {s} == 0.0:")
        e.emit(b + 1, f"{s} = 1.0")
    st = e.fresh()  # the sum in the output dtype (a new local: numba types each once)
    e.emit(b, f"{st} = {e.np_type(odt)}({s})")
    e.emit(b, f"for {k} in range({xr}.shape[1]):")
    if log:
        e.emit(b + 1, f"{out}[{o}, {k}, {i}] = ({xr}[{o}, {k}, {i}] - {m}) - np.log({st})")
    else:
        e.emit(b + 1, f"{out}[{o}, {k}, {i}] = {out}[{o}, {k}, {i}] / {st}")
    res = e.fresh()
    e.emit(ind, f"{res} = {out}.reshape({x.name}.shape)")
    return e.new_array(res, odt, tuple(e.out.shape))


@deflowering("softmax", "native")
def _softmax_native(e, x, axis=-1, zero_dead_rows=False):
    return _softmax_body(e, x, axis, log=False, zero_dead_rows=bool(zero_dead_rows))


@deflowering("log_softmax", "native")
def _log_softmax_native(e, x, axis=-1):
    return _softmax_body(e, x, axis, log=True)


@deflowering("cumsum", "native")
def _cumsum_native(e, x, axis, reverse=False):
    """numpy's cumsum: one add at a time along the axis, in the output dtype."""
    if type(reverse) is not bool:
        e.unsupported("reverse must be a bool")
    odt = e.out.dtype
    if x.ndim == 0:
        x = e.materialize(x)
        name = e.fresh()
        e.emit(e.indent, f"{name} = {e.cast(x.name, x.dtype, odt)}")
        return e.scalar(name, odt)
    x, xr, a = e.rows(x, axis)
    ind = e.indent
    out, o, i, k, acc = (e.fresh() for _ in range(5))
    # -0.0 + v is v for every float v (numpy's first element is x[0] itself, signed zeros kept);
    # a float32 sum accumulates in float64, each output rounded, as the kernel (CUMULATIVE_ACC)
    adt = CUMULATIVE_ACC.get(odt, odt)
    zero = e.const(-0.0 if odt in ("float32", "float64") else 0, adt)
    e.emit(ind, f"{out} = np.empty({xr}.shape, {e.np_type(odt)})")
    e.emit(ind, f"for {o} in range({xr}.shape[0]):")
    e.emit(ind + 1, f"for {i} in range({xr}.shape[2]):")
    c = ind + 2
    e.emit(c, f"{acc} = {zero}")
    rng = f"range({xr}.shape[1] - 1, -1, -1)" if reverse else f"range({xr}.shape[1])"
    e.emit(c, f"for {k} in {rng}:")
    val = e.cast(f"{xr}[{o}, {k}, {i}]", x.dtype, adt)
    e.emit(c + 1, f"{acc} = {e.np_type(adt)}({acc} + {val})")
    e.emit(c + 1, f"{out}[{o}, {k}, {i}] = {acc if adt == odt else e.np_type(odt) + '(' + acc + ')'}")
    res = e.fresh()
    e.emit(ind, f"{res} = {out}.reshape({x.name}.shape)")
    return e.new_array(res, odt, tuple(e.out.shape))


@deflowering("logsumexp", "native")
def _logsumexp_native(e, x, axes=None, keepdims=False):
    """The kernel's formula per row: the max (0 where not finite), the sum of exps (in
    float64, at least as accurate as numpy's pairwise float32 sum), log + max."""
    odt = e.out.dtype
    if odt not in ("float32", "float64") or type(keepdims) is not bool:
        e.unsupported("logsumexp of a non-float result")
    if x.dtype != odt:
        x = e.materialize(x)
        c = e.fresh()
        x = e.array(x)
        e.emit(e.indent, f"{c} = {x.name}.astype({e.np_type(odt)})")
        x = e.new_array(c, odt, x.shape)
    if axes is not None and x.ndim and len(axes) == x.ndim and sorted(axes) == list(range(x.ndim)):
        axes = None
    x, xr, a = e.rows(x, axes)
    ind = e.indent
    out, o, i, k, m, t = (e.fresh() for _ in range(6))
    k_inf = e.const(-np.inf, odt)
    k_zero = e.const(0, odt)
    e.emit(ind, f"{out} = np.empty(({xr}.shape[0], {xr}.shape[2]), {e.np_type(odt)})")
    e.emit(ind, f"for {o} in range({xr}.shape[0]):")
    e.emit(ind + 1, f"for {i} in range({xr}.shape[2]):")
    c = ind + 2
    e.emit(c, f"{m} = {k_inf}")
    e.emit(c, f"for {k} in range({xr}.shape[1]):")
    e.emit(c + 1, f"{m} = L.maximum({m}, {xr}[{o}, {k}, {i}])")
    e.emit(c, f"if not np.isfinite({m}): {m} = {k_zero}")
    e.emit(c, f"{t} = 0.0")
    e.emit(c, f"for {k} in range({xr}.shape[1]):")
    e.emit(c + 1, f"{t} = {t} + np.float64(np.exp({xr}[{o}, {k}, {i}] - {m}))")
    tt = e.fresh()
    e.emit(c, f"{tt} = {e.np_type(odt)}({t})")
    e.emit(c, f"{out}[{o}, {i}] = {e.np_type(odt)}(np.log({tt}) + {m})")
    oshape = tuple(e.out.shape)
    if not oshape:
        name = e.fresh()
        e.emit(ind, f"{name} = {out}[0, 0]")
        return e.scalar(name, odt)
    if a is None:
        dims = ["1"] * x.ndim
    else:
        dims = [f"{x.name}.shape[{j}]" for j in range(x.ndim) if j != a]
        if keepdims:
            dims.insert(a, "1")
    res = e.fresh()
    e.emit(ind, f"{res} = {out}.reshape(({', '.join(dims)},))")
    return e.new_array(res, odt, oshape)
