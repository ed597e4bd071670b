"""Shape compositions with PyTorch's names: broadcast_tensors, broadcast_shapes, block_diag,
cartesian_prod, combinations, diagflat, dist, rot90, ravel, split_with_sizes, sum_to_size,
nanmedian, fill, detach, msort, adjoint, unravel_index, renorm, frobenius_norm, norm_except_dim,
constant_pad_nd, select_scatter, slice_scatter (``index_copy`` at the slice's positions),
``Tensor.where``, ``Tensor.vdot`` and ``Tensor.stride``, and the ``unfold`` view
(runtime: ``d2s_runtime/ops/shape_ops.py``).

Each composition is exact (moves, pads, index selections and sums of existing ops), so its
values and gradients are PyTorch's and it converts, saves and exports as its parts do.
``unfold`` is a view op of its own, as PyTorch's: eagerly its windows share ``input``'s elements
(a write into ``input`` shows through them); windows overlap, so an in-place write through
them is refused with an error saying to clone first. Its ONNX form is a Gather of the window
indices (computed in the graph where the dim is dynamic).
"""
import itertools

import numpy as np

from d2s_runtime.dtypes import result_type
from d2s_runtime.ops import ShapeError

from .. import return_types
from ..autograd.registry import grad_rule
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter
from ..tensor import Tensor, tensor, tensor_method
from .creation import full_like, zeros_like
from .elementwise import cast
from .elementwise import logical_not, where
from .indexing import gather, index_add, index_copy, index_select
from .linalg import diag, dot as _vdot
from .pointwise import isnan
from .rearrange import flip, meshgrid
from .reduce import norm as _norm, sum as _sum
from .shape import broadcast_to, concat, movedim, pad as _pad, reshape, split, stack, transpose
from .sorting import sort
from ._util import _as_tensor, _static_shape as static_shape


# ------------------------------------------------------------------ broadcasting
def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to, as ``torch.broadcast_shapes`` (a tuple;
    an int stands for a 1-d shape). Raises a RuntimeError naming the shapes when they do not."""
    dims = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    n = max((len(s) for s in dims), default=0)
    out = [1] * n
    for s in dims:
        for i, d in enumerate(s, n - len(s)):
            d = int(d)
            if d < 0:
                raise RuntimeError(f"broadcast_shapes: trying to create a tensor with negative dimension {d}")
            if out[i] == 1:
                out[i] = d
            elif d != 1 and d != out[i]:
                raise RuntimeError(f"shape mismatch: objects cannot be broadcast to a single shape; shapes "
                                   f"{', '.join(str(list(x)) for x in dims)}")
    return tuple(out)


def broadcast_tensors(*tensors):
    """``tensors`` broadcast to their common shape, as ``torch.broadcast_tensors`` (a tuple of
    expanded views)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    ts = [_as_tensor(t) for t in tensors]
    shape = broadcast_shapes(*[tuple(t.shape) for t in ts])
    return tuple(t if tuple(t.shape) == shape else broadcast_to(t, shape) for t in ts)


