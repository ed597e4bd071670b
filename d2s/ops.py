"""The public tensor functions (``d2s.add``, ``d2s.sum``, ...) and Tensor's operators and methods.

Each function is a thin call of :func:`d2s.dispatch.apply` on a registered primitive, or a
composition of such calls; composites get their gradients from their parts.
"""
import builtins

import numpy as np

from d2s_runtime.device import get_xp

from ._state import HOOKED_THREADS, STATE
from .dispatch import apply
from .dtypes import as_dtype
from .tensor import Tensor, tensor

_float32 = "float32"


# ------------------------------------------------------------------ helpers
def _axes(axis):
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    return [int(axis)]


def _shape_arg(shape):
    """zeros(2, 3), zeros((2, 3)) and zeros([2, 3]) all mean shape (2, 3); a dim may be a
    symbolic 0-d tensor (``x.shape[0]`` of a dynamic dim), kept as is."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    if len(shape) == 1 and isinstance(shape[0], Tensor) and shape[0].ndim == 1:
        shape = _dims_of_shape_tensor(shape[0])
    return [d if _is_symbolic(d) else int(d) for d in shape]


def _dims_of_shape_tensor(t):
    """The dims a 1-D integer tensor holds (``d2s.zeros(x_shape_tensor)``): Python ints when
    it is concrete, 0-d symbolic dims inside a program (its length must be known there)."""
    if not t.dtype.startswith("int"):
        raise TypeError(f"a shape given as a tensor must hold integers, got {t.dtype}")
    if not _is_symbolic(t):
        return [int(d) for d in t.numpy().tolist()]
    n = t._var.type.shape[0]
    if not isinstance(n, int):
        raise ValueError("a shape given as a 1-D tensor needs a length known when the program is built "
                         "(the rank of the result); this one's length is known only when it runs")
    return [t[k] for k in range(n)]


def _is_symbolic(v):
    return isinstance(v, Tensor) and v._data is None


def _creation(name, device, requires_grad, **attrs):
    if STATE.builder is not None:
        out = apply(name, **attrs)
    else:
        xp = get_xp(device)
        out = Tensor._make(apply_kernel(name, xp, **attrs))
        if STATE.tracer is not None:  # a trace must redraw random values on every call
            from d2s_runtime.ops import OPS
            STATE.tracer.record(OPS[name], (), attrs, (out,))
    if requires_grad:
        out.requires_grad_(True)
    return out


def apply_kernel(name, xp, **attrs):
    from d2s_runtime.ops import OPS
    return OPS[name].kernel(xp, **attrs)


# ------------------------------------------------------------------ creation
def zeros(*shape, dtype=_float32, device=None, requires_grad=False):
    return full(_shape_arg(shape), 0, dtype=dtype, device=device, requires_grad=requires_grad)


def ones(*shape, dtype=_float32, device=None, requires_grad=False):
    return full(_shape_arg(shape), 1, dtype=dtype, device=device, requires_grad=requires_grad)


def full(shape, fill_value, dtype=None, device=None, requires_grad=False):
    if dtype is None:
        dtype = "bool" if isinstance(fill_value, bool) else "int64" if isinstance(fill_value, int) else _float32
    shape = _shape_arg(shape if isinstance(shape, (list, tuple)) else [shape])
    if builtins.any(_is_symbolic(d) for d in shape):
        out = apply("full_dims", *[cast(d, "int64") for d in shape if _is_symbolic(d)],
                    shape=[-1 if _is_symbolic(d) else d for d in shape], value=fill_value, dtype=str(as_dtype(dtype)))
        return out.requires_grad_(True) if requires_grad else out
    return _creation("full", device, requires_grad, shape=shape, value=fill_value, dtype=str(as_dtype(dtype)))


def _like(x, fill, dtype, device, requires_grad):
    if isinstance(x, Tensor) and x._data is None:
        # A symbolic shape may hold unknown dims: the full_like op reads x's shape when the
        # program runs (x * 0 + fill would turn inf and nan entries into nan).
        dtype = x.dtype if dtype is None else dtype
        return apply("full_like", x, value=fill, dtype=str(as_dtype(dtype)))
    if not isinstance(x, Tensor):
        x = tensor(x)
    dtype = x.dtype if dtype is None else dtype
    return full(list(x.shape), fill, dtype=dtype, device=device or x.device, requires_grad=requires_grad)


def zeros_like(x, dtype=None, device=None, requires_grad=False):
    return _like(x, 0, dtype, device, requires_grad)


def ones_like(x, dtype=None, device=None, requires_grad=False):
    return _like(x, 1, dtype, device, requires_grad)


def full_like(x, fill_value, dtype=None, device=None, requires_grad=False):
    return _like(x, fill_value, dtype, device, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = "int64" if builtins.all(_integral(v) for v in (start, end, step)) else _float32
    if builtins.any(_is_symbolic(v) for v in (start, end, step)):
        return apply("arange_dyn", start, end, step, dtype=str(as_dtype(dtype)))
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    return _creation("arange", device, requires_grad, start=start, stop=end, step=step, dtype=str(as_dtype(dtype)))


def _integral(v):
    if isinstance(v, Tensor):
        return v.dtype in ("int32", "int64")
    return isinstance(v, (int, np.integer))


def linspace(start, end, steps, dtype=_float32, device=None, requires_grad=False):
    return _creation("linspace", device, requires_grad, start=start, stop=end, num=int(steps), dtype=str(as_dtype(dtype)))


def eye(n, m=None, dtype=_float32, device=None, requires_grad=False):
    return _creation("eye", device, requires_grad, n=int(n), m=None if m is None else int(m), dtype=str(as_dtype(dtype)))


def rand(*shape, dtype=_float32, device=None, requires_grad=False):
    return _creation("rand", device, requires_grad, shape=_shape_arg(shape), dtype=str(as_dtype(dtype)))


def randn(*shape, dtype=_float32, device=None, requires_grad=False):
    return _creation("randn", device, requires_grad, shape=_shape_arg(shape), dtype=str(as_dtype(dtype)))


def randint(low, high=None, size=(), dtype="int64", device=None):
    """Random integers in ``[low, high)``; the bounds may be 0-d tensors, also symbolic ones
    inside a program (then drawn between the values they have when the program runs)."""
    if high is None:
        low, high = 0, low
    size = [int(d) for d in (size if isinstance(size, (list, tuple)) else [size])]
    if _is_symbolic(low) or _is_symbolic(high) or (STATE.tracer is not None and (
            isinstance(low, Tensor) or isinstance(high, Tensor))):
        return apply("randint_dyn", cast(low, "int64"), cast(high, "int64"), shape=size,
                     dtype=str(as_dtype(dtype)))
    return _creation("randint", device, False, shape=size, low=int(low), high=int(high), dtype=str(as_dtype(dtype)))


def manual_seed(seed):
    """Make d2s's random ops (eager and in programs) repeatable."""
    from d2s_runtime.ops import manual_seed as _seed
    _seed(seed)


