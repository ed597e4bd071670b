"""Running extremes, differences and Vandermonde matrices with PyTorch's signatures (runtime:
``cummax``/``cummin`` in ``d2s_runtime/ops/sorting.py``): cummax, cummin, diff, vander
(``torch.linalg.vander`` in ``d2s/linalg.py``).

``cummax``/``cummin`` return the named tuple ``(values, indices)``; a value's gradient goes to the
element it came from, as PyTorch's. ``diff`` and ``vander`` are compositions (slices and a
subtraction; PyTorch's cumulative product over ``[1, x, x, ...]``), exact and differentiable.
"""
from .. import return_types
from ..autograd.registry import grad_rule, reads_outputs, shape_only
from ..dispatch import apply
from ..onnx.registry import onnx_unsupported
from ..tensor import Tensor, tensor_method
from . import _dim_args as A
from .creation import ones_like
from .elementwise import cast, ne
from .indexing import getitem
from .reduce import _selected_grad, cumprod
from .rearrange import flip, narrow
from .shape import broadcast_to, concat, reshape, unsqueeze
from .sorting import _axis
from ._util import _as_tensor

_INT_TO_LONG = {"bool": "int64", "uint8": "int64", "int8": "int64", "int16": "int64", "int32": "int64"}


# ------------------------------------------------------------------ cummax, cummin
@tensor_method()
def cummax(input, dim, *, axis=None, **unsupported):
    """The running maximum of ``input`` along ``dim`` and where each came from, as
    ``torch.cummax``: the named tuple ``(values, indices)``. NaN, once met, is the maximum; each
    index is the last element equal to its value (as PyTorch's).

    Args:
        input: a tensor.
        dim: the dim to run along.

    Returns:
        ``(values, indices)``: ``input``'s shape; values of its dtype, indices int64.
    """
    return _running("cummax", input, dim, axis, unsupported)


@tensor_method()
def cummin(input, dim, *, axis=None, **unsupported):
    """The running minimum of ``input`` along ``dim`` and where each came from, as
    ``torch.cummin``: the named tuple ``(values, indices)`` (NaN and ties as :func:`cummax`'s).

    Args:
        input: a tensor.
        dim: the dim to run along.

    Returns:
        ``(values, indices)``: ``input``'s shape; values of its dtype, indices int64.
    """
    return _running("cummin", input, dim, axis, unsupported)


def _running(name, input, dim, axis, unsupported):
    A.no_extra(name, unsupported)
    x = _as_tensor(input)
    return getattr(return_types, name)(*apply(name, x, axis=_axis(x, A.one_dim(name, dim, axis))))


grad_rule("cummax", "cummin")(_selected_grad)  # (axis kept: the values scatter back to their indices)
for _op in ("cummax", "cummin"):
    reads_outputs(_op, 1)
    shape_only(_op, 0)
onnx_unsupported("cummax", "cummin", reason="ONNX has no running maximum or minimum (only CumSum)")