@tensor_method()
def sum_to_size(input, *size):
    """``input`` summed to ``size`` (a shape it broadcasts from), as ``Tensor.sum_to_size``: the
    leading dims it lacks and its dims of size 1 are summed out."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    shape = tuple(input.shape)
    if len(size) > len(shape) or any(s != 1 and s != d for s, d in zip(size, shape[len(shape) - len(size):])):
        raise RuntimeError(f"sum_to_size: size {list(size)} is not expandable to size {list(shape)}")
    lead = len(shape) - len(size)
    out = input
    if lead:
        out = _sum(out, dim=list(range(lead)))
    ones = [i for i, (s, d) in enumerate(zip(size, shape[lead:])) if s == 1 and d != 1]
    if ones:
        out = _sum(out, dim=ones, keepdim=True)
    return out


# ------------------------------------------------------------------ flattening and pieces
@tensor_method()
def ravel(input):
    """``input`` as a 1-d tensor (a view where the layout allows), as ``torch.ravel``."""
    return reshape(input, [-1])


@tensor_method()
def split_with_sizes(input, split_sizes, dim=0):
    """Pieces of ``input`` of ``split_sizes`` along ``dim`` (their sum must be its size), as
    ``Tensor.split_with_sizes``: a tuple of views."""
    sizes = [int(s) for s in split_sizes]
    if sum(sizes) != int(input.shape[dim]):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {int(input.shape[dim])} "
                           f"(input tensor's size at dimension {dim}), but got split_sizes={sizes}")
    return split(input, sizes, dim)


def _tensor_where(self, condition, other):
    """``Tensor.where(condition, y)``: ``self`` where ``condition`` holds, else ``y`` (as
    ``torch.where(condition, self, y)``)."""
    return where(condition, self, other)


tensor_method("where")(_tensor_where)


def _stride(self, dim=None):
    """``Tensor.stride()``: the step in elements between neighbours along each dim (a tuple, or
    the int of ``dim``), as PyTorch's for the same layout (d2s tensors keep numpy's layouts,
    which are PyTorch's for the same ops: a transpose swaps them, an expand has 0). Eager
    tensors only: a program has no memory layout to report."""
    if self.is_symbolic:
        raise RuntimeError("Tensor.stride(): a tensor in a program being built (to_static) has no memory layout to "
                           "report; call it outside the converted function")
    arr = self.array
    item = arr.dtype.itemsize
    strides = []
    expected = 1
    for d, s in zip(reversed(arr.shape), reversed(arr.strides)):
        # a dim of size 0 or 1 has no step of its own: PyTorch gives it the contiguous one
        strides.append(expected if d <= 1 else s // item)
        expected = max(d, 1) * (expected if d <= 1 else s // item)
    strides = tuple(reversed(strides))
    return strides if dim is None else strides[dim]


tensor_method("stride")(_stride)


def _storage_offset(self):
    """``Tensor.storage_offset()``: where a view's first element lies in the memory it shares with
    its base, in elements (0 for a tensor owning its memory), as PyTorch's for the same view.
    Eager tensors only, as ``stride()``."""
    if self.is_symbolic:
        raise RuntimeError("Tensor.storage_offset(): a tensor in a program being built (to_static) has no memory "
                           "layout to report; call it outside the converted function")
    arr = root = self.array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is arr:
        return 0
    # the first element's address (numpy keeps it for an empty slice too, as PyTorch its offset)
    start = arr.__array_interface__["data"][0]
    return (start - root.__array_interface__["data"][0]) // arr.dtype.itemsize


tensor_method("storage_offset")(_storage_offset)


# ------------------------------------------------------------------ rotations and windows
@tensor_method()
def rot90(input, k=1, dims=(0, 1)):
    """``input`` rotated by 90 degrees ``k`` times in the plane ``dims`` (from the first towards
    the second), as ``torch.rot90``."""
    dims = list(dims)
    nd = input.ndim
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = dims[0] % nd, dims[1] % nd
    if d0 == d1:
        raise RuntimeError(f"rot90: expected rotation dims to be different, but got dim0 = {dims[0]} and "
                           f"dim1 = {dims[1]}")
    k = int(k) % 4
    if k == 1:
        return transpose(flip(input, [d1]), d0, d1)
    if k == 2:
        return flip(input, [d0, d1])
    if k == 3:
        return flip(transpose(input, d0, d1), [d1])
    return input.clone()


@tensor_method()
def unfold(input, dimension, size, step):
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, as
    ``Tensor.unfold``: that dim becomes the window count and a last dim of ``size`` is added. A
    view, as PyTorch's; its windows overlap when ``step < size``, so writing into it in place is
    refused (clone it first)."""
    return apply("unfold", input, axis=int(dimension), size=int(size), step=int(step))


