"""Reductions over ``axes`` (None: all) with ``keepdims``."""
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
