"""Selecting by masks and searching: ``masked_fill``, ``masked_select``, ``masked_scatter``,
``take``, ``take_along_dim``, ``nonzero``/``argwhere``/``where(cond)``, ``searchsorted``,
``bucketize`` (runtime: ``nonzero``, ``searchsorted``, ``masked_scatter`` in
``d2s_runtime/ops/indexing.py``). Ops whose output size depends on the data (``nonzero``,
``masked_select``) give a dim known only when a program runs; ONNX has their forms too.
"""
import numpy as np
from d2s_runtime.dtypes import checked_fill

from ..autograd.registry import grad_rule, non_differentiable, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter, onnx_unsupported
from ..tensor import Tensor, tensor_method
from .creation import arange, full_like, zeros_like
from .elementwise import cast, eq, where as _where3
from .indexing import _checked, _dim_of, _index_tensor, _no_out, gather, getitem
from .shape import reshape
from ._util import _as_tensor, _is_diff


# ------------------------------------------------------------------ masks
non_differentiable("nonzero", "searchsorted", reason="indices are integers")


@tensor_method()
def masked_fill(input, mask, value):
    """A copy of ``input`` with ``value`` (a number or 0-d tensor) where the bool ``mask``
    (broadcast to ``input``'s shape) holds; ``input``'s dtype."""
    x = _as_tensor(input)
    mask = _as_tensor(mask)
    if mask.dtype != "bool":
        raise TypeError(f"masked_fill: mask must be a bool tensor, got {mask.dtype}")
    _check_mask_shape("masked_fill", x, mask)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"masked_fill: value must be a number or a 0-d tensor, got shape {tuple(value.shape)}")
        v = cast(value, x.dtype)
    else:
        value = checked_fill(value, str(x.dtype))  # (uint8's -1 is 255, as PyTorch's)
        v = full_like(x, value) if x.is_symbolic else _as_tensor(np.asarray(value, dtype=str(x.dtype)))
    return where(mask, v, x)


def _check_mask_shape(op, x, mask):
    xs, ms = _static_shape_of(x), _static_shape_of(mask)
    if len(ms) > len(xs) or any(m is not None and d is not None and m not in (1, d)
                                for m, d in zip(reversed(ms), reversed(xs))):
        raise ValueError(f"{op}: mask of shape {ms} does not broadcast to the tensor's shape {xs}")


def _static_shape_of(t):
    return tuple(t._var.type.shape) if t.is_symbolic else tuple(t.array.shape)


@tensor_method()
def masked_select(input, mask):
    """The entries of ``input`` where the bool ``mask`` holds (the two broadcast together), as a
    1-d tensor in C order; its length depends on the data."""
    x, mask = _as_tensor(input), _as_tensor(mask)
    if mask.dtype != "bool":
        raise TypeError(f"masked_select: mask must be a bool tensor, got {mask.dtype}")
    if _static_shape_of(x) != _static_shape_of(mask) or x.is_symbolic or mask.is_symbolic:
        zero = zeros_like(x, dtype="bool") | zeros_like(mask)  # the broadcast shape, when the program runs
        x, mask = where(zero, x, x), mask | zero
    return getitem(x, mask)


@tensor_method()
def take(input, index):
    """The entries of ``input`` read as a 1-d tensor at positions ``index`` (any shape; the
    result has its shape; negative positions count from the end), as ``torch.take``."""
    x = _as_tensor(input)
    flat = apply("reshape", x, shape=[-1])
    index = _index_tensor(index)
    return getitem(flat, _checked("take", index, flat, 0, negative=True))


@tensor_method()
def take_along_dim(input, indices, dim=None):
    """``gather`` with ``indices`` broadcast against ``input`` (but along ``dim``); with no
    dim, over both flattened (``torch.take_along_dim``)."""
    x, indices = _as_tensor(input), _index_tensor(indices)
    if dim is None:
        return gather(apply("reshape", x, shape=[-1]), 0, apply("reshape", indices, shape=[-1]))
    d = _dim_of("take_along_dim", x, dim)
    if indices.ndim != x.ndim:
        raise ValueError(f"take_along_dim: indices need as many dims as the tensor ({x.ndim}), got {indices.ndim}")
    xs, ids = _static_shape_of(x), _static_shape_of(indices)
    if any(a is None or b is None or a != b for i, (a, b) in enumerate(zip(xs, ids)) if i != d):
        # broadcast each against the other (but along dim), also for sizes known only when the
        # program runs: adding zeros shaped like the other's first slice along dim
        first = (slice(None),) * d + (slice(0, 1),)
        x_like, idx_like = getitem(x, first), getitem(indices, first)
        x = x + zeros_like(idx_like, dtype=x.dtype)
        indices = indices + zeros_like(x_like, dtype=indices.dtype)
    return gather(x, d, indices)


