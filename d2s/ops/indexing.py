"""Indexing ops: getitem, setitem and the index_add behind their gradients (runtime:
``d2s_runtime/ops/indexing.py``): for each op its public wrapper, its gradient rule and its
ONNX converter, side by side."""
import numpy as np

from d2s_runtime.dtypes import checked_fill
from d2s_runtime.ops.indexing import decode_index

from .._state import STATE
from ..autograd.registry import grad_rule, non_differentiable, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_constant, onnx_converter
from .. import views as _views
from ..tensor import Tensor, tensor_method
from .creation import full_like, ones_like, zeros_like
from .elementwise import cast, eq, lt, where
from ._util import _as_tensor, _is_diff, _shape, unbroadcast



# ------------------------------------------------------------------ wrappers
def _encode_index(idx):
    """Python index -> (JSON-able spec, extra index inputs)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    spec, extra = [], []
    # a Python True among basic entries adds a dim of 1, as None does (so its size stays known
    # in a program, where a mask's count of True is data)
    true_is_none = not any(isinstance(e, (Tensor, list, np.ndarray)) for e in idx)
    for e in idx:
        if e is None or (true_is_none and e is True):
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
                spec.append(["i", int(e.array)])
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


def _split_ints(idx):
    """``(ints, rest)`` where PyTorch's reading of ``idx`` differs from NumPy's, else None.

    PyTorch applies integer indices first (as ``select``s) and only then the index arrays, so
    ints never join the advanced group: ``x[0, :, [1, 2]]`` of a (2, 3, 4) tensor is
    ``x[0][:, [1, 2]]``, of shape (3, 2), where NumPy, counting the 0 as advanced and finding
    the group split by the slice, moves the indexed dim to the front: (2, 3). The two differ
    exactly when the ints and index arrays together are not side by side but the index arrays
    alone (ints dropped) are; then ``x[ints][rest]`` is PyTorch's answer (``ints`` keeps the ints
    with a full slice for every other dim-consuming entry, ``rest`` the other entries)."""
    if type(idx) is not tuple:
        return None
    kinds = []
    for e in idx:
        if e is None:
            kinds.append("n")
        elif e is Ellipsis:
            kinds.append("e")
        elif isinstance(e, (bool, np.bool_)):
            kinds.append("n")  # a scalar bool adds a dim, as None does
        elif isinstance(e, (int, np.integer)) or (isinstance(e, Tensor) and e.ndim == 0 and not e.is_symbolic
                                                   and e.dtype.startswith("int")):
            kinds.append("i")
        elif isinstance(e, (Tensor, list, np.ndarray)):
            kinds.append("t")
        else:
            kinds.append("s")
    if "i" not in kinds or "t" not in kinds:
        return None
    both = [k for k, kind in enumerate(kinds) if kind in "it"]
    arrays = [k for k, kind in enumerate([kind for kind in kinds if kind != "i"]) if kind == "t"]
    if both == list(range(both[0], both[-1] + 1)) or arrays != list(range(arrays[0], arrays[-1] + 1)):
        return None
    ints = []
    for e, kind in zip(idx, kinds):
        if kind == "i" or kind == "e":
            ints.append(e)
        elif kind == "t" and _is_bool_index(e):
            ints.extend([slice(None)] * max(np.ndim(e) if not isinstance(e, Tensor) else e.ndim, 1))
        elif kind in "ts":
            ints.append(slice(None))
    return tuple(ints), tuple(e for e, kind in zip(idx, kinds) if kind != "i")


def _is_bool_index(e):
    return (e.dtype == "bool") if isinstance(e, Tensor) else np.asarray(e).dtype == np.bool_


@tensor_method("__getitem__")
def getitem(x, idx):
    """``x[idx]``: ints, slices, None, ..., bool masks and int tensors (PyTorch's rules: NumPy's,
    with integer indices applied before the index arrays)."""
    split = _split_ints(idx)
    if split is not None:
        return getitem(getitem(x, split[0]), split[1])
    spec, extra = _encode_index(idx)
    out = apply("getitem", x, *extra, index=spec)
    if out._view is not None and out.array is not None and _tensor_index(idx):
        # indexing with a tensor copies in PyTorch (advanced indexing), even a 0-d one read as an int
        out.array, out._view, out._base = out.array.copy(), None, None
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
    if isinstance(value, (int, float)):
        value = checked_fill(value, str(x.dtype))  # (uint8's -1 is 255, as PyTorch's)
    split = _split_ints(idx)
    if split is not None:
        setitem(getitem(x, split[0]), split[1], value)
        return x
    if x._view is not None:
        _views.fresh(x)
    spec, extra = _encode_index(idx)
    recording = (STATE.grad_enabled and (x.requires_grad or (isinstance(value, Tensor) and value.requires_grad)
                                         or (x._view is not None and x._view.root.requires_grad)))
    symbolic = x.is_symbolic or STATE.hooked or (isinstance(value, Tensor) and value.is_symbolic)
    if not recording and not symbolic and (x._view is None or _views.writeable(x.array)):
        v = value.array if isinstance(value, Tensor) else value
        x.array[tuple(_decode_host(spec, extra))] = v
        _INPLACE["bump"](x)
        return x
    return _INPLACE["write"](x, "x[idx] = v", lambda s: apply("setitem", s, value, *extra, index=spec), (value,),
                             needs_old=False)


# d2s.inplace (a layer above d2s.ops: it builds on them) hands its ``write`` and ``bump`` here
# when it loads
_INPLACE = {}


def _decode_host(spec, extra):
    return decode_index(spec, [e.array if isinstance(e, Tensor) else e for e in extra])



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


# ------------------------------------------------------------------ dim-wise indexing (PyTorch's)
# gather/scatter and the index_* family follow PyTorch: an index outside its dim raises
# (IndexOutOfRange, an IndexError and a RuntimeError) where numpy would wrap a negative one.
def _index_tensor(index):
    if isinstance(index, Tensor):
        if not str(index.dtype).startswith(("int", "uint")):
            raise TypeError(f"an index tensor must hold integers, got {index.dtype}")
        return index
    arr = np.asarray(index)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"index must hold integers, got {arr.dtype}")
    return _as_tensor(arr.astype(np.int64))


def _no_out(op, out):
    if out is not None:
        raise TypeError(f"{op}: out= is not supported by d2s; assign the result instead")


@tensor_method()
def gather(input, dim, index, *, sparse_grad=False, out=None):
    """Values of ``input`` picked along ``dim`` by ``index`` (``torch.gather``): ``index`` has
    as many dims as ``input``, the result has ``index``'s shape, and
    ``out[i][j] = input[index[i][j]][j]`` for ``dim=0``. An index outside the dim raises."""
    _no_out("gather", out)
    return apply("gather", _as_tensor(input), _index_tensor(index), axis=int(dim))


def _same_dtype(op, x, src):
    """PyTorch's error for a ``src`` of another dtype than the tensor it is written into (d2s
    would otherwise cast it silently, where PyTorch refuses)."""
    if src.dtype != x.dtype:
        raise RuntimeError(f"{op}(): expected self and src to have the same dtype, got {x.dtype} and {src.dtype}; "
                           f"cast one of them (src.to(self.dtype))")
    return src


def _src_tensor(src, value, like):
    if src is not None and value is not None:
        raise TypeError("scatter: give either src (a tensor) or value (a number), not both")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter: missing src (a tensor) or value (a number)")
    if isinstance(src, Tensor):
        return src
    if np.ndim(src) == 0:  # a number: the same value at every position of the index
        return full_like(like[1], src, dtype=like[0].dtype)
    return _as_tensor(src)


@tensor_method()
def scatter(input, dim, index, src=None, value=None, *, reduce=None, out=None):
    """A copy of ``input`` with ``src`` (a tensor, or a number ``value``) written at
    ``index`` along ``dim`` (``torch.scatter``); ``reduce='add'`` or ``'multiply'`` combines
    with the values there instead."""
    _no_out("scatter", out)
    x, index = _as_tensor(input), _index_tensor(index)
    src = _same_dtype("scatter", x, _src_tensor(src, value, (x, index)))
    if reduce is None:
        return apply("scatter", x, index, src, axis=int(dim))
    if reduce == "add":
        return apply("scatter_add", x, index, src, axis=int(dim))
    if reduce == "multiply":
        return apply("scatter_reduce", x, index, src, axis=int(dim), reduce="prod", include_self=True)
    raise ValueError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r} (scatter_reduce has the others)")


@tensor_method()
def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeated indices add up)."""
    x = _as_tensor(input)
    return apply("scatter_add", x, _index_tensor(index), _same_dtype("scatter_add", x, _as_tensor(src)), axis=int(dim))


