"""``xs[i]`` and ``xs[i] = v`` in converted code: a Python list or tuple indexed by a symbolic
tensor (a loop index inside a tensor loop) is read by stacking its elements and written by
selecting, element by element, between the new value and the old one. Anything else is
plain Python indexing."""
from .. import ops
from ..dispatch import apply
from ..static.weak_index import NUMBER_DTYPES, number_or_tensor, number_stand_in, number_type, plain_tensor
from ..tensor import Tensor, tensor
from ..user_errors import ConvertError, at_user_line
from . import dict_keys
from .dynamic_slices import has_dynamic_slices, read_dynamic_slices
from .values import is_symbolic

_NUMBER = (bool, int, float)


def convert_getitem(obj, index):
    """``obj[index]``."""
    if type(obj) is dict:
        return dict_keys.getitem(obj, index)
    if isinstance(obj, Tensor) and has_dynamic_slices(index):
        return read_dynamic_slices(obj, index)
    if type(obj) in (list, tuple) and is_symbolic(index):
        if index.ndim != 0 or not index.dtype.startswith("int"):
            raise at_user_line(f"list indices must be integers, not a {index.dtype} tensor of shape "
                               f"{tuple(index.shape)}", TypeError)
        # list_get: an index out of range raises IndexError when the program runs, as Python does
        py = _number_kind(obj)
        if py is not None:
            # Python numbers (or stand-ins for them) of one type: the one read is that number
            parts = [ops.cast(plain_tensor(e), NUMBER_DTYPES[py]) if isinstance(e, Tensor) else
                     tensor(e, dtype=NUMBER_DTYPES[py]) for e in obj]
            return number_stand_in(apply("list_get", ops.stack(parts, 0), index))
        return apply("list_get", _stacked(obj, "read"), index)
    return obj[index]


def _number_kind(items):
    """The Python type of the numbers ``items`` all are (or stand for, 0-d), else None; numbers
    of several types are refused: which type eager code reads depends on the index."""
    if not items or not all(number_type(e) is not None and (not isinstance(e, Tensor) or e.ndim == 0)
                            for e in items):
        return None
    kinds = {number_type(e) for e in items}
    if len(kinds) > 1:
        names = ", ".join(sorted(k.__name__ for k in kinds))
        raise at_user_line(f"a Python list of numbers of several types ({names}) read at a tensor index (a "
                           "position known only when the program runs): which type eager code gets depends on "
                           "the index; give the list numbers of one type", TypeError)
    return kinds.pop()


def convert_setitem(obj, index, value):
    """``obj[index] = value``."""
    if isinstance(obj, Tensor) and has_dynamic_slices(index):
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
    py = _number_kind(lst)
    if py is not None and (number_type(value) is not None or (isinstance(value, Tensor) and value.ndim == 0)):
        _select_number_into(lst, k, value, py)
        return
    for j, old in enumerate(lst):
        new = ops.where(ops.eq(k, j), value, old)
        if isinstance(old, Tensor) and new.dtype != old.dtype:
            new = ops.cast(new, str(old.dtype))
        lst[j] = new


def _select_number_into(lst, k, value, py):
    """``_select_into`` for a list of Python numbers of type ``py``: a number of that type
    written keeps every element a number (exactly, in ``py``'s dtype); a 0-d tensor written
    makes element ``k`` a tensor and leaves the others numbers, run by run (NumberOrTensor)."""
    got = number_type(value)
    if got is not None and got is not py:
        raise at_user_line(f"a Python {got.__name__} written at a tensor index into a list of {py.__name__}s: which "
                           "element changes type depends on the index; write a number of the list's type",
                           TypeError)
    dtype = NUMBER_DTYPES[py]
    olds = [ops.cast(plain_tensor(e), dtype) if isinstance(e, Tensor) else tensor(e, dtype=dtype) for e in lst]
    if got is not None:
        v = ops.cast(plain_tensor(value), dtype) if isinstance(value, Tensor) else tensor(value, dtype=dtype)
        for j, old in enumerate(olds):
            lst[j] = number_stand_in(apply("where", ops.eq(k, j), v, old))
        return
    value = plain_tensor(value)
    for j, old in enumerate(olds):
        hit = ops.eq(k, j)
        t = apply("where", hit, value, old if str(value.dtype) == dtype else ops.cast(old, str(value.dtype)))
        lst[j] = number_or_tensor(t, hit, False, py, number=old)
