"""gather, scatter, scatter_add, scatter_reduce and masked_scatter: PyTorch's element-wise
reads and writes along a dim or through a mask, with their native lowerings. The range checks
and the dim rule they share with index_select's family live in ``indexing.py``."""
import numpy as np

from .indexing import axis_of, check_range, ufunc_at
from .registry import ShapeError, TensorType, deflowering, defop
from .rules import broadcast_shapes, fmt_shape


def _check_gather(op, x, index, axis):
    if x.ndim != index.ndim and not (x.ndim <= 1 and index.ndim <= 1):
        raise ShapeError(f"{op}: index needs as many dims as the tensor: index {fmt_shape(index.shape)} vs "
                         f"tensor {fmt_shape(x.shape)}")
    if not index.dtype.startswith("int"):
        raise ShapeError(f"{op}: index must be an integer tensor, got {index.dtype}")
    a = axis_of(op, axis, x.ndim)
    for i, (di, dx) in enumerate(zip(index.shape, x.shape)):
        if i != a and di is not None and dx is not None and di > dx:
            raise ShapeError(f"{op}: index {fmt_shape(index.shape)} is larger than tensor {fmt_shape(x.shape)} "
                             f"in dim {i} (only dim {a}, the gather axis, may be larger)")
    return a


def _gather_infer(x, index, axis):
    _check_gather("gather", x, index, axis)
    return TensorType(index.shape, x.dtype)


def _crop(x, shape, axis):
    """x cut down to ``shape`` on every dim but ``axis`` (torch.gather reads only that corner)."""
    return x[tuple(slice(None) if i == axis else slice(0, n) for i, n in enumerate(shape))]


def _t(a):
    return TensorType(a.shape, a.dtype.name)


@defop("gather", _gather_infer)
def _gather(xp, x, index, axis):
    """``out[i][j] = x[index[i][j]][j]`` for axis 0 (torch.gather); an index outside the dim
    raises, as in PyTorch."""
    _check_gather("gather", _t(x), _t(index), axis)
    if x.ndim == 0:
        check_range("gather", index, 1, 0)
        return xp.broadcast_to(x, index.shape).copy()
    a = axis % x.ndim
    check_range("gather", index, x.shape[a], a)
    return xp.take_along_axis(_crop(x, index.shape, a), index, axis=a)


def _scatter_infer(base, index, src, axis, **_):
    _check_gather("scatter", base, index, axis)
    if src.ndim != index.ndim or any(s is not None and i is not None and s < i for s, i in zip(src.shape, index.shape)):
        raise ShapeError(f"scatter: src {fmt_shape(src.shape)} must cover index {fmt_shape(index.shape)}")
    return TensorType(base.shape, base.dtype)


def _scatter_key(xp, base, index, src, axis, op):
    """(a copy of base, the positions ``index`` names along ``axis``, src cut to index's shape)."""
    a = axis % base.ndim if base.ndim else 0
    check_range(op, index, base.shape[a] if base.ndim else 1, a)
    src = src[tuple(slice(0, n) for n in index.shape)].astype(base.dtype, copy=False)
    grids = list(xp.meshgrid(*[xp.arange(n) for n in index.shape], indexing="ij"))
    grids[a] = index
    out = base.copy()
    return out, tuple(grids) if base.ndim else (), src


@defop("scatter_add", _scatter_infer)
def _scatter_add(xp, base, index, src, axis):
    """A copy of base with ``src`` added at ``index`` along ``axis`` (repeats accumulate)."""
    out, key, src = _scatter_key(xp, base, index, src, axis, "scatter_add")
    ufunc_at(xp, "add", out, key, src)
    return out


@defop("scatter", _scatter_infer)
def _scatter(xp, base, index, src, axis):
    """A copy of base with ``src`` written at ``index`` along ``axis`` (torch.scatter; of
    repeated positions the last write stays)."""
    out, key, src = _scatter_key(xp, base, index, src, axis, "scatter")
    out[key] = src
    return out


SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_infer(base, index, src, axis, reduce, include_self=True):
    if reduce not in SCATTER_REDUCTIONS:
        raise ShapeError(f"scatter_reduce: reduce must be one of {', '.join(SCATTER_REDUCTIONS)}, got {reduce!r}")
    return _scatter_infer(base, index, src, axis)


@defop("scatter_reduce", _scatter_reduce_infer)
def _scatter_reduce(xp, base, index, src, axis, reduce, include_self=True):
    """``base`` with the ``src`` values at each position of ``index`` reduced into it (sum,
    prod, mean, amax or amin; without ``include_self`` the positions written start from the
    first value scattered there, not from base)."""
    out, key, src = _scatter_key(xp, base, index, src, axis, "scatter_reduce")
    if not include_self:
        fill = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if fill is None:  # amax/amin: the extreme value of the dtype
            info = np.finfo(out.dtype) if out.dtype.kind == "f" else np.iinfo(out.dtype)
            fill = -np.inf if reduce == "amax" and out.dtype.kind == "f" else info.min if reduce == "amax" else \
                np.inf if out.dtype.kind == "f" else info.max
        out[key] = fill
    if reduce in ("sum", "mean"):
        ufunc_at(xp, "add", out, key, src)
    elif reduce == "prod":
        xp.multiply.at(out, key, src)
    else:
        ufunc_at(xp, "maximum" if reduce == "amax" else "minimum", out, key, src)
    if reduce == "mean":
        count = xp.zeros(out.shape, dtype="int64") + (1 if include_self else 0)
        ufunc_at(xp, "add", count, key, xp.ones(src.shape, dtype="int64"))
        mean = out / xp.maximum(count, 1)
        out = (xp.floor(mean) if out.dtype.kind in "iu" else mean).astype(out.dtype)
    return out


