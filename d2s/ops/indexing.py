"""Indexing ops: getitem, setitem and the index_add behind their gradients (runtime:
``d2s_runtime/ops/indexing.py``): for each op its public wrapper, its gradient rule and its
ONNX converter, side by side."""
import numpy as np

from d2s_runtime.ops.indexing import decode_index

from .._state import STATE
from ..autograd.registry import grad_rule, non_differentiable, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_constant, onnx_converter
from .. import views as _views
from ..tensor import Tensor, tensor_method
from .creation import zeros_like
from ._util import _is_diff, _shape, unbroadcast



# ------------------------------------------------------------------ wrappers
def _encode_index(idx):
    """Python index -> (JSON-able spec, extra index inputs)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    spec, extra = [], []
    for e in idx:
        if e is None:
            spec.append(["n"])
        elif e is Ellipsis:
            spec.append(["e"])
        elif isinstance(e, slice):
            spec.append(["s", _slice_part(e.start), _slice_part(e.stop), _slice_part(e.step)])
        elif isinstance(e, (bool, np.bool_)):
            spec.append(["t", len(extra)])
            extra.append(np.asarray(e))
        elif isinstance(e, (int, np.integer)):
            spec.append(["i", int(e)])
        elif isinstance(e, Tensor):
            # a tracer must see a tensor index as an op input, not a baked-in int
            if not e.is_symbolic and e.ndim == 0 and e.dtype.startswith("int") and not STATE.hooked:
                spec.append(["i", int(e._data)])
            else:
                spec.append(["t", len(extra)])
                extra.append(e)
        elif isinstance(e, (list, np.ndarray)):
            arr = np.asarray(e)
            if arr.dtype.kind not in "biu":
                raise IndexError(f"index arrays must hold ints or bools, got {arr.dtype}")
            spec.append(["t", len(extra)])
            extra.append(arr.astype(np.int64) if arr.dtype.kind in "iu" else arr)
        else:
            raise IndexError(f"unsupported index {e!r}: use ints, slices, None, ..., bool masks or int tensors")
    return spec, extra


def _slice_part(v):
    if v is None:
        return None
    if isinstance(v, Tensor):
        if v.is_symbolic:
            raise IndexError("slice bounds must be known when the program is built; "
                             "use d2s.gather or a mask for data-dependent slices")
        return int(v._concrete("int()"))  # _concrete lets a tracer guard the baked-in bound
    return int(v)


@tensor_method("__getitem__")
def getitem(x, idx):
    """``x[idx]``: ints, slices, None, ..., bool masks and int tensors (NumPy's rules)."""
    spec, extra = _encode_index(idx)
    out = apply("getitem", x, *extra, index=spec)
    if out._view is not None and out._data is not None and _tensor_index(idx):
        # indexing with a tensor copies in PyTorch (advanced indexing), even a 0-d one read as an int
        out._data, out._view, out._base = out._data.copy(), None, None
    return out


def _tensor_index(idx):
    if type(idx) is tuple:
        return any(isinstance(e, Tensor) and not getattr(type(e), "_d2s_weak", False) for e in idx)
    return isinstance(idx, Tensor) and not getattr(type(idx), "_d2s_weak", False)


@tensor_method("__setitem__")
def setitem(x, idx, value):
    """``x[idx] = value``: in place on x's data (and so on its base's, for a view), recorded as
    a functional update when x or value takes part in autograd or a program (see
    ``d2s.inplace.write``)."""
    if x._view is not None:
        _views.fresh(x)
    spec, extra = _encode_index(idx)
    recording = (STATE.grad_enabled and (x.requires_grad or (isinstance(value, Tensor) and value.requires_grad)
                                         or (x._view is not None and x._view.root.requires_grad)))
    symbolic = x.is_symbolic or STATE.hooked or (isinstance(value, Tensor) and value.is_symbolic)
    if not recording and not symbolic and (x._view is None or _views.writeable(x._data)):
        v = value._data if isinstance(value, Tensor) else value
        x._data[tuple(_decode_host(spec, extra))] = v
        _INPLACE["bump"](x)
        return x
    return _INPLACE["write"](x, "x[idx] = v", lambda s: apply("setitem", s, value, *extra, index=spec), (value,),
                             needs_old=False)


# d2s.inplace (a layer above d2s.ops: it builds on them) hands its ``write`` and ``bump`` here
# when it loads
_INPLACE = {}


def _decode_host(spec, extra):
    return decode_index(spec, [e._data if isinstance(e, Tensor) else e for e in extra])



# ------------------------------------------------------------------ gradient rules
@grad_rule("getitem")
def _getitem_grad(ctx, g):
    x = ctx.inputs[0]
    extra = ctx.inputs[1:]
    zero = zeros_like(x)
    return (_scatter(zero, g, extra, ctx.attrs["index"]),) + (None,) * len(extra)


def _scatter(base, g, extra, spec):
    """``base`` with ``g`` added at ``index`` (repeated integer indices accumulate)."""
    return apply("index_add", base, g, *extra, index=spec)


@grad_rule("index_add")
def _index_add_grad(ctx, g):
    x, v = ctx.inputs[:2]
    extra = ctx.inputs[2:]
    gv = None
    if _is_diff(v):
        gv = unbroadcast(apply("getitem", g, *extra, index=ctx.attrs["index"]), _shape(v))
    return (g if _is_diff(x) else None, gv) + (None,) * len(extra)


@grad_rule("setitem")
def _setitem_grad(ctx, g):
    x, v = ctx.inputs[:2]
    extra = ctx.inputs[2:]
    spec = ctx.attrs["index"]
    gx = apply("setitem", g, 0.0, *extra, index=spec) if _is_diff(x) else None
    gv = unbroadcast(apply("getitem", g, *extra, index=spec), _shape(v)) if _is_diff(v) else None
    return (gx, gv) + (None,) * len(extra)


shape_only("getitem", 0)
shape_only("setitem", 0, 1)
shape_only("index_add", 0, 1)
non_differentiable("dim", reason="a dim is an integer")
non_differentiable("constant", reason="a constant has no inputs")
onnx_constant("constant")


# ------------------------------------------------------------------ ONNX
_BIG = np.iinfo(np.int64).max


def _index_entries(g, x, spec, arrays):
    """The index with ``...`` expanded and missing trailing dims filled with full slices."""
    ndim = len(g.shape(x))
    consumed = sum(len(g.shape(arrays[e[1]])) if e[0] == "t" and g.dtype(arrays[e[1]]) == "bool"
                   else 1 if e[0] in ("i", "s", "t") else 0 for e in spec)
    entries = []
    for e in spec:
        if e[0] == "e":
            entries.extend([["s", None, None, None]] * (ndim - consumed))
            consumed = ndim
        else:
            entries.append(list(e))
    entries.extend([["s", None, None, None]] * (ndim - consumed))
    return entries


def _lower_getitem(g, op, x, spec, arrays, out):
    """``x[spec]`` as Slice (ints and slices), Squeeze (ints), Gather (one integer index
    array), GatherND over NonZero (one bool mask) and Unsqueeze (None), writing ``out``."""
    entries = _index_entries(g, x, spec, arrays)
    kinds = [e[0] for e in entries]
    tensor_pos = [k for k, e in enumerate(entries) if e[0] == "t"]
    if len(tensor_pos) > 1:
        raise g.unsupported(op, "indexing with several index tensors at once")
    adv = None
    if tensor_pos:
        k = tensor_pos[0]
        adv = arrays[entries[k][1]]
        is_mask = g.dtype(adv) == "bool"
        ints = [j for j, kind in enumerate(kinds) if kind == "i"]
        # NumPy moves advanced dims to the front unless all advanced entries (ints count too when
        # an index tensor is present) sit side by side; only the side-by-side case is lowered
        group = sorted(ints + [k])
        if group and group != list(range(group[0], group[-1] + 1)):
            raise g.unsupported(op, "an index tensor with integer indices not next to it (NumPy would move "
                                    "the indexed dims to the front)")
        if is_mask and (ints or any(kind != "s" or e[1:] != [None, None, None] for kind, e in
                                    ((entries[j][0], entries[j]) for j in range(k)))):
            raise g.unsupported(op, "a bool mask after other indices; only x[mask] and x[mask, ...] are supported")
    starts, ends, axes, steps, squeeze = [], [], [], [], []
    dim = 0
    adv_dim = None
    for e in entries:
        kind = e[0]
        if kind == "n":
            continue
        if kind == "i":
            k = int(e[1])
            starts.append(k)
            ends.append(k + 1 if k != -1 else _BIG)
            axes.append(dim)
            steps.append(1)
            squeeze.append(dim)
            dim += 1
        elif kind == "s":
            st, en, sp = e[1], e[2], 1 if e[3] is None else int(e[3])
            if (st, en, sp) != (None, None, 1):
                starts.append(st if st is not None else (0 if sp > 0 else -1))
                ends.append(en if en is not None else (_BIG if sp > 0 else -_BIG))
                axes.append(dim)
                steps.append(sp)
            dim += 1
        else:
            adv_dim = dim
            dim += len(g.shape(adv)) if g.dtype(adv) == "bool" else 1
    cur = x
    if starts:
        t = g.tmp()
        g.node("Slice", [cur, g.const(i64(starts)), g.const(i64(ends)), g.const(i64(axes)),
                         g.const(i64(steps))], [t])
        cur = t
    if squeeze:
        t = g.tmp()
        g.node("Squeeze", [cur, g.const(i64(squeeze))], [t])
        cur = t
    if adv is not None:
        axis = adv_dim - sum(1 for s in squeeze if s < adv_dim)
        t = g.tmp()
        if g.dtype(adv) == "bool":  # x[mask]: the rows where the mask holds, in C order
            nz, idx = g.tmp(), g.tmp()
            g.node("NonZero", [adv], [nz])
            g.node("Transpose", [nz], [idx], perm=[1, 0])
            g.node("GatherND", [cur, idx], [t])
        else:
            g.node("Gather", [cur, g.cast(adv, "int64")], [t], axis=axis)
        cur = t
    new_axes = []
    pos = 0
    adv_ndim = 1 if adv is not None and g.dtype(adv) == "bool" else len(g.shape(adv)) if adv is not None else 0
    for e in entries:
        if e[0] == "n":
            new_axes.append(pos)
            pos += 1
        elif e[0] == "s":
            pos += 1
        elif e[0] == "t":
            pos += adv_ndim
    if new_axes:
        t = g.tmp()
        g.node("Unsqueeze", [cur, g.const(i64(new_axes))], [t])
        cur = t
    g.node("Identity", [cur], [out])


@onnx_converter("getitem")
def _getitem_onnx(g, op):
    _lower_getitem(g, op, op.inputs[0], op.attrs["index"], op.inputs[1:], op.outputs[0])


def _scatter_onnx(reduction):
    """``setitem`` / ``index_add``: index a same-shaped iota with the op's index to find the flat
    positions it touches, then ScatterElements into the flattened tensor."""
    def conv(g, op):
        x, v, arrays = op.inputs[0], op.inputs[1], op.inputs[2:]
        dt = g.dtype(x)
        shape, size, iota, flat_pos, sel, sel_shape, vb, vflat, xflat, scattered = (g.tmp() for _ in range(10))
        g.node("Shape", [x], [shape])
        g.node("Size", [x], [size])
        g.node("Range", [g.const(np.zeros((), np.int64)), size, g.const(np.ones((), np.int64))], [flat_pos])
        g.node("Reshape", [flat_pos, shape], [iota])
        g.types[iota] = g.types[x].__class__(g.shape(x), "int64")
        _lower_getitem(g, op, iota, op.attrs["index"], arrays, sel)
        g.node("Shape", [sel], [sel_shape])
        g.node("Expand", [g.cast(v, dt), sel_shape], [vb])
        g.node("Reshape", [vb, g.const(i64([-1]))], [vflat])
        idx = g.tmp()
        g.node("Reshape", [sel, g.const(i64([-1]))], [idx])
        g.node("Reshape", [x, g.const(i64([-1]))], [xflat])
        attrs = {"reduction": reduction} if reduction != "none" else {}
        g.node("ScatterElements", [xflat, idx, vflat], [scattered], axis=0, **attrs)
        g.node("Reshape", [scattered, shape], op.outputs)
    return conv


onnx_converter("setitem")(_scatter_onnx("none"))
onnx_converter("index_add")(_scatter_onnx("add"))


@onnx_converter("dim")
def _dim_onnx(g, op):
    s = g.tmp()
    g.node("Shape", op.inputs, [s])
    g.node("Gather", [s, g.const(i64(op.attrs["axis"]))], op.outputs, axis=0)
