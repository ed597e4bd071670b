"""One converter per d2s op type: how it is written as ONNX nodes (opset 18).

A converter is ``fn(g, op) -> None``: it reads ``op.inputs``/``op.outputs``/``op.attrs`` and
adds nodes to the graph context ``g`` (see ``export.GraphCtx``), naming its outputs exactly
``op.outputs`` so later nodes find them. ONNX wants both operands of an arithmetic node in one
dtype where d2s follows NumPy promotion, so converters cast operands first (``_promoted``).

Ops with no entry here have no ONNX form; the exporter names them in its error. Ops with no
inputs and no effect (``full``, ``arange``, ``eye``, ...) need no entry: the exporter computes
them once with their kernel and writes a constant.
"""
import numpy as np

from d2s_runtime.dtypes import result_type

CONVERTERS = {}

# Ops whose absence from ONNX is a fact, with the reason the error gives.
UNSUPPORTED = {
    "rand": "random draws have no ONNX form that reproduces d2s's generator; pass the noise as an input",
    "randn": "random draws have no ONNX form that reproduces d2s's generator; pass the noise as an input",
    "randint": "random draws have no ONNX form that reproduces d2s's generator; pass the noise as an input",
    "dropout_mask": "dropout draws random masks; call model.eval() before exporting",
    "guard": "a trace guard checks the traced path at run time, which ONNX cannot raise on; "
             "export with d2s.jit.trace(..., guards=False) or use to_static",
    "conv2d_grad_input": "gradient ops belong to backward programs; export the forward program",
    "conv2d_grad_weight": "gradient ops belong to backward programs; export the forward program",
    "max_pool2d_grad": "gradient ops belong to backward programs; export the forward program",
    "pad_grad": "gradient ops belong to backward programs; export the forward program",
    "randint_dyn": "random draws have no ONNX form that reproduces d2s's generator; pass the noise as an input",
    "print": "ONNX has no print; remove d2s.print (or print of tensors) from the exported function",
}


