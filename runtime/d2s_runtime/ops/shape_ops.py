"""Primitives that move or reinterpret data: reshape, transpose, broadcast, concat, cast, ..."""
import itertools

import numpy as np

from ..device import get_xp, to_host
from ..dtypes import normalize, promote, result_type
from .registry import ShapeError, TensorType, deflowering, defop
from .rules import broadcast_shapes, fmt_shape


def _reshape_infer(x, shape):
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ShapeError(f"reshape: at most one -1 in the target shape, got {tuple(shape)}")
    known = None not in x.shape
    total = 1
    for d in x.shape:
        total *= 1 if d is None else d
    if -1 in shape:
        rest = 1
        for d in shape:
            if d != -1:
                rest *= d
        i = shape.index(-1)
        if known:
            if rest == 0 or total % rest:
                raise ShapeError(f"reshape: cannot reshape {fmt_shape(x.shape)} into {tuple(shape)}")
            shape[i] = total // rest
        else:
            shape[i] = None
    elif known:
        want = 1
        for d in shape:
            want *= d
        if want != total:
            raise ShapeError(f"reshape: cannot reshape {fmt_shape(x.shape)} ({total} elements) into "
                             f"{tuple(shape)} ({want} elements)")
    return TensorType(shape, x.dtype)


defop("reshape", _reshape_infer, doc="The elements in row-major order, in a new ``shape``.", movement=True,
      view=True)(lambda xp, x, shape: xp.reshape(x, tuple(shape)))


def _transpose_infer(x, perm=None):
    perm = tuple(reversed(range(x.ndim))) if perm is None else tuple(p % max(x.ndim, 1) for p in perm)
    if sorted(perm) != list(range(x.ndim)):
        raise ShapeError(f"transpose: {tuple(perm)} is not a permutation of the {x.ndim} dims of {fmt_shape(x.shape)}")
    return TensorType([x.shape[p] for p in perm], x.dtype)


defop("transpose", _transpose_infer, doc="Axes permuted by ``perm`` (None: reversed).", movement=True, view=True)(
    lambda xp, x, perm=None: xp.transpose(x, None if perm is None else tuple(perm)))


def _broadcast_to_infer(x, shape):
    target = tuple(shape)
    out = broadcast_shapes("broadcast_to", x.shape, target)
    if len(out) != len(target) or any(t is not None and o != t for o, t in zip(out, target)):
        raise ShapeError(f"broadcast_to: cannot broadcast {fmt_shape(x.shape)} to {fmt_shape(target)}")
    return TensorType(target, x.dtype)


defop("broadcast_to", _broadcast_to_infer, doc="Broadcast (numpy rules) to ``shape``.", movement=True, view=True)(
    lambda xp, x, shape: xp.broadcast_to(x, tuple(shape)))


def _cast_infer(x, dtype):
    return TensorType(x.shape, normalize(dtype))


defop("cast", _cast_infer, doc="Converted to ``dtype`` (no copy if it already has it).")(lambda xp, x, dtype: x.astype(dtype, copy=False))


def _expand_dims_infer(x, axis):
    nd = x.ndim + 1
    a = axis % nd
    s = list(x.shape)
    s.insert(a, 1)
    return TensorType(s, x.dtype)


defop("expand_dims", _expand_dims_infer, doc="A new axis of size 1 at ``axis``.", movement=True, view=True)(
    lambda xp, x, axis: xp.expand_dims(x, axis))


def _squeeze_infer(x, axes=None):
    if axes is None:
        return TensorType([d for d in x.shape if d != 1], x.dtype)
    ax = [a % max(x.ndim, 1) for a in axes]
    for a in ax:
        if x.shape[a] not in (1, None):
            raise ShapeError(f"squeeze: dim {a} of {fmt_shape(x.shape)} has size {x.shape[a]}, not 1")
    return TensorType([d for i, d in enumerate(x.shape) if i not in ax], x.dtype)


