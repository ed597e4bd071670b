"""Membership, counts and statistics with PyTorch's signatures (runtime: ``d2s_runtime/ops/counting.py``):
isin, bincount, histc, quantile, nanquantile, cov and corrcoef.

``isin``, ``quantile`` and ``nanquantile`` are compositions (comparisons; a sort, two gathers and
PyTorch's lerp, step for step as PyTorch computes them; ``cov``/``corrcoef`` a weighted mean and a
matrix product, as PyTorch's), so they run in programs, export to ONNX
and (the quantiles) have PyTorch's gradients. ``bincount`` and ``histc`` are primitives without
gradients, as in PyTorch; ``bincount``'s length depends on the data (as ``nonzero``'s does).
"""
import numbers
import warnings

import numpy as np

from .. import return_types
from ..autograd.registry import non_differentiable
from ..dispatch import apply
from ..onnx.registry import onnx_unsupported
from ..tensor import Tensor, tensor, tensor_method
from . import _dim_args as A
from .creation import full_like, linspace, ones, ones_like, zeros, zeros_like
from .elementwise import cast, clamp, eq, logical_not, lt, sqrt, where
from .indexing import gather, scatter_add
from .linalg import diagonal, matmul
from .pointwise import ceil, floor, lerp, round as _round
from .reduce import _isnan, amax, any as _any, sum as _sum
from .shape import cat, movedim, reshape, squeeze, transpose, unsqueeze
from .sorting import sort
from ._util import _as_tensor, _static_shape


# ------------------------------------------------------------------ isin
def isin(elements=None, test_elements=None, *, assume_unique=False, invert=False, element=None, test_element=None):
    """For each element of ``elements``, whether it equals any of ``test_elements`` (as
    ``torch.isin``): a bool tensor of ``elements``' shape. Either may be a number; values of
    different dtypes compare as PyTorch promotes them; NaN is in nothing.

    Args:
        elements: a tensor or a number.
        test_elements: a tensor or a number.
        assume_unique: accepted (the answer does not depend on it).
        invert: whether each element is *not* in ``test_elements``.
        element, test_element: PyTorch's names of ``elements`` / ``test_elements`` when it is a
            number.

    Returns:
        A bool tensor (0-d for a number ``elements``).
    """
    del assume_unique  # accepted as PyTorch's: a speed hint, the answer does not depend on it
    elements = _one_of("elements", elements, element)
    test_elements = _one_of("test_elements", test_elements, test_element)
    if not isinstance(test_elements, Tensor) and isinstance(test_elements, (numbers.Number, np.generic)):
        found = eq(_as_tensor(elements), test_elements)
    else:
        x = _as_tensor(elements)
        flat = reshape(_as_tensor(test_elements), (-1,))
        found = _any(eq(unsqueeze(x, -1), flat), -1)
    return logical_not(found) if invert else found


def _one_of(name, value, number):
    if (value is None) == (number is None):
        raise TypeError(f"isin() takes {name} once (as {name}= or, for a number, {name.rstrip('s')}=)")
    return number if value is None else value


