"""Rearranging ops: ``flip``, ``roll``, ``repeat``, ``tile``, ``repeat_interleave``, ``narrow``,
``hstack``/``vstack``/``dstack``/``column_stack``, ``atleast_nd`` and ``tensor_split``/``hsplit``/
``vsplit``/``dsplit`` (runtime: ``repeat_index``
in ``d2s_runtime/ops/shape_ops.py``).

Each is composed of existing primitives where that is exact (``flip`` is a reversed slice
copied, ``repeat`` a broadcast between two reshapes), so gradients, programs with dynamic dims,
saved programs and ONNX export come with them. Each result is a new tensor, as PyTorch's (a
write into it never reaches ``x``), except ``narrow``, a view as in PyTorch.
"""
import builtins

import numpy as np

from ..autograd.registry import non_differentiable
from ..dispatch import apply
from ..onnx.registry import onnx_unsupported
from ..tensor import Tensor, tensor_method
from .creation import arange
from .indexing import getitem
from .shape import _dim_arg, _norm_dim, _sizes_arg, _tensor_seq, broadcast_to, concat, flatten, identity, reshape, \
    unsqueeze
from ._util import _as_tensor, _is_symbolic


def _dims_list(op, dims, nd):
    dims = [dims] if isinstance(dims, (int, np.integer)) else list(dims)
    out = [_norm_dim(op, d, nd) for d in dims]
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: dim {dims} appears more than once")
    return out


# ------------------------------------------------------------------ flip
@tensor_method()
def flip(x, dims=None, *more_dims, axis=None):
    """``x`` with the order of elements reversed along ``dims`` (an int or a list; the method
    takes them one by one too, ``x.flip(0, 2)``), as a new tensor (``torch.flip``; numpy's
    ``axis=`` too, None meaning every dim there)."""
    x = _as_tensor(x)
    if more_dims:
        dims = (dims,) + more_dims
    dims = _dim_arg("flip", dims, axis)
    if dims is None:
        if axis is None and not x.ndim:
            raise TypeError("flip: missing the dims to flip (flip(x, dims))")
        dims = list(range(x.ndim))
    axes = _dims_list("flip", dims, x.ndim)
    if not axes:
        return identity(x)
    index = tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(x.ndim))
    return identity(getitem(x, index))  # a copy: the reversed slice alone is a view of x


@tensor_method()
def fliplr(x):
    """``x`` flipped left-right (along dim 1); ``x`` needs at least 2 dims."""
    x = _as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"fliplr: needs a tensor of at least 2 dims, got {x.ndim}")
    return flip(x, [1])


@tensor_method()
def flipud(x):
    """``x`` flipped up-down (along dim 0); ``x`` needs at least 1 dim."""
    x = _as_tensor(x)
    if x.ndim < 1:
        raise ValueError("flipud: needs a tensor of at least 1 dim, got a 0-d one")
    return flip(x, [0])


