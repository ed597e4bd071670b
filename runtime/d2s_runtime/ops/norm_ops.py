"""The normalization primitive behind BatchNorm, LayerNorm, GroupNorm and InstanceNorm:
``normalize`` (zero mean, unit variance over some axes; it also returns the mean and the biased
variance, which BatchNorm's running statistics need) and its gradient ``normalize_grad``.

Each layer is ``normalize`` over its axes (after a reshape for GroupNorm) followed by its
per-channel or per-element scale and shift, so one kernel and one backward formula serve all
four, with two passes over the data for the statistics instead of one op per step of the
formula.
"""
from .registry import ShapeError, TensorType, deflowering, defop
from .rules import fmt_shape


def _norm_axes(op, axes, ndim):
    if not axes:
        raise ShapeError(f"{op}: needs at least one axis to normalize over")
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ShapeError(f"{op}: axis {a} is out of range for a tensor with {ndim} dims")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: repeated axis in {list(axes)}")
    return tuple(sorted(out))


def _stat_shape(shape, axes):
    return tuple(1 if a in axes else d for a, d in enumerate(shape))


def _normalize_infer(x, axes, eps=1e-5):
    ax = _norm_axes("normalize", axes, x.ndim)
    if not x.dtype.startswith("float"):
        raise ShapeError(f"normalize: needs a floating tensor, got {x.dtype} {fmt_shape(x.shape)}")
    stat = TensorType(_stat_shape(x.shape, ax), x.dtype)
    return TensorType(x.shape, x.dtype), stat, stat


@defop("normalize", _normalize_infer, n_out=3)
def _normalize(xp, x, axes, eps=1e-5):
    """``(x - mean) / sqrt(var + eps)`` over ``axes``, with the mean and the biased variance
    (keepdims shapes): (y, mean, var). Two passes: the mean, then the centred squares."""
    ax = _norm_axes("normalize", axes, x.ndim)
    mean = xp.mean(x, axis=ax, keepdims=True)
    d = x - mean
    var = xp.mean(d * d, axis=ax, keepdims=True)
    inv = 1.0 / xp.sqrt(var + x.dtype.type(eps))
    d *= inv
    return d, mean, var


def _normalize_grad_infer(g, y, var, gmean, gvar, axes, eps=1e-5):
    _norm_axes("normalize_grad", axes, y.ndim)
    return TensorType(y.shape, g.dtype)


@defop("normalize_grad", _normalize_grad_infer)
def _normalize_grad(xp, g, y, var, gmean, gvar, axes, eps=1e-5):
    """d normalize / d x given the gradients of its three outputs: ``g`` of ``y``, ``gmean`` of
    the mean and ``gvar`` of the variance (``var`` is its variance output). With s = 1/sqrt(var
    + eps) and n the count per statistic: ``s * (g - mean(g) - y * mean(g * y)) + gmean / n +
    y * 2 * gvar / (n * s)``, every per-statistic factor folded before touching full tensors."""
    ax = _norm_axes("normalize_grad", axes, y.ndim)
    n = 1
    for a in ax:
        n *= y.shape[a]
    root = xp.sqrt(var + var.dtype.type(eps))
    s = 1.0 / root
    shift = gmean / n - s * xp.mean(g, axis=ax, keepdims=True)
    slope = gvar * (2.0 / n) * root - s * xp.mean(g * y, axis=ax, keepdims=True)
    out = y * slope
    out += g * s
    out += shift
    return out.astype(g.dtype, copy=False)


# (the native lowerings of normalize and normalize_grad are loop nests written in
# native/norm.py, registered there: the ops package must not import the native compiler)