# ------------------------------------------------------------------ bincount
@tensor_method()
def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, ..., ``max(input)`` occurs in the 1-d non-negative integer
    tensor ``input`` (at least ``minlength`` counts), as ``torch.bincount``; with ``weights``
    the sum of the weights at each value's positions (float32 for float32 weights, else float64).
    The result's length depends on the data: inside a program it is a dim known only when the
    program runs. No gradient (PyTorch has none either). One deliberate difference: for an empty
    ``input`` with ``weights`` PyTorch returns int64 zeros, d2s zeros of the weighted dtype, so
    that a program's dtype does not depend on the data.

    Args:
        input: a 1-d tensor of non-negative integers.
        weights: an optional 1-d tensor as long as ``input``.
        minlength: the least length of the result.

    Returns:
        A 1-d int64 tensor (with ``weights``: float32 or float64).
    """
    x = _as_tensor(input)
    if isinstance(minlength, Tensor) and minlength.is_symbolic:
        return _bincount_to_run_length(x, weights, minlength)
    minlength = int(minlength)
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if weights is None:
        return apply("bincount", x, minlength=minlength)
    return apply("bincount_weighted", x, _as_tensor(weights), minlength=minlength)


def _bincount_to_run_length(x, weights, minlength):
    """bincount in a program whose ``minlength`` is known only when it runs (``size =
    int(batch.max()) + 1`` in converted code, as graph pooling writes it): the counts added into
    zeros of the length the program computes, ``max(max(x) + 1, minlength)``."""
    index = x.long()
    size = amax(cat([index, (minlength.long() - 1).reshape([1])])) + 1
    if weights is None:
        return scatter_add(zeros(size, dtype="int64", device=x.device), 0, index,
                           ones(x.shape[0], dtype="int64", device=x.device))
    w = _as_tensor(weights).detach()  # (no gradient, as the primitive's)
    dtype = "float32" if str(w.dtype) == "float32" else "float64"
    return scatter_add(zeros(size, dtype=dtype, device=x.device), 0, index, w.to(dtype))


non_differentiable("bincount", "bincount_weighted", reason="counts carry no gradient (PyTorch's bincount has none)")
onnx_unsupported("bincount", "bincount_weighted",
                 reason="ONNX has no operator counting values into a data-dependent number of bins")


# ------------------------------------------------------------------ histc
@tensor_method()
def histc(input, bins=100, min=0, max=0):
    """A histogram of ``input``'s elements in ``bins`` equal-width bins from ``min`` to ``max``,
    as ``torch.histc``: with ``min == max`` (the default 0, 0) the data's smallest and largest
    values; elements outside the range (and NaN) are not counted; the last bin includes ``max``.

    Args:
        input: a floating point tensor (any shape; all its elements count).
        bins: how many bins.
        min, max: the range.

    Returns:
        A 1-d tensor of ``bins`` counts, of ``input``'s dtype.
    """
    bins = int(bins)
    if bins <= 0:
        raise ValueError(f"histc: bins must be > 0, got {bins}")
    return apply("histc", _as_tensor(input), bins=bins, min=float(min), max=float(max))


non_differentiable("histc", reason="counts carry no gradient (PyTorch's histc has none)")
onnx_unsupported("histc", reason="ONNX has no histogram operator")


# ------------------------------------------------------------------ quantile, nanquantile
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _q_tensor(fn, q, x):
    """``q`` as a tensor of ``x``'s dtype (0-d or 1-d), its values checked where they are known."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise ValueError(f"d2s.{fn}(): q must be a number or a 0-d or 1-d tensor, got {q.ndim} dims")
        if q.dtype != x.dtype:
            raise TypeError(f"d2s.{fn}(): q must have the input's dtype ({x.dtype}), got {q.dtype}")
        values = None if q.is_symbolic else np.asarray(q.detach().numpy())
    else:
        values = np.asarray(q, dtype=np.float64)
        if values.ndim > 1:
            raise ValueError(f"d2s.{fn}(): q must be a number or a 1-d sequence, got {values.ndim} dims")
        q = tensor(values.astype(str(x.dtype)), device=x.device)
    if values is not None and not np.all((values >= 0) & (values <= 1)):
        raise ValueError(f"d2s.{fn}(): q values must be in the range [0, 1], got {values.tolist()}")
    return q


def _quantile(fn, input, q, dim, keepdim, interpolation, ignore_nan):
    x = _as_tensor(input)
    if str(x.dtype) not in ("float32", "float64"):
        raise TypeError(f"d2s.{fn}(): needs a float32 or float64 input, got {x.dtype}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"d2s.{fn}(): interpolation must be one of {', '.join(_INTERPOLATIONS)}, "
                         f"got {interpolation!r}")
    if 0 in _static_shape(x):
        raise ValueError(f"d2s.{fn}(): the input tensor must be non-empty")
    qt = _q_tensor(fn, q, x)
    nd = x.ndim
    if dim is None:
        values = sort(reshape(x, (-1,)))[0]
    else:
        if not -max(nd, 1) <= dim < max(nd, 1):
            raise IndexError(f"d2s.{fn}(): dim {dim} is out of range for a tensor of {nd} dims")
        dim = dim % nd if nd else 0
        values = movedim(sort(x, dim)[0], dim, -1) if nd else reshape(x, (1,))
    # ranks in [0, n-1], one per q, in the input's dtype (as PyTorch computes them)
    qv = reshape(qt, (-1,))
    if ignore_nan:
        count = _sum(logical_not(_isnan(values)), -1, keepdim=True)
        ranks = qv * (count - 1)
        ranks = where(lt(ranks, 0), full_like(ranks, 0), ranks)
    else:
        last = _sum(ones_like(values, dtype="int64"), -1, keepdim=True) - 1
        ranks = qv * last
        ranks = where(_any(_isnan(values), -1, keepdim=True), cast(last, str(x.dtype)), ranks)
    if interpolation == "lower":
        ranks = floor(ranks)
    elif interpolation == "higher":
        ranks = ceil(ranks)
    elif interpolation == "nearest":
        ranks = _round(ranks)
    below = cast(ranks, "int64")
    out = gather(values, -1, below)
    if interpolation in ("linear", "midpoint"):
        weights = full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - cast(below, str(x.dtype))
        out = lerp(out, gather(values, -1, cast(ceil(ranks), "int64")), weights)
    # out: (rest..., nq), rest the input's dims but dim (none with dim=None)
    if keepdim:
        if dim is None:
            out = reshape(out, (1,) * nd + (-1,)) if nd else out
        elif nd:
            out = unsqueeze(out, dim)
    if qt.ndim == 0:
        return squeeze(out, -1)
    return movedim(out, -1, 0)


