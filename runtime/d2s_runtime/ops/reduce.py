"""Reductions over ``axes`` (None: all) with ``keepdims``; argmax/argmin; the running product and
log-sum-exp along one axis (``cumprod``, ``logcumsumexp``)."""
import numpy as np

from ..dtypes import is_floating
from .nn_ops import CUMULATIVE_ACC
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
    return "int64" if d in ("bool", "int32", "uint8", "int8", "int16") else d


# accumulate bool and integers narrower than int64 in int64 (as the shape rule says, and as
# PyTorch does); keyed by dtype char, since ``dtype.name`` costs microseconds per call and
# small-tensor loops call this a lot
_SUM_ACC = {"?": "int64", "i": "int64", "B": "int64", "b": "int64", "h": "int64"}
_reduction("reduce_sum", lambda xp, x, ax, k: x.sum(axis=ax, keepdims=k, dtype=_SUM_ACC.get(x.dtype.char)),
           "Sum over ``axes``; bool and int32 accumulate in int64.", _sum_dtype, fresh=True, method=("sum", "f"))
_reduction("reduce_mean", lambda xp, x, ax, k: xp.mean(x, axis=ax, keepdims=k,
                                                       dtype=None if x.dtype.kind == "f" else "float32"),
           "Mean over ``axes``; integer inputs give float32.", lambda d: d if is_floating(d) else "float32", fresh=True, float_inputs=True,
           method=("mean", "f"))  # not integers: their array mean is float64, the op's float32
# (a numpy array's max/min: the ufunc reduction np.max/np.min call, without their wrappers)
_reduction("reduce_max", lambda xp, x, ax, k: np.maximum.reduce(x, axis=ax, keepdims=k) if type(x) is np.ndarray
           else xp.max(x, axis=ax, keepdims=k), "Maximum over ``axes``.", fresh=True, method=("max", "fiu"))
_reduction("reduce_min", lambda xp, x, ax, k: np.minimum.reduce(x, axis=ax, keepdims=k) if type(x) is np.ndarray
           else xp.min(x, axis=ax, keepdims=k), "Minimum over ``axes``.", fresh=True, method=("min", "fiu"))
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


# ------------------------------------------------------------------ max/min along one axis: (values, indices)
def _one_axis(op, axis, ndim):
    """``axis`` as a non-negative int (a 0-d tensor takes axis 0 or -1, as in PyTorch)."""
    if type(axis) is bool or not isinstance(axis, int):
        raise ShapeError(f"{op}: axis must be one int, got {axis!r}")
    return norm_axes(axis, ndim, op)[0]


def selection_types(op, x, axis, keepdims, dtype=None):
    """(values, indices) types of a selection of one element along ``axis`` (max, kthvalue, ...);
    a dim known to be empty has nothing to select, as PyTorch says."""
    a = _one_axis(op, axis, x.ndim)
    if x.ndim and x.shape[a] == 0:
        raise ShapeError(f"{op}: dimension {axis} has size 0 (nothing to select from)")
    shape = reduce_shape(x.shape, (a,) if x.ndim else (), keepdims)
    return TensorType(shape, dtype or x.dtype), TensorType(shape, "int64")


def select_along(xp, x, idx, axis, keepdims):
    """(values, indices): ``x``'s elements at ``idx`` (shaped as ``x`` with ``axis`` of size 1)."""
    values = xp.take_along_axis(x, idx, axis=axis)
    if not keepdims:
        values, idx = values.squeeze(axis), idx.squeeze(axis)
    return values, xp.asarray(idx, dtype="int64")


def _maxmin_dim(kind):
    arg = getattr(np, f"arg{kind}")

    def infer(x, axis, keepdims=False):
        return selection_types(kind, x, axis, keepdims)

    def kernel(xp, x, axis, keepdims=False):
        a = _one_axis(kind, axis, x.ndim)
        if x.ndim == 0:
            return x.copy(), xp.zeros((), "int64")
        if x.shape[a] == 0:
            raise ValueError(f"{kind}: dimension {axis} has size 0 (nothing to select from)")
        return select_along(xp, x, getattr(xp, arg.__name__)(x, axis=a, keepdims=True), a, keepdims)

    defop(f"{kind}_dim", infer, n_out=2, fresh=True,
          doc=f"(values, indices) of the {'largest' if kind == 'max' else 'smallest'} element along ``axis``: "
              f"the first where several are equal, a NaN counting as the {kind}imum (PyTorch's max/min "
              f"with a dim).")(kernel)


_maxmin_dim("max")
_maxmin_dim("min")


# native lowerings (native/): a reduction inlines the element-wise chain it reads (the emitter's
# reduce builder, shared by these ops); argmax/argmin are written here in full
def _native_reduction(name, kind):
    def hook(e, x, axes=None, keepdims=False):
        return e.reduce(kind, x, axes, keepdims)

    hook.fuses_input = True  # reads an element-wise chain inline (no temporary)
    deflowering(name, "native")(hook)


