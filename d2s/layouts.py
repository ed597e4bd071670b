"""The memory layout eager code would give each value of a program being built.

Whether ``reshape``/``view``/``flatten``/``contiguous`` return a view (writes through them reach
their input) or a copy depends, eagerly as in PyTorch, on the input's strides: ``x.t() * 2`` is
laid out as ``x.t()`` is (numpy's and PyTorch's element-wise results keep their inputs' order),
so ``(x.t() * 2).reshape(-1)`` is a copy. A program's vars have no strides, so the builder keeps
a model of them: a view's layout lives in its ``ViewInfo.fake`` (d2s/views.py); the layout of
an op's fresh result, when it is not row-major, lives in ``ProgramBuilder.layouts`` (var name ->
a memoryless numpy array with the result's strides, or :data:`UNKNOWN`).

The layout of a result is learnt from the op's own kernel, run on small arrays laid out as its
inputs are (only when some input is not row-major: every other result is row-major, as the
builder always assumed): exactly, on arrays of the inputs' shapes, when those are static and
small; for an element-wise op, on arrays of at most 2 per dim in the same order (its result's
order depends only on the inputs' orders). Otherwise the layout is :data:`UNKNOWN`: a reshape
of such a value may or may not share it eagerly, so the program refuses a write through the
reshape (or a read of it after its base changed) with an error, instead of guessing.

The program follows eager d2s, whose kernels are numpy's. One known difference from PyTorch
there: an element-wise result of inputs laid out differently (``x.t() + y``, ``y`` row-major)
is row-major in numpy and laid out as the first input in PyTorch, so its reshape is a view in
d2s (eager and program alike) and a copy in PyTorch.
"""
import warnings

import numpy as np

# an unknown (dynamic) dim in the layout model of a symbolic value (see fake_root)
UNKNOWN_DIM = 1 << 20


def _is_tensor(x):
    # (by its attributes: d2s.tensor imports this module's users, so importing it here would
    # close an import cycle)
    return hasattr(x, "_var") and hasattr(x, "_data")


