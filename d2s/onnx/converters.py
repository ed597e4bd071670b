"""One converter per d2s op type: how it is written as ONNX nodes (opset 18).

A converter is ``fn(g, op) -> None``: it reads ``op.inputs``/``op.outputs``/``op.attrs`` and
adds nodes to the graph context ``g`` (see ``export.GraphCtx``), naming its outputs exactly
``op.outputs`` so later nodes find them. Ops with no entry here have no ONNX form; the
exporter names them in its error.
"""
import numpy as np

CONVERTERS = {}


def converter(*names):
    def deco(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn
    return deco


def _simple(d2s_name, onnx_name):
    @converter(d2s_name)
    def conv(g, op):
        g.node(onnx_name, op.inputs, op.outputs)


for _d, _o in (("add", "Add"), ("sub", "Sub"), ("mul", "Mul"), ("neg", "Neg"), ("exp", "Exp"),
               ("log", "Log"), ("sqrt", "Sqrt"), ("sin", "Sin"), ("cos", "Cos"), ("tanh", "Tanh"),
               ("sigmoid", "Sigmoid"), ("relu", "Relu"), ("abs", "Abs"), ("sign", "Sign"),
               ("floor", "Floor"), ("maximum", "Max"), ("minimum", "Min"), ("eq", "Equal"),
               ("lt", "Less"), ("le", "LessOrEqual"), ("gt", "Greater"), ("ge", "GreaterOrEqual"),
               ("matmul", "MatMul"), ("where", "Where"), ("stop_gradient", "Identity"),
               ("to_device", "Identity")):
    _simple(_d, _o)


@converter("ne")
def _ne(g, op):
    t = g.tmp()
    g.node("Equal", op.inputs, [t])
    g.node("Not", [t], op.outputs)


@converter("logical_not")
def _not(g, op):
    if g.dtype(op.inputs[0]) == "bool":
        g.node("Not", op.inputs, op.outputs)
    else:
        g.node("BitwiseNot", op.inputs, op.outputs)


for _d, _b, _i in (("bitwise_and", "And", "BitwiseAnd"), ("bitwise_or", "Or", "BitwiseOr"),
                   ("bitwise_xor", "Xor", "BitwiseXor")):
    def _mk(b, i):
        def conv(g, op):
            g.node(b if g.dtype(op.inputs[0]) == "bool" else i, op.inputs, op.outputs)
        return conv
    CONVERTERS[_d] = _mk(_b, _i)


def _cast_inputs_to_out(g, op):
    out_dt = g.dtype(op.outputs[0])
    names = []
    for n in op.inputs:
        if g.dtype(n) != out_dt:
            c = g.tmp()
            g.node("Cast", [n], [c], to=g.onnx_dtype(out_dt))
            names.append(c)
        else:
            names.append(n)
    return names


@converter("div")
def _div(g, op):
    g.node("Div", _cast_inputs_to_out(g, op), op.outputs)


@converter("pow")
def _pow(g, op):
    g.node("Pow", _cast_inputs_to_out(g, op), op.outputs)


@converter("mod")
def _mod(g, op):
    dt = g.dtype(op.outputs[0])
    g.node("Mod", _cast_inputs_to_out(g, op), op.outputs, fmod=1 if dt.startswith("float") else 0)
    if dt.startswith("float"):
        # ONNX fmod keeps the dividend's sign; NumPy's mod keeps the divisor's: r + b where signs differ
        raise g.unsupported(op, "float modulo (ONNX Mod has C fmod semantics)")


@converter("floordiv")
def _floordiv(g, op):
    a, b = _cast_inputs_to_out(g, op)
    if g.dtype(op.outputs[0]).startswith("float"):
        t = g.tmp()
        g.node("Div", [a, b], [t])
        g.node("Floor", [t], op.outputs)
    else:
        raise g.unsupported(op, "integer floor division (ONNX Div truncates toward zero)")


@converter("cast")
def _cast(g, op):
    g.node("Cast", op.inputs, op.outputs, to=g.onnx_dtype(op.attrs["dtype"]))


@converter("clip")
def _clip(g, op):
    dt = g.dtype(op.inputs[0])
    lo, hi = op.attrs.get("lo"), op.attrs.get("hi")
    ins = [op.inputs[0], g.const(np.asarray(lo, dtype=dt)) if lo is not None else "",
           g.const(np.asarray(hi, dtype=dt)) if hi is not None else ""]
    while ins and ins[-1] == "":
        ins.pop()
    g.node("Clip", ins, op.outputs)


def _reduce(onnx_name):
    def conv(g, op):
        axes = op.attrs.get("axes")
        ins = [op.inputs[0]]
        if axes is not None:
            ins.append(g.const(np.asarray(axes, dtype=np.int64)))
        x = ins[0]
        if onnx_name in ("ReduceSum", "ReduceProd") and g.dtype(x) in ("bool", "int32"):
            c = g.tmp()
            g.node("Cast", [x], [c], to=g.onnx_dtype("int64"))
            ins[0] = c
        if onnx_name == "ReduceMean" and not g.dtype(x).startswith("float"):
            c = g.tmp()
            g.node("Cast", [x], [c], to=g.onnx_dtype(g.dtype(op.outputs[0])))
            ins[0] = c
        g.node(onnx_name, ins, op.outputs, keepdims=int(bool(op.attrs.get("keepdims", False))))
    return conv


for _d, _o in (("reduce_sum", "ReduceSum"), ("reduce_mean", "ReduceMean"), ("reduce_max", "ReduceMax"),
               ("reduce_min", "ReduceMin"), ("reduce_prod", "ReduceProd")):
    CONVERTERS[_d] = _reduce(_o)


def _logical_reduce(kind):
    def conv(g, op):
        c = g.tmp()
        g.node("Cast", [op.inputs[0]], [c], to=g.onnx_dtype("int64"))
        axes = op.attrs.get("axes")
        ins = [c] + ([g.const(np.asarray(axes, dtype=np.int64))] if axes is not None else [])
        r = g.tmp()
        g.node("ReduceMax" if kind == "any" else "ReduceMin", ins, [r],
               keepdims=int(bool(op.attrs.get("keepdims", False))))
        g.node("Cast", [r], op.outputs, to=g.onnx_dtype("bool"))
    return conv


CONVERTERS["reduce_any"] = _logical_reduce("any")
CONVERTERS["reduce_all"] = _logical_reduce("all")


def _arg(onnx_name):
    def conv(g, op):
        axis = op.attrs.get("axis")
        x = op.inputs[0]
        keep = int(bool(op.attrs.get("keepdims", False)))
        if axis is None:
            f = g.tmp()
            g.node("Reshape", [x, g.const(np.asarray([-1], dtype=np.int64))], [f])
            if keep:
                r = g.tmp()
                g.node(onnx_name, [f], [r], axis=0, keepdims=0)
                shape = [1] * len(g.shape(x))
                g.node("Reshape", [r, g.const(np.asarray(shape, dtype=np.int64))], op.outputs)
            else:
                g.node(onnx_name, [f], op.outputs, axis=0, keepdims=0)
        else:
            g.node(onnx_name, [x], op.outputs, axis=int(axis), keepdims=keep)
    return conv


CONVERTERS["argmax"] = _arg("ArgMax")
CONVERTERS["argmin"] = _arg("ArgMin")


@converter("reshape")
def _reshape(g, op):
    shape = op.attrs["shape"]
    if any(not isinstance(d, int) for d in shape):
        raise g.unsupported(op, f"reshape to a shape with symbolic entries {shape}")
    g.node("Reshape", [op.inputs[0], g.const(np.asarray(shape, dtype=np.int64))], op.outputs, allowzero=1)


@converter("reshape_like")
def _reshape_like(g, op):
    s = g.tmp()
    g.node("Shape", [op.inputs[1]], [s])
    g.node("Reshape", [op.inputs[0], s], op.outputs)


@converter("transpose")
def _transpose(g, op):
    perm = op.attrs.get("perm")
    if perm is None:
        perm = list(reversed(range(len(g.shape(op.inputs[0])))))
    g.node("Transpose", op.inputs, op.outputs, perm=[int(p) for p in perm])


@converter("broadcast_to")
def _broadcast_to(g, op):
    g.node("Expand", [op.inputs[0], g.const(np.asarray(op.attrs["shape"], dtype=np.int64))], op.outputs)


@converter("expand_dims")
def _expand_dims(g, op):
    g.node("Unsqueeze", [op.inputs[0], g.const(np.asarray([op.attrs["axis"]], dtype=np.int64))], op.outputs)


@converter("squeeze")
def _squeeze(g, op):
    axes = op.attrs.get("axes")
    if axes is None:
        axes = [i for i, d in enumerate(g.shape(op.inputs[0])) if d == 1]
    g.node("Squeeze", [op.inputs[0], g.const(np.asarray(axes, dtype=np.int64))], op.outputs)


@converter("concat")
def _concat(g, op):
    g.node("Concat", op.inputs, op.outputs, axis=int(op.attrs.get("axis", 0)))


@converter("stack")
def _stack(g, op):
    axis = int(op.attrs.get("axis", 0))
    ax = g.const(np.asarray([axis], dtype=np.int64))
    parts = []
    for n in op.inputs:
        t = g.tmp()
        g.node("Unsqueeze", [n, ax], [t])
        parts.append(t)
    g.node("Concat", parts, op.outputs, axis=axis)


@converter("split")
def _split(g, op):
    g.node("Split", [op.inputs[0], g.const(np.asarray(op.attrs["sections"], dtype=np.int64))], op.outputs,
           axis=int(op.attrs.get("axis", 0)))


@converter("constant")
def _constant(g, op):
    arr = np.asarray(op.attrs["value"], dtype=op.attrs["dtype"]).reshape(op.attrs.get("shape", ()))
    g.node("Constant", [], op.outputs, value=g.tensor_proto(arr))


@converter("full")
def _full(g, op):
    arr = np.full(op.attrs["shape"], op.attrs.get("value", 0), dtype=op.attrs.get("dtype", "float32"))
    g.node("Constant", [], op.outputs, value=g.tensor_proto(arr))


@converter("dim")
def _dim(g, op):
    s = g.tmp()
    g.node("Shape", op.inputs, [s])
    g.node("Gather", [s, g.const(np.asarray(op.attrs["axis"], dtype=np.int64))], op.outputs, axis=0)


@converter("getitem")
def _getitem(g, op):
    """Ints, slices, None and Ellipsis become Slice/Squeeze/Unsqueeze; a single integer index
    array becomes Gather. Other advanced indexing has no direct ONNX form here."""
    spec = op.attrs["index"]
    x = op.inputs[0]
    ndim = len(g.shape(x))
    consumed = sum(1 for e in spec if e[0] in ("i", "s", "t"))
    entries = []
    for e in spec:
        if e[0] == "e":
            entries.extend([["s", None, None, None]] * (ndim - consumed))
        else:
            entries.append(e)
    arrays = [e for e in entries if e[0] == "t"]
    if arrays and (len(arrays) > 1 or g.dtype(op.inputs[1 + arrays[0][1]]) == "bool"):
        raise g.unsupported(op, "indexing with bool masks or several index arrays")
    starts, ends, axes, steps, squeeze, unsq, gather = [], [], [], [], [], [], None
    dim = 0
    out_dim = 0
    for e in entries:
        if e[0] == "n":
            unsq.append(out_dim)
            out_dim += 1
            continue
        if e[0] == "i":
            k = e[1]
            starts.append(k)
            ends.append(k + 1 if k != -1 else np.iinfo(np.int64).max)
            axes.append(dim)
            steps.append(1)
            squeeze.append(dim)
        elif e[0] == "s":
            st, en, sp = e[1], e[2], e[3] if e[3] is not None else 1
            if (st, en, sp) != (None, None, 1):
                big = np.iinfo(np.int64).max
                starts.append(st if st is not None else (0 if sp > 0 else -1))
                ends.append(en if en is not None else (big if sp > 0 else -big))
                axes.append(dim)
                steps.append(sp)
            out_dim += 1
        else:
            gather = (dim, op.inputs[1 + e[1]])
            out_dim += 1
        dim += 1
    cur = x
    if starts:
        t = g.tmp()
        g.node("Slice", [cur, g.const(np.asarray(starts, np.int64)), g.const(np.asarray(ends, np.int64)),
                         g.const(np.asarray(axes, np.int64)), g.const(np.asarray(steps, np.int64))], [t])
        cur = t
    if gather is not None:
        t = g.tmp()
        g.node("Gather", [cur, gather[1]], [t], axis=gather[0])
        cur = t
        if len(g.shape(gather[1])) != 1:
            raise g.unsupported(op, "indexing with a multi-dimensional index array")
    if squeeze:
        t = g.tmp()
        g.node("Squeeze", [cur, g.const(np.asarray(squeeze, np.int64))], [t])
        cur = t
    if unsq:
        t = g.tmp()
        g.node("Unsqueeze", [cur, g.const(np.asarray(unsq, np.int64))], [t])
        cur = t
    g.node("Identity", [cur], op.outputs)


@converter("softmax")
def _softmax(g, op):
    g.node("Softmax", op.inputs, op.outputs, axis=int(op.attrs.get("axis", -1)))


@converter("log_softmax")
def _log_softmax(g, op):
    g.node("LogSoftmax", op.inputs, op.outputs, axis=int(op.attrs.get("axis", -1)))


@converter("logsumexp")
def _logsumexp(g, op):
    axes = op.attrs.get("axes", op.attrs.get("axis"))
    if isinstance(axes, int):
        axes = [axes]
    ins = [op.inputs[0]] + ([g.const(np.asarray(axes, dtype=np.int64))] if axes is not None else [])
    g.node("ReduceLogSumExp", ins, op.outputs, keepdims=int(bool(op.attrs.get("keepdims", False))))


@converter("cumsum")
def _cumsum(g, op):
    g.node("CumSum", [op.inputs[0], g.const(np.asarray(op.attrs["axis"], dtype=np.int64))], op.outputs)


@converter("gather")
def _gather(g, op):
    g.node("GatherElements", op.inputs, op.outputs, axis=int(op.attrs["axis"]))


@converter("one_hot")
def _one_hot(g, op):
    n = op.attrs.get("num_classes")
    vals = g.const(np.asarray([0, 1], dtype=g.dtype(op.outputs[0])))
    g.node("OneHot", [op.inputs[0], g.const(np.asarray(n, dtype=np.int64)), vals], op.outputs, axis=-1)


def _pair(v):
    return [int(v), int(v)] if isinstance(v, int) else [int(a) for a in v]


@converter("conv2d")
def _conv2d(g, op):
    pad = _pair(op.attrs.get("padding", 0))
    g.node("Conv", op.inputs, op.outputs, strides=_pair(op.attrs.get("stride", 1)), pads=pad + pad)


@converter("max_pool2d")
def _max_pool2d(g, op):
    k = _pair(op.attrs.get("kernel_size"))
    stride = op.attrs.get("stride")
    pad = _pair(op.attrs.get("padding", 0))
    g.node("MaxPool", op.inputs, op.outputs, kernel_shape=k, strides=_pair(stride if stride is not None else k),
           pads=pad + pad)