defop("squeeze", _squeeze_infer, doc="Axes of size 1 removed (``axes``, or all).", movement=True, view=True)(
    lambda xp, x, axes=None: xp.squeeze(x, None if axes is None else tuple(axes)))


def _concat_infer(*xs, axis=0):
    if not xs:
        raise ShapeError("concat: needs at least one tensor")
    nd = xs[0].ndim
    a = axis % max(nd, 1)
    for t in xs:
        if t.ndim != nd:
            raise ShapeError(f"concat: all tensors need {nd} dims, got {', '.join(fmt_shape(t.shape) for t in xs)}")
    out = []
    for i in range(nd):
        dims = [t.shape[i] for t in xs]
        if i == a:
            out.append(None if None in dims else sum(dims))
        else:
            known = {d for d in dims if d is not None}
            if len(known) > 1:
                raise ShapeError(f"concat: shapes {', '.join(fmt_shape(t.shape) for t in xs)} differ "
                                 f"in dim {i} (only dim {a}, the concat axis, may differ)")
            out.append(known.pop() if known else None)
    return TensorType(out, result_type(*(t.dtype for t in xs)))


def _same_dtype(xs):
    return xs if all(x.dtype is xs[0].dtype for x in xs) else promote(xs)


defop("concat", _concat_infer, doc="Joined along an existing ``axis``.", promotes=None, fresh=True)(
    lambda xp, *xs, axis=0: xp.concatenate(_same_dtype(xs), axis=axis))


def _stack_infer(*xs, axis=0):
    if not xs:
        raise ShapeError("stack: needs at least one tensor")
    shape = xs[0].shape
    for t in xs:
        if len(t.shape) != len(shape) or any(a is not None and b is not None and a != b for a, b in zip(t.shape, shape)):
            raise ShapeError(f"stack: all tensors need the same shape, got {', '.join(fmt_shape(t.shape) for t in xs)}")
    merged = [next((t.shape[i] for t in xs if t.shape[i] is not None), None) for i in range(len(shape))]
    a = axis % (len(shape) + 1)
    merged.insert(a, len(xs))
    return TensorType(merged, result_type(*(t.dtype for t in xs)))


defop("stack", _stack_infer, doc="Joined along a new ``axis``.", promotes=None, fresh=True)(
    lambda xp, *xs, axis=0: xp.stack(_same_dtype(xs), axis=axis))


def _same_infer(x, **_):
    return TensorType(x.shape, x.dtype)


defop("stop_gradient", _same_infer, doc="The input itself; gradients do not flow through it.", movement=True,
      alias=True)(lambda xp, x: x)


def _detached_write_infer(new, old):
    if tuple(new.shape) != tuple(old.shape) and None not in tuple(new.shape) + tuple(old.shape):
        raise ShapeError(f"detached_write: the new value {fmt_shape(new.shape)} and the tensor written "
                         f"{fmt_shape(old.shape)} differ in shape")
    return TensorType(old.shape, new.dtype)


defop("detached_write", _detached_write_infer, alias=True,
      doc="The values of ``new`` (input 0), with gradients flowing to ``old`` (input 1) unchanged: a tensor "
          "written through its ``.detach()`` or ``.data``, whose history autograd keeps.")(lambda xp, new, old: new)


@defop("to_device", _same_infer)
def _to_device(xp, x, device):
    """Copy between host (numpy) and GPU (cupy) memory."""
    target = get_xp(device)
    if target is xp:
        return x
    host = to_host(x)  # the one explicit copy between devices goes through the host
    return host if target is np else target.asarray(host)


def _split_infer(x, sections, axis=0):
    a = axis % x.ndim
    d = x.shape[a]
    if d is not None and sum(sections) != d:
        raise ShapeError(f"split: sizes {list(sections)} do not add up to dim {a} of {fmt_shape(x.shape)}")
    return tuple(TensorType(x.shape[:a] + (s,) + x.shape[a + 1:], x.dtype) for s in sections)


