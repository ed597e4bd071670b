"""Reductions over ``axes`` (None: all) with ``keepdims``; argmax/argmin; the running product and
log-sum-exp along one axis (``cumprod``, ``logcumsumexp``)."""
import numpy as np

from ..dtypes import is_floating
from .registry import ShapeError, TensorType, deflowering, defop
from .rules import norm_axes, reduce_shape


def _reduction(name, fn, doc, dtype_rule=None, **traits):
    def infer(x, axes=None, keepdims=False):
        ax = norm_axes(axes, x.ndim, name)
        dtype = dtype_rule(x.dtype) if dtype_rule else x.dtype
        return TensorType(reduce_shape(x.shape, ax, keepdims), dtype)

    def kernel(xp, x, axes=None, keepdims=False):
        # a 0-d tensor reduced over axis 0 or -1 (allowed by the rule) is reduced over nothing
        return fn(xp, x, None if axes is None or x.ndim == 0 else tuple(axes), keepdims)

    defop(name, infer, doc=doc, **traits)(kernel)


def _sum_dtype(d):
    return "int64" if d in ("bool", "int32") else d


# accumulate bool/int32 in int64 (as the shape rule says); keyed by dtype char, since
# ``dtype.name`` costs microseconds per call and small-tensor loops call this a lot
_SUM_ACC = {"?": "int64", "i": "int64"}
_reduction("reduce_sum", lambda xp, x, ax, k: x.sum(axis=ax, keepdims=k, dtype=_SUM_ACC.get(x.dtype.char)),
           "Sum over ``axes``; bool and int32 accumulate in int64.", _sum_dtype, fresh=True, method=("sum", "f"))
_reduction("reduce_mean", lambda xp, x, ax, k: xp.mean(x, axis=ax, keepdims=k,
                                                       dtype=None if x.dtype.kind == "f" else "float32"),
           "Mean over ``axes``; integer inputs give float32.", lambda d: d if is_floating(d) else "float32", fresh=True, float_inputs=True,
           method=("mean", "f"))  # not integers: their array mean is float64, the op's float32
_reduction("reduce_max", lambda xp, x, ax, k: xp.max(x, axis=ax, keepdims=k), "Maximum over ``axes``.", fresh=True, method=("max", "fiu"))
_reduction("reduce_min", lambda xp, x, ax, k: xp.min(x, axis=ax, keepdims=k), "Minimum over ``axes``.", fresh=True, method=("min", "fiu"))
_reduction("reduce_prod", lambda xp, x, ax, k: xp.prod(x, axis=ax, keepdims=k, dtype=_sum_dtype(x.dtype.name)),
           "Product over ``axes``; bool and int32 accumulate in int64.", _sum_dtype, fresh=True)
_reduction("reduce_any", lambda xp, x, ax, k: xp.any(x, axis=ax, keepdims=k), "Whether any element over ``axes`` is true.",
           lambda d: "bool")
_reduction("reduce_all", lambda xp, x, ax, k: xp.all(x, axis=ax, keepdims=k), "Whether every element over ``axes`` is true.",
           lambda d: "bool")


def _arg_infer(x, axis=None, keepdims=False):
    ax = norm_axes(axis, x.ndim, "argmax")
    if ax is not None and len(ax) != 1:
        raise ShapeError(f"argmax: axis must be one int or None, got {axis}")
    return TensorType(reduce_shape(x.shape, ax, keepdims), "int64")


@defop("argmax", _arg_infer)
def _argmax(xp, x, axis=None, keepdims=False):
    """Index (int64) of the first maximum along ``axis`` (None: of the flattened tensor)."""
    axis = None if x.ndim == 0 else axis
    return xp.asarray(xp.argmax(x, axis=axis, keepdims=keepdims), dtype="int64")