@tensor_method()
def nonzero(input, *, as_tuple=False, out=None):
    """The indices of the nonzero entries of ``input``: an (n, ndim) int64 tensor, or with
    ``as_tuple`` a tuple of ndim 1-d tensors (as ``torch.nonzero``); n depends on the data."""
    _no_out("nonzero", out)
    x = _as_tensor(input)
    if as_tuple and x.ndim == 0:
        x = apply("reshape", x, shape=[1])
    out = apply("nonzero", x)
    if not as_tuple:
        return out
    return tuple(getitem(out, (slice(None), k)) for k in range(x.ndim))


@tensor_method()
def argwhere(input):
    """The indices of the nonzero entries of ``input``, one row each ((n, ndim) int64)."""
    return apply("nonzero", _as_tensor(input))


def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (broadcast together); with the
    condition alone, ``nonzero(condition, as_tuple=True)``, as ``torch.where``."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where: give both input and other, or the condition alone")
    return _where3(condition, input, other)


@onnx_converter("nonzero")
def _nonzero_onnx(g, op):
    nz = g.tmp()
    g.node("NonZero", [op.inputs[0]], [nz])
    g.node("Transpose", [nz], op.outputs, perm=[1, 0])


# ------------------------------------------------------------------ searchsorted, bucketize
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """For each value of ``input``, the index at which it would be inserted into the last
    dim of ``sorted_sequence`` (after equal entries with ``right`` or ``side='right'``), as
    ``torch.searchsorted``; int64 (int32 with ``out_int32``). With ``sorter`` (the int64 indices
    that sort ``sorted_sequence`` along its last dim, e.g. its ``argsort``) the sequence may be
    unsorted; the results index its sorted order, as PyTorch's."""
    _no_out("searchsorted", out)
    if side is not None:
        if side not in ("left", "right") or (right and side == "left"):
            raise ValueError(f"searchsorted: side must be 'left' or 'right' (and agree with right=), got {side!r}")
        right = side == "right"
    seq = _as_tensor(sorted_sequence)
    if sorter is not None:  # the indices that sort seq along its last dim: search the sorted one
        seq = take_along_dim(seq, _as_tensor(sorter), dim=-1)
    if isinstance(input, (int, float)):
        values = _as_tensor(np.asarray(input, dtype=str(seq.dtype)))
    else:
        values = _as_tensor(input)
    return apply("searchsorted", seq, values, right=bool(right), out_int32=bool(out_int32))


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value of ``input`` among the sorted 1-d ``boundaries``: i with
    ``boundaries[i-1] < x <= boundaries[i]`` (``<=`` and ``<`` swapped with ``right``), as
    ``torch.bucketize``."""
    _no_out("bucketize", out)
    b = _as_tensor(boundaries)
    if b.ndim != 1:
        raise ValueError(f"bucketize: boundaries must be 1-d, got shape {tuple(b.shape)}")
    return searchsorted(b, input, out_int32=out_int32, right=right)


@onnx_converter("searchsorted")
def _searchsorted_onnx(g, op):
    # the number of entries before which each value goes: entries < value (<= with right)
    seq, values = op.inputs
    v, cmp, as_int = g.tmp(), g.tmp(), g.tmp()
    g.node("Unsqueeze", [g.cast(values, g.dtype(seq)), g.const(i64([-1]))], [v])
    s = seq
    if len(g.shape(seq)) > 1:
        s = g.tmp()
        g.node("Unsqueeze", [seq, g.const(i64([-2]))], [s])
    g.node("LessOrEqual" if op.attrs.get("right") else "Less", [s, v], [cmp])
    g.node("Cast", [cmp], [as_int], to=g.onnx_dtype("int64"))
    red = g.tmp() if op.attrs.get("out_int32") else op.outputs[0]
    g.node("ReduceSum", [as_int, g.const(i64([-1]))], [red], keepdims=0)
    if op.attrs.get("out_int32"):
        g.node("Cast", [red], op.outputs, to=g.onnx_dtype("int32"))


# ------------------------------------------------------------------ fill_diagonal_ (d2s/inplace.py)
def _fill_diagonal_values(s, fill_value, wrap=False):
    """What ``s.fill_diagonal_(fill_value, wrap)`` writes: ``s`` with ``fill_value`` on its
    main diagonal (every dim of an n-d tensor equal; for a tall matrix, ``wrap`` starts the
    diagonal again below it, as PyTorch and numpy)."""
    if s.ndim < 2:
        raise ValueError(f"fill_diagonal_: needs a tensor of at least 2 dims, got {s.ndim}")
    shape = list(s.shape)
    if s.ndim > 2 and any(isinstance(d, Tensor) or d != shape[0] for d in shape):
        raise ValueError(f"fill_diagonal_: every dim must be the same length for a tensor of more than 2 dims, "
                         f"got {tuple(shape)}")
    def axis_index(k):
        view = [1] * s.ndim
        view[k] = -1
        return reshape(arange(shape[k]), view)
    rows, cols = axis_index(0), axis_index(1)
    mask = eq(rows % (shape[1] + 1), cols) if wrap else eq(rows, cols)
    for k in range(2, s.ndim):
        mask = mask & eq(axis_index(k), rows)
    value = cast(fill_value, s.dtype) if isinstance(fill_value, Tensor) else \
        _as_tensor(np.asarray(fill_value, dtype=str(s.dtype)))
    return where(mask, value, s)


# ------------------------------------------------------------------ masked_scatter
@tensor_method()
def masked_scatter(input, mask, source):
    """A copy of ``input`` whose positions where the bool ``mask`` (broadcast to ``input``)
    holds take the first values of ``source``, in C order (``torch.masked_scatter``)."""
    x, mask, source = _as_tensor(input), _as_tensor(mask), _as_tensor(source)
    if mask.dtype != "bool":
        raise TypeError(f"masked_scatter: mask must be a bool tensor, got {mask.dtype}")
    return apply("masked_scatter", x, mask, source)


@grad_rule("masked_scatter")
def _masked_scatter_grad(ctx, g):
    x, mask, source = ctx.inputs
    gx = where(mask, 0.0, g) if _is_diff(x) else None
    gs = apply("masked_scatter_grad", g, mask, source) if _is_diff(source) else None
    return (gx, None, gs)


@grad_rule("masked_scatter_grad")
def _masked_scatter_grad_grad(ctx, gg):
    g, mask, _ = ctx.inputs
    # linear in g, and the transpose of reading the masked positions into the first elements
    return (apply("masked_scatter", zeros_like(g), mask, gg) if _is_diff(g) else None, None, None)


shape_only("masked_scatter_grad", 2)
onnx_unsupported("masked_scatter_grad", reason="gradient ops belong to backward programs; export the forward program")


@onnx_converter("masked_scatter")
def _masked_scatter_onnx(g, op):
    # the masked positions (NonZero of the mask expanded to x), filled by ScatterND with the
    # first k values of the flattened source
    x, mask, source = op.inputs
    shp, m, nz, idx, idx_shape, k, flat, upd = (g.tmp() for _ in range(8))
    g.node("Shape", [x], [shp])
    g.node("Expand", [mask, shp], [m])
    g.node("NonZero", [m], [nz])
    g.node("Transpose", [nz], [idx], perm=[1, 0])
    g.node("Shape", [idx], [idx_shape])
    g.node("Slice", [idx_shape, g.const(i64([0])), g.const(i64([1]))], [k])
    g.node("Reshape", [g.cast(source, g.dtype(x)), g.const(i64([-1]))], [flat])
    g.node("Slice", [flat, g.const(i64([0])), k], [upd])
    g.node("ScatterND", [x, idx, upd], op.outputs)


# ------------------------------------------------------------------ index_put
@tensor_method()
def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` written at ``input[indices]``, as ``torch.index_put``
    (``Tensor.index_put``; ``index_put_`` writes in place): ``indices`` a tuple of index tensors
    (integer, or a bool mask; None takes a whole dim), one per leading dim, broadcast together.
    With ``accumulate``, values are added to what is there, repeated positions adding up.

    Args:
        input: a tensor.
        indices: a tuple (or list) of tensors.
        values: a tensor of ``input``'s dtype (or a number), broadcast to ``input[indices]``.
        accumulate: add instead of write.

    Returns:
        A tensor of ``input``'s shape and dtype.
    """
    x = _as_tensor(input)
    idx = tuple(indices)
    if isinstance(values, Tensor) and values.dtype != x.dtype:
        raise RuntimeError(f"index_put: the values must have the destination's dtype ({x.dtype}), got {values.dtype}; "
                           f"cast them first")
    if any(i is None or _as_tensor(i).dtype == "bool" for i in idx):
        if accumulate:
            raise NotImplementedError("index_put(accumulate=True) takes integer index tensors for the leading dims "
                                      "only (no None, no bool mask here); use index_add along one dim, or convert "
                                      "the mask with nonzero()")
        out = x.clone()
        out[tuple(slice(None) if i is None else i for i in idx)] = values
        return out
    # integer indices: one linear index over the indexed dims, then index_add / index_copy along it
    tensors = [_index_tensor(i) for i in idx]
    shape = [int(s) for s in x.shape]
    k = len(tensors)
    if k > len(shape):
        raise IndexError(f"index_put: too many indices ({k}) for a tensor of {len(shape)} dims")
    lin = None
    for t, n in zip(tensors, shape[:k]):
        t = _where3(t < 0, t + n, t)
        lin = t if lin is None else lin * n + t
    rest = shape[k:]
    flat = reshape(x, [int(np.prod(shape[:k]))] + rest)
    vals = _as_tensor(values) if isinstance(values, Tensor) else full_like(x[(0,) * k] if k else x, values)
    vals = vals.broadcast_to(tuple(lin.shape) + tuple(rest))
    lin, vals = reshape(lin, [-1]), reshape(vals, [-1] + rest)
    out = flat.index_add(0, lin, vals) if accumulate else flat.index_copy(0, lin, vals)
    return reshape(out, shape)