def _split(xp, x, sections, axis=0):
    """Pieces of sizes ``sections`` along ``axis``."""
    if sum(sections) != x.shape[axis]:
        raise ShapeError(f"split: sizes {list(sections)} do not add up to dim {axis} of {fmt_shape(x.shape)}")
    # basic slices along the axis: the views xp.split gives, without its per-piece axis swaps
    lead = (slice(None),) * (axis % x.ndim)
    ends = list(itertools.accumulate(sections))
    return tuple(x[lead + (slice(e - n, e),)] for n, e in zip(sections, ends))


defop("split", _split_infer, n_out=None, view=True)(_split)


def _reshape_like_infer(x, like):
    return TensorType(like.shape, x.dtype)


defop("reshape_like", _reshape_like_infer, doc="``x`` reshaped to the shape of ``like``.")(lambda xp, x, like: xp.reshape(x, like.shape))


def _reshape_dims_infer(x, *dims, shape, same_as=None):
    """``reshape`` to a target holding dims known only when the program runs.

    ``shape`` entries: an int (a known dim), -1 (inferred from the element count) or None
    (taken from the next of ``dims``, 0-d int tensors). ``same_as[k]`` is the axis of ``x``
    that the k-th dynamic dim is known to equal (``x.shape[j]`` read symbolically), or -1."""
    shape = list(shape)
    same_as = list(same_as or [-1] * len(dims))
    if shape.count(None) != len(dims) or len(same_as) != len(dims):
        raise ShapeError(f"reshape_dims: the target {shape} has {shape.count(None)} dynamic dims but "
                         f"{len(dims)} dim inputs")
    if shape.count(-1) > 1:
        raise ShapeError(f"reshape_dims: at most one -1 in the target shape, got {shape}")
    for d in dims:
        if d.ndim != 0 or not d.dtype.startswith("int"):
            raise ShapeError(f"reshape_dims: dim inputs must be 0-d integer tensors, got {d}")
    out, copied, is_copy, k = [], [], [], 0
    for s in shape:
        j = -1
        if s is None:
            j = same_as[k] if same_as[k] is not None else -1
            k += 1
        if j >= 0:
            copied.append(j)
        out.append(x.shape[j] if j >= 0 else s)
        is_copy.append(j >= 0)
    if -1 in out:
        # the element count of x over the axes not copied, divided by the other target dims
        rest_x = [d for i, d in enumerate(x.shape) if i not in copied]
        rest_out = [d for d, c in zip(out, is_copy) if d != -1 and not c]
        if len(set(copied)) == len(copied) and None not in rest_x and None not in rest_out:
            num = den = 1
            for d in rest_x:
                num *= d
            for d in rest_out:
                den *= d
            if den == 0 or num % den:
                raise ShapeError(f"reshape_dims: cannot reshape {fmt_shape(x.shape)} into {shape}")
            out[out.index(-1)] = num // den
        else:
            out[out.index(-1)] = None
    return TensorType(out, x.dtype)


@defop("reshape_dims", _reshape_dims_infer, view=True)
def _reshape_dims(xp, x, *dims, shape, same_as=None):
    """``reshape`` whose None entries of ``shape`` are read, in order, from the 0-d inputs."""
    it = iter(dims)
    return xp.reshape(x, tuple(int(next(it)) if s is None else s for s in shape))


@deflowering("reshape_dims", "native")
def _reshape_dims_native(e, x, *dims, shape, same_as=None):
    """A reshape whose target reads its None entries from run-time dims (``view(B, T, nh, hs)``
    with T dynamic): numpy's reshape of a contiguous copy where ``x`` is not."""
    l = e._l
    if any(d.ndim != 0 or d.dtype not in ("int64", "int32") for d in dims) or len(shape) == 0:
        e.unsupported("reshape_dims with dims that are not 0-d integers")
    it = iter(dims)
    parts = []
    for s in shape:
        if s is None:
            d = l.materialize(next(it))
            parts.append(f"np.int64({d.name if d.kind == 's' else d.name + '[()]'})")
        else:
            parts.append(str(int(s)))
    x = l.contiguous(l.array(x))
    l.pin(x)
    name = l.fresh()
    l.emit(l.indent, f"{name} = {x.name}.reshape(({', '.join(parts)},))")
    return l.new_array(name, x.dtype, tuple(e.out.shape), fresh=False)


