"""Indexing primitives. An index is plain data (JSON-able) so programs can hold it:
a list of entries ``["i", k]`` (int), ``["s", start, stop, step]`` (slice), ``["n"]``
(None, a new axis), ``["e"]`` (Ellipsis) and ``["t", j]`` (the j-th extra array input:
a bool mask or an integer index array)."""
import numpy as np

from .registry import ShapeError, TensorType, deflowering, defop
from .rules import broadcast_shapes, fmt_shape


def decode_index(spec, arrays):
    out = []
    for e in spec:
        kind = e[0]
        if kind == "i":
            out.append(e[1])
        elif kind == "s":
            out.append(slice(e[1], e[2], e[3]))
        elif kind == "n":
            out.append(None)
        elif kind == "e":
            out.append(Ellipsis)
        else:
            out.append(arrays[e[1]])
    return tuple(out)


def index_shape(x_shape, spec, index_types, op="getitem"):
    """Result shape of ``x[index]``; dims selected by a bool mask are unknown (None)."""
    consumed = sum(1 if e[0] in ("i", "s") else index_types[e[1]].ndim if e[0] == "t" and index_types[e[1]].dtype == "bool"
                   else 1 if e[0] == "t" else 0 for e in spec)
    if consumed > len(x_shape):
        raise ShapeError(f"{op}: too many indices ({consumed}) for a tensor of shape {fmt_shape(x_shape)}")
    n_ell = sum(1 for e in spec if e[0] == "e")
    if n_ell > 1:
        raise ShapeError(f"{op}: an index can hold only one Ellipsis (...)")
    entries = []
    for e in spec:
        if e[0] == "e":
            entries.extend([["s", None, None, None]] * (len(x_shape) - consumed))
        else:
            entries.append(e)
    if not n_ell:
        entries.extend([["s", None, None, None]] * (len(x_shape) - consumed))
    out, adv_shapes, adv_pos, dim, last_adv, adjacent = [], [], None, 0, None, True
    for k, e in enumerate(entries):
        kind = e[0]
        if kind == "n":
            out.append(1)
            continue
        if kind == "s":
            d = x_shape[dim]
            if d is None:
                out.append(None if (e[1], e[2], e[3]) != (None, None, None) else None)
            else:
                out.append(len(range(*slice(e[1], e[2], e[3]).indices(d))))
            dim += 1
            continue
        if kind == "i":
            d = x_shape[dim]
            if d is not None and not -d <= e[1] < d:
                raise ShapeError(f"{op}: index {e[1]} is out of range for dim {dim} of size {d}")
            dim += 1
            shape = ()
        else:
            t = index_types[e[1]]
            if t.dtype == "bool":
                for i, m in enumerate(t.shape):
                    d = x_shape[dim + i]
                    if m is not None and d is not None and m != d:
                        raise ShapeError(f"{op}: bool mask of shape {fmt_shape(t.shape)} does not match "
                                         f"tensor shape {fmt_shape(x_shape)} at dim {dim + i}")
                dim += t.ndim
                shape = (None,)
            elif t.dtype.startswith("int"):
                dim += 1
                shape = t.shape
            else:
                raise ShapeError(f"{op}: index tensors must be integer or bool, got {t.dtype}")
        # ints and arrays are both "advanced" once any array is present; plain ints alone drop a dim
        if kind == "i":
            adv_shapes.append(("int", shape))
        else:
            adv_shapes.append(("arr", shape))
        if adv_pos is None:
            adv_pos = len(out)
        elif last_adv != k - 1:
            adjacent = False
        last_adv = k
    has_array = any(kind == "arr" for kind, _ in adv_shapes)
    if not has_array:
        return tuple(out)
    bshape = broadcast_shapes(op, *(s for _, s in adv_shapes))
    if adjacent:
        return tuple(out[:adv_pos]) + bshape + tuple(out[adv_pos:])
    return bshape + tuple(out)


def _getitem_infer(x, *idx, index):
    return TensorType(index_shape(x.shape, index, idx), x.dtype)


