"""Native lowerings of row lookups by an integer index array: ``x[index]`` (``getitem`` whose
index is one integer tensor on the leading dim: an embedding), ``index_add`` at such an index
(its gradient: repeated rows accumulate) and ``index_check`` (PyTorch's range check before an
embedding). Each is one loop over the index's entries copying or adding whole rows; the hooks
get the lowerer's ``Emit`` (``e``) and use the ``Lowerer`` behind it (``e._l``), as ``norm.py``.

Values are numpy's: a negative position counts from the end (``getitem``/``index_add``, as
numpy's fancy indexing), one outside the dim raises (the executor then reruns the call on the
Python backend, which raises numpy's or PyTorch's own error), and ``index_add`` adds one row
at a time in the index's C order, ``np.add.at``'s order, so repeated positions give its bits.
"""
from .values import NP_TYPE


def rows_index(e, idx, index):
    """The integer index tensor when ``index`` is exactly one tensor entry on the leading dim
    (then whole trailing dims), else None."""
    if not isinstance(index, (list, tuple)) or not index:
        return None
    head, rest = index[0], index[1:]
    if not (isinstance(head, (list, tuple)) and len(head) == 2 and head[0] == "t" and type(head[1]) is int
            and 0 <= head[1] < len(idx)):
        return None
    if any(list(ent) != ["s", None, None, None] for ent in rest if isinstance(ent, (list, tuple))) or \
            any(not isinstance(ent, (list, tuple)) for ent in rest):
        return None
    t = idx[head[1]]
    if t.ndim == 0 or t.dtype not in ("int32", "int64"):
        return None
    return t


def _flat(l, v, cols):
    """``v`` (C-contiguous) as a 2-d (rows, cols) local."""
    v = l.contiguous(l.array(v))
    r = l.fresh()
    l.emit(l.indent, f"{r} = {v.name}.reshape(({v.name}.size // {cols} if {cols} else 0, {cols}))"
                     if v.ndim else f"{r} = {v.name}.reshape((1, 1))")
    return r


def _position(l, ind, index_flat, i, x):
    """The checked, wrapped row of entry ``i`` (numpy's rule: negative counts from the end)."""
    k = l.fresh()
    l.emit(ind, f"{k} = np.int64({index_flat}[{i}])")
    l.emit(ind, f"if {k} < 0: {k} += {x}.shape[0]")
    l.emit(ind, f"if not 0 <= {k} < {x}.shape[0]: raise IndexError('native program: row index out of range')")
    return k


def lower_take_rows(e, x, index):
    """``x[index]`` for an integer array ``index``: shape ``index.shape + x.shape[1:]``."""
    l = e._l
    odt = e.out.dtype
    if x.ndim == 0 or x.dtype != odt:
        e.unsupported("row lookup of a 0-d tensor or changing the dtype")
    x = l.contiguous(l.array(x))
    cols = l.fresh()
    l.emit(l.indent, f"{cols} = {x.name}.size // {x.name}.shape[0] if {x.name}.shape[0] else 0")
    xr = _flat(l, x, cols)
    iv = l.contiguous(l.array(index))
    flat = l.fresh()
    l.emit(l.indent, f"{flat} = {iv.name}.reshape(({iv.name}.size,))")
    out = l.fresh()
    shape = ", ".join([f"{iv.name}.shape[{j}]" for j in range(iv.ndim)] + [f"{x.name}.shape[{j}]" for j in range(1, x.ndim)])
    l.emit(l.indent, f"{out} = np.empty(({shape},), {NP_TYPE[odt]})")
    o2 = l.fresh()
    l.emit(l.indent, f"{o2} = {out}.reshape(({flat}.shape[0], {cols}))")
    i = l.fresh()
    l.emit(l.indent, f"for {i} in range({flat}.shape[0]):")
    k = _position(l, l.indent + 1, flat, i, x.name)
    l.emit(l.indent + 1, f"{o2}[{i}, :] = {xr}[{k}, :]")
    return l.new_array(out, odt, tuple(e.out.shape))


def lower_add_rows(e, x, v, index):
    """A copy of ``x`` with each row of ``v`` (``index.shape + x.shape[1:]``) added at its
    position, one after the other (``np.add.at``)."""
    l = e._l
    odt = e.out.dtype
    if x.ndim == 0 or x.dtype != odt or v.dtype != odt:
        e.unsupported("row update of a 0-d tensor or across dtypes")
    out = l.copy_of(l.array(x))
    cols = l.fresh()
    l.emit(l.indent, f"{cols} = {out.name}.size // {out.name}.shape[0] if {out.name}.shape[0] else 0")
    o2 = _flat(l, out, cols)
    iv = l.contiguous(l.array(index))
    flat = l.fresh()
    l.emit(l.indent, f"{flat} = {iv.name}.reshape(({iv.name}.size,))")
    vv = l.contiguous(l.array(v))
    for j in range(iv.ndim):
        l.emit(l.indent, f"if {vv.name}.shape[{j}] != {iv.name}.shape[{j}]: "
                         f"raise ValueError('native program: index_add: value shape')")
    v2 = _flat(l, vv, cols)
    i, c = l.fresh(), l.fresh()
    l.emit(l.indent, f"for {i} in range({flat}.shape[0]):")
    k = _position(l, l.indent + 1, flat, i, out.name)
    l.emit(l.indent + 1, f"for {c} in range({cols}):")
    l.emit(l.indent + 2, f"{o2}[{k}, {c}] += {v2}[{i}, {c}]")
    return out


def lower_index_check(e, index, x, axis, negative=False):
    """``index`` itself after checking every entry against dim ``axis`` of ``x`` (PyTorch's
    rule: ``[0, size)``, or ``[-size, size)`` with ``negative``)."""
    l = e._l
    if x.ndim == 0 or index.dtype not in ("int32", "int64"):
        e.unsupported("index_check of a 0-d tensor or a non-integer index")
    if type(axis) is not int or not -x.ndim <= axis < x.ndim or type(negative) is not bool:
        e.unsupported("index_check: bad axis")
    a = axis % x.ndim
    xv = l.array(x)
    iv = l.array(index)
    if iv.ndim == 0:
        body, probe = l.indent, f"np.int64({iv.name}[()])"
    else:
        iv = l.contiguous(iv)
        flat, i = l.fresh(), l.fresh()
        l.emit(l.indent, f"{flat} = {iv.name}.reshape(({iv.name}.size,))")
        l.emit(l.indent, f"for {i} in range({flat}.shape[0]):")
        body, probe = l.indent + 1, f"np.int64({flat}[{i}])"
    k = l.fresh()
    l.emit(body, f"{k} = {probe}")
    low = f"-{xv.name}.shape[{a}]" if negative else "0"
    l.emit(body, f"if not {low} <= {k} < {xv.name}.shape[{a}]: raise IndexError('native program: index out of range')")
    return e.alias(iv)