@tensor_method()
def put(input, index, source, accumulate=False):
    """A copy of ``input`` with ``source``'s elements written at the positions ``index`` of its
    flattened form (negative positions count from the end), as ``torch.put`` /
    ``Tensor.put`` (``put_`` writes in place); ``accumulate`` adds them, repeated positions
    adding up.

    Args:
        input: a tensor.
        index: an integer tensor (any shape).
        source: a tensor of ``input``'s dtype with as many elements as ``index``.
        accumulate: add instead of write.

    Returns:
        A tensor of ``input``'s shape and dtype.
    """
    x, src = _as_tensor(input), _as_tensor(source)
    idx = reshape(_index_tensor(index), [-1])
    flat = reshape(x, [-1])
    idx = _where3(idx < 0, idx + flat.shape[0], idx)  # (the element count, symbolic in a program)
    src = reshape(src, [-1])
    out = flat.index_add(0, idx, src) if accumulate else flat.index_copy(0, idx, src)
    return out.reshape_as(x)


@tensor_method()
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """``input`` with the slices of ``source`` along ``dim`` reduced into the positions ``index``
    names, as ``torch.index_reduce`` / ``Tensor.index_reduce`` (``index_reduce_`` in place):
    ``reduce`` is 'prod', 'mean', 'amax' or 'amin'; without ``include_self`` the positions
    written ignore ``input``'s values. (``scatter_reduce`` with the index spread over the slices.)

    Args:
        input: a tensor.
        dim: the dim ``index`` runs along.
        index: a 1-d integer tensor, one position per slice of ``source``.
        source: a tensor of ``input``'s dtype, ``input``'s shape but ``len(index)`` along ``dim``.
        reduce: 'prod', 'mean', 'amax' or 'amin'.
        include_self: whether ``input``'s values take part.

    Returns:
        A tensor of ``input``'s shape and dtype.
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ValueError(f"index_reduce: reduce must be one of 'prod', 'mean', 'amax', 'amin', got {reduce!r}")
    x, src = _as_tensor(input), _as_tensor(source)
    d = _dim_of("index_reduce", x, dim)
    idx = _index_tensor(index)
    if idx.ndim != 1:
        raise IndexError(f"index_reduce: index must be 1-d, got {idx.ndim} dims")
    shape = [1] * max(src.ndim, 1)
    shape[d] = -1
    spread = reshape(idx, shape).expand_as(src) if src.ndim else idx
    return x.scatter_reduce(d, spread, src, reduce, include_self=bool(include_self))


@tensor_method()
def nonzero_static(input, *, size, fill_value=-1):
    """The indices of ``input``'s non-zero elements as :func:`nonzero` gives them, but always
    ``size`` rows: truncated, or padded with rows of ``fill_value``, as ``torch.nonzero_static``
    (so its shape is static: it runs inside programs too).

    Args:
        input: a tensor (its shape known when a program is built).
        size: the number of rows.
        fill_value: the padding rows' value.

    Returns:
        An int64 tensor (size, input.ndim).
    """
    x = _as_tensor(input)
    size = int(size)
    if size < 0:
        raise ValueError(f"nonzero_static: size must be non-negative, got {size}")
    shape = [int(s) for s in x.shape]
    n = int(np.prod(shape))
    coords = np.stack(np.unravel_index(np.arange(n), shape), -1).astype(np.int64) if shape else \
        np.zeros((1, 0), np.int64)
    mask = reshape(x != 0, [-1])
    rank = mask.cast("int64").cumsum(0) - 1  # each non-zero element's row
    row = _where3(mask & (rank < size), rank, size)  # (the others go to a spare row, dropped)
    buffer = full_like(reshape(x, [-1])[:1], fill_value, dtype="int64").expand(size + 1, max(len(shape), 1))
    coords_t = _as_tensor(coords if shape else np.zeros((1, 1), np.int64))
    spread = reshape(row, [-1, 1]).expand(n, max(len(shape), 1))
    out = buffer.scatter(0, spread, coords_t)[:size]
    return out if shape else out[:, :0]