@tensor_method()
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", axis=None, keepdims=None, **unsupported):
    """The ``q``-th quantiles of ``input`` along ``dim`` (None: of all its elements), as
    ``torch.quantile``: between the two nearest sorted values by ``interpolation``. A slice
    holding NaN gives NaN. The gradient goes to the (one or two) values each quantile is made of.

    Args:
        input: a float32 or float64 tensor.
        q: a number in [0, 1], or a 1-d tensor (of ``input``'s dtype) or sequence of them.
        dim: the dim to reduce; None: all elements.
        keepdim: keep the reduced dim with size 1 (with ``dim=None``: every dim).
        interpolation: ``'linear'`` (default), ``'lower'``, ``'higher'``, ``'midpoint'`` or
            ``'nearest'`` (ties to even, as PyTorch's round).

    Returns:
        The quantiles; with several ``q``, stacked along a new first dim.
    """
    A.no_extra("quantile", unsupported)
    dim = A.one_dim("quantile", dim, axis)
    return _quantile("quantile", input, q, dim, A.keep("quantile", keepdim, keepdims), interpolation, False)


@tensor_method()
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", axis=None, keepdims=None,
                **unsupported):
    """:func:`quantile` ignoring NaN: each slice's quantiles of its non-NaN values (NaN where all
    are NaN), as ``torch.nanquantile``. Arguments and result as :func:`quantile`'s."""
    A.no_extra("nanquantile", unsupported)
    dim = A.one_dim("nanquantile", dim, axis)
    return _quantile("nanquantile", input, q, dim, A.keep("nanquantile", keepdim, keepdims), interpolation, True)




# ------------------------------------------------------------------ cov, corrcoef
def _weights(name, w, n, integral):
    w = _as_tensor(w)
    kind = "integral" if integral else "floating point"
    if w.ndim != 1 or (str(w.dtype).startswith("float") == integral) or str(w.dtype) == "bool":
        raise ValueError(f"d2s.cov(): {name} must be a 1-d {kind} tensor, got {w.dtype} of {w.ndim} dims")
    size = _static_shape(w)[0]
    if None not in (size, n) and size != n:
        raise ValueError(f"d2s.cov(): {name} has {size} entries, but there are {n} observations")
    if not w.is_symbolic and bool((w < 0).any()):
        raise ValueError(f"d2s.cov(): {name} cannot be negative")
    return w


