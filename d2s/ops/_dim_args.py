"""PyTorch's reduction arguments: ``dim=``/``keepdim=`` (numpy's ``axis=``/``keepdims=`` as aliases),
``dtype=``, and a clear error for a PyTorch keyword d2s does not take."""
import numpy as np

from ..dtypes import as_dtype
from ..tensor import Tensor

# PyTorch keywords d2s refuses, with what to write instead
_HINTS = {
    "out": "d2s does not write results into out= tensors; assign the result instead (y = d2s.sum(x, 1))",
    "memory_format": "d2s tensors have one memory layout; drop the argument",
    "layout": "d2s tensors are dense; drop the argument",
    "pin_memory": "d2s has no pinned memory; drop the argument",
    "names": "d2s has no named tensors; use dim numbers",
}


def no_extra(fn, extra):
    """Raise a TypeError naming the first keyword of ``extra`` (the ``**kwargs`` of ``fn``)."""
    if not extra:
        return
    name = next(iter(extra))
    hint = _HINTS.get(name)
    if hint:
        raise TypeError(f"d2s.{fn}(): the PyTorch keyword {name}= is not supported: {hint}")
    raise TypeError(f"d2s.{fn}() got an unexpected keyword argument {name!r}")


def alias(fn, value, numpy_value, name, numpy_name, default=None):
    """``value`` (PyTorch's keyword ``name``) or ``numpy_value`` (its numpy alias), not both."""
    if numpy_value is None:
        return value
    given = not (value is default or value is None or (type(value) is tuple and not value))  # amax's dim=()
    if given:
        raise TypeError(f"d2s.{fn}(): got both {name}= and its alias {numpy_name}=; give one")
    return numpy_value


def _int_dim(fn, d):
    if isinstance(d, (bool, np.bool_)):
        raise TypeError(f"d2s.{fn}(): dim must be an int, got {d!r}")
    if isinstance(d, Tensor):
        if d.is_symbolic or d.ndim != 0 or not str(d.dtype).startswith("int"):
            raise TypeError(f"d2s.{fn}(): dim must be an int known when the program is built, got a tensor")
        return int(d.numpy())
    try:
        return int(d.__index__())
    except (AttributeError, TypeError):
        raise TypeError(f"d2s.{fn}(): dim must be an int or a tuple of ints, got {d!r}") from None


def dims(fn, dim, axis=None):
    """The dims to reduce as a list of ints, or None for all (``dim=None``, ``()`` or ``[]``, as
    PyTorch reads an empty dim list)."""
    dim = alias(fn, dim, axis, "dim", "axis")
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        return [_int_dim(fn, d) for d in dim] or None
    return [_int_dim(fn, dim)]


def one_dim(fn, dim, axis=None):
    """One dim as an int (None stays None); several dims are an error naming ``fn``."""
    dim = alias(fn, dim, axis, "dim", "axis")
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        raise TypeError(f"d2s.{fn}(): dim must be one int, got {dim!r}"
                        + (" (amax/amin reduce over several dims)" if fn in ("max", "min") else ""))
    return _int_dim(fn, dim)


def keep(fn, keepdim, keepdims):
    """``keepdim`` (PyTorch) or its numpy alias ``keepdims``, as a bool."""
    return bool(alias(fn, keepdim, keepdims, "keepdim", "keepdims", default=False))


def dtype_name(dtype):
    """A dtype argument as d2s's dtype name (None stays None)."""
    return None if dtype is None else str(as_dtype(dtype))