def converter(*names):
    def deco(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn
    return deco


def _i64(values):
    return np.asarray(values, dtype=np.int64)


def _promoted(g, names, dtype=None):
    """``names`` cast to one dtype (``dtype``, or NumPy's promotion of theirs)."""
    dtype = dtype or result_type(*(g.dtype(n) for n in names))
    return [g.cast(n, dtype) for n in names]


# NumPy arithmetic on two bool arrays is logic (True + True is True); ONNX's arithmetic nodes
# take no bool, so these ops write their logical twin when the result is bool.
_BOOL_FORM = {"add": "Or", "maximum": "Or", "mul": "And", "minimum": "And"}


def _elementwise(d2s_name, onnx_name, compute_in_output_dtype=True):
    @converter(d2s_name)
    def conv(g, op):
        dt = g.dtype(op.outputs[0]) if compute_in_output_dtype else None
        name = _BOOL_FORM.get(d2s_name, onnx_name) if dt == "bool" else onnx_name
        g.node(name, _promoted(g, op.inputs, dt), op.outputs)


for _d, _o in (("add", "Add"), ("sub", "Sub"), ("mul", "Mul"), ("div", "Div"), ("maximum", "Max"),
               ("minimum", "Min"), ("matmul", "MatMul"), ("neg", "Neg"), ("abs", "Abs"), ("sign", "Sign"),
               ("floor", "Floor"), ("relu", "Relu"), ("exp", "Exp"), ("log", "Log"), ("sqrt", "Sqrt"),
               ("sin", "Sin"), ("cos", "Cos"), ("tanh", "Tanh"), ("sigmoid", "Sigmoid"), ("erf", "Erf"),
               ("stop_gradient", "Identity"), ("to_device", "Identity")):
    _elementwise(_d, _o)

for _d, _o in (("eq", "Equal"), ("lt", "Less"), ("le", "LessOrEqual"), ("gt", "Greater"),
               ("ge", "GreaterOrEqual")):
    _elementwise(_d, _o, compute_in_output_dtype=False)


@converter("ne")
def _ne(g, op):
    t = g.tmp()
    g.node("Equal", _promoted(g, op.inputs), [t])
    g.node("Not", [t], op.outputs)


@converter("logical_not")
def _not(g, op):
    g.node("Not" if g.dtype(op.inputs[0]) == "bool" else "BitwiseNot", op.inputs, op.outputs)


def _bitwise(bool_name, int_name):
    def conv(g, op):
        dt = g.dtype(op.outputs[0])
        g.node(bool_name if dt == "bool" else int_name, _promoted(g, op.inputs, dt), op.outputs)
    return conv


CONVERTERS["bitwise_and"] = _bitwise("And", "BitwiseAnd")
CONVERTERS["bitwise_or"] = _bitwise("Or", "BitwiseOr")
CONVERTERS["bitwise_xor"] = _bitwise("Xor", "BitwiseXor")


@converter("where")
def _where(g, op):
    c = g.cast(op.inputs[0], "bool")
    g.node("Where", [c] + _promoted(g, op.inputs[1:], g.dtype(op.outputs[0])), op.outputs)


@converter("pow")
def _pow(g, op):
    g.node("Pow", _promoted(g, op.inputs, g.dtype(op.outputs[0])), op.outputs)


@converter("mod")
def _mod(g, op):
    dt = g.dtype(op.outputs[0])
    a, b = _promoted(g, op.inputs, dt)
    if not dt.startswith("float"):
        g.node("Mod", [a, b], op.outputs, fmod=0)  # integer Mod takes the divisor's sign, like NumPy
        return
    # ONNX float Mod is C's fmod (the dividend's sign); NumPy's takes the divisor's: add b
    # where the remainder is non-zero and its sign differs from b's
    r, zero = g.tmp(), g.const(np.zeros((), dtype=dt))
    g.node("Mod", [a, b], [r], fmod=1)
    r_neg, b_neg, differ, is_zero, nonzero, fix, shifted = (g.tmp() for _ in range(7))
    g.node("Less", [r, zero], [r_neg])
    g.node("Less", [b, zero], [b_neg])
    g.node("Xor", [r_neg, b_neg], [differ])
    g.node("Equal", [r, zero], [is_zero])
    g.node("Not", [is_zero], [nonzero])
    g.node("And", [differ, nonzero], [fix])
    g.node("Add", [r, b], [shifted])
    g.node("Where", [fix, shifted, r], op.outputs)


@converter("floordiv")
def _floordiv(g, op):
    dt = g.dtype(op.outputs[0])
    a, b = _promoted(g, op.inputs, dt)
    if dt.startswith("float"):
        t = g.tmp()
        g.node("Div", [a, b], [t])
        g.node("Floor", [t], op.outputs)
        return
    # ONNX integer Div truncates toward zero; (a - a mod b) / b is exact and floors, as NumPy does
    r, d = g.tmp(), g.tmp()
    g.node("Mod", [a, b], [r], fmod=0)
    g.node("Sub", [a, r], [d])
    g.node("Div", [d, b], op.outputs)


@converter("cast")
def _cast(g, op):
    g.node("Cast", op.inputs, op.outputs, to=g.onnx_dtype(op.attrs["dtype"]))


@converter("full_like")
def _full_like(g, op):
    # zeros_like/ones_like of a value whose shape may be known only at run time
    dt = g.dtype(op.outputs[0])
    shape = g.tmp()
    g.node("Shape", op.inputs, [shape])
    value = g.x.numpy_helper.from_array(np.asarray([op.attrs.get("value", 0.0)], dtype=dt))
    g.node("ConstantOfShape", [shape], op.outputs, value=value)


@converter("full_dims")
def _full_dims(g, op):
    # a fill whose unknown sizes are 0-d inputs: assemble the shape, then ConstantOfShape
    dt = g.dtype(op.outputs[0])
    dims, parts = iter(op.inputs), []
    for d in op.attrs["shape"]:
        if d == -1:
            c, u = g.tmp(), g.tmp()
            g.node("Cast", [next(dims)], [c], to=g.onnx_dtype("int64"))
            g.node("Unsqueeze", [c, g.const(_i64([0]))], [u])
            parts.append(u)
        else:
            parts.append(g.const(_i64([d])))
    shape = g.tmp()
    g.node("Concat", parts, [shape], axis=0)
    value = g.x.numpy_helper.from_array(np.asarray([op.attrs.get("value", 0.0)], dtype=dt))
    g.node("ConstantOfShape", [shape], op.outputs, value=value)


@converter("arange_dyn")
def _arange_dyn(g, op):
    dt = g.dtype(op.outputs[0])
    ins = []
    for n in op.inputs:  # Range needs start, limit and delta of the output's dtype
        if g.dtype(n) != dt:
            c = g.tmp()
            g.node("Cast", [n], [c], to=g.onnx_dtype(dt))
            n = c
        ins.append(n)
    g.node("Range", ins, op.outputs)


@converter("clip")
def _clip(g, op):
    x, dt = op.inputs[0], g.dtype(op.outputs[0])
    if g.dtype(x) != dt:  # an integer tensor clipped to float bounds computes in float32
        c = g.tmp()
        g.node("Cast", [x], [c], to=g.onnx_dtype(dt))
        x = c
    lo, hi = op.attrs.get("lo"), op.attrs.get("hi")
    ins = [x, g.const(np.asarray(lo, dtype=dt)) if lo is not None else "",
           g.const(np.asarray(hi, dtype=dt)) if hi is not None else ""]
    while ins[-1] == "":
        ins.pop()
    g.node("Clip", ins, op.outputs)


def _axes_input(g, axes):
    return [g.const(_i64(axes))] if axes is not None else []


def _reduce(onnx_name):
    def conv(g, op):
        axes = op.attrs.get("axes")
        if axes is not None and len(axes) == 0:  # ONNX reads empty axes as "all"; d2s as "none"
            g.node("Identity", [g.cast(op.inputs[0], g.dtype(op.outputs[0]))], op.outputs)
            return
        x = g.cast(op.inputs[0], g.dtype(op.outputs[0]))
        g.node(onnx_name, [x] + _axes_input(g, axes), op.outputs,
               keepdims=int(bool(op.attrs.get("keepdims", False))))
    return conv


for _d, _o in (("reduce_sum", "ReduceSum"), ("reduce_mean", "ReduceMean"), ("reduce_max", "ReduceMax"),
               ("reduce_min", "ReduceMin"), ("reduce_prod", "ReduceProd"), ("logsumexp", "ReduceLogSumExp")):
    CONVERTERS[_d] = _reduce(_o)


def _logical_reduce(onnx_name):
    def conv(g, op):
        x = g.cast(op.inputs[0], "int64")
        r = g.tmp()
        g.node(onnx_name, [x] + _axes_input(g, op.attrs.get("axes")), [r],
               keepdims=int(bool(op.attrs.get("keepdims", False))))
        g.node("Cast", [r], op.outputs, to=g.onnx_dtype("bool"))
    return conv


CONVERTERS["reduce_any"] = _logical_reduce("ReduceMax")
CONVERTERS["reduce_all"] = _logical_reduce("ReduceMin")


def _arg(onnx_name):
    def conv(g, op):
        axis = op.attrs.get("axis")
        x = op.inputs[0]
        keep = int(bool(op.attrs.get("keepdims", False)))
        if axis is not None:
            g.node(onnx_name, [x], op.outputs, axis=int(axis), keepdims=keep)
            return
        flat, r = g.tmp(), g.tmp()
        g.node("Reshape", [x, g.const(_i64([-1]))], [flat])
        g.node(onnx_name, [flat], [r], axis=0, keepdims=0)
        shape = [1] * len(g.shape(x)) if keep else []
        g.node("Reshape", [r, g.const(_i64(shape))], op.outputs)
    return conv


CONVERTERS["argmax"] = _arg("ArgMax")
CONVERTERS["argmin"] = _arg("ArgMin")


@converter("reshape")
def _reshape(g, op):
    g.node("Reshape", [op.inputs[0], g.const(_i64(op.attrs["shape"]))], op.outputs, allowzero=1)


@converter("reshape_dims")
def _reshape_dims(g, op):
    parts, dims = [], iter(op.inputs[1:])
    for s in op.attrs["shape"]:
        if s is None:
            d = g.tmp()
            g.node("Reshape", [g.cast(next(dims), "int64"), g.const(_i64([1]))], [d])
            parts.append(d)
        else:
            parts.append(g.const(_i64([s])))
    shape = g.tmp()
    g.node("Concat", parts, [shape], axis=0)
    g.node("Reshape", [op.inputs[0], shape], op.outputs, allowzero=1)


@converter("reshape_like")
def _reshape_like(g, op):
    s = g.tmp()
    g.node("Shape", [op.inputs[1]], [s])
    g.node("Reshape", [op.inputs[0], s], op.outputs, allowzero=1)


@converter("transpose")
def _transpose(g, op):
    nd = len(g.shape(op.inputs[0]))
    perm = op.attrs.get("perm")
    perm = list(reversed(range(nd))) if perm is None else [int(p) % max(nd, 1) for p in perm]
    g.node("Transpose", op.inputs, op.outputs, perm=perm)


@converter("broadcast_to")
def _broadcast_to(g, op):
    g.node("Expand", [op.inputs[0], g.const(_i64(op.attrs["shape"]))], op.outputs)


@converter("expand_dims")
def _expand_dims(g, op):
    g.node("Unsqueeze", [op.inputs[0], g.const(_i64([op.attrs["axis"]]))], op.outputs)


@converter("squeeze")
def _squeeze(g, op):
    axes = op.attrs.get("axes")
    shape = g.shape(op.inputs[0])
    if axes is None:  # the dims the shape rule squeezed: those known to be 1
        axes = [i for i, d in enumerate(shape) if d == 1]
    if not axes:  # ONNX squeezes every 1-sized dim when given no axes
        g.node("Identity", op.inputs, op.outputs)
        return
    g.node("Squeeze", [op.inputs[0], g.const(_i64(axes))], op.outputs)


@converter("concat")
def _concat(g, op):
    g.node("Concat", _promoted(g, op.inputs, g.dtype(op.outputs[0])), op.outputs, axis=int(op.attrs.get("axis", 0)))


@converter("stack")
def _stack(g, op):
    axis = int(op.attrs.get("axis", 0))
    ax = g.const(_i64([axis]))
    parts = []
    for n in _promoted(g, op.inputs, g.dtype(op.outputs[0])):
        t = g.tmp()
        g.node("Unsqueeze", [n, ax], [t])
        parts.append(t)
    g.node("Concat", parts, op.outputs, axis=axis)


@converter("split")
def _split(g, op):
    g.node("Split", [op.inputs[0], g.const(_i64(op.attrs["sections"]))], op.outputs,
           axis=int(op.attrs.get("axis", 0)))


@converter("dim")
def _dim(g, op):
    s = g.tmp()
    g.node("Shape", op.inputs, [s])
    g.node("Gather", [s, g.const(_i64(op.attrs["axis"]))], op.outputs, axis=0)


# ------------------------------------------------------------------ indexing
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


def lower_getitem(g, op, x, spec, arrays, out):
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
        g.node("Slice", [cur, g.const(_i64(starts)), g.const(_i64(ends)), g.const(_i64(axes)),
                         g.const(_i64(steps))], [t])
        cur = t
    if squeeze:
        t = g.tmp()
        g.node("Squeeze", [cur, g.const(_i64(squeeze))], [t])
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
        g.node("Unsqueeze", [cur, g.const(_i64(new_axes))], [t])
        cur = t
    g.node("Identity", [cur], [out])


@converter("getitem")
def _getitem(g, op):
    lower_getitem(g, op, op.inputs[0], op.attrs["index"], op.inputs[1:], op.outputs[0])


def _scatter(reduction):
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
        lower_getitem(g, op, iota, op.attrs["index"], arrays, sel)
        g.node("Shape", [sel], [sel_shape])
        g.node("Expand", [g.cast(v, dt), sel_shape], [vb])
        g.node("Reshape", [vb, g.const(_i64([-1]))], [vflat])
        idx = g.tmp()
        g.node("Reshape", [sel, g.const(_i64([-1]))], [idx])
        g.node("Reshape", [x, g.const(_i64([-1]))], [xflat])
        attrs = {"reduction": reduction} if reduction != "none" else {}
        g.node("ScatterElements", [xflat, idx, vflat], [scattered], axis=0, **attrs)
        g.node("Reshape", [scattered, shape], op.outputs)
    return conv


CONVERTERS["setitem"] = _scatter("none")
CONVERTERS["index_add"] = _scatter("add")


# ------------------------------------------------------------------ nn
@converter("softmax")
def _softmax(g, op):
    g.node("Softmax", [g.cast(op.inputs[0], g.dtype(op.outputs[0]))], op.outputs, axis=int(op.attrs.get("axis", -1)))


@converter("log_softmax")
def _log_softmax(g, op):
    g.node("LogSoftmax", [g.cast(op.inputs[0], g.dtype(op.outputs[0]))], op.outputs,
           axis=int(op.attrs.get("axis", -1)))


@converter("cumsum")
def _cumsum(g, op):
    x = g.cast(op.inputs[0], g.dtype(op.outputs[0]))
    if not g.shape(op.inputs[0]):
        g.node("Identity", [x], op.outputs)
        return
    g.node("CumSum", [x, g.const(_i64(op.attrs["axis"]))], op.outputs,
           reverse=int(bool(op.attrs.get("reverse", False))))


def _cropped_to(g, x, like, axis):
    """``x`` cut to ``like``'s size on every dim but ``axis`` (torch.gather reads that corner)."""
    nd = len(g.shape(x))
    if all(a == b and a is not None for i, (a, b) in enumerate(zip(g.shape(x), g.shape(like))) if i != axis):
        return x
    shp, t = g.tmp(), g.tmp()
    g.node("Shape", [like], [shp])
    others = [i for i in range(nd) if i != axis]
    ends = g.tmp()
    g.node("Gather", [shp, g.const(_i64(others))], [ends], axis=0)
    g.node("Slice", [x, g.const(_i64([0] * len(others))), ends, g.const(_i64(others))], [t])
    g.types[t] = g.types[x].__class__(g.shape(like), g.dtype(x))
    return t


@converter("gather")
def _gather(g, op):
    x, index = op.inputs
    axis = int(op.attrs["axis"]) % len(g.shape(x))
    g.node("GatherElements", [_cropped_to(g, x, index, axis), g.cast(index, "int64")], op.outputs, axis=axis)


@converter("scatter_add")
def _scatter_add(g, op):
    base, index, src = op.inputs
    axis = int(op.attrs["axis"]) % len(g.shape(base))
    # d2s adds src[:index.shape] (every dim, the axis included)
    src = _cropped_to(g, src, index, -1)
    g.node("ScatterElements", [base, g.cast(index, "int64"), g.cast(src, g.dtype(base))], op.outputs,
           axis=axis, reduction="add")


@converter("one_hot")
def _one_hot(g, op):
    vals = g.const(np.asarray([0, 1], dtype=g.dtype(op.outputs[0])))
    g.node("OneHot", [op.inputs[0], g.const(np.asarray(op.attrs["num_classes"], dtype=np.int64)), vals],
           op.outputs, axis=-1)


def _pair(v):
    return [int(v), int(v)] if isinstance(v, int) else [int(a) for a in v]


@converter("conv2d")
def _conv2d(g, op):
    pad = _pair(op.attrs.get("padding", 0))
    g.node("Conv", _promoted(g, op.inputs, g.dtype(op.outputs[0])), op.outputs,
           strides=_pair(op.attrs.get("stride", 1)), pads=pad + pad)


@converter("max_pool2d")
def _max_pool2d(g, op):
    k = _pair(op.attrs.get("kernel_size"))
    stride = op.attrs.get("stride")
    pad = _pair(op.attrs.get("padding", 0))
    g.node("MaxPool", op.inputs, op.outputs, kernel_shape=k, strides=_pair(stride if stride is not None else k),
           pads=pad + pad)


# ------------------------------------------------------------------ pad, identity, shape
_ONNX_PAD_MODE = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


@converter("pad")
def _pad(g, op):
    pads = op.attrs["pads"]
    mode = op.attrs.get("mode", "constant")
    ins = [op.inputs[0], g.const(_i64([b for b, _ in pads] + [e for _, e in pads]))]
    if mode == "constant":
        ins.append(g.const(np.asarray(op.attrs.get("value", 0), dtype=g.dtype(op.inputs[0]))))
    g.node("Pad", ins, op.outputs, mode=_ONNX_PAD_MODE[mode])


@converter("identity")
def _identity(g, op):
    g.node("Identity", op.inputs, op.outputs)


@converter("shape")
def _shape(g, op):
    g.node("Shape", op.inputs, op.outputs)