for _name, _kind in (("reduce_sum", "sum"), ("reduce_mean", "mean"), ("reduce_max", "max"), ("reduce_min", "min"),
                     ("reduce_prod", "prod"), ("reduce_any", "any"), ("reduce_all", "all")):
    _native_reduction(_name, _kind)


def _arg_reduce_native(e, kind, x, axis, keepdims):
    """numpy's argmax/argmin: the first extreme, a NaN counting as the extreme (the first NaN)."""
    if type(keepdims) is not bool:
        e.unsupported("keepdims must be a bool")
    x, xr, a = e.rows(x, axis)
    ind = e.indent
    out, o, i, k, b, bi, v = (e.fresh() for _ in range(7))
    cmp = ">" if kind == "max" else "<"
    e.emit(ind, f"if {xr}.shape[1] == 0: raise ValueError('native program: arg{kind} of an empty sequence')")
    e.emit(ind, f"{out} = np.empty(({xr}.shape[0], {xr}.shape[2]), np.int64)")
    e.emit(ind, f"for {o} in range({xr}.shape[0]):")
    e.emit(ind + 1, f"for {i} in range({xr}.shape[2]):")
    c = ind + 2
    e.emit(c, f"{b} = {xr}[{o}, 0, {i}]")
    e.emit(c, f"{bi} = 0")
    e.emit(c, f"for {k} in range(1, {xr}.shape[1]):")
    e.emit(c + 1, f"if {b} != {b}: break")
    e.emit(c + 1, f"{v} = {xr}[{o}, {k}, {i}]")
    e.emit(c + 1, f"if {v} {cmp} {b} or {v} != {v}:")
    e.emit(c + 2, f"{b} = {v}")
    e.emit(c + 2, f"{bi} = {k}")
    e.emit(c, f"{out}[{o}, {i}] = {bi}")
    oshape = tuple(e.out.shape)
    if not oshape:
        name = e.fresh()
        e.emit(ind, f"{name} = {out}[0, 0]")
        return e.scalar(name, "int64")
    if a is None:  # keepdims over every axis
        dims = ["1"] * x.ndim
    else:
        dims = [f"{x.name}.shape[{j}]" for j in range(x.ndim) if j != a]
        if keepdims:
            dims.insert(a, "1")
    res = e.fresh()
    e.emit(ind, f"{res} = {out}.reshape(({', '.join(dims)},))")
    return e.new_array(res, "int64", oshape)


@deflowering("argmax", "native")
def _argmax_native(e, x, axis=None, keepdims=False):
    return _arg_reduce_native(e, "max", x, axis, keepdims)


@deflowering("argmin", "native")
def _argmin_native(e, x, axis=None, keepdims=False):
    return _arg_reduce_native(e, "min", x, axis, keepdims)


def _maxmin_dim_native(kind):
    # the values keep the earlier element on ties and the first NaN: the element at the
    # arg-index, signed zeros included
    def hook(e, x, axis, keepdims=False):
        if x.ndim == 0:
            e.unsupported("max/min of a 0-d tensor along a dim")
        return e.reduce(kind, x, [axis], keepdims, first_on_ties=True), _arg_reduce_native(e, kind, x, axis, keepdims)
    deflowering(f"{kind}_dim", "native")(hook)


_maxmin_dim_native("max")
_maxmin_dim_native("min")


# ------------------------------------------------------------------ running products and log-sum-exps
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
    acc = CUMULATIVE_ACC.get(str(dtype))  # (PyTorch's accumulation, as cumsum's)
    if acc is not None:
        return xp.cumprod(x, axis=axis, dtype=acc).astype(dtype)
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
    acc = CUMULATIVE_ACC.get(x.dtype.name)  # PyTorch's float32 steps run in float64, as cumsum's
    with np.errstate(invalid="ignore"):  # -inf + -inf steps: logaddexp gives -inf, as it should
        out = scan(xp, np.logaddexp, x if acc is None else x.astype(acc), axis)
    out = out if acc is None else out.astype(x.dtype)
    return xp.flip(out, axis=axis) if reverse else out


# CUDA C lowerings (gpu/cuda_lower.py): a full reduction reads the element-wise chain before it
# inline, in one kernel
def _cuda_reduction(name, kind):
    def hook(e, x, axes=None, keepdims=False):
        return e.reduce(kind, x, axes, keepdims)

    hook.fuses_input = True
    deflowering(name, "cuda")(hook)


for _name, _kind in (("reduce_sum", "sum"), ("reduce_mean", "mean"), ("reduce_max", "max"), ("reduce_min", "min")):
    _cuda_reduction(_name, _kind)