_REDUCE_NAMES = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin"}


@tensor_method()
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """``input`` with the values of ``src`` reduced into the positions ``index`` names along
    ``dim`` (``torch.scatter_reduce``): ``reduce`` is 'sum', 'prod', 'mean', 'amax' or 'amin';
    without ``include_self`` the positions written ignore ``input``'s values."""
    _no_out("scatter_reduce", out)
    if reduce not in _REDUCE_NAMES:
        raise ValueError(f"scatter_reduce: reduce must be one of {', '.join(_REDUCE_NAMES)}, got {reduce!r}")
    x = _as_tensor(input)
    return apply("scatter_reduce", x, _index_tensor(index), _same_dtype("scatter_reduce", x, _as_tensor(src)),
                 axis=int(dim), reduce=reduce, include_self=bool(include_self))


@grad_rule("gather")
def _gather_grad(ctx, g):
    x, index = ctx.inputs
    return (apply("scatter_add", zeros_like(x), index, g, axis=ctx.attrs["axis"]), None)


def _src_grad(g, index, src, axis):
    """The gradient reaching ``src`` of a scatter: g at the positions it was written to (src
    beyond the index's shape was never read)."""
    gsrc = apply("gather", g, index, axis=axis)
    if tuple(_shape(gsrc)) != tuple(_shape(src)):
        spec = [["s", 0, n, None] for n in gsrc.shape]
        gsrc = apply("index_add", zeros_like(src), gsrc, index=spec)
    return gsrc