# ------------------------------------------------------------------ roll
@tensor_method()
def roll(x, shifts, dims=None):
    """``x`` with its elements shifted by ``shifts`` along ``dims`` (wrapping around), as
    ``torch.roll``; with no dims, over the flattened tensor, keeping its shape."""
    x = _as_tensor(x)
    shifts = [shifts] if isinstance(shifts, (int, np.integer, Tensor)) else list(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise ValueError(f"roll: {len(shifts)} shifts given without dims; give one shift, or one dim per shift")
        if x.ndim == 0:
            return identity(x)
        return reshape(roll(flatten(x), shifts[0], 0), list(x.shape))
    dims = [dims] if isinstance(dims, (int, np.integer)) else list(dims)
    if len(dims) != len(shifts):
        raise ValueError(f"roll: {len(shifts)} shifts and {len(dims)} dims; give one shift per dim")
    out = x
    for k, d in zip(shifts, dims):
        out = _roll_one(out, k, _norm_dim("roll", d, x.ndim))
    return out if out is not x else identity(x)


def _roll_one(x, k, d):
    n = x.shape[d]
    if isinstance(k, Tensor) or _is_symbolic(n):
        # a shift or a size known only when the program runs: gather by (i - k) mod n
        index = (arange(n) - k) % n
        return getitem(x, (slice(None),) * d + (index,))
    n, k = int(n), int(k)
    if n == 0 or k % n == 0:
        return x
    k %= n
    before = (slice(None),) * d
    return concat([getitem(x, before + (slice(n - k, None),)), getitem(x, before + (slice(None, n - k),))], d)


# ------------------------------------------------------------------ repeat, tile
@tensor_method()
def repeat(x, *sizes):
    """``x`` repeated ``sizes[i]`` times along each dim (``Tensor.repeat``; ``x.repeat(2, 1)``
    or ``x.repeat((2, 1))``); extra leading sizes add leading dims. A size may be a symbolic
    0-d tensor (``h0.repeat(1, x.size(0), 1)``)."""
    x = _as_tensor(x)
    reps = _sizes_arg(sizes)
    if len(reps) < x.ndim:
        raise ValueError(f"repeat: {len(reps)} sizes for a tensor of {x.ndim} dims; give at least one per dim")
    for r in reps:
        if not _is_symbolic(r) and int(r) < 0:
            raise ValueError(f"repeat: sizes must be non-negative, got {list(reps)}")
    return _tile(x, reps)


@tensor_method()
def tile(x, dims):
    """``x`` repeated ``dims[i]`` times along each dim (``torch.tile``): fewer sizes than dims
    are padded with 1s in front."""
    x = _as_tensor(x)
    reps = list(dims) if isinstance(dims, (list, tuple)) else [dims]
    reps = [1] * (x.ndim - len(reps)) + reps
    return repeat(x, reps)


def _tile(x, reps):
    """repeat as reshape (a size-1 dim before each dim) -> broadcast (the repeats) -> reshape."""
    lead = len(reps) - x.ndim
    shape = [1] * lead + list(x.shape)
    if builtins.all(not _is_symbolic(r) and int(r) == 1 for r in reps):
        return reshape(x, shape) if lead else identity(x)
    inter = []
    for d in shape:
        inter += [1, d]
    expanded = []
    for r, d in zip(reps, shape):
        expanded += [r, d]
    merged = [r * d for r, d in zip(reps, shape)]
    return reshape(broadcast_to(reshape(x, inter), expanded), merged)


# ------------------------------------------------------------------ repeat_interleave
@tensor_method()
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element of ``x`` repeated ``repeats`` times along ``dim`` (None: over the
    flattened tensor), as ``torch.repeat_interleave``; ``repeats`` is an int or a 1-d int
    tensor of one count per element. ``repeat_interleave(counts)`` alone gives the indices
    ``0, 0, ..., 1, ...`` repeated by ``counts``."""
    if repeats is None:  # repeat_interleave(counts)
        counts = _as_tensor(input)
        return apply("repeat_index", _int64(counts))
    x = _as_tensor(input)
    if dim is None:
        x, dim = flatten(x), 0
    d = _norm_dim("repeat_interleave", dim, x.ndim)
    # a one-element repeats tensor (0-d or of shape (1,)) repeats every element, as PyTorch's
    if isinstance(repeats, (int, np.integer)) or (isinstance(repeats, Tensor) and repeats.ndim <= 1
                                                   and not repeats.is_symbolic and repeats.numel() == 1):
        r = int(repeats)
        if r < 0:
            raise ValueError(f"repeat_interleave: repeats must be non-negative, got {r}")
        shape = list(x.shape)
        inter = shape[:d + 1] + [1] + shape[d + 1:]
        expanded = shape[:d + 1] + [r] + shape[d + 1:]
        merged = shape[:d] + [shape[d] * r] + shape[d + 1:]
        return reshape(broadcast_to(reshape(x, inter), expanded), merged)
    counts = _int64(_as_tensor(repeats))
    if counts.ndim <= 1:
        # a symbolic one-element count is the same count for every element (broadcast), and
        # one count per element stays as it is (a length known only when the program runs, too)
        counts = broadcast_to(reshape(counts, [-1]), [x.shape[d]])
    index = apply("repeat_index", counts)
    return getitem(x, (slice(None),) * d + (index,))


def _int64(t):
    if not str(t.dtype).startswith(("int", "uint")):
        raise TypeError(f"repeat_interleave: repeats must be integers, got {t.dtype}")
    return t if t.dtype == "int64" else t.cast("int64")


non_differentiable("repeat_index", reason="indices are integers")
onnx_unsupported("repeat_index", reason="its output size depends on the repeat counts (the data); repeat by an "
                                        "int, or export a program taking the repeated indices as an input")


# ------------------------------------------------------------------ narrow
@tensor_method()
def narrow(x, dim, start, length):
    """The ``length`` elements of ``x`` from ``start`` along ``dim`` (a view, as ``torch.narrow``);
    ``start`` may be negative (counted from the end)."""
    x = _as_tensor(x)
    d = _norm_dim("narrow", dim, x.ndim)
    start, length = int(start), int(length)
    n = x.shape[d]
    if not _is_symbolic(n):
        n = int(n)
        if not -n <= start <= n:
            raise IndexError(f"narrow: start ({start}) is out of range for dim {d} of size {n}")
        if start < 0:
            start += n
        if length < 0 or start + length > n:
            raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dim {d} of size {n}")
    elif start < 0:
        raise IndexError("narrow: a negative start needs the dim's size, known here only when the program runs")
    return getitem(x, (slice(None),) * d + (slice(start, start + length),))


@tensor_method()
def select(x, dim, index):
    """``x`` at ``index`` along ``dim``, that dim removed (a view, as ``torch.select``:
    ``x.select(1, -1)`` is ``x[:, -1]``)."""
    x = _as_tensor(x)
    d = _norm_dim("select", dim, x.ndim)
    return getitem(x, (slice(None),) * d + (index,))


# ------------------------------------------------------------------ stacking helpers
def hstack(tensors):
    """The tensors joined column-wise: along dim 1, or dim 0 for 1-d ones (``torch.hstack``)."""
    tensors = [atleast_1d(t) for t in _tensor_seq("hstack", tensors)]
    return concat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    """The tensors joined row-wise, 1-d ones as rows (``torch.vstack``)."""
    return concat([atleast_2d(t) for t in _tensor_seq("vstack", tensors)], 0)


row_stack = vstack


def dstack(tensors):
    """The tensors joined along dim 2, made at least 3-d first (``torch.dstack``)."""
    return concat([atleast_3d(t) for t in _tensor_seq("dstack", tensors)], 2)


def column_stack(tensors):
    """The tensors as columns: 0-d and 1-d ones become columns, then joined along dim 1."""
    cols = []
    for t in _tensor_seq("column_stack", tensors):
        t = _as_tensor(t)
        cols.append(reshape(t, [-1, 1]) if t.ndim <= 1 else t)
    return concat(cols, 1)


def atleast_1d(x):
    """``x`` with at least one dim (a 0-d tensor becomes shape (1,))."""
    x = _as_tensor(x)
    return reshape(x, [1]) if x.ndim == 0 else x


def atleast_2d(x):
    """``x`` with at least two dims (new dims in front)."""
    x = atleast_1d(x)
    return unsqueeze(x, 0) if x.ndim == 1 else x


def atleast_3d(x):
    """``x`` with at least three dims: (n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)."""
    x = _as_tensor(x)
    if x.ndim == 0:
        return reshape(x, [1, 1, 1])
    if x.ndim == 1:
        return unsqueeze(unsqueeze(x, 0), 2)
    return unsqueeze(x, 2) if x.ndim == 2 else x


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-d tensors, as ``torch.meshgrid``: with ``indexing='ij'`` (PyTorch's
    default, which it warns about when not given) output k varies along dim k; with ``'xy'`` the
    first two dims are swapped (numpy's and matplotlib's convention). Returns a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        import warnings
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    ts = [_as_tensor(t) for t in tensors]
    for t in ts:
        if t.ndim not in (0, 1):
            raise ValueError(f"meshgrid: expects 0-d or 1-d tensors, got one with {t.ndim} dims")
    ts = [reshape(t, [-1]) for t in ts]
    if indexing == "xy" and len(ts) >= 2:
        ts[0], ts[1] = ts[1], ts[0]
    n = len(ts)
    shape = [t.shape[0] for t in ts]
    grids = [broadcast_to(reshape(t, [-1 if i == k else 1 for i in range(n)]), shape) for k, t in enumerate(ts)]
    if indexing == "xy" and n >= 2:  # grids of shape (len(y), len(x), ...), each for its own input
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


# ------------------------------------------------------------------ tensor_split, hsplit, vsplit, dsplit
@tensor_method()
def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,
                 tensor_indices_or_sections=None):
    """Views of ``input`` split along ``dim``, as ``torch.tensor_split``: an int ``n`` gives ``n``
    pieces as equal as can be (the first ``size % n`` one longer), a list (or 1-d tensor) of
    indices gives the pieces between them (``x[:i0], x[i0:i1], ..., x[ik:]``, clamped as slices are).

    Args:
        input: the tensor to split.
        indices_or_sections: an int (or 0-d int tensor), or a sequence (or 1-d tensor) of ints
            (PyTorch's keywords ``sections=``, ``indices=`` and ``tensor_indices_or_sections=``
            name it too).
        dim: the dim to split along.

    Returns:
        A tuple of tensors.
    """
    x = _as_tensor(input)
    if x.ndim == 0:
        raise ValueError("tensor_split: expected at least a 1-dimensional tensor, but got a 0-d one")
    d = _norm_dim("tensor_split", dim, x.ndim)
    spec = _one_spec("tensor_split", indices_or_sections=indices_or_sections, sections=sections, indices=indices,
                     tensor_indices_or_sections=tensor_indices_or_sections)
    if isinstance(spec, Tensor):
        if str(spec.dtype) not in ("int64", "int32", "int16", "int8", "uint8"):
            raise TypeError(f"tensor_split: indices_or_sections must be an int tensor, got {spec.dtype}")
        if spec.ndim > 1:
            raise ValueError(f"tensor_split: indices_or_sections must be a 0-d or 1-d tensor, got {spec.ndim} dims")
        if spec.is_symbolic:
            raise TypeError("tensor_split: inside a program (to_static, build_program) indices_or_sections must be "
                            "Python ints (or a tensor made outside it): the pieces' number and sizes are fixed when "
                            "the program is built")
        spec = int(spec) if spec.ndim == 0 else [int(i) for i in spec.tolist()]
    if isinstance(spec, (int, np.integer)):
        n = int(spec)
        if n <= 0:
            raise ValueError(f"tensor_split: the number of sections must be greater than zero, got {n}")
        size = _known_size("tensor_split", x, d)
        lengths = [size // n + 1] * (size % n) + [size // n] * (n - size % n)
        bounds = [builtins.sum(lengths[:k]) for k in range(1, n)]
    else:
        bounds = [int(i) for i in spec]
    starts, stops = [0] + bounds, bounds + [None]
    head = (slice(None),) * d
    return tuple(getitem(x, head + (slice(a, b),)) for a, b in zip(starts, stops))


def _one_spec(op, **given):
    """The one of PyTorch's names for the split points that the call gave."""
    named = [(k, v) for k, v in given.items() if v is not None]
    if len(named) != 1:
        raise TypeError(f"{op}() takes the sections or indices once, as one of {', '.join(given)}; got "
                        f"{', '.join(k for k, _ in named) or 'none'}")
    return named[0][1]


def _known_size(op, x, d):
    n = x.shape[d]
    if _is_symbolic(n):
        raise ValueError(f"{op}: dim {d} of this tensor is only known when the program runs, but splitting it into "
                         "sections needs its size when the program is built; give the dim a fixed size (InputSpec) "
                         "or split at indices")
    return int(n)


def _direction_split(op, x, spec, d, min_dims):
    x = _as_tensor(x)
    if x.ndim < min_dims:
        raise ValueError(f"torch.{op} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                         f"{x.ndim} dimensions!")
    if isinstance(spec, (int, np.integer)) or (isinstance(spec, Tensor) and spec.ndim == 0):
        n, size = int(spec), _known_size(op, x, d)
        if n == 0 or size % n:
            raise ValueError(f"torch.{op} attempted to split along dimension {d}, but the size of the dimension "
                             f"{size} is not divisible by the split_size {n}!")
    return tensor_split(x, spec, d)


@tensor_method()
def hsplit(input, indices_or_sections=None, *, sections=None, indices=None):
    """:func:`tensor_split` along dim 1 (dim 0 of a 1-d tensor), as ``torch.hsplit``: an int must
    divide the dim's size."""
    spec = _one_spec("hsplit", indices_or_sections=indices_or_sections, sections=sections, indices=indices)
    return _direction_split("hsplit", input, spec, 0 if _as_tensor(input).ndim == 1 else 1, 1)


@tensor_method()
def vsplit(input, indices_or_sections=None, *, sections=None, indices=None):
    """:func:`tensor_split` along dim 0 of a tensor of 2 or more dims, as ``torch.vsplit``: an int
    must divide the dim's size."""
    spec = _one_spec("vsplit", indices_or_sections=indices_or_sections, sections=sections, indices=indices)
    return _direction_split("vsplit", input, spec, 0, 2)


@tensor_method()
def dsplit(input, indices_or_sections=None, *, sections=None, indices=None):
    """:func:`tensor_split` along dim 2 of a tensor of 3 or more dims, as ``torch.dsplit``: an int
    must divide the dim's size."""
    spec = _one_spec("dsplit", indices_or_sections=indices_or_sections, sections=sections, indices=indices)
    return _direction_split("dsplit", input, spec, 2, 3)