@tensor_method()
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in its
    columns; a 1-d input is one variable), as ``torch.cov``, weighted by ``fweights`` (integer
    repeat counts) and ``aweights`` (float importances). Integer inputs give float32.

    Args:
        input: a tensor of at most 2 dims (not bool).
        correction: subtracted from the number of observations (1: unbiased, 0: the mean square).
        fweights: an optional 1-d integer tensor, one count per observation.
        aweights: an optional 1-d float tensor, one weight per observation.

    Returns:
        The (variables, variables) covariance matrix; 0-d for a single variable. Where the
        degrees of freedom are not positive the result is inf or NaN (PyTorch warns).
    """
    x = _as_tensor(input)
    if x.ndim > 2:
        raise ValueError(f"d2s.cov(): expected input to have two or fewer dimensions but got {x.ndim}")
    if str(x.dtype) == "bool":
        raise TypeError("d2s.cov(): bool dtype is not supported for input")
    x = reshape(x, (1, -1)) if x.ndim < 2 else x
    n = _static_shape(x)[1]
    w = aw = None
    if fweights is not None:
        w = _weights("fweights", fweights, n, True)
    if aweights is not None:
        aw = _weights("aweights", aweights, n, False)
        w = aw if w is None else w * aw
    if w is None:
        w_sum = _sum(ones_like(x[0], dtype="int64"))
    else:
        w_sum = _sum(w)
        if not w_sum.is_symbolic and float(w_sum) == 0:
            raise ValueError("d2s.cov(): weights sum to zero, can't be normalized")
    avg = _sum(x if w is None else x * w, 1) / w_sum
    if aw is not None and correction != 0:
        norm = w_sum - correction * _sum(w * aw) / w_sum
    else:
        norm = w_sum - correction
    if not norm.is_symbolic and float(norm) <= 0:
        warnings.warn("d2s.cov(): degrees of freedom is <= 0; correction should be strictly less than the number "
                      "of observations (the result is inf or NaN, as PyTorch's)", RuntimeWarning, stacklevel=2)
    norm = where(norm <= 0, zeros_like(norm), norm)
    centered = x - unsqueeze(avg, 1)
    c = matmul(centered, transpose(centered if w is None else centered * w, 0, 1))
    return squeeze(c / norm)


@tensor_method()
def corrcoef(input):
    """The Pearson correlation coefficients of the variables in the rows of ``input``, as
    ``torch.corrcoef``: :func:`cov` scaled by the standard deviations and clipped to [-1, 1].

    Args:
        input: a tensor of at most 2 dims (variables in rows, observations in columns).

    Returns:
        The (variables, variables) matrix; 0-d for a single variable (1, or NaN where its
        variance is 0, inf or NaN).
    """
    c = cov(input)
    if c.ndim == 0:
        return c / c
    stddev = sqrt(diagonal(c))
    c = c / unsqueeze(stddev, 1)
    c = c / unsqueeze(stddev, 0)
    return clamp(c, -1, 1)


# ------------------------------------------------------------------ histogram (eager only)
@tensor_method()
def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """A histogram of ``input``'s elements, as ``torch.histogram``: the named tuple
    ``(hist, bin_edges)``. ``bins`` an int (equal-width bins over ``range``, by default the data's
    smallest to largest value, widened by 0.5 each way when they are equal; the edges are
    ``linspace`` of ``input``'s dtype, as PyTorch's) or a 1-d tensor of increasing edges.
    Elements outside the edges are not counted; the last bin includes its right edge. Eager
    only: no gradient (PyTorch's has none).

    Args:
        input: a float tensor (all its elements count).
        bins: an int, or a 1-d tensor of edges.
        range: ``(min, max)`` for int ``bins``.
        weight: a tensor of ``input``'s shape: each element counts its weight.
        density: divide by the total and each bin's width (a density integrating to 1).

    Returns:
        ``(hist, bin_edges)``, both 1-d of ``input``'s dtype.
    """
    x = _as_tensor(input)
    if str(x.dtype) not in ("float32", "float64"):
        raise TypeError(f"histogram: needs a float32 or float64 input, got {x.dtype}")
    if x.is_symbolic:
        raise TypeError("d2s.histogram() cannot run inside a program (to_static, build_program): call it outside "
                        "the converted function, or use histc")
    data = np.asarray(x.detach().numpy()).reshape(-1)
    if isinstance(bins, Tensor):
        if bins.dtype != x.dtype:
            raise RuntimeError(f"histogram: input and bins should have the same dtype, got {x.dtype} and {bins.dtype}")
        edges = np.asarray(bins.detach().numpy())
        if edges.ndim != 1 or edges.size < 1 or (np.diff(edges) < 0).any():
            raise ValueError("histogram: bins must be a 1-d tensor of increasing edges")
    else:
        if int(bins) <= 0:
            raise ValueError(f"histogram: bins must be > 0, got {bins}")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        else:
            finite = data[np.isfinite(data)]
            lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
        if lo > hi:
            raise ValueError(f"histogram: min ({lo}) should not be greater than max ({hi})")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = linspace(lo, hi, int(bins) + 1, dtype=str(x.dtype)).numpy()
    w = None if weight is None else np.asarray(_as_tensor(weight).detach().numpy()).reshape(-1)
    inside = (data >= edges[0]) & (data <= edges[-1])
    pos = np.searchsorted(edges, data[inside], side="right") - 1
    pos = np.minimum(pos, edges.size - 2)  # (the right edge belongs to the last bin)
    hist = np.bincount(pos, weights=None if w is None else w[inside], minlength=edges.size - 1)
    hist = hist[:edges.size - 1].astype(data.dtype)
    if density:
        hist = hist / (hist.sum() * np.diff(edges))
    return return_types.histogram(tensor(hist.astype(data.dtype), device=x.device),
                                  tensor(edges, device=x.device))
