"""Reading ``x[a:b]`` where a slice bound is known only when the program runs (a tensor loop's
counter, a range loop op's position): the converter's subscripts and the buffers a range loop
grows (growing.py) both read such parts."""
from .. import ops
from ..tensor import Tensor
from ..user_errors import ConvertError, at_user_line
from .values import is_symbolic


def has_dynamic_slices(index):
    """Whether a slice of ``index`` has a bound known only when the program runs."""
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, slice) and any(is_symbolic(b) for b in (p.start, p.stop, p.step)) for p in parts)


def read_dynamic_slices(x, index):
    """``x[index]`` where some slice of ``index`` has a bound known only when the program runs:
    the other entries index first, then each such dim is read at the positions the slice
    selects (Python's clamping and negative bounds included), a part of unknown length."""
    parts = index if isinstance(index, tuple) else (index,)
    if any((isinstance(p, Tensor) and p.ndim != 0) or isinstance(p, (list, tuple)) for p in parts):
        raise at_user_line("a slice with a bound known only when the program runs, next to an index tensor: "
                           "index in two steps (x[idx][:, a:b])", ConvertError)
    if sum(p is Ellipsis for p in parts) > 1:
        return x[index]  # (Python's own error)
    consumed = sum(1 for p in parts if p is not None and p is not Ellipsis)
    static, dynamic, dim = [], [], 0
    for p in parts:
        if p is Ellipsis:
            static.append(p)
            dim += x.ndim - consumed
        elif p is None:
            static.append(p)
            dim += 1
        elif isinstance(p, slice):
            if any(is_symbolic(b) for b in (p.start, p.stop, p.step)):
                dynamic.append((dim, p))
                static.append(slice(None))
            else:
                static.append(p)
            dim += 1
        else:  # an int (or a 0-d int tensor): the dim goes away
            static.append(p)
    out = x[tuple(static)]
    for d, s in dynamic:
        out = out[(slice(None),) * d + (_positions(s, out.shape[d]),)]
    return out


def _positions(s, size):
    """The positions ``range(size)[s]`` selects, as a 1-D int64 tensor (``s`` may hold 0-d int
    tensors; its step must be a nonzero Python int)."""
    step = 1 if s.step is None else s.step
    if is_symbolic(step):
        raise at_user_line("a slice step known only when the program runs is not supported; use a Python int step",
                           ConvertError)
    if step == 0:
        raise at_user_line("slice step cannot be zero", ValueError)
    lo, hi = (0, size) if step > 0 else (-1, ops.sub(size, 1) if is_symbolic(size) else size - 1)

    def bound(b, default):
        if b is None:
            return default
        b = ops.where(ops.lt(b, 0), ops.add(b, size), b) if is_symbolic(b) else (b + size if b < 0 else b)
        return ops.minimum(ops.maximum(b, lo), hi)

    start = bound(s.start, 0 if step > 0 else hi)
    stop = bound(s.stop, size if step > 0 else -1)
    span = ops.sub(stop, start)
    count = ops.floordiv(ops.add(span, step - (1 if step > 0 else -1)), step)
    count = ops.maximum(count, 0)
    return ops.add(ops.mul(ops.arange(count), step), start)