# ------------------------------------------------------------------ pad
# ``pads`` is one [before, after] pair per dim; ``mode`` is "constant" (fill with ``value``),
# "reflect" (mirror without repeating the edge), "edge" (repeat the edge) or "wrap" (circular).
PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _check_pads(op, x, pads, mode):
    if mode not in PAD_MODES:
        raise ShapeError(f"{op}: unknown mode {mode!r}; use one of {', '.join(PAD_MODES)}")
    if len(pads) != x.ndim:
        raise ShapeError(f"{op}: {len(pads)} [before, after] pairs for a tensor of shape {fmt_shape(x.shape)} "
                         f"({x.ndim} dims)")
    for a, (b, e) in enumerate(pads):
        if b < 0 or e < 0:
            raise ShapeError(f"{op}: negative padding {[b, e]} for dim {a}; pads must be >= 0 "
                             "(slice the tensor to crop it)")
        d = x.shape[a]
        if d is None or (b == 0 and e == 0) or mode == "constant":
            continue
        if d == 0:
            raise ShapeError(f"{op}: mode {mode!r} cannot pad dim {a} of size 0 in {fmt_shape(x.shape)}")
        if mode == "reflect" and max(b, e) >= d:
            raise ShapeError(f"{op}: reflect padding {[b, e]} must be smaller than dim {a} of size {d} "
                             f"in {fmt_shape(x.shape)}")
        if mode == "wrap" and max(b, e) > d:
            raise ShapeError(f"{op}: circular padding {[b, e]} must be at most dim {a} of size {d} "
                             f"in {fmt_shape(x.shape)}")


def _pad_infer(x, pads, mode="constant", value=0):
    _check_pads("pad", x, pads, mode)
    return TensorType([None if d is None else d + b + e for d, (b, e) in zip(x.shape, pads)], x.dtype)


def pad_source_index(n, before, after, mode):
    """For each position of a padded dim (size ``before + n + after``), the position of the
    input it copies (modes other than "constant")."""
    import numpy as np
    p = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(p, 0, n - 1)
    if mode == "wrap":
        return np.mod(p, n)
    if n == 1:
        return np.zeros_like(p)
    period = 2 * (n - 1)  # reflect: ... 2 1 | 0 1 2 ... n-1 | n-2 n-3 ...
    q = np.mod(p, period)
    return np.where(q < n, q, period - q)


def _pad_check_runtime(x, pads, mode):
    _check_pads("pad", TensorType(x.shape, x.dtype.name), pads, mode)


@defop("pad", _pad_infer)
def _pad(xp, x, pads, mode="constant", value=0):
    """``x`` padded by ``pads`` ([before, after] per dim) in ``mode``."""
    _pad_check_runtime(x, pads, mode)
    if mode == "constant":
        return xp.pad(x, [tuple(p) for p in pads], mode="constant", constant_values=value)
    out = x
    for a, (b, e) in enumerate(pads):
        if b or e:
            out = xp.take(out, xp.asarray(pad_source_index(x.shape[a], b, e, mode)), axis=a)
    return out


def _pad_grad_infer(g, pads, mode="constant"):
    if len(pads) != g.ndim:
        raise ShapeError(f"pad_grad: {len(pads)} [before, after] pairs for a gradient of shape {fmt_shape(g.shape)}")
    return TensorType([None if d is None else d - b - e for d, (b, e) in zip(g.shape, pads)], g.dtype)