@grad_rule("unfold")
def _unfold_grad(ctx, g):
    x = ctx.inputs[0]
    a, size, step = ctx.attrs["axis"], ctx.attrs["size"], ctx.attrs["step"]
    nd = max(x.ndim, 1)
    a = a % nd
    n = int(g.shape[a]) if x.ndim else 1
    idx = (np.arange(n)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    if x.ndim == 0:
        return (reshape(_sum(g), []),)
    # (..., n, ..., size) -> (..., n * size, ...) along a, then added into zeros at the windows
    moved = reshape(movedim(g, -1, a + 1), list(g.shape[:a]) + [n * size] + list(g.shape[a + 1:-1]))
    return (index_add(zeros_like(x), a, tensor(idx), moved),)


@onnx_converter("unfold")
def _unfold_onnx(g, op):
    # a Gather of the window indices (n, size): start i * step + offset j, then the size dim
    # moved last; n = (d - size) // step + 1 from the input's shape when d is not known
    x = op.inputs[0]
    size, step = op.attrs["size"], op.attrs["step"]
    shape = g.shape(x)
    if len(shape) == 0:  # a 0-d input: its one element as (1,), or (0,)
        flat = g.tmp()
        g.node("Reshape", [x, g.const(i64([1]))], [flat])
        g.node("Slice", [flat, g.const(i64([0])), g.const(i64([size]))], op.outputs)
        return
    nd = len(shape)
    a = op.attrs["axis"] % nd
    d = shape[a]
    if isinstance(d, (int, np.integer)):
        n = (int(d) - size) // step + 1
        idx = g.const((np.arange(n)[:, None] * step + np.arange(size)[None, :]).astype(np.int64))
    else:
        dims, dim, count, n = g.tmp(), g.tmp(), g.tmp(), g.tmp()
        g.node("Shape", [x], [dims])
        g.node("Gather", [dims, g.const(i64(a))], [dim])
        g.node("Sub", [dim, g.const(i64(size))], [count])
        steps = g.tmp()
        g.node("Div", [count, g.const(i64(step))], [steps])  # (count >= 0: integer Div floors)
        g.node("Add", [steps, g.const(i64(1))], [n])
        starts, scaled, column = g.tmp(), g.tmp(), g.tmp()
        g.node("Range", [g.const(i64(0)), n, g.const(i64(1))], [starts])
        g.node("Mul", [starts, g.const(i64(step))], [scaled])
        g.node("Unsqueeze", [scaled, g.const(i64([1]))], [column])
        idx = g.tmp()
        g.node("Add", [column, g.const(np.arange(size, dtype=np.int64)[None, :])], [idx])
    gathered = g.tmp()
    g.node("Gather", [x, idx], [gathered], axis=a)
    g.node("Transpose", [gathered], op.outputs, perm=list(range(a + 1)) + list(range(a + 2, nd + 1)) + [a + 1])


# ------------------------------------------------------------------ select_scatter, slice_scatter
def _scatter_dim(name, x, dim):
    nd = max(x.ndim, 1)
    if not -nd <= int(dim) < nd:
        raise IndexError(f"{name}: dim {dim} is out of range for a tensor with {x.ndim} dims")
    d = int(dim) % nd
    n = static_shape(x)[d]
    if n is None:
        raise ValueError(f"{name}: the size of dim {d} must be known when the program is built; give it in the "
                         f"InputSpec")
    return d, n


@tensor_method()
def select_scatter(input, src, dim, index):
    """A copy of ``input`` whose slice at ``index`` of ``dim`` (``input.select(dim, index)``)
    holds ``src``, as ``torch.select_scatter``; differentiable in both.

    Args:
        input: a tensor with at least one dim.
        src: a tensor of ``input``'s dtype and the selected slice's shape.
        dim: the dim to select along.
        index: the position (negative counts from the end).

    Returns:
        A tensor of ``input``'s shape and dtype.
    """
    x, src = _as_tensor(input), _as_tensor(src)
    d, n = _scatter_dim("select_scatter", x, dim)
    if not -n <= int(index) < n:
        raise IndexError(f"select_scatter: index {index} is out of range for dim {d} of size {n}")
    return index_copy(x, d, tensor([int(index) % n]), src.unsqueeze(d))


@tensor_method()
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` whose slice ``start:end:step`` of ``dim`` holds ``src``, as
    ``torch.slice_scatter``; differentiable in both.

    Args:
        input: a tensor.
        src: a tensor of ``input``'s dtype and the slice's shape.
        dim: the dim to slice (default 0).
        start, end, step: the slice, as Python's (None: from the start, to the end).

    Returns:
        A tensor of ``input``'s shape and dtype.
    """
    x, src = _as_tensor(input), _as_tensor(src)
    d, n = _scatter_dim("slice_scatter", x, dim)
    if int(step) <= 0:
        raise ValueError(f"slice_scatter: step must be positive, got {step}")
    positions = list(range(*slice(start, end, int(step)).indices(n)))
    want = static_shape(x)[:d] + (len(positions),) + static_shape(x)[d + 1:]
    got = static_shape(src)
    if len(got) != len(want) or any(a is not None and b is not None and a != b for a, b in zip(got, want)):
        raise ShapeError(f"slice_scatter: src must have the slice's shape {want}, got {got}")
    if not positions:
        return x.clone()
    return index_copy(x, d, tensor(positions), src)


# ------------------------------------------------------------------ matrices from pieces
def block_diag(*tensors):
    """A block-diagonal matrix of ``tensors`` (0-d, 1-d or 2-d; a 1-d one is a row), as
    ``torch.block_diag``; dtypes promoted."""
    mats = []
    for t in tensors:
        t = _as_tensor(t)
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input has "
                               f"{t.ndim} dimensions")
        mats.append(reshape(t, [1, 1]) if t.ndim == 0 else reshape(t, [1, -1]) if t.ndim == 1 else t)
    if not mats:
        return tensor(np.zeros((0, 0), np.float32))
    dt = str(mats[0].dtype)
    for m in mats[1:]:
        dt = result_type(dt, str(m.dtype))
    width = sum(int(m.shape[1]) for m in mats)
    rows, left = [], 0
    for m in mats:
        c = int(m.shape[1])
        m = m if str(m.dtype) == dt else cast(m, dt)
        rows.append(_pad(m, [left, width - left - c]))
        left += c
    return concat(rows, 0)


def cartesian_prod(*tensors):
    """The cartesian product of 1-d tensors, as ``torch.cartesian_prod``: one row per
    combination (the last tensor varying fastest); one tensor is returned as it is."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, [-1]) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of a 1-d tensor's elements, as ``torch.combinations`` (as
    ``itertools.combinations``, or ``combinations_with_replacement``): one row each."""
    if input.ndim != 1:
        raise RuntimeError(f"combinations: expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"combinations: expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(int(input.shape[0])), r)), dtype=np.int64).reshape(-1, r)
    if rows.shape[0] == 0:
        return reshape(input[:0], [0, r])
    return stack([index_select(input, 0, tensor(rows[:, j].copy())) for j in range(r)], 1)


@tensor_method()
def diagflat(input, offset=0):
    """A matrix with the flattened ``input`` on diagonal ``offset``, as ``torch.diagflat``."""
    return diag(reshape(input, [-1]), offset)


@tensor_method()
def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast), as ``torch.dist``: a 0-d tensor."""
    return _norm(input - other, p)


# ------------------------------------------------------------------ nanmedian
@tensor_method()
def nanmedian(input, dim=None, keepdim=False):
    """The lower median of the non-NaN elements, as ``torch.nanmedian`` (NaN where all are NaN):
    a 0-d tensor without ``dim``, else the named tuple ``(values, indices)``."""
    if dim is None:
        if _empty_float(input):  # no elements: NaN, as PyTorch's
            return reshape(_sum(input) * np.nan, [])
        values, _ = _nanmedian_along(reshape(input, [-1]), 0)
        return reshape(values, [])
    values, indices = _nanmedian_along(input, dim)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return return_types.nanmedian(values, indices)


def _empty_float(x):
    """Whether ``x`` is a float tensor known to hold no elements (its median is NaN)."""
    shape = static_shape(x)
    return str(x.dtype) in ("float16", "bfloat16", "float32", "float64") and any(d == 0 for d in shape)


def _nanmedian_along(x, dim):
    """(values, indices), keeping ``dim`` (size 1)."""
    if x.ndim == 0:
        return x, tensor(np.zeros((), np.int64))
    s, order = sort(x, dim, stable=True)  # NaN sorts last
    counts = _sum(logical_not(isnan(x)), dim=dim, keepdim=True)
    k = (counts - 1).clamp(min=0) // 2
    return gather(s, dim, k), gather(order, dim, k)


# ------------------------------------------------------------------ fill, detach
def fill(input, value):
    """A tensor of ``input``'s shape and dtype filled with ``value`` (a number or a 0-d tensor),
    as ``torch.fill`` (the out-of-place ``fill_``); the gradient reaches ``value``, not ``input``."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions")
        value = value if str(value.dtype) == str(input.dtype) else cast(value, str(input.dtype))
    out = where(full_like(input, True, dtype="bool"), value, input)
    return out if str(out.dtype) == str(input.dtype) else cast(out, str(input.dtype))


def detach(input):
    """``input.detach()``, as ``torch.detach``."""
    return input.detach()



# ------------------------------------------------------------------ small compositions
@tensor_method()
def msort(input):
    """``input`` sorted along its first dim (the values of ``sort(input, 0)``), as ``torch.msort``."""
    return sort(input, 0).values


@tensor_method()
def adjoint(input):
    """The conjugate transpose of the last two dims (a transpose, for real tensors), as
    ``torch.adjoint``: a view."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return transpose(input, -2, -1)


tensor_method("vdot")(_vdot)


def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` into a tensor of ``shape``, as
    ``torch.unravel_index``: a tuple of int64 tensors of ``indices``' shape, one per dim."""
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    indices = _as_tensor(indices)
    if str(indices.dtype) in ("float16", "bfloat16", "float32", "float64", "bool"):
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    size = int(np.prod(shape, dtype=np.int64))
    if not indices.is_symbolic and indices.numel() and bool(((indices < -size) | (indices >= size)).any()):
        raise ValueError("'indices' must be in range [-%d, %d)" % (size, size) if size else "'indices' must be empty")
    flat = cast(indices, "int64")
    flat = where(flat < 0, flat + size, flat)
    out = []
    for s in reversed(shape):
        out.append(flat % s if s else flat * 0)
        flat = flat // s if s else flat
    return tuple(reversed(out))


@tensor_method()
def renorm(input, p, dim, maxnorm):
    """Each slice along ``dim`` scaled so its ``p``-norm is at most ``maxnorm``, as
    ``torch.renorm`` (slices within it are unchanged; PyTorch's factor ``maxnorm / (norm + 1e-7)``)."""
    dims = [d for d in range(input.ndim) if d != dim % input.ndim]
    norms = _norm(input, p, dim=dims, keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


def frobenius_norm(input, dim, keepdim=False):
    """The 2-norm over ``dim``, as ``torch.frobenius_norm``."""
    return _norm(input, 2, dim=list(dim) if isinstance(dim, (list, tuple)) else [dim], keepdim=keepdim)


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm over every dim but ``dim`` (kept, the others of size 1), as
    ``torch.norm_except_dim`` (weight normalization's); ``dim=-1``: over all, 0-d."""
    if dim == -1:
        return _norm(v, pow)
    return _norm(v, pow, dim=[d for d in range(v.ndim) if d != dim], keepdim=True)


def constant_pad_nd(input, pad, value=0):
    """``input`` padded with ``value`` (``pad`` from the last dim, PyTorch's order), as
    ``torch.constant_pad_nd``."""
    return _pad(input, list(pad), "constant", value)