@defop("argmin", _arg_infer)
def _argmin(xp, x, axis=None, keepdims=False):
    """Index (int64) of the first minimum along ``axis`` (None: of the flattened tensor)."""
    axis = None if x.ndim == 0 else axis
    return xp.asarray(xp.argmin(x, axis=axis, keepdims=keepdims), dtype="int64")


# native lowerings (native/lower.py): a reduction inlines the element-wise chain it reads
def _native_reduction(name, kind):
    def hook(e, x, axes=None, keepdims=False):
        return e.reduce(kind, x, axes, keepdims)

    hook.fuses_input = True  # reads an element-wise chain inline (no temporary)
    deflowering(name, "native")(hook)


for _name, _kind in (("reduce_sum", "sum"), ("reduce_mean", "mean"), ("reduce_max", "max"), ("reduce_min", "min"),
                     ("reduce_prod", "prod"), ("reduce_any", "any"), ("reduce_all", "all")):
    _native_reduction(_name, _kind)


@deflowering("argmax", "native")
def _argmax_native(e, x, axis=None, keepdims=False):
    return e.arg_reduce("max", x, axis, keepdims)


@deflowering("argmin", "native")
def _argmin_native(e, x, axis=None, keepdims=False):
    return e.arg_reduce("min", x, axis, keepdims)


# ------------------------------------------------------------------ running products and log-sum-exps
def _one_axis(op, axis, ndim):
    """``axis`` as a non-negative int (a 0-d tensor takes axis 0 or -1, as in PyTorch)."""
    if type(axis) is bool or not isinstance(axis, int):
        raise ShapeError(f"{op}: axis must be one int, got {axis!r}")
    return norm_axes(axis, ndim, op)[0]


def scan(xp, ufunc, x, axis):
    """``ufunc.accumulate`` along ``axis``: numpy's sequential one, else (cupy) log2(n) rounds of
    Hillis-Steele doubling, each combining every element with the one ``2**r`` before it."""
    if xp is np:
        return ufunc.accumulate(x, axis=axis)
    out = xp.array(x, copy=True)
    n, step = x.shape[axis], 1
    while step < n:
        head = [slice(None)] * x.ndim
        tail = [slice(None)] * x.ndim
        head[axis], tail[axis] = slice(step, None), slice(None, n - step)
        new = getattr(xp, ufunc.__name__)(out[tuple(head)], out[tuple(tail)])
        out[tuple(head)] = new
        step *= 2
    return out


def _cumprod_infer(x, axis):
    _one_axis("cumprod", axis, x.ndim)
    return TensorType(x.shape, _sum_dtype(x.dtype))


@defop("cumprod", _cumprod_infer, fresh=True)
def _cumprod(xp, x, axis):
    """Running product along ``axis``; bool and int32 inputs multiply in int64 (as PyTorch)."""
    dtype = _sum_dtype(x.dtype.name)
    if x.ndim == 0:
        return x.astype(dtype)
    return xp.cumprod(x, axis=axis, dtype=dtype)


def _logcumsumexp_infer(x, axis, reverse=False):
    _one_axis("logcumsumexp", axis, x.ndim)
    if not is_floating(x.dtype):
        raise ShapeError(f"logcumsumexp: expected a floating point tensor, got {x.dtype} (cast it first)")
    return TensorType(x.shape, x.dtype)


@defop("logcumsumexp", _logcumsumexp_infer, fresh=True)
def _logcumsumexp(xp, x, axis, reverse=False):
    """``log(cumsum(exp(x)))`` along ``axis``, each step a stable ``logaddexp`` (an early element
    far below a later maximum keeps its value; PyTorch's answer); ``reverse`` runs from the end
    (the gradient of logcumsumexp)."""
    if x.ndim == 0:
        return x.copy()
    if reverse:
        x = xp.flip(x, axis=axis)
    with np.errstate(invalid="ignore"):  # -inf + -inf steps: logaddexp gives -inf, as it should
        out = scan(xp, np.logaddexp, x, axis)
    return xp.flip(out, axis=axis) if reverse else out
