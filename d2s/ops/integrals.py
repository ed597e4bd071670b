"""The trapezoidal rule with PyTorch's names and formulas: ``trapezoid`` (``trapz``) and
``cumulative_trapezoid`` over ``dim``, with sample points ``x`` or a spacing ``dx``. Compositions
of slices, sums and running sums, written as PyTorch writes them (so the roundings match);
differentiable in ``y`` and ``x``.
"""
from ..tensor import Tensor
from .cumulative import diff
from .nn import cumsum
from .reduce import sum as _sum
from .shape import reshape
from .creation import zeros
from ._util import _as_tensor


def _spacing(name, y, x, dx, dim):
    """``(dim, dx)``: dx a number, or the tensor of ``x``'s differences laid along ``dim``."""
    if x is not None and dx is not None:
        raise TypeError(f"{name}: give either x (the sample points) or dx (their spacing), not both")
    dim = dim % y.ndim
    if x is None:
        return dim, 1.0 if dx is None else dx
    x = _as_tensor(x)
    if x.ndim == 1 and y.ndim > 1:  # a 1-d x lies along dim
        x = reshape(x, [-1 if d == dim else 1 for d in range(y.ndim)])
        return dim, diff(x, dim=dim)
    if x.ndim != y.ndim and x.ndim != 1:
        raise RuntimeError(f"{name}: x and y must have the same number of dims (or x be 1-d), got {x.ndim} and "
                           f"{y.ndim}")
    return dim, diff(x, dim=-1 if x.ndim == 1 else dim)


def _ends(y, dim):
    n = int(y.shape[dim])
    idx = [slice(None)] * y.ndim
    left, right = list(idx), list(idx)
    left[dim], right[dim] = slice(0, n - 1), slice(1, n)
    return y[tuple(left)], y[tuple(right)]


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of ``y`` along ``dim`` by the trapezoidal rule, as ``torch.trapezoid``: at
    sample points ``x`` (a tensor of y's shape, or 1-d along ``dim``), else spaced ``dx`` apart
    (default 1)."""
    y = _as_tensor(y)
    dim, step = _spacing("trapezoid", y, x, dx, dim)
    if int(y.shape[dim]) == 0:
        shape = [s for d, s in enumerate(y.shape) if d != dim]
        return zeros(*shape, dtype=str(y.dtype) if str(y.dtype).startswith("float") else "float32")
    left, right = _ends(y, dim)
    if isinstance(step, Tensor):
        return _sum(step * (right + left), dim=dim) / 2.0
    first, last = left.narrow(dim, 0, 1).squeeze(dim), right.narrow(dim, right.shape[dim] - 1, 1).squeeze(dim)
    return (_sum(y, dim=dim) - (first + last) * 0.5) * step


def trapz(y, x=None, *, dx=None, dim=-1):
    """``torch.trapz``: :func:`trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral of ``y`` along ``dim`` (one element fewer along it), as
    ``torch.cumulative_trapezoid``."""
    y = _as_tensor(y)
    dim, step = _spacing("cumulative_trapezoid", y, x, dx, dim)
    left, right = _ends(y, dim)
    if isinstance(step, Tensor):
        return cumsum((step * (left + right)) / 2.0, dim)
    return cumsum(step / 2.0 * (left + right), dim)