@defop("getitem", _getitem_infer, view=True)
def _getitem(xp, x, *idx, index):
    """``x[index]``, tensor indices read from the inputs after x (numpy indexing rules)."""
    key = decode_index(index, idx)
    out = x[key]
    if isinstance(out, np.generic):  # an element (ints only): its 0-d view, as x[i, j] is in PyTorch
        out = x[key + (Ellipsis,)]
    return out


def _setitem_infer(x, v, *idx, index):
    target = index_shape(x.shape, index, idx, "setitem")
    broadcast_shapes("setitem", v.shape, target)
    return TensorType(x.shape, x.dtype)


@defop("setitem", _setitem_infer, writes_input=True)
def _setitem(xp, x, v, *idx, index):
    """Functional ``x[index] = v``: a copy of x with the indexed part replaced."""
    out = x.copy()
    out[decode_index(index, idx)] = v
    return out


def _dim_infer(x, axis):
    return TensorType((), "int64")


defop("dim", _dim_infer, doc="The size of ``x`` along ``axis``, as a 0-d int64 tensor.")(
    lambda xp, x, axis: xp.asarray(x.shape[axis], dtype="int64"))


def _constant_infer(value, dtype, shape=()):
    return TensorType(shape, dtype)


@defop("constant", _constant_infer)
def _constant(xp, value, dtype, shape=()):
    """A small literal held in the program itself (Python scalar or nested list)."""
    return xp.asarray(value, dtype=dtype).reshape(tuple(shape))


def _index_add_infer(x, v, *idx, index):
    return TensorType(x.shape, x.dtype)


@defop("index_add", _index_add_infer, writes_input=True)
def _index_add(xp, x, v, *idx, index):
    """A copy of x with v added at index; repeated integer indices accumulate (scatter-add)."""
    out = x.copy()
    key = decode_index(index, idx)
    if hasattr(xp, "add") and hasattr(xp.add, "at"):
        xp.add.at(out, key, v)
    else:  # cupy
        import cupyx
        cupyx.scatter_add(out, key, v)
    return out


@deflowering("constant", "native")
def _constant_native(e, value, dtype, shape=()):
    return e.constant(value)


@deflowering("dim", "native")
def _dim_native(e, x, axis):
    return e.dim(x, axis)


def _native_index(e, idx, index):
    """The index with each 0-d integer tensor entry as a run-time int (``["r", local]``: numpy
    treats such a tensor as an int); other tensor entries are not lowered."""
    if not isinstance(index, (list, tuple)):
        e.unsupported("index is not a list")
    entries = []
    for ent in index:
        if isinstance(ent, (list, tuple)) and len(ent) == 2 and ent[0] == "t":
            j = ent[1]
            if type(j) is not int or not 0 <= j < len(idx):
                e.unsupported("bad tensor index entry")
            t = idx[j]
            if t.ndim != 0 or t.dtype not in ("int32", "int64"):
                e.unsupported("indexing with a tensor that is not a 0-d integer")
            if t.kind != "s":
                e.unsupported("indexing with a tensor that is not a 0-d integer")
            entries.append(["r", t.name])
        elif isinstance(ent, (list, tuple)) and ent and ent[0] == "r":  # the builder's own kind, never a program's
            e.unsupported("bad index entry")
        else:
            entries.append(ent)
    return entries


@deflowering("getitem", "native")
def _getitem_native(e, x, *idx, index):
    """Basic indexing (ints, 0-d integer tensors, slices, one Ellipsis, None) as a view; rows
    taken by an integer index array on the leading dim (an embedding) as one loop over the rows;
    one integer tensor after whole-dim slices (``v[:, [-1]]``) as a gather."""
    rows = _rows_index(idx, index)
    if rows is not None:
        return _take_rows_native(e, x, rows)
    taken = _take_index(index, idx)
    if taken is not None:
        return _take_native(e, x, idx[index[taken][1]], taken)
    if any(ent[0] == "n" for ent in index):
        return _new_axes_native(e, x, idx, index)
    return e.basic_index(x, _native_index(e, idx, index))


