"""Counting values: ``bincount`` (how often each non-negative integer occurs, or the sum of
their weights) and ``histc`` (a histogram of equal-width bins), with PyTorch's rules.

``bincount``'s length depends on the data (the largest value + 1), so its shape rule leaves it
unknown, as ``nonzero``'s does; ``histc``'s is its static number of bins.
"""
import numpy as np

from ..dtypes import is_floating
from .registry import ShapeError, TensorType, defop
from .rules import fmt_shape


# ------------------------------------------------------------------ bincount
def _bincount_dtype(weights):
    """PyTorch's: int64 counts; summed weights stay float32, any other weight dtype gives float64."""
    if weights is None:
        return "int64"
    return "float32" if weights.dtype == "float32" else "float64"


def _bincount_infer(x, weights=None, minlength=0):
    if x.ndim != 1 or is_floating(x.dtype) or x.dtype == "bool":
        raise ShapeError(f"bincount: needs a 1-d tensor of non-negative integers, got {x.dtype}{fmt_shape(x.shape)}")
    if weights is not None and (weights.ndim != 1 or (None not in (x.shape[0], weights.shape[0])
                                                      and x.shape[0] != weights.shape[0])):
        raise ShapeError(f"bincount: weights must be 1-d and as long as the input, got {fmt_shape(weights.shape)} "
                         f"for an input of {fmt_shape(x.shape)}")
    return TensorType((None,), _bincount_dtype(weights))


def _bincount_kernel(xp, x, weights=None, minlength=0):
    """How often each value 0, 1, ..., max(x) occurs in 1-d ``x`` (at least ``minlength`` of them),
    or the sum of the ``weights`` at each value's positions."""
    if x.ndim != 1 or x.dtype.kind not in "iu":
        raise ShapeError(f"bincount: needs a 1-d tensor of non-negative integers, got {x.dtype}{fmt_shape(x.shape)}")
    if x.size and int(x.min()) < 0:
        raise ValueError(f"bincount: the input holds a negative value ({int(x.min())}); it counts non-negative "
                         f"integers only")
    if weights is None:
        return xp.bincount(x, minlength=minlength).astype("int64", copy=False)
    if weights.shape != x.shape:
        raise ShapeError(f"bincount: weights of {fmt_shape(weights.shape)} for an input of {fmt_shape(x.shape)}; "
                         f"they must be as long as the input")
    dtype = _bincount_dtype(weights)
    return xp.bincount(x, weights=weights.astype("float64", copy=False), minlength=minlength).astype(dtype)


defop("bincount", _bincount_infer, fresh=True)(_bincount_kernel)
defop("bincount_weighted", lambda x, w, minlength=0: _bincount_infer(x, w, minlength), fresh=True,
      doc="bincount with weights: the sum of the weights at each value's positions.")(
    lambda xp, x, w, minlength=0: _bincount_kernel(xp, x, w, minlength))


# ------------------------------------------------------------------ histc
def _histc_infer(x, bins=100, min=0.0, max=0.0):
    if not is_floating(x.dtype):
        raise ShapeError(f"histc: needs a floating point tensor, got {x.dtype}; cast it first (x.float())")
    return TensorType((int(bins),), x.dtype)


@defop("histc", _histc_infer, fresh=True)
def _histc(xp, x, bins=100, min=0.0, max=0.0):
    """A histogram of ``x`` in ``bins`` equal bins from ``min`` to ``max`` (both 0 or equal: the
    data's smallest and largest values); values outside, and NaN, are not counted; the last bin
    holds ``max`` too."""
    if x.dtype.kind != "f":
        raise ShapeError(f"histc: needs a floating point tensor, got {x.dtype}; cast it first (x.float())")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise ValueError(f"histc: max ({hi}) must be larger than min ({lo})")
    if lo == hi and x.size:
        lo, hi = float(xp.min(x)), float(xp.max(x))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"histc: range of [{lo}, {hi}] is not finite")
    lo_t, hi_t = x.dtype.type(lo), x.dtype.type(hi)
    flat = x.reshape(-1)
    flat = flat[(flat >= lo_t) & (flat <= hi_t)]
    # PyTorch's bin: (x - min) * bins / (max - min) in the input's dtype, truncated (not a search
    # of the edges: the two differ for values within rounding of an edge)
    pos = ((flat - lo_t) * int(bins) / (hi_t - lo_t)).astype("int64")
    pos = xp.minimum(pos, int(bins) - 1)  # the last bin includes max
    return xp.bincount(pos, minlength=int(bins)).astype(x.dtype)