@grad_rule("scatter_add")
def _scatter_add_grad(ctx, g):
    base, index, src = ctx.inputs
    gsrc = _src_grad(g, index, src, ctx.attrs["axis"]) if _is_diff(src) else None
    return (g if _is_diff(base) else None, None, gsrc)


@grad_rule("scatter")
def _scatter_grad(ctx, g):
    base, index, src = ctx.inputs
    axis = ctx.attrs["axis"]
    gbase = apply("scatter", g, index, zeros_like(index, dtype=g.dtype), axis=axis) if _is_diff(base) else None
    gsrc = _src_grad(g, index, src, axis) if _is_diff(src) else None
    return (gbase, None, gsrc)


@grad_rule("scatter_reduce")
def _scatter_reduce_grad(ctx, g):
    base, index, src = ctx.inputs
    axis, reduce, include_self = ctx.attrs["axis"], ctx.attrs["reduce"], ctx.attrs.get("include_self", True)
    touched = apply("scatter", zeros_like(base, dtype="bool"), index, full_like(index, True, dtype="bool"), axis=axis)
    if reduce == "prod":
        return _scatter_prod_grad(ctx, g, touched)
    out = ctx.outputs[0] if ctx.outputs else apply("scatter_reduce", base, index, src, **ctx.attrs)
    if reduce == "sum":
        gb, share = g, g
    else:
        ones_b = where(touched, 1.0 if include_self else 0.0, 1.0) * ones_like(base, dtype=g.dtype)
        if reduce == "mean":
            count = apply("scatter_add", ones_b, index, ones_like(index, dtype=g.dtype), axis=axis)
            gb = share = g / count
        else:  # amax / amin: the gradient split evenly among the values equal to the result
            hit_b = cast(eq(base, out), g.dtype) * ones_b
            hit_s = cast(eq(src, apply("gather", out, index, axis=axis)), g.dtype)
            count = apply("scatter_add", hit_b, index, _crop_to(hit_s, index), axis=axis)
            share = g / where(count > 0, count, 1.0)
            gb = share * hit_b
    gbase = None
    if _is_diff(base):
        gbase = gb if include_self else where(touched, 0.0, g)
    gsrc = None
    if _is_diff(src):
        gsrc = _src_grad(share, index, src, axis)
        if reduce in ("amax", "amin"):
            gsrc = gsrc * hit_s
    return (gbase, None, gsrc)