def _new_axes_native(e, x, idx, index):
    """A basic index with ``None`` entries (``positions[:, None]``): the index without them, then
    a reshape inserting the new dims of size 1."""
    l = e._l
    n_fixed = sum(1 for ent in index if ent[0] not in ("n", "e"))
    new_at, dim = [], 0
    for ent in index:
        if ent[0] == "n":
            new_at.append(dim)
            dim += 1
        elif ent[0] == "s":
            dim += 1
        elif ent[0] == "e":
            dim += x.ndim - n_fixed
    out_shape = tuple(e.out.shape)
    view_shape = tuple(d for j, d in enumerate(out_shape) if j not in new_at)
    view = e.basic_index(x, _native_index(e, idx, [ent for ent in index if ent[0] != "n"]))
    view = l.contiguous(l.array(view if view.kind != "a" else type(view)("a", view.name, view.dtype, view_shape,
                                                                              layout=view.layout)))
    dims, k = [], 0
    for j in range(len(out_shape)):
        if j in new_at:
            dims.append("1")
        else:
            dims.append(f"{view.name}.shape[{k}]")
            k += 1
    l.pin(view)
    name = l.fresh()
    l.emit(l.indent, f"{name} = {view.name}.reshape(({', '.join(dims)},))")
    return l.new_array(name, view.dtype, out_shape, fresh=False)


def _take_index(index, idx):
    """The position of the one integer index tensor of ``index`` (not 0-d) when every other entry
    is a whole-dim slice, else None."""
    tensors = [q for q, ent in enumerate(index) if ent[0] == "t"]
    if len(tensors) != 1 or tensors[0] == 0:  # (the leading dim: rows, lowered elsewhere)
        return None
    q = tensors[0]
    t = idx[index[q][1]]
    if t.ndim == 0 or t.dtype not in ("int64", "int32"):
        return None
    if any(ent[0] != "s" or list(ent[1:]) not in ([None, None, None], [None, None, 1])
           for j, ent in enumerate(index) if j != q):
        return None
    return q


def _take_native(e, x, index, a):
    """``x[:, ..., index, ...]`` (``index`` at dim ``a``, numpy's rules: negative positions count
    from the end, others out of range raise)."""
    if a >= x.ndim:
        e.unsupported("index past the last dim")
    l = e._l
    x, ix = l.array(x), l.array(index)
    flat, out, res, j, k = (l.fresh() for _ in range(5))
    ind = l.indent
    l.emit(ind, f"{flat} = np.ascontiguousarray({ix.name}).reshape(-1)")
    dims = [f"{x.name}.shape[{d}]" for d in range(a)] + [f"{flat}.shape[0]"] + \
        [f"{x.name}.shape[{d}]" for d in range(a + 1, x.ndim)]
    l.emit(ind, f"{out} = np.empty(({', '.join(dims)},), {x.name}.dtype)")
    l.emit(ind, f"for {j} in range({flat}.shape[0]):")
    l.emit(ind + 1, f"{k} = np.int64({flat}[{j}])")
    l.emit(ind + 1, f"if {k} < 0: {k} += {x.name}.shape[{a}]")
    l.emit(ind + 1, f"if not 0 <= {k} < {x.name}.shape[{a}]: raise IndexError('native program: index out of range')")
    lead = ":, " * a
    l.emit(ind + 1, f"{out}[{lead}{j}] = {x.name}[{lead}{k}]")
    final = [f"{x.name}.shape[{d}]" for d in range(a)] + [f"{ix.name}.shape[{d}]" for d in range(ix.ndim)] + \
        [f"{x.name}.shape[{d}]" for d in range(a + 1, x.ndim)]
    l.emit(ind, f"{res} = {out}.reshape(({', '.join(final)},))")
    return l.new_array(res, x.dtype, tuple(e.out.shape))


@deflowering("index_add", "native")
def _index_add_native(e, x, v, *idx, index):
    """A basic index selects each position once, so ``np.add.at`` is ``out[index] += v``; at
    an integer index array on the leading dim, rows are added one at a time (``np.add.at``'s
    order)."""
    rows = _rows_index(idx, index)
    if rows is not None:
        return _add_rows_native(e, x, v, rows)
    return e.index_add(x, v, _native_index(e, idx, index))