# ------------------------------------------------------------------ diff
@tensor_method()
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference of ``input`` along ``dim`` (``out[i] = x[i+1] - x[i]``,
    ``n`` times), as ``torch.diff``; ``prepend``/``append`` are joined to ``input`` along ``dim``
    first. For bool tensors the difference is ``!=`` (as PyTorch's).

    Args:
        input: a tensor of at least 1 dim.
        n: how many times to difference (0 returns ``input``).
        dim: the dim to run along.
        prepend, append: tensors joined before / after ``input`` along ``dim`` (their other dims
            as ``input``'s).

    Returns:
        A tensor ``n`` shorter along ``dim`` (plus the joined lengths).
    """
    x = _as_tensor(input)
    if x.ndim == 0:
        raise RuntimeError("d2s.diff(): expects input to be at least one-dimensional")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"d2s.diff(): order n must be non-negative but got {n}")
    d = _axis(x, dim)
    parts = [_as_tensor(p) for p in (prepend,) if p is not None] + [x] + \
        [_as_tensor(p) for p in (append,) if p is not None]
    if len(parts) > 1:
        for p in parts:
            if p.ndim != x.ndim:
                raise RuntimeError(f"d2s.diff(): prepend and append must have as many dims as input ({x.ndim}), "
                                   f"got {p.ndim}")
        x = concat(parts, axis=d)  # (also checks their shapes, as PyTorch does with n == 0 too)
    if n == 0:  # PyTorch returns a copy of input itself, without prepend and append
        return parts[0 if prepend is None else 1].clone()
    head = (slice(None),) * d
    for _ in range(n):
        later, earlier = getitem(x, head + (slice(1, None),)), getitem(x, head + (slice(None, -1),))
        x = ne(later, earlier) if str(x.dtype) == "bool" else later - earlier
    return x


# ------------------------------------------------------------------ vander
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-d ``x``, as ``torch.vander``: columns ``x**(N-1), ...,
    x**0`` (``x**0, ..., x**(N-1)`` with ``increasing``), each power a running product (PyTorch's
    values); integer and bool inputs give int64.

    Args:
        x: a 1-d tensor.
        N: how many columns (default ``len(x)``).
        increasing: whether the powers increase left to right.

    Returns:
        A (len(x), N) tensor.
    """
    x = _as_tensor(x)
    if x.ndim != 1:
        raise RuntimeError(f"d2s.vander(): x must be a one-dimensional tensor, got {x.ndim} dims")
    n = x.shape[0] if N is None else int(N)
    if N is not None and n < 0:
        raise RuntimeError(f"d2s.vander(): N must be non-negative, got {n}")
    x = cast(x, _INT_TO_LONG.get(str(x.dtype), str(x.dtype)))
    out = _powers(unsqueeze(x, -1), n)
    return out if increasing else flip(out, [1])


def _powers(col, n):
    """``[col**0, col**1, ..., col**(n-1)]`` along the last dim (``col``'s last dim has size 1):
    ones, then a running product of copies of ``col``, as PyTorch computes them."""
    ones = ones_like(col)
    if isinstance(n, int) and n <= 1:
        return getitem(ones, (Ellipsis, slice(0, n)))
    shape = tuple(col.shape[:-1]) + (n - 1,)
    return concat([ones, cumprod(broadcast_to(col, shape), -1)], axis=-1)



# ------------------------------------------------------------------ gradient (finite differences)
def _edge_slice(x, d, start, stop=None):
    n = int(x.shape[d])
    start = start % n if start < 0 else start
    stop = n if stop is None else (stop % n if stop < 0 else stop)
    return narrow(x, d, start, stop - start)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of ``input`` along each of ``dim`` (all dims by default) by finite
    differences, as ``torch.gradient``: central differences inside, one-sided ones of
    ``edge_order`` (1 or 2) at the ends; ``spacing`` a number (the step of every dim), a list of
    numbers (one step per dim) or a list of 1-d coordinate tensors (uneven steps, PyTorch's
    second-order formulas).

    Args:
        input: a float tensor, each differentiated dim of at least ``edge_order + 1`` elements.
        spacing: a number, a list of numbers, or a list of coordinate tensors.
        dim: an int, a list of ints, or None (all dims).
        edge_order: 1 or 2.

    Returns:
        A tuple of tensors of ``input``'s shape, one per dim.
    """
    x = _as_tensor(input)
    dims = list(range(x.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [d % x.ndim for d in dims]
    if edge_order not in (1, 2):
        raise ValueError(f"torch.gradient only supports edge_order=1 and edge_order=2, got {edge_order}")
    if any(int(x.shape[d]) < edge_order + 1 for d in dims):
        raise ValueError("torch.gradient expected each dimension size to be at least edge_order+1")
    if isinstance(spacing, (list, tuple)):
        steps = list(spacing)
        if len(steps) != len(dims):
            raise ValueError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                             f"arguments to have the same length, but got a spacing argument of length {len(steps)} "
                             f"and a dim argument of length {len(dims)}")
    else:
        steps = [spacing] * len(dims)
    out = []
    for d, h in zip(dims, steps):
        if isinstance(h, Tensor):
            out.append(_gradient_coordinates(x, d, h, edge_order))
            continue
        h = float(h)
        center = (_edge_slice(x, d, 2) - _edge_slice(x, d, 0, -2)) / h
        if edge_order == 1:
            first = (_edge_slice(x, d, 1, 2) - _edge_slice(x, d, 0, 1)) / h
            last = (_edge_slice(x, d, -1) - _edge_slice(x, d, -2, -1)) / h
        else:
            first = (-1.5 * _edge_slice(x, d, 0, 1) + 2 * _edge_slice(x, d, 1, 2) - 0.5 * _edge_slice(x, d, 2, 3)) / h
            last = (0.5 * _edge_slice(x, d, -3, -2) - 2 * _edge_slice(x, d, -2, -1) + 1.5 * _edge_slice(x, d, -1)) / h
        out.append(concat([first, center / 2, last], d))
    return tuple(out)


def _gradient_coordinates(x, d, coords, edge_order):
    """One dim's derivative for points at ``coords`` (PyTorch's formulas for uneven steps)."""
    dx = coords[1:] - coords[:-1]
    shape = [1] * x.ndim
    shape[d] = -1
    dx1, dx2 = dx[:-1], dx[1:]
    a = reshape(-dx2 / (dx1 * (dx1 + dx2)), shape)
    b = reshape((dx2 - dx1) / (dx1 * dx2), shape)
    c = reshape(dx1 / (dx2 * (dx1 + dx2)), shape)
    center = a * _edge_slice(x, d, 0, -2) + b * _edge_slice(x, d, 1, -1) + c * _edge_slice(x, d, 2)
    if edge_order == 1:
        first = (_edge_slice(x, d, 1, 2) - _edge_slice(x, d, 0, 1)) / dx[0]
        last = (_edge_slice(x, d, -1) - _edge_slice(x, d, -2, -1)) / dx[-1]
    else:
        h0, h1 = dx[0], dx[1]
        first = (-(2.0 * h0 + h1) / (h0 * (h0 + h1)) * _edge_slice(x, d, 0, 1)
                 + (h0 + h1) / (h0 * h1) * _edge_slice(x, d, 1, 2)
                 - h0 / (h1 * (h0 + h1)) * _edge_slice(x, d, 2, 3))
        g0, g1 = dx[-1], dx[-2]
        last = (g0 / (g1 * (g0 + g1)) * _edge_slice(x, d, -3, -2)
                - (g0 + g1) / (g0 * g1) * _edge_slice(x, d, -2, -1)
                + (2 * g0 + g1) / (g0 * (g0 + g1)) * _edge_slice(x, d, -1))
    return concat([first, center, last], d)