def _scatter_prod_grad(ctx, g, touched):
    """PyTorch's gradient of reduce='prod' (scatter_reduce_backward): each factor gets the
    product of the others, computed without dividing by a zero -- a zero of ``input`` or a lone
    zero among the ``src`` values of a position is replaced by 1 and the product recomputed;
    a ``src`` value beside another zero gets 0."""
    base, index, src = ctx.inputs
    attrs = ctx.attrs
    axis, include_self = attrs["axis"], attrs.get("include_self", True)
    if STATE.grad_enabled and _is_diff(src):
        # the first derivative divides by values held fixed; its own derivative would be wrong
        # where two zeros meet (PyTorch refuses that case too)
        raise NotImplementedError("scatter_reduce: the double backward of reduce='prod' with respect to src "
                                  "is not supported by d2s")
    gbase = gsrc = None
    if _is_diff(base):
        masked_base = where(eq(base, 0), 1.0, base)
        gbase = g * apply("scatter_reduce", masked_base, index, src, **attrs) / masked_base
        if not include_self:
            gbase = where(touched, 0.0, g)
    if _is_diff(src):
        src_c = _crop_to(src, index)  # src beyond the index's shape is never read
        zero = eq(src_c, 0)
        n_zeros = apply("gather", apply("scatter_add", zeros_like(base), index, cast(zero, base.dtype), axis=axis),
                        index, axis=axis)
        lone = zero & eq(n_zeros, 1)
        masked_src = where(lone, 1.0, src_c)
        without_lone = apply("scatter_reduce", base, index, masked_src, **attrs)
        result = apply("scatter_reduce", base, index, src_c, **attrs)
        gsrc = where(lone, apply("gather", g * without_lone, index, axis=axis),
                     apply("gather", g * result, index, axis=axis) / where(zero, 1.0, src_c))
        if tuple(_shape(gsrc)) != tuple(_shape(src)):
            spec = [["s", 0, n, None] for n in gsrc.shape]
            gsrc = apply("index_add", zeros_like(src), gsrc, index=spec)
    return (gbase, None, gsrc)


def _crop_to(t, like):
    if tuple(_shape(t)) == tuple(_shape(like)):
        return t
    return getitem(t, tuple(slice(0, n) for n in like.shape))


non_differentiable("index_check", reason="indices are integers")


def _cropped_to(g, x, like, axis):
    """``x`` cut to ``like``'s size on every dim but ``axis`` (torch.gather reads that corner)."""
    nd = len(g.shape(x))
    if all(a == b and a is not None for i, (a, b) in enumerate(zip(g.shape(x), g.shape(like))) if i != axis):
        return x
    shp, t = g.tmp(), g.tmp()
    g.node("Shape", [like], [shp])
    others = [i for i in range(nd) if i != axis]
    ends = g.tmp()
    g.node("Gather", [shp, g.const(i64(others))], [ends], axis=0)
    g.node("Slice", [x, g.const(i64([0] * len(others))), ends, g.const(i64(others))], [t])
    g.types[t] = g.types[x].__class__(g.shape(like), g.dtype(x))
    return t


@onnx_converter("gather")
def _gather_onnx(g, op):
    x, index = op.inputs
    axis = int(op.attrs["axis"]) % len(g.shape(x))
    g.node("GatherElements", [_cropped_to(g, x, index, axis), g.cast(index, "int64")], op.outputs, axis=axis)


def _scatter_elements_onnx(reduction):
    def conv(g, op):
        base, index, src = op.inputs
        if op.type == "scatter_reduce":
            if not op.attrs.get("include_self", True) or op.attrs["reduce"] == "mean":
                raise g.unsupported(op, "scatter_reduce with include_self=False or reduce='mean' has no ONNX form")
            red = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}[op.attrs["reduce"]]
        else:
            red = reduction
        axis = int(op.attrs["axis"]) % len(g.shape(base))
        src = _cropped_to(g, src, index, -1)  # d2s reads src[:index.shape] (every dim, the axis included)
        attrs = {"reduction": red} if red != "none" else {}
        g.node("ScatterElements", [base, g.cast(index, "int64"), g.cast(src, g.dtype(base))], op.outputs,
               axis=axis, **attrs)
    return conv


onnx_converter("scatter_add")(_scatter_elements_onnx("add"))
onnx_converter("scatter")(_scatter_elements_onnx("none"))
onnx_converter("scatter_reduce")(_scatter_elements_onnx(None))


# ------------------------------------------------------------------ index_select family
def _checked(op, index, x, dim, negative=False):
    """``index`` with PyTorch's range check, made when the op runs (also in programs)."""
    return apply("index_check", index, x, axis=int(dim), negative=negative, op=op)


def _dim_of(op, x, dim):
    nd = x.ndim
    lim = max(nd, 1)
    if not -lim <= int(dim) < lim:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-lim}, {lim - 1}], but got {dim})")
    return int(dim) % lim


def _index_1d(op, index):
    index = _index_tensor(index)
    if index.ndim > 1:
        raise ValueError(f"{op}: index must be a 0-d or 1-d tensor, got shape {tuple(index.shape)}")
    return apply("reshape", index, shape=[-1]) if index.ndim == 0 else index