# Row lookups by an integer index array (an embedding's ``x[index]``, its gradient's
# ``index_add``), natively: one loop over the index's entries copying or adding whole rows.
# Values are numpy's: a negative position counts from the end, one outside the dim raises (the
# tiers then rerun the call on the Python backend, which raises numpy's or PyTorch's own
# error), and ``index_add`` adds one row at a time in the index's C order, ``np.add.at``'s
# order, so repeated positions give its bits.
def _rows_index(idx, index):
    """The integer index tensor when ``index`` is exactly one tensor entry on the leading dim
    (then whole trailing dims), else None."""
    if not isinstance(index, (list, tuple)) or not index:
        return None
    head, rest = index[0], index[1:]
    if not (isinstance(head, (list, tuple)) and len(head) == 2 and head[0] == "t" and type(head[1]) is int
            and 0 <= head[1] < len(idx)):
        return None
    if any(not isinstance(ent, (list, tuple)) or list(ent) != ["s", None, None, None] for ent in rest):
        return None
    t = idx[head[1]]
    if t.ndim == 0 or t.dtype not in ("int32", "int64"):
        return None
    return t


def _flat_rows(e, v, cols):
    """``v`` (made C-contiguous) as a 2-d (rows, cols) local."""
    v = e.contiguous(e.array(v))
    r = e.fresh()
    e.emit(e.indent, f"{r} = {v.name}.reshape(({v.name}.size // {cols} if {cols} else 0, {cols}))"
                     if v.ndim else f"{r} = {v.name}.reshape((1, 1))")
    return r


def _row_position(e, ind, index_flat, i, x):
    """The checked, wrapped row of entry ``i`` (numpy's rule: negative counts from the end)."""
    k = e.fresh()
    e.emit(ind, f"{k} = np.int64({index_flat}[{i}])")
    e.emit(ind, f"if {k} < 0: {k} += {x}.shape[0]")
    e.emit(ind, f"if not 0 <= {k} < {x}.shape[0]: raise IndexError('native program: row index out of range')")
    return k


def _flat_index(e, index):
    iv = e.contiguous(e.array(index))
    flat = e.fresh()
    e.emit(e.indent, f"{flat} = {iv.name}.reshape(({iv.name}.size,))")
    return iv, flat


def _take_rows_native(e, x, index):
    """``x[index]`` for an integer array ``index``: shape ``index.shape + x.shape[1:]``."""
    odt = e.out.dtype
    if x.ndim == 0 or x.dtype != odt:
        e.unsupported("row lookup of a 0-d tensor or changing the dtype")
    x = e.contiguous(e.array(x))
    cols = e.fresh()
    e.emit(e.indent, f"{cols} = {x.name}.size // {x.name}.shape[0] if {x.name}.shape[0] else 0")
    xr = _flat_rows(e, x, cols)
    iv, flat = _flat_index(e, index)
    out = e.fresh()
    shape = ", ".join([f"{iv.name}.shape[{j}]" for j in range(iv.ndim)]
                      + [f"{x.name}.shape[{j}]" for j in range(1, x.ndim)])
    e.emit(e.indent, f"{out} = np.empty(({shape},), {e.np_type(odt)})")
    o2 = e.fresh()
    e.emit(e.indent, f"{o2} = {out}.reshape(({flat}.shape[0], {cols}))")
    i = e.fresh()
    e.emit(e.indent, f"for {i} in range({flat}.shape[0]):")
    k = _row_position(e, e.indent + 1, flat, i, x.name)
    e.emit(e.indent + 1, f"{o2}[{i}, :] = {xr}[{k}, :]")
    return e.new_array(out, odt, tuple(e.out.shape))


