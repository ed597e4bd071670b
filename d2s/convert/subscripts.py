"""``xs[i]`` and ``xs[i] = v`` in converted code: a Python list or tuple indexed by a symbolic
tensor (a loop index inside a tensor loop) is read by stacking its elements and written by
selecting, element by element, between the new value and the old one. Anything else is
plain Python indexing."""
from .. import ops
from ..dispatch import apply
from ..tensor import Tensor, tensor
from ..user_errors import ConvertError, at_user_line
from . import dict_keys
from .values import is_symbolic

_NUMBER = (bool, int, float)


def convert_getitem(obj, index):
    """``obj[index]``."""
    if type(obj) is dict:
        return dict_keys.getitem(obj, index)
    if isinstance(obj, Tensor) and _dynamic_slices(index):
        return _read_dynamic_slices(obj, index)
    if type(obj) in (list, tuple) and is_symbolic(index):
        if index.ndim != 0 or not index.dtype.startswith("int"):
            raise at_user_line(f"list indices must be integers, not a {index.dtype} tensor of shape "
                               f"{tuple(index.shape)}", TypeError)
        # list_get: an index out of range raises IndexError when the program runs, as Python does
        return apply("list_get", _stacked(obj, "read"), index)
    return obj[index]


def convert_setitem(obj, index, value):
    """``obj[index] = value``."""
    if isinstance(obj, Tensor) and _dynamic_slices(index):
        raise at_user_line("assigning into a slice whose bound is known only when the program runs (a tensor "
                           "loop's counter): the program cannot write a part of unknown length in place; build "
                           "the new value with d2s.where over a mask of the positions, or d2s.cat the parts",
                           ConvertError)
    if type(obj) is list and is_symbolic(index):
        _select_into(obj, index, value)
        return
    if type(obj) is dict:
        dict_keys.setitem(obj, index, value)
        return
    obj[index] = value


def _dynamic_slices(index):
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, slice) and any(is_symbolic(b) for b in (p.start, p.stop, p.step)) for p in parts)


def _read_dynamic_slices(x, index):
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


def _stacked(items, what):
    """The elements of a Python list as one tensor (they must share dtype and shape)."""
    items = list(items)
    if not items:
        raise at_user_line(f"list index out of range (a tensor index {what}s an empty list)", IndexError)
    if all(isinstance(e, _NUMBER) for e in items):
        return tensor(items)
    if not all(isinstance(e, Tensor) or isinstance(e, _NUMBER) for e in items):
        kinds = sorted({type(e).__name__ for e in items if not isinstance(e, (Tensor,) + _NUMBER)})
        raise at_user_line(f"a Python list holding {', '.join(kinds)} values cannot be {what} at a tensor "
                           "index (a position known only when the program runs); only lists of tensors of "
                           "one dtype and shape, or of numbers, can", TypeError)
    like = next(e for e in items if isinstance(e, Tensor))
    parts = [e if isinstance(e, Tensor) else tensor(e, dtype=str(like.dtype)) for e in items]
    shapes = {tuple(d if isinstance(d, int) else None for d in p.shape) for p in parts}
    if len({str(p.dtype) for p in parts}) > 1 or len({len(s) for s in shapes}) > 1:
        raise at_user_line(f"the elements of a Python list {what} at a tensor index must share one dtype and "
                           f"shape (they become one stacked tensor), got "
                           f"{sorted({f'{p.dtype}{tuple(p.shape)}' for p in parts})}", TypeError)
    return ops.stack(parts, 0)


def _select_into(lst, index, value):
    """``lst[index] = value`` for a symbolic ``index``: every element becomes
    ``where(index == j, value, lst[j])``."""
    n = len(lst)
    _stacked(lst + [value], "written")  # checks that the value fits with the elements
    if index.ndim != 0 or not index.dtype.startswith("int"):
        raise at_user_line(f"list indices must be integers, not a {index.dtype} tensor of shape "
                           f"{tuple(index.shape)}", TypeError)
    # the position counted from the start; an index out of range raises IndexError when the
    # program runs, as Python's list assignment does
    k = apply("list_get", tensor(list(range(n)), dtype="int64"), index) if n else None
    if k is None:
        raise at_user_line("list assignment index out of range (the list is empty)", IndexError)
    for j, old in enumerate(lst):
        new = ops.where(ops.eq(k, j), value, old)
        if isinstance(old, Tensor) and new.dtype != old.dtype:
            new = ops.cast(new, str(old.dtype))
        lst[j] = new