def _along_axis(e, x, index, axis, what):
    """Checks shared by gather and scatter_add; returns (x, index, axis, loop dims, loop
    indices, the index element's local, the position along ``axis`` (checked, wrapped))."""
    if x.ndim == 0 or index.ndim != x.ndim or index.dtype not in ("int32", "int64"):
        e.unsupported(f"{what} of a 0-d tensor or with a bad index")
    a = e.int(axis, "axis")
    if not -x.ndim <= a < x.ndim:
        e.unsupported("axis out of range")
    a %= x.ndim
    x, index = e.array(x), e.array(index)
    ind = e.indent
    for j in range(x.ndim):
        if j != a:  # torch.gather reads the corner of x as large as the index (ShapeError otherwise)
            e.emit(ind, f"if {index.name}.shape[{j}] > {x.name}.shape[{j}]: "
                   f"raise ValueError('native program: {what}: index larger than the tensor')")
    dims = [f"{index.name}.shape[{j}]" for j in range(index.ndim)]
    idx, inner = e.loops(dims, ind)
    k = e.fresh()
    e.emit(inner, f"{k} = np.int64({index.name}[{', '.join(idx)}])")
    # PyTorch's rule (the kernel's): a position outside [0, size), negative ones too, raises
    e.emit(inner, f"if not 0 <= {k} < {x.name}.shape[{a}]: "
           f"raise IndexError('native program: {what}: index out of range')")
    at = ", ".join(k if j == a else i for j, i in enumerate(idx))
    return x, index, idx, inner, at


@deflowering("gather", "native")
def _gather_native(e, x, index, axis):
    odt = e.out.dtype
    if x.dtype != odt:
        e.unsupported("gather changes the dtype")
    x0 = e.array(x)
    out = e.fresh()
    ind = e.indent
    idx_v = e.array(index)
    e.emit(ind, f"{out} = np.empty({idx_v.name}.shape, {e.np_type(odt)})")
    x, index, idx, inner, at = _along_axis(e, x0, idx_v, axis, "gather")
    e.emit(inner, f"{out}[{', '.join(idx)}] = {x.name}[{at}]")
    return e.new_array(out, odt, tuple(e.out.shape))


@deflowering("scatter_add", "native")
def _scatter_add_native(e, base, index, src, axis):
    odt = e.out.dtype
    if base.dtype != odt or src.dtype != odt:
        e.unsupported("scatter_add with operands of different dtypes")
    src = e.array(src)
    if src.ndim != base.ndim:
        e.unsupported("scatter_add: src rank differs")
    out = e.copy(e.array(base))
    idx_v = e.array(index)
    for j in range(src.ndim):
        e.emit(e.indent, f"if {src.name}.shape[{j}] < {idx_v.name}.shape[{j}]: "
               f"raise ValueError('native program: scatter_add: src smaller than the index')")
    _, index, idx, inner, at = _along_axis(e, out, idx_v, axis, "scatter_add")
    # np.add.at's order: one add at a time, in the index's C order (repeats accumulate alike)
    e.emit(inner, f"{out.name}[{at}] = {out.name}[{at}] + {src.name}[{', '.join(idx)}]")
    return out


# ------------------------------------------------------------------ masked_scatter
def _masked_scatter_infer(x, mask, source):
    if mask.dtype != "bool":
        raise ShapeError(f"masked_scatter: mask must be a bool tensor, got {mask.dtype}")
    out = broadcast_shapes("masked_scatter", x.shape, mask.shape)
    if len(out) != x.ndim or any(o is not None and d is not None and o != d for o, d in zip(out, x.shape)):
        raise ShapeError(f"masked_scatter: mask {fmt_shape(mask.shape)} does not broadcast to the tensor's shape "
                         f"{fmt_shape(x.shape)}")
    return TensorType(x.shape, x.dtype)


def _mask_of(xp, mask, shape):
    return xp.broadcast_to(mask, shape)


@defop("masked_scatter", _masked_scatter_infer, writes_input=True)
def _masked_scatter(xp, x, mask, source):
    """A copy of x whose positions where ``mask`` holds take the first values of ``source``
    (read in C order), as ``torch.masked_scatter``."""
    m = _mask_of(xp, mask, x.shape)
    k = int(m.sum())
    if source.size < k:
        raise ValueError(f"masked_scatter: the mask selects {k} positions but source has only {source.size} elements")
    out = x.copy()
    out[m] = source.reshape(-1)[:k].astype(x.dtype, copy=False)
    return out


def _masked_scatter_grad_infer(g, mask, source):
    return TensorType(source.shape, g.dtype)


@defop("masked_scatter_grad", _masked_scatter_grad_infer, fresh=True)
def _masked_scatter_grad(xp, g, mask, source):
    """The gradient reaching masked_scatter's ``source`` (whose values are never read): g at
    the masked positions in the first elements, zeros after them."""
    vals = g[_mask_of(xp, mask, g.shape)]
    out = xp.zeros(source.size, dtype=g.dtype)
    out[:vals.size] = vals
    return out.reshape(source.shape)