# ------------------------------------------------------------------ element-wise
def add(a, b):
    return apply("add", a, b)


def sub(a, b):
    return apply("sub", a, b)


def mul(a, b):
    return apply("mul", a, b)


def div(a, b):
    return apply("div", a, b)


def floordiv(a, b):
    return apply("floordiv", a, b)


def mod(a, b):
    return apply("mod", a, b)


def pow(a, b):
    return apply("pow", a, b)


def neg(x):
    return apply("neg", x)


def exp(x):
    return apply("exp", x)


def log(x):
    return apply("log", x)


def sqrt(x):
    return apply("sqrt", x)


def sin(x):
    return apply("sin", x)


def cos(x):
    return apply("cos", x)


def tanh(x):
    return apply("tanh", x)


def sigmoid(x):
    return apply("sigmoid", x)


def relu(x):
    return apply("relu", x)


def abs(x):
    return apply("abs", x)


def sign(x):
    return apply("sign", x)


def floor(x):
    return apply("floor", x)


def maximum(a, b):
    return apply("maximum", a, b)


def minimum(a, b):
    return apply("minimum", a, b)


def clip(x, min=None, max=None):
    """Limit x to [min, max]; either bound may be None, a number, or a tensor (broadcast)."""
    if isinstance(min, (Tensor, np.ndarray, list)) or isinstance(max, (Tensor, np.ndarray, list)):
        # where, not maximum/minimum: at x == bound the gradient goes to x alone (as in
        # torch.clamp), where maximum would split it between x and the bound
        out = x if min is None else where(lt(x, min), min, x)
        return out if max is None else where(gt(out, max), max, out)
    return apply("clip", x, lo=min, hi=max)