def _add_rows_native(e, x, v, index):
    """A copy of ``x`` with each row of ``v`` (``index.shape + x.shape[1:]``) added at its
    position, one after the other (``np.add.at``)."""
    odt = e.out.dtype
    if x.ndim == 0 or x.dtype != odt or v.dtype != odt:
        e.unsupported("row update of a 0-d tensor or across dtypes")
    out = e.copy(e.array(x))
    cols = e.fresh()
    e.emit(e.indent, f"{cols} = {out.name}.size // {out.name}.shape[0] if {out.name}.shape[0] else 0")
    o2 = _flat_rows(e, out, cols)
    iv, flat = _flat_index(e, index)
    vv = e.contiguous(e.array(v))
    for j in range(iv.ndim):
        e.emit(e.indent, f"if {vv.name}.shape[{j}] != {iv.name}.shape[{j}]: "
                         f"raise ValueError('native program: index_add: value shape')")
    v2 = _flat_rows(e, vv, cols)
    i, c = e.fresh(), e.fresh()
    e.emit(e.indent, f"for {i} in range({flat}.shape[0]):")
    k = _row_position(e, e.indent + 1, flat, i, out.name)
    e.emit(e.indent + 1, f"for {c} in range({cols}):")
    e.emit(e.indent + 2, f"{o2}[{k}, {c}] += {v2}[{i}, {c}]")
    return out


# ------------------------------------------------------------------ dim-wise indexing (torch's)
class IndexOutOfRange(IndexError, RuntimeError):
    """An index outside its dim, where PyTorch raises (gather, scatter, index_select,
    embedding, ...); both an IndexError and, as PyTorch's own, a RuntimeError."""


def axis_of(op, axis, ndim):
    """``axis`` of an ``ndim``-dim tensor, wrapped (a 0-d tensor takes 0 or -1)."""
    if not -max(ndim, 1) <= axis < max(ndim, 1):  # a 0-d tensor takes axis 0 or -1
        raise ShapeError(f"{op}: dim {axis} is out of range for a tensor with {ndim} dims")
    return axis % ndim if ndim else 0


def check_range(op, index, size, dim, negative=False):
    """Raise :class:`IndexOutOfRange` unless every entry of ``index`` lies in ``[0, size)``
    (``[-size, size)`` with ``negative``). Checked on the host only: on a device the check
    would make every gather wait for the device (PyTorch's CUDA check is a device-side
    assert), so there the index is used as it is."""
    if index.size == 0 or not isinstance(index, np.ndarray):
        return
    if index.size == 1:  # (one position, as a decode step writes: no two reductions)
        lo = hi = int(index.reshape(-1)[0])
    else:
        lo, hi = int(index.min()), int(index.max())
    low = -size if negative else 0
    if lo < low or hi >= size:
        bad = lo if lo < low else hi
        raise IndexOutOfRange(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}")


def ufunc_at(xp, ufunc, out, key, src):
    if hasattr(getattr(xp, ufunc), "at"):
        getattr(xp, ufunc).at(out, key, src)
    else:  # cupy
        import cupyx
        getattr(cupyx, "scatter_" + {"add": "add", "maximum": "max", "minimum": "min"}[ufunc])(out, key, src)


# ------------------------------------------------------------------ index_select family
def _index_check_infer(index, x, axis, negative=False, op="index"):
    if not index.dtype.startswith("int"):
        raise ShapeError(f"{op}: an index tensor must hold integers, got {index.dtype}")
    axis_of(op, axis, x.ndim)
    return TensorType(index.shape, index.dtype)


@defop("index_check", _index_check_infer)
def _index_check(xp, index, x, axis, negative=False, op="index"):
    """``index`` itself, after checking that it lies within dim ``axis`` of ``x`` (where
    PyTorch raises for an index numpy would wrap: embedding, index_select); ``op`` names the
    caller in the error."""
    a = axis % x.ndim if x.ndim else 0
    check_range(op, index, x.shape[a] if x.ndim else 1, a, negative)
    return index