@defop("pad_grad", _pad_grad_infer)
def _pad_grad(xp, g, pads, mode="constant"):
    """The gradient of ``pad`` (its transpose): each input position gets the sum of the
    gradients of the output positions copied from it."""
    if mode == "constant":
        return g[tuple(slice(b, g.shape[a] - e) for a, (b, e) in enumerate(pads))]
    out = g
    # pad applies the dims in order, so its transpose undoes them in reverse order
    for a in reversed(range(len(pads))):
        b, e = pads[a]
        if not (b or e):
            continue
        n = out.shape[a] - b - e
        src = xp.asarray(pad_source_index(n, b, e, mode))
        shape = list(out.shape)
        shape[a] = n
        acc = xp.zeros(shape, dtype=out.dtype)
        key = (slice(None),) * a + (src,)
        if hasattr(xp.add, "at"):
            xp.add.at(acc, key, out)
        else:  # cupy
            import cupyx
            cupyx.scatter_add(acc, key, out)
        out = acc
    return out


# ------------------------------------------------------------------ identity, shape
def _identity_infer(x):
    return TensorType(x.shape, x.dtype)


@defop("identity", _identity_infer)
def _identity(xp, x):
    """A copy of x (so writing into the result never changes x)."""
    return x.copy()


def _shape_infer(x):
    return TensorType((x.ndim,), "int64")


@defop("shape", _shape_infer)
def _shape(xp, x):
    """x's shape as a 1-d int64 array, read when the op runs (dims may be dynamic)."""
    return xp.asarray(x.shape, dtype="int64").reshape(len(x.shape))


# ------------------------------------------------------------------ repeat_index
def _repeat_index_infer(counts):
    if counts.ndim != 1 or not counts.dtype.startswith("int"):
        raise ShapeError(f"repeat_interleave: repeats must be a 1-d integer tensor (one count per element), "
                         f"got {counts.dtype}{fmt_shape(counts.shape)}")
    return TensorType((None,), "int64")


@defop("repeat_index", _repeat_index_infer, fresh=True)
def _repeat_index(xp, counts):
    """``0`` repeated ``counts[0]`` times, then ``1`` repeated ``counts[1]`` times, ... (the
    indices behind ``repeat_interleave`` with a tensor of counts)."""
    if counts.size and int(counts.min()) < 0:
        raise ValueError(f"repeat_interleave: repeats must be non-negative, got a count of {int(counts.min())}")
    # cupy's repeat takes the counts as a list, not an array
    return xp.repeat(xp.arange(counts.shape[0], dtype="int64"), counts if xp is np else counts.tolist())


# ------------------------------------------------------------------ native lowerings
@deflowering("reshape", "native")
def _reshape_native(e, x, shape):
    return e.reshape(x, shape)


def _native_reshape_to_out(e, x):
    dims = [-1 if d is None else d for d in e.out.shape]
    if dims.count(-1) > 1:
        e.unsupported("more than one dim unknown when lowering")
    return e.reshape(x, dims)


@deflowering("expand_dims", "native")
def _expand_dims_native(e, x, axis):
    return _native_reshape_to_out(e, x)


@deflowering("squeeze", "native")
def _squeeze_native(e, x, axes=None):
    return _native_reshape_to_out(e, x)


@deflowering("transpose", "native")
def _transpose_native(e, x, perm=None):
    return e.transpose(x, perm)


@deflowering("broadcast_to", "native")
def _broadcast_to_native(e, x, shape):
    return e.broadcast(x, shape)


_broadcast_to_native.fuses_input = True  # a lazy view its consumers index directly


@deflowering("cast", "native")
def _cast_native(e, x, dtype):
    return e.cast(x, e.in_dtypes[0], e.out_dtype)


_cast_native.elementwise = True  # lowered as a scalar expression, fused like element-wise ops
_cast_native.raw_args = True     # gets its operand unconverted