def where(cond, a, b):
    return apply("where", cond, a, b)


def eq(a, b):
    return apply("eq", a, b)


def ne(a, b):
    return apply("ne", a, b)


def lt(a, b):
    return apply("lt", a, b)


def le(a, b):
    return apply("le", a, b)


def gt(a, b):
    return apply("gt", a, b)


def ge(a, b):
    return apply("ge", a, b)


def logical_and(a, b):
    return apply("bitwise_and", a, b)


def logical_or(a, b):
    return apply("bitwise_or", a, b)


def logical_xor(a, b):
    return apply("bitwise_xor", a, b)


def logical_not(x):
    return apply("logical_not", x)


def stop_gradient(x):
    return apply("stop_gradient", x)


def to_device(x, device):
    get_xp(device)  # a clear error when the device is unavailable
    return apply("to_device", x, device="gpu" if device == "cuda" else device)


# ------------------------------------------------------------------ linear algebra
def matmul(a, b):
    return apply("matmul", a, b)


# ------------------------------------------------------------------ reductions
def sum(x, axis=None, keepdims=False):
    return apply("reduce_sum", x, axes=_axes(axis), keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    return apply("reduce_mean", x, axes=_axes(axis), keepdims=keepdims)


def max(x, axis=None, keepdims=False):
    return apply("reduce_max", x, axes=_axes(axis), keepdims=keepdims)


def min(x, axis=None, keepdims=False):
    return apply("reduce_min", x, axes=_axes(axis), keepdims=keepdims)


def prod(x, axis=None, keepdims=False):
    return apply("reduce_prod", x, axes=_axes(axis), keepdims=keepdims)


def any(x, axis=None, keepdims=False):
    return apply("reduce_any", x, axes=_axes(axis), keepdims=keepdims)


def all(x, axis=None, keepdims=False):
    return apply("reduce_all", x, axes=_axes(axis), keepdims=keepdims)


def argmax(x, axis=None, keepdims=False):
    return apply("argmax", x, axis=axis, keepdims=keepdims)


def argmin(x, axis=None, keepdims=False):
    return apply("argmin", x, axis=axis, keepdims=keepdims)


# ------------------------------------------------------------------ shapes
def _static_dims(shape):
    """Target shape as ints; a symbolic dim (only known when the program runs) becomes -1."""
    out = []
    for d in shape:
        if isinstance(d, Tensor):
            if d._data is None:
                out.append(-1)
                continue
            d = int(d)
        out.append(int(d))
    if out.count(-1) > 1:
        raise ValueError(f"reshape: at most one dim may be unknown (-1 or symbolic), got {list(shape)}")
    return out


def reshape(x, *shape):
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    elif len(shape) == 1 and isinstance(shape[0], Tensor) and shape[0].ndim == 1:
        shape = _dims_of_shape_tensor(shape[0])
    if builtins.any(isinstance(d, Tensor) and d._data is None for d in shape):
        return _reshape_dims(x, shape)
    return apply("reshape", x, shape=_static_dims(shape))


def _reshape_dims(x, shape):
    """reshape to a target with symbolic dims: they become inputs of a ``reshape_dims`` op."""
    from .static.builder import dim_source
    target, dims, same_as = [], [], []
    for d in shape:
        if isinstance(d, Tensor) and d._data is None:
            target.append(None)
            dims.append(d)
            src = dim_source(d)  # (var name, axis) when d is x.shape[axis], read symbolically
            same_as.append(src[1] if src is not None and isinstance(x, Tensor) and x._data is None
                           and src[0] == x._var.name else -1)
        else:
            target.append(int(d))
    return apply("reshape_dims", x, *dims, shape=target, same_as=same_as)


def transpose(x, dim0=None, dim1=None):
    """Reverse the dims (no arguments), swap two dims, or permute by a list of dims."""
    if dim0 is None:
        return apply("transpose", x, perm=None)
    if isinstance(dim0, (list, tuple)):
        return apply("transpose", x, perm=[int(p) for p in dim0])
    perm = list(range(x.ndim if isinstance(x, Tensor) else np.ndim(x)))
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return apply("transpose", x, perm=perm)


def permute(x, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    return apply("transpose", x, perm=[int(d) for d in dims])


def squeeze(x, axis=None):
    """Drop dims of size 1 (all of them, or those among ``axis``). As in PyTorch, a named
    axis whose size is known not to be 1 is left alone rather than being an error."""
    axes = _axes(axis)
    if axes is not None:
        shape = _static_shape(x)
        nd = len(shape)
        axes = [a for a in axes if not (-nd <= a < nd and shape[a] is not None and shape[a] != 1)]
    return apply("squeeze", x, axes=axes)


def _static_shape(x):
    """Shape with ``None`` for dims known only when a program runs."""
    if isinstance(x, Tensor):
        return tuple(x._data.shape) if x._data is not None else tuple(x._var.type.shape)
    return np.shape(x)


def unsqueeze(x, axis):
    return apply("expand_dims", x, axis=int(axis))


def broadcast_to(x, shape):
    shape = _shape_arg(shape if isinstance(shape, (list, tuple)) else [shape])
    if builtins.any(_is_symbolic(d) for d in shape):
        return _broadcast_to_dims(x, shape)
    return apply("broadcast_to", x, shape=_static_dims(shape))


def _broadcast_to_dims(x, shape):
    """broadcast_to a target with dims known only when the program runs (``x.shape`` of a
    dynamic batch): adding zeros of that shape broadcasts the same way, and the gradient of
    ``add`` already sums over the broadcast dims."""
    if not isinstance(x, Tensor):
        x = tensor(x)
    xs = x.shape
    if len(shape) < len(xs):
        raise ValueError(f"broadcast_to: cannot broadcast a {len(xs)}-d tensor to a target of "
                         f"{len(shape)} dims; the target needs at least {len(xs)} dims")
    for xd, td in zip(reversed(xs), reversed(shape)):
        if not _is_symbolic(xd) and not _is_symbolic(td) and xd not in (1, int(td)):
            show = lambda dims: "[" + ", ".join("?" if _is_symbolic(d) else str(d) for d in dims) + "]"
            raise ValueError(f"broadcast_to: shape {show(xs)} does not broadcast to {show(shape)} "
                             f"(dim {xd} vs {td}); only dims of size 1 can be expanded")
    return x + full(shape, False if str(x.dtype) == "bool" else 0, dtype=x.dtype)


def flatten(x, start_dim=0, end_dim=-1):
    if not isinstance(x, Tensor):
        x = tensor(x)
    nd = x.ndim
    if nd == 0:
        return reshape(x, [1])
    s, e = start_dim % nd, end_dim % nd
    shape = list(x.shape)
    n = 1
    for dim in shape[s:e + 1]:
        if isinstance(dim, Tensor):
            n = -1  # an unknown dim inside the flattened range: let reshape infer it
            break
        n *= dim
    return reshape(x, shape[:s] + [n] + shape[e + 1:])


def concat(tensors, axis=0):
    return apply("concat", *_seq_args(tensors), axis=int(axis))


def stack(tensors, axis=0):
    return apply("stack", *_seq_args(tensors), axis=int(axis))


def _seq_args(items):
    """Python scalars and lists among concat/stack inputs become tensors (d2s dtype defaults)."""
    return [t if isinstance(t, Tensor) or hasattr(t, "dtype") else tensor(t) for t in items]


def split(x, split_size_or_sections, axis=0):
    """Split into pieces of ``split_size`` along ``axis`` (the last may be smaller), or by a list of sizes."""
    d = x.shape[axis] if isinstance(x, Tensor) else np.shape(x)[axis]
    if isinstance(split_size_or_sections, int):
        n = split_size_or_sections
        sections = [n] * (d // n) + ([d % n] if d % n else [])
    else:
        sections = [int(s) for s in split_size_or_sections]
    return apply("split", x, sections=sections, axis=int(axis))


def cast(x, dtype):
    return apply("cast", x, dtype=str(as_dtype(dtype)))


def clone(x):
    return apply("add", x, 0) if not isinstance(x, Tensor) or x.dtype != "bool" else logical_or(x, False)


def cat(tensors, axis=0):
    """``concat`` under PyTorch's name."""
    return concat(tensors, axis)


def chunk(x, chunks, axis=0):
    """Split ``x`` into ``chunks`` pieces along ``axis`` (as ``torch.chunk``): pieces of
    ``ceil(size / chunks)``, the last one smaller; fewer pieces when the size runs out."""
    chunks = int(chunks)
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be a positive int, got {chunks}")
    d = _known_dim("chunk", x, axis)
    if d == 0:
        return (x if isinstance(x, Tensor) else tensor(x),)
    size = -(-d // chunks)
    return tuple(split(x, size, axis))


def unstack(x, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple of tensors with that dim removed (the
    inverse of ``stack``)."""
    if not isinstance(x, Tensor):
        x = tensor(x)
    nd = x.ndim
    if not -nd <= axis < nd:
        raise ValueError(f"unstack: axis {axis} is out of range for a tensor of shape {tuple(x.shape)}")
    d = _known_dim("unstack", x, axis)
    if d == 0:
        return ()
    return tuple(squeeze(p, axis) for p in split(x, [1] * d, axis))


def _known_dim(what, x, axis):
    """The size of dim ``axis`` of ``x``; an error when it is known only when the program runs
    (the number of pieces must be a Python int)."""
    shape = _static_shape(x)
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"{what}: axis {axis} is out of range for a tensor of shape {tuple(shape)}")
    d = shape[axis]
    if d is None:
        raise ValueError(f"{what}: dim {axis} of this tensor is only known when the program runs, but the "
                         "number of pieces must be known when it is built; give the dim a fixed size "
                         "(InputSpec) or index the tensor in a loop instead")
    return int(d)


def add_n(inputs):
    """The element-wise sum of a list of tensors (as ``tf.add_n``), with NumPy broadcasting."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n: needs at least one tensor")
    if len(inputs) == 1:
        return identity(inputs[0])
    out = add(inputs[0], inputs[1])
    for t in inputs[2:]:
        out = add(out, t)
    return out


def identity(x):
    """A tensor equal to ``x`` (a copy: writing into it leaves ``x`` alone); gradients pass
    through unchanged."""
    return apply("identity", x)


def shape(x):
    """``x``'s shape as a 1-d int64 tensor; inside a program it is read when the program runs,
    so dynamic dims give their actual sizes."""
    return apply("shape", x)


def numel(x):
    """The number of elements of ``x``: an int, or a 0-d int64 tensor when some dim is known
    only when the program runs."""
    if not isinstance(x, Tensor):
        return int(np.size(x))
    return x.numel()


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "edge": "edge",
              "circular": "wrap", "wrap": "wrap"}


def pad(x, pad, mode="constant", value=0):
    """Pad ``x`` (as ``torch.nn.functional.pad`` or ``numpy.pad``).

    Args:
        x: the tensor.
        pad: either a flat sequence ``(left, right, top, bottom, ...)`` starting from the last
            dim (PyTorch's order), or a sequence of ``(before, after)`` pairs, one per dim from
            the first (NumPy's and TensorFlow's order).
        mode: "constant", "reflect", "replicate" (also "edge") or "circular" (also "wrap").
        value: the fill of "constant" mode.

    Returns:
        The padded tensor, of ``x``'s dtype.
    """
    if not isinstance(x, Tensor):
        x = tensor(x)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: unknown mode {mode!r}; use one of {', '.join(_PAD_MODES)}")
    nd = x.ndim
    pad = list(pad)
    if pad and builtins.all(isinstance(p, (list, tuple)) for p in pad):
        if len(pad) != nd or builtins.any(len(p) != 2 for p in pad):
            raise ValueError(f"pad: {len(pad)} (before, after) pairs given for a tensor of {nd} dims; "
                             "give one pair per dim")
        pads = [[int(b), int(e)] for b, e in pad]
    else:
        if builtins.any(isinstance(p, (list, tuple)) for p in pad):
            raise ValueError("pad: give either a flat list (left, right, top, bottom, ...) or one "
                             "(before, after) pair per dim, not a mix")
        if len(pad) % 2 or len(pad) // 2 > nd:
            raise ValueError(f"pad: a flat pad needs an even number of entries, at most 2 per dim "
                             f"({2 * nd} for this {nd}-d tensor), got {len(pad)}")
        pads = [[0, 0] for _ in range(nd)]
        for k in range(len(pad) // 2):
            pads[nd - 1 - k] = [int(pad[2 * k]), int(pad[2 * k + 1])]
    value = value.item() if isinstance(value, Tensor) else value
    return apply("pad", x, pads=pads, mode=_PAD_MODES[mode], value=value)


# ------------------------------------------------------------------ indexing
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
            if e._data is not None and e.ndim == 0 and e.dtype.startswith("int") and not STATE.hooked:
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
        if v._data is None:
            raise IndexError("slice bounds must be known when the program is built; "
                             "use d2s.gather or a mask for data-dependent slices")
        return int(v._concrete("int()"))  # _concrete lets a tracer guard the baked-in bound
    return int(v)


def getitem(x, idx):
    spec, extra = _encode_index(idx)
    return apply("getitem", x, *extra, index=spec)


def setitem(x, idx, value):
    """``x[idx] = value``: in place on x's data without autograd; recorded as a functional
    update (x rebinds to the result) when x or value takes part in autograd or a program."""
    spec, extra = _encode_index(idx)
    recording = (STATE.grad_enabled and (x.requires_grad or (isinstance(value, Tensor) and value.requires_grad)))
    symbolic = x._data is None or STATE.hooked or (isinstance(value, Tensor) and value._data is None)
    if not recording and not symbolic:
        v = value._data if isinstance(value, Tensor) else value
        x._data[tuple(_decode_host(spec, extra))] = v
        x._version += 1
        return x
    if x.is_leaf and x.requires_grad and STATE.grad_enabled:
        raise RuntimeError("a leaf tensor that requires grad cannot be assigned to in place; "
                           "assign to a copy (y = x.clone(); y[idx] = v) or do it under d2s.no_grad()")
    out = apply("setitem", _alias(x), value, *extra, index=spec)
    if STATE.builder is not None:
        STATE.builder.note_inplace(x)  # carried out of a tensor if/loop to every alias of x
    x._data, x._var = out._data, out._var
    x.grad_fn, x.requires_grad, x._out_idx = out.grad_fn, out.requires_grad, out._out_idx
    if out.grad_fn is not None:
        # the node's saved output must be x itself so later rebinding stays consistent
        out.grad_fn.outputs = (x,)
    x._version += 1
    if STATE.builder is not None:
        STATE.builder.after_inplace(x)
    return x


def _alias(x):
    """A second Tensor object for x's current value and autograd history: the setitem node
    saves it, so rebinding x (and bumping x's version) afterwards does not touch the node."""
    t = Tensor._make(x._data, x._var)
    t.requires_grad, t.grad_fn, t._out_idx = x.requires_grad, x.grad_fn, x._out_idx
    return t


def _decode_host(spec, extra):
    from d2s_runtime.ops.indexing import decode_index
    return decode_index(spec, [e._data if isinstance(e, Tensor) else e for e in extra])


# ------------------------------------------------------------------ Tensor operators and methods
_nd = np.ndarray
_SCALARS = (int, float, bool)


def _fast_kernel(name):
    """The op's registered kernel, for operators' fast path: plain numpy inputs, nothing to
    record or build. Anything else (and any error, for its full message) goes through apply."""
    from d2s_runtime.ops import OPS
    return OPS[name].kernel


def _operator(name, reflected=False):
    """Tensor's ``__op__`` (or ``__rop__``): plain numpy operands with nothing to record or
    build call the registered kernel directly; everything else (and any error, for its full
    message) goes through apply."""
    kernel = _fast_kernel(name)

    def method(self, other):
        a = self._data
        if type(a) is _nd and not (HOOKED_THREADS[0] and STATE.hooked) and not self.requires_grad:
            t = type(other)
            b = None
            if t in _SCALARS:
                b = other
            elif t is Tensor and not reflected and not other.requires_grad and type(other._data) is _nd:
                b = other._data
            if b is not None:
                try:
                    out = kernel(np, b, a) if reflected else kernel(np, a, b)
                except Exception:
                    pass
                else:
                    return Tensor._make(out if type(out) is _nd else np.asarray(out))
        return apply(name, other, self) if reflected else apply(name, self, other)

    return method


def _fwd(name):
    return _operator(name)


def _rev(name):
    return _operator(name, reflected=True)


def _install():
    T = Tensor
    for dunder, op in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                       ("floordiv", "floordiv"), ("mod", "mod"), ("pow", "pow"), ("matmul", "matmul")):
        setattr(T, f"__{dunder}__", _fwd(op))
        setattr(T, f"__r{dunder}__", _rev(op))
    for dunder, op in (("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor")):
        setattr(T, f"__{dunder}__", _fwd(op))
        setattr(T, f"__r{dunder}__", _rev(op))
    for dunder, op in (("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge")):
        setattr(T, f"__{dunder}__", _fwd(op))
    T.__neg__ = lambda self: apply("neg", self)
    T.__pos__ = lambda self: self
    T.__invert__ = lambda self: apply("logical_not", self)
    T.__abs__ = lambda self: apply("abs", self)
    T.__getitem__ = getitem
    T.__setitem__ = setitem
    T.__hash__ = object.__hash__
    g = globals()
    for name in ("add sub mul div neg exp log sqrt sin cos tanh sigmoid relu abs pow clip maximum minimum "
                 "matmul sum mean max min prod any all argmax argmin reshape transpose permute squeeze "
                 "unsqueeze broadcast_to flatten split cast sign floor logical_not clone").split():
        setattr(T, name, g[name])
    T.float = lambda self: cast(self, "float32")
    T.double = lambda self: cast(self, "float64")
    T.long = lambda self: cast(self, "int64")
    T.int = lambda self: cast(self, "int32")
    T.bool = lambda self: cast(self, "bool")
    T.astype = cast
    T.view = reshape
    T.expand = _expand
    T.__eq__ = _none_aware(T.__eq__, False)
    T.__ne__ = _none_aware(T.__ne__, True)


def _expand(self, *shape):
    """``t.expand(2, -1, 4)``: broadcast_to where -1 keeps that dim, as in PyTorch."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    lead = len(shape) - self.ndim
    if builtins.any(not isinstance(d, Tensor) and d == -1 for d in shape):
        own = self.shape
        shape = [own[i - lead] if (not isinstance(d, Tensor) and d == -1 and i >= lead) else d
                 for i, d in enumerate(shape)]
    return broadcast_to(self, shape)


def _none_aware(method, result):
    """``t == None`` is False and ``t != None`` True (as in PyTorch), so ``t in [None, ...]``
    and comparisons against optional arguments work."""
    def compare(self, other):
        if other is None:
            return result
        return method(self, other)
    compare.__name__ = method.__name__
    return compare


_install()

from .inplace import install as _install_inplace  # noqa: E402 - needs the operators above

_install_inplace()