@deflowering("index_check", "native")
def _index_check_native(e, index, x, axis, negative=False, op="index"):
    """``index`` itself after checking every entry against dim ``axis`` of ``x`` (PyTorch's
    rule: ``[0, size)``, or ``[-size, size)`` with ``negative``)."""
    if x.ndim == 0 or index.dtype not in ("int32", "int64"):
        e.unsupported("index_check of a 0-d tensor or a non-integer index")
    if type(axis) is not int or not -x.ndim <= axis < x.ndim or type(negative) is not bool:
        e.unsupported("index_check: bad axis")
    a = axis % x.ndim
    xv = e.array(x)
    iv = e.array(index)
    if iv.ndim == 0:
        body, probe = e.indent, f"np.int64({iv.name}[()])"
    else:
        iv = e.contiguous(iv)
        flat, i = e.fresh(), e.fresh()
        e.emit(e.indent, f"{flat} = {iv.name}.reshape(({iv.name}.size,))")
        e.emit(e.indent, f"for {i} in range({flat}.shape[0]):")
        body, probe = e.indent + 1, f"np.int64({flat}[{i}])"
    k = e.fresh()
    e.emit(body, f"{k} = {probe}")
    low = f"-{xv.name}.shape[{a}]" if negative else "0"
    e.emit(body, f"if not {low} <= {k} < {xv.name}.shape[{a}]: raise IndexError('native program: index out of range')")
    return e.alias(iv)


def _index_dim_infer(op):
    def infer(x, index, src, axis):
        a = axis_of(op, axis, x.ndim)
        if index.ndim > 1 or not index.dtype.startswith("int"):
            raise ShapeError(f"{op}: index must be a 0-d or 1-d integer tensor, got {index.dtype}{fmt_shape(index.shape)}")
        want = list(x.shape)
        if x.ndim:
            want[a] = index.shape[0] if index.ndim else 1
        if src.ndim != x.ndim and not (src.ndim == 0 and x.ndim == 0):
            raise ShapeError(f"{op}: source {fmt_shape(src.shape)} needs the dims of the tensor {fmt_shape(x.shape)}")
        for s, w in zip(src.shape, want):
            if s is not None and w is not None and s != w:
                raise ShapeError(f"{op}: source {fmt_shape(src.shape)} must have shape {fmt_shape(want)} (the tensor's, "
                                 f"with dim {a} the index's length)")
        return TensorType(x.shape, x.dtype)
    return infer


def _index_dim_key(op, x, index, axis):
    a = axis % x.ndim if x.ndim else 0
    check_range(op, index, x.shape[a] if x.ndim else 1, a)
    if not x.ndim:
        return ()
    if index.size == 1 and isinstance(index, np.ndarray):
        # one position (checked in range just above) as a basic slice: the same elements,
        # written without fancy indexing's machinery
        i = int(index.reshape(-1)[0])
        return (slice(None),) * a + (slice(i, i + 1),)
    return (slice(None),) * a + (index.reshape(-1),)


@defop("index_add_dim", _index_dim_infer("index_add"), writes_input=True)
def _index_add_dim(xp, x, index, src, axis):
    """A copy of x with ``src`` added at positions ``index`` of dim ``axis`` (repeats add up)."""
    out = x.copy()
    key = _index_dim_key("index_add", x, index, axis)
    ufunc_at(xp, "add", out, key, src.astype(x.dtype, copy=False))
    return out


@defop("index_copy_dim", _index_dim_infer("index_copy"), writes_input=True)
def _index_copy_dim(xp, x, index, src, axis):
    """A copy of x with ``src`` written at positions ``index`` of dim ``axis``."""
    out = x.copy()
    out[_index_dim_key("index_copy", x, index, axis)] = src
    return out


@deflowering("index_copy_dim", "in_place")
def _index_copy_dim_into(xp, x, index, src, axis):
    """``index_copy_dim`` written into ``x`` itself (generated code calls it only where nothing
    else can see ``x``: see ``codegen.IN_PLACE_LOWERING``); returns ``x``."""
    if type(index) is np.ndarray and index.size == 1 and x.ndim:
        # one position, as a decode step writes: _index_dim_key's slice, built directly
        a = axis % x.ndim
        i = index.item()
        if not 0 <= i < x.shape[a]:
            check_range("index_copy", index, x.shape[a], a)  # (raises, with the message)
        x[(slice(None),) * a + (slice(i, i + 1),)] = src
        return x
    x[_index_dim_key("index_copy", x, index, axis)] = src
    return x


