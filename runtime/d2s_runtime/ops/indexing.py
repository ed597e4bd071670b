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
    """Basic indexing (ints, 0-d integer tensors, slices, one Ellipsis) as a view."""
    return e.basic_index(x, _native_index(e, idx, index))


@deflowering("index_add", "native")
def _index_add_native(e, x, v, *idx, index):
    """A basic index selects each position once, so ``np.add.at`` is ``out[index] += v``."""
    return e.index_add(x, v, _native_index(e, idx, index))