def fake_root(shape):
    """A C-contiguous array of ``shape`` (unknown dims: UNKNOWN_DIM) with no memory behind it
    (strides over a one-byte buffer): only its layout is ever read."""
    unknown = sum(d is None for d in shape)
    if unknown:
        # a power of two (reshapes divide it) as large as the layout allows: numpy refuses an
        # array of more than 2**63 bytes, even with no memory behind it
        known_bits = sum(max(int(d), 1).bit_length() for d in shape if d is not None)
        fill = 1 << max(2, min(UNKNOWN_DIM.bit_length() - 1, (60 - known_bits) // unknown))
        shape = tuple(fill if d is None else int(d) for d in shape)
    strides, s = [], 1
    for d in reversed(shape):
        strides.append(s)
        s *= max(d, 1)
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape=shape, strides=tuple(reversed(strides)))


# the result's layout could not be learnt (see the module docstring)
UNKNOWN = "unknown"

# most elements of the arrays a kernel is run on to learn a layout exactly
_EXACT_LIMIT = 1 << 12

# ops whose kernels always give a new row-major array, whatever their inputs' layouts (numpy's
# matmul does, and an array's copy(); tests/test_layouts.py checks it): no kernel is run to learn it
ROW_MAJOR_RESULTS = frozenset({"matmul", "identity"})


def fake_strided(shape, strides):
    """A memoryless array of ``shape`` with element ``strides`` (only its layout is read)."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape=tuple(shape), strides=tuple(strides))


def fake_of_array(a):
    """The layout of concrete array ``a`` as a fake (None for a row-major one)."""
    if type(a) is not np.ndarray or a.ndim < 2 or a.flags.c_contiguous:
        return None
    return fake_strided(a.shape, [s // a.itemsize for s in a.strides])


def layout_key(d):
    """The part of a call's signature that says how argument array ``d`` is laid out: None for
    a row-major one (most), else its strides (a reshape of it copies where it would not)."""
    return None if d.flags.c_contiguous else d.strides


def input_layout(d, shape):
    """The layout of a program input fed arrays laid out as ``d`` (None: row-major), at the
    input's ``shape`` (dims None where dynamic)."""
    if d is None or not hasattr(d, "strides") or d.ndim < 2 or d.flags.c_contiguous:
        return None
    strides = [s // d.itemsize for s in d.strides]
    if None not in shape:
        return fake_strided(d.shape, strides)
    order, _ = _order(fake_strided(d.shape, strides), d.ndim)
    if not np.transpose(d, order).flags.c_contiguous:
        return UNKNOWN  # a strided (sliced) layout whose strides change with the dynamic dims
    return np.transpose(fake_root(tuple(shape[a] for a in order)), np.argsort(order))


def is_row_major(fake):
    return fake is None or (fake is not UNKNOWN and bool(fake.flags.c_contiguous))


def result_layouts(opdef, inputs, attrs, out_types, layout_of):
    """Per output of op ``opdef`` on ``inputs``: its eager layout (a fake, :data:`UNKNOWN`, or
    None for row-major). ``layout_of(tensor)`` gives an input tensor's layout the same way.
    Returns None when every output is row-major."""
    lays = [layout_of(x) if _is_tensor(x) else fake_of_array(x) if isinstance(x, np.ndarray) else None
            for x in inputs]
    if all(is_row_major(f) for f in lays):
        return None
    if opdef.view or opdef.name in ROW_MAJOR_RESULTS:
        return None  # a view's layout is its ViewInfo's; a view op's copy is row-major (views.note)
    if opdef.alias:
        return [lays[0]] * len(out_types)
    if opdef.random or opdef.effect or opdef.structured:
        return [UNKNOWN] * len(out_types)
    if any(f is UNKNOWN for f in lays):
        return [UNKNOWN] * len(out_types)
    shapes = [_shape(x) for x in inputs]
    exact = all(s is None or (None not in s and int(np.prod(s, dtype=np.int64)) <= _EXACT_LIMIT) for s in shapes)
    if not exact and not opdef.elementwise:
        return [UNKNOWN] * len(out_types)
    try:
        arrays = [_proxy(x, f, s, exact) if s is not None else x for x, f, s in zip(inputs, lays, shapes)]
        with np.errstate(all="ignore"), warnings.catch_warnings():  # (made-up values: no warnings for them)
            warnings.simplefilter("ignore")
            out = opdef.kernel(np, *arrays, **attrs)
    except Exception:  # noqa: BLE001 - a kernel refusing made-up values (an index, a divisor): not learnt
        return [UNKNOWN] * len(out_types)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if len(outs) != len(out_types):
        return [UNKNOWN] * len(out_types)
    return [_result_fake(o, t.shape, exact) for o, t in zip(outs, out_types)]


def _shape(x):
    """The static shape of a tensor or array input (None for a Python value); dims unknown
    while building are None."""
    if _is_tensor(x):
        return tuple(x._data.shape) if x._data is not None else tuple(x._var.type.shape)
    if isinstance(x, np.ndarray):
        return tuple(x.shape)
    return None


def _dtype(x):
    if _is_tensor(x):
        return np.dtype(str(x.dtype))
    return x.dtype


def _order(fake, ndim):
    """Axes from the outermost (largest stride) to the innermost; broadcast (zero-stride) axes
    keep stride 0."""
    if fake is None:
        return list(range(ndim)), [False] * ndim
    strides = fake.strides
    order = sorted(range(ndim), key=lambda a: -abs(strides[a]))  # (stable: ties keep row-major order)
    return order, [strides[a] == 0 and fake.shape[a] != 1 for a in range(ndim)]


def _proxy(x, fake, shape, exact):
    """A real array of ``x``'s dtype laid out as ``fake`` (row-major for None): of ``shape``
    when ``exact``, else of at most 2 per dim."""
    dtype = _dtype(x)
    strides = fake.strides if fake is not None and exact else ()
    lo = sum((d - 1) * s for d, s in zip(shape, strides) if s < 0 and d > 0)
    hi = sum((d - 1) * s for d, s in zip(shape, strides) if s > 0 and d > 0)
    if exact and fake is not None and hi - lo < 8 * _EXACT_LIMIT:  # (a view of a huge root: by order)
        buf = np.ones(hi - lo + 1, dtype)
        return np.lib.stride_tricks.as_strided(buf[-lo:], shape=shape, strides=[s * buf.itemsize for s in strides],
                                               writeable=False)
    dims = [d for d in shape] if exact else [1 if d == 1 else 2 for d in shape]
    order, broadcast = _order(fake, len(dims))
    dense = np.ones([1 if broadcast[a] else dims[a] for a in order], dtype)
    out = np.transpose(dense, np.argsort(order))
    return np.broadcast_to(out, dims) if any(broadcast) else out


def _result_fake(o, shape, exact):
    """The layout of kernel result ``o`` at the result's real ``shape`` (None: row-major)."""
    if not isinstance(o, np.ndarray) or o.ndim < 2 or o.flags.c_contiguous:
        return None
    if exact and None not in shape:
        return fake_strided(o.shape, [s // o.itemsize for s in o.strides])
    order, _ = _order(fake_strided(o.shape, [s // o.itemsize for s in o.strides]), o.ndim)
    dense = fake_root(tuple(shape[a] for a in order))
    return np.transpose(dense, np.argsort(order))