def _writable(e, x):
    """``x``'s buffer when nothing reads it after this op (a loop's cache, written in place
    step after step), else a copy of it."""
    l = e._l
    x = l.array(x)
    ctx = l._ctx
    if (x.kind == "a" and x.layout == "C" and (x.name in ctx.fresh or x.var in ctx.owned)
            and x.name not in ctx.donated and l.dies_here(x)):
        ctx.donated.add(x.name)
        ctx.fresh.add(x.name)  # (the result: a buffer nothing else sees)
        return l.new_array(x.name, x.dtype, x.shape)
    return l.copy_of(x)


def _range_check(e, k, size, what, negative=False):
    low = f"-{size}" if negative else "0"
    e._l.emit(e._l.indent, f"if not {low} <= {k} < {size}: raise IndexError('native program: {what}: index out "
                           f"of range')")


@deflowering("index_copy_dim", "native")
def _index_copy_dim_native(e, x, index, src, axis):
    """``src`` written at the positions of a 1-d index along ``axis``, in place where nothing
    reads ``x`` after it (the Python kernel copies)."""
    if x.ndim == 0 or index.ndim != 1 or src.ndim != x.ndim or src.dtype != x.dtype:
        e.unsupported("index_copy of a 0-d tensor, a 0-d index or another dtype")
    l = e._l
    a = axis % x.ndim
    src, idx = l.array(src), l.array(index)
    out = _writable(e, x)
    j, k = l.fresh(), l.fresh()
    ind = l.indent
    l.emit(ind, f"if {src.name}.shape[{a}] != {idx.name}.shape[0]: raise ValueError('native program: index_copy: "
                f"source and index lengths differ')")
    l.emit(ind, f"for {j} in range({idx.name}.shape[0]):")
    l.emit(ind + 1, f"{k} = np.int64({idx.name}[{j}])")
    l.indent += 1
    try:
        _range_check(e, k, f"{out.name}.shape[{a}]", "index_copy")
    finally:
        l.indent -= 1
    lead = ":, " * a
    l.emit(ind + 1, f"{out.name}[{lead}{k}] = {src.name}[{lead}{j}]")
    return out


@deflowering("setitem", "native")
def _setitem_native(e, x, v, *idx, index):
    """``x[mask] = v`` with a mask as large as ``x`` and a 0-d ``v`` (top-k filtering), and
    ``x[ints, slices, 0-d tensors] = v`` with ``v`` 0-d or of the part's shape; in place where
    nothing reads ``x`` after it."""
    l = e._l
    if v.dtype != x.dtype:
        e.unsupported("setitem of a value of another dtype")
    if len(index) == 1 and index[0][0] == "t" and idx[index[0][1]].dtype == "bool":
        mask = idx[index[0][1]]
        if v.ndim != 0 or mask.ndim != x.ndim or None in x.shape or tuple(mask.shape) != tuple(x.shape):
            e.unsupported("a bool mask of another shape than the tensor's, or a value that is not 0-d")
        m = l.contiguous(l.array(mask))
        vv = l.materialize(v)
        out = _writable(e, x)
        of, mf, i = l.fresh(), l.fresh(), l.fresh()
        ind = l.indent
        l.emit(ind, f"{of} = {out.name}.reshape(-1)")
        l.emit(ind, f"{mf} = {m.name}.reshape(-1)")
        l.emit(ind, f"for {i} in range({of}.shape[0]):")
        l.emit(ind + 1, f"if {mf}[{i}]:")
        l.emit(ind + 2, f"{of}[{i}] = {vv.name if vv.kind == 's' else vv.name + '[()]'}")
        return out
    entries = _native_index(e, idx, index)
    target = index_shape(tuple(x.shape), index, idx, "setitem")
    vv = l.materialize(v)
    scalar = vv.kind == "s" or vv.ndim == 0
    if not scalar and (tuple(vv.shape) != tuple(target) or None in vv.shape):
        e.unsupported("setitem of a value that broadcasts to the part")
    value = vv.name if vv.kind == "s" else vv.name + "[()]" if scalar else vv.name
    out = _writable(e, x)
    if len(entries) == x.ndim and all(ent[0] in ("i", "r") for ent in entries):  # one element
        at = []
        for dim, ent in enumerate(entries):
            k = l.fresh()
            l.emit(l.indent, f"{k} = np.int64({ent[1]})")
            _range_check(e, k, f"{out.name}.shape[{dim}]", "setitem", negative=True)
            at.append(k)
        l.emit(l.indent, f"{out.name}[{', '.join(at)}] = {value}")
        return out
    part = e.basic_index(out, entries)
    l.emit(l.indent, f"{part.name}[...] = {value}")
    return out