@deflowering("split", "native")
def _split_native(e, x, sections, axis=0):
    """Each piece a view of the input, as numpy's ``split`` gives (a piece along the leading
    dim of a contiguous input is contiguous; other pieces are strided views, which fused loops
    and MKL's gemm read in place)."""
    if x.ndim == 0 or not isinstance(sections, (list, tuple)) or not sections:
        e.unsupported("split of a 0-d tensor or without sections")
    sizes = [e.int(s, "section") for s in sections]
    a = e.int(axis, "axis")
    if not -x.ndim <= a < x.ndim or min(sizes) < 0:
        e.unsupported("bad axis or section")
    a %= x.ndim
    x = e.array(x)
    # the shape rule checked the total where the dim is known; the kernel checks it at run time
    e.emit(e.indent, f"if {x.name}.shape[{a}] != {sum(sizes)}: raise ValueError('native program: split sizes')")
    e.pin(x)
    outs, start = [], 0
    for size, t in zip(sizes, e.out_types):
        name = e.fresh()
        e.emit(e.indent, f"{name} = {x.name}[{', '.join([':'] * a + [f'{start}:{start + size}'])}]")
        outs.append(e.new_array(name, x.dtype, tuple(t.shape), fresh=False,
                                layout="C" if a == 0 and x.layout == "C" else "A"))
        start += size
    return tuple(outs)


@deflowering("concat", "native")
def _concat_native(e, *xs, axis=0):
    return e.join(xs, axis, new_axis=False)


@deflowering("stack", "native")
def _stack_native(e, *xs, axis=0):
    return e.join(xs, axis, new_axis=True)


@deflowering("stop_gradient", "native")
def _stop_gradient_native(e, x):
    return e.alias(x)


_stop_gradient_native.reads_stacks = True  # an alias: a stack stays a stack (native/plan.py)
# an alias of a lazy element-wise chain stays lazy: the chain fuses on through it
_stop_gradient_native.fuses_input = True


@deflowering("detached_write", "native")
def _detached_write_native(e, new, old):
    return e.alias(new)


_detached_write_native.reads_stacks = True
_detached_write_native.fuses_input = True


@deflowering("identity", "native")
def _identity_native(e, x):
    return e.copy(x)


# ------------------------------------------------------------------ unfold (sliding windows)
def _unfold_infer(x, axis, size, step):
    nd = len(x.shape)
    if not -max(nd, 1) <= axis < max(nd, 1):
        raise ShapeError(f"unfold: dimension {axis} is out of range for a tensor with {nd} dims")
    if step <= 0:
        raise ShapeError(f"unfold: step is {step} but must be > 0")
    if nd == 0:
        if size > 1:
            raise ShapeError(f"unfold: maximum size for tensor at dimension 0 is 1 but size is {size}")
        return TensorType((size,), x.dtype)
    a = axis % nd
    d = x.shape[a]
    if size < 0 or (d is not None and size > d):
        raise ShapeError(f"unfold: maximum size for tensor at dimension {a} is {d} but size is {size}")
    n = None if d is None else (d - size) // step + 1
    return TensorType(x.shape[:a] + (n,) + x.shape[a + 1:] + (size,), x.dtype)


@defop("unfold", _unfold_infer, view=True, movement=True)
def _unfold(xp, x, axis, size, step):
    """Every window of ``size`` elements along ``axis``, ``step`` apart: that dim becomes the
    window count and a last dim of ``size`` is added (a read-only strided view of ``x``, as
    PyTorch's ``Tensor.unfold`` is a view)."""
    if x.ndim == 0:
        return x.reshape(1)[:size]
    a = axis % x.ndim
    windows = xp.lib.stride_tricks.sliding_window_view(x, size, axis=a) if xp is np else \
        xp.lib.stride_tricks.sliding_window_view(x, size, axis=a)
    index = [slice(None)] * x.ndim
    index[a] = slice(None, None, step)
    return windows[tuple(index)]
