"""Values that are a Python number on some runs and a tensor on others (``NumberOrTensor``:
``min(x.sum(), 0.5)``, ``v = 0.0`` then ``v = x.mean()`` in a tensor `if`), or a number of one
type on some runs and another on others (``1 if c else 0.5``), met again by a tensor `if` or
carried by a tensor loop: which outputs need it, and the parts (is it the number, the number
exactly) that the ``cond`` or ``while`` op carries beside the value so that the value keeps its
kind, run by run (control_flow.py, loops.py)."""
from .. import ops
from ..static.weak_index import NUMBER_DTYPES, NumberOrTensor, exact_number, number_type, plain_tensor
from ..tensor import Tensor, tensor
from ..user_errors import at_user_line
from .undefined import Undefined
from .values import describe


def number_types_of(tr, fv):
    """(true side's type, false side's) where both sides are Python numbers (or stand for them,
    0-d) of different types, else None."""
    types = (number_type(tr), number_type(fv))
    if None in types or types[0] is types[1]:
        return None
    if any(isinstance(v, Tensor) and v.ndim for v in (tr, fv)):
        return None
    return types


def _is_mixed(v):
    """A NumberOrTensor that is a number of one type on some runs and a tensor on others."""
    return isinstance(v, NumberOrTensor) and v.else_type is None


def find_mixed(t_raw, f_raw, name_of):
    """{leaf: Python type} for the outputs that are a Python number on some runs and a tensor on
    others, on one side at least (``min(x.sum(), 0.5)`` before the `if`): the merged value must
    carry which it is and the number exactly through the ``cond``. A number of another type on
    some paths is refused: the program holds one number type per value."""
    found = {}
    for k, (tr, fv) in enumerate(zip(t_raw, f_raw)):
        if _two_types(tr) or _two_types(fv):
            found[k] = _typed_pair(tr, fv, name_of(k))
            continue
        # (an undefined side, an early return's value the other branch does not set, is never read)
        if not (_is_mixed(tr) or _is_mixed(fv)) or (isinstance(tr, Undefined) and isinstance(fv, Undefined)):
            continue
        types = {v.pytype if _is_mixed(v) else number_type(v) for v in (tr, fv)} - {None}
        if len(types) > 1:
            names = " and ".join(sorted(t.__name__ for t in types))
            raise at_user_line(
                f"'{name_of(k)}' is a Python number after this tensor `if` on some runs, of type "
                f"{names} depending on the data, and a tensor on others: a program holds one number type per "
                "value. Give it numbers of one type (0.0 rather than 0) on every path", TypeError)
        found[k] = types.pop()
    return found


def _two_types(v):
    """A NumberOrTensor that is a Python number on every run, of one type or another."""
    return isinstance(v, NumberOrTensor) and v.else_type is not None


def _typed_pair(tr, fv, name):
    """(A, B) for an output that is a Python number of type A on some runs and B on others
    (``1 if c else 0.5`` before the `if`), on both sides; a tensor on some paths too is refused."""
    pair = next((v.pytype, v.else_type) for v in (tr, fv) if _two_types(v))
    for v in (tr, fv):
        if isinstance(v, Undefined):
            continue
        types = {v.pytype, v.else_type} if _two_types(v) else {number_type(v)}
        if not types <= set(pair):
            raise at_user_line(
                f"'{name}' is a Python {pair[0].__name__} on some runs and a {pair[1].__name__} "
                f"on others before this tensor `if`, and {describe(v)} in a branch: a program can carry a value "
                "of two number types, not three kinds. Give it numbers of one type (0.0 rather than 0)", TypeError)
    return pair


def mixed_parts(vals, mixed):
    """For each value ``vals[k]`` of ``mixed`` ({k: Python type}, see ``find_mixed``):
    whether it is a Python number (a 0-d bool tensor) and that number exactly (0-d, of its
    type's dtype); a branch's outputs, a loop's carried values. For a number of type A on some
    runs and B on others ({k: (A, B)}): whether it is an A, twice (the value holds the number)."""
    parts = []
    for k, py in sorted(mixed.items()):
        if isinstance(py, tuple):
            v = vals[k]
            if _two_types(v):  # (v * 0.5 of an int or a float is a float either way)
                a, b = v.pytype is py[0], v.else_type is py[0]
                flag = a if a == b else v.is_number if a else ops.logical_not(v.is_number)
            else:  # (an undefined side: never read)
                flag = number_type(v) is py[0]
            flag = _scalar(flag, "bool")
            parts += [flag, flag]
            continue
        v, dtype = vals[k], NUMBER_DTYPES[py]
        if _is_mixed(v):
            flag, number = v.is_number, exact_number(v)
        elif number_type(v) is not None:
            flag, number = True, v
        else:  # a tensor (or a placeholder for an undefined value: never read)
            flag, number = False, 0
        flag = _scalar(flag, "bool")
        parts += [flag, _scalar(number, dtype)]
    return tuple(parts)


def _scalar(v, dtype):
    """``v`` (a Python value or a tensor of one element) as a plain 0-d tensor of ``dtype``."""
    if not isinstance(v, Tensor):
        return tensor(v, dtype=dtype)
    v = plain_tensor(v)
    if v.ndim:
        v = ops.reshape(v, [-1])[0]
    return v if str(v.dtype) == dtype else ops.cast(v, dtype)