# ------------------------------------------------------------------ nonzero, searchsorted
def _nonzero_infer(x):
    return TensorType((None, x.ndim), "int64")


@defop("nonzero", _nonzero_infer, fresh=True)
def _nonzero(xp, x):
    """The indices of the nonzero elements of x, one row each, in C order ((n, ndim) int64)."""
    if x.ndim == 0:  # one row of no coordinates if the scalar is nonzero (PyTorch's (1, 0) or (0, 0))
        return xp.zeros((int(bool(x)), 0), dtype="int64")
    return xp.argwhere(x).astype("int64", copy=False).reshape(-1, x.ndim)


def _bisect_as_torch(xp, seq, values, right):
    """PyTorch's binary search, step for step, for a sequence holding NaN (where NumPy's order,
    NaN last and largest, gives other answers): move right unless ``seq[mid] >= value``
    (``>`` with ``right``), so NaN entries and NaN values always send the search right."""
    n = seq.shape[-1]
    rows = seq.reshape(-1, n)
    vals = values.reshape(rows.shape[0], -1) if seq.ndim > 1 else values.reshape(1, -1)
    start = xp.zeros(vals.shape, dtype="int64")
    end = xp.full(vals.shape, n, dtype="int64")
    line = xp.arange(rows.shape[0])[:, None]
    while True:
        open_ = start < end
        if not bool(open_.any()):
            break
        mid = start + (end - start) // 2
        at = rows[line, xp.minimum(mid, n - 1)]
        with np.errstate(invalid="ignore"):
            stop = (at > vals) if right else (at >= vals)
        start = xp.where(open_ & ~stop, mid + 1, start)
        end = xp.where(open_ & stop, mid, end)
    return start.reshape(values.shape)


def _searchsorted_infer(sorted_seq, values, right=False, out_int32=False):
    if sorted_seq.ndim > 1 and (values.ndim != sorted_seq.ndim or any(
            a is not None and b is not None and a != b for a, b in zip(sorted_seq.shape[:-1], values.shape[:-1]))):
        raise ShapeError(f"searchsorted: a sorted sequence of {fmt_shape(sorted_seq.shape)} needs values with the same "
                         f"leading dims, got {fmt_shape(values.shape)}")
    return TensorType(values.shape, "int32" if out_int32 else "int64")


@defop("searchsorted", _searchsorted_infer)
def _searchsorted(xp, sorted_seq, values, right=False, out_int32=False):
    """For each value, the index at which it would be inserted into the (last dim of the)
    sorted sequence: after equal entries with ``right``, before them without."""
    side = "right" if right else "left"
    dt = "int32" if out_int32 else "int64"
    if sorted_seq.dtype.kind == "f" and sorted_seq.size and bool(xp.isnan(sorted_seq).any()):
        return _bisect_as_torch(xp, sorted_seq, values, right).astype(dt)
    if sorted_seq.ndim <= 1:
        return xp.searchsorted(sorted_seq.reshape(-1), values, side=side).astype(dt)
    n = 1
    for d in sorted_seq.shape[:-1]:
        n *= int(d)
    # (sizes spelled out: -1 cannot be inferred where the last dim is 0)
    rows = sorted_seq.reshape(n, sorted_seq.shape[-1])
    vals = values.reshape(n, values.shape[-1])
    out = xp.stack([xp.searchsorted(r, v, side=side) for r, v in zip(rows, vals)]) if rows.shape[0] else \
        xp.zeros(vals.shape, dtype=dt)
    return out.astype(dt).reshape(values.shape)