@tensor_method()
def index_select(input, dim, index, *, out=None):
    """The entries of ``input`` at positions ``index`` (a 1-d integer tensor) along ``dim``."""
    _no_out("index_select", out)
    x = _as_tensor(input)
    d = _dim_of("index_select", x, dim)
    index = _index_1d("index_select", index)
    if x.ndim == 0:
        return getitem(apply("reshape", x, shape=[1]), _checked("index_select", index, x, 0))
    return getitem(x, (slice(None),) * d + (_checked("index_select", index, x, d),))


@tensor_method()
def index_add(input, dim, index, source, *, alpha=1, out=None):
    """A copy of ``input`` with ``alpha * source`` added at positions ``index`` of ``dim``
    (repeated positions add up), as ``torch.index_add``."""
    _no_out("index_add", out)
    x = _as_tensor(input)
    src = _same_dtype("index_add", x, _as_tensor(source))
    if x.dtype.is_floating_point is False and x.dtype.is_complex is False and str(x.dtype) != "bool":
        alpha = int(alpha)  # PyTorch converts alpha to an integer input's dtype (1.5 adds source once)
    if alpha != 1:
        src = src * alpha
    return apply("index_add_dim", x, _index_1d("index_add", index), src, axis=_dim_of("index_add", x, dim))


@tensor_method()
def index_copy(input, dim, index, source, *, out=None):
    """A copy of ``input`` with ``source`` written at positions ``index`` of ``dim``."""
    _no_out("index_copy", out)
    x = _as_tensor(input)
    return apply("index_copy_dim", x, _index_1d("index_copy", index), _same_dtype("index_copy", x, _as_tensor(source)),
                 axis=_dim_of("index_copy", x, dim))


@tensor_method()
def index_fill(input, dim, index, value):
    """A copy of ``input`` with ``value`` (a number or 0-d tensor) at positions ``index`` of
    ``dim`` (negative positions count from the end, as in PyTorch)."""
    x = _as_tensor(input)
    d = _dim_of("index_fill", x, dim)
    index = _index_1d("index_fill", index)
    n = x.shape[d] if x.ndim else 1
    index = where(lt(index, 0), index + n, index)
    sel = index_select(x, d, index)
    src = full_like(sel, value) if not isinstance(value, Tensor) else zeros_like(sel) + cast(value, x.dtype)
    return apply("index_copy_dim", x, index, src, axis=d)


@grad_rule("index_add_dim")
def _index_add_dim_grad(ctx, g):
    x, index, src = ctx.inputs
    axis = ctx.attrs["axis"]
    gsrc = getitem(g, (slice(None),) * axis + (index,)) if _is_diff(src) and x.ndim else g if _is_diff(src) else None
    return (g if _is_diff(x) else None, None, gsrc)


@grad_rule("index_copy_dim")
def _index_copy_dim_grad(ctx, g):
    x, index, src = ctx.inputs
    axis = ctx.attrs["axis"]
    gx = apply("index_copy_dim", g, index, zeros_like(src, dtype=g.dtype), axis=axis) if _is_diff(x) else None
    gsrc = getitem(g, (slice(None),) * axis + (index,)) if _is_diff(src) and x.ndim else g if _is_diff(src) else None
    return (gx, None, gsrc)


@onnx_converter("index_check")
def _index_check_onnx(g, op):
    # ONNX has no error to raise: an index out of range is onnxruntime's error (or wraps, if negative)
    g.node("Identity", [op.inputs[0]], op.outputs)


def _index_dim_onnx(reduction):
    def conv(g, op):
        x, index, src = op.inputs
        nd = len(g.shape(x))
        axis = int(op.attrs["axis"]) % max(nd, 1)
        shape = [1] * nd
        shape[axis] = -1
        idx, full_idx, src_shape = g.tmp(), g.tmp(), g.tmp()
        g.node("Reshape", [g.cast(index, "int64"), g.const(i64(shape))], [idx])
        g.node("Shape", [src], [src_shape])
        g.node("Expand", [idx, src_shape], [full_idx])
        attrs = {"reduction": reduction} if reduction != "none" else {}
        g.node("ScatterElements", [x, full_idx, g.cast(src, g.dtype(x))], op.outputs, axis=axis, **attrs)
    return conv


onnx_converter("index_add_dim")(_index_dim_onnx("add"))
onnx_converter("index_copy_dim")(_index_dim_onnx("none"))
