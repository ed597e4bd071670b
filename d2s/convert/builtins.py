"""Tensor-aware versions of the builtins converted code calls: len, int/float/bool, assert,
isinstance (and the checked read of a local that may be unbound); print is in ``printing``.
Python values keep Python behaviour; symbolic tensors get ops."""
import builtins

import numpy as np

from .. import ops
from ..dispatch import apply
from ..static.tensor_array import TensorArray
from ..static.weak_index import (NUMBER_DTYPES, NumberOrTensor, exact_number, number_or_tensor, number_stand_in,
                                number_type, plain_tensor, python_type, weak)
from ..tensor import Tensor
from ..user_errors import at_user_line, user_frame
from . import growing
from .undefined import MaybeNone, MaybeUnbound, Undefined, unbound_error
from .values import is_symbolic


def convert_len(x):
    """``len(x)``: the static size when known, else a 0-d int64 tensor computed in the program."""
    # (weak: a length is a Python int, and it comes back from the program as one)
    if is_symbolic(x):
        if x.ndim == 0:
            raise at_user_line("len() of a 0-d tensor", TypeError)
        return weak(x.shape[0])
    if _is_tensor_array(x):
        return weak(x.length()) if x.data is None or x.data.is_symbolic else builtins.len(x)
    return builtins.len(x)


def convert_list(*args):
    """``list(xs)``: a copy; a list grown in a tensor loop or branch (a TensorArray, whose
    length is known only when the program runs) stays one."""
    if len(args) == 1 and _is_tensor_array(args[0]):
        return args[0].copy()
    return builtins.list(*args)


def _cast(x, dtype, pyfn):
    if is_symbolic(x):
        _one_element(x, pyfn.__name__)
        x = x.detach()  # a Python number carries no gradient, so neither does its stand-in
        if x.dtype == dtype:
            return x
        if dtype == "bool":
            return ops.ne(x, 0)
        if dtype == "int64" and x.dtype in ("float32", "float64"):
            x = ops.sign(x) * ops.floor(ops.abs(x))  # int() truncates toward zero
        return ops.cast(x, dtype)
    return pyfn(x)


# int()/float()/bool() of a symbolic tensor: a 0-d tensor standing for the Python number eager
# code gets (weak: it comes back from the program as that number)
def convert_int(x=0, *args):
    return builtins.int(x, *args) if args else number_stand_in(_cast_either(x, "int64", builtins.int))


def convert_float(x=0.0):
    # float64: a Python float is a double (float() of a float64 tensor keeps every digit, and
    # arithmetic on the number rounds as Python's does)
    return number_stand_in(_cast_either(x, "float64", builtins.float))


def convert_bool(x=False):
    return number_stand_in(_cast_either(x, "bool", builtins.bool))


def _cast_either(x, dtype, pyfn):
    """``_cast`` of a value that is a Python number on some runs (of the number exactly there:
    the tensor holds it in its own dtype, 0.1 in float32) and a tensor on others."""
    if not (isinstance(x, NumberOrTensor) and x.else_type is None):
        return _cast(x, dtype, pyfn)
    n = exact_number(x)
    n = ops.full([], n, dtype=NUMBER_DTYPES[type(n)]) if not isinstance(n, Tensor) else n
    on_tensor, on_number = _cast(plain_tensor(x), dtype, pyfn), _cast(number_stand_in(n), dtype, pyfn)
    return apply("where", x.is_number, plain_tensor(on_number), plain_tensor(on_tensor))


def _one_element(x, what):
    """``int(x)``/``float(x)``/``bool(x)`` of a symbolic tensor needs one element, as eagerly:
    ValueError now when its shape says otherwise, or when the program runs with another size."""
    shape = x._var.type.shape
    if all(isinstance(d, int) for d in shape):
        if int(np.prod(shape, dtype=np.int64)) != 1:
            raise at_user_line(f"{what}() of a tensor with {int(np.prod(shape, dtype=np.int64))} elements: only a "
                               "tensor with one element can be converted to a Python scalar", ValueError)
        return
    loc = user_frame()
    apply("assert", ops.eq(ops.numel(x), 1), message=f"{what}() of a tensor needs one element",
          where=f"{loc[0]}:{loc[1]}" if loc else "", error="ValueError")


def convert_item(x):
    """``x.item()`` on a symbolic tensor: its one element as a 0-d tensor computed in the
    program (the Python number eager code gets exists only when the program runs). Like a
    Python number, it carries no gradient."""
    shape = x._var.type.shape
    if all(isinstance(d, int) for d in shape) and int(np.prod(shape, dtype=np.int64)) != 1:
        raise at_user_line(f".item() needs a tensor with one element, but this one has shape {tuple(shape)}",
                           ValueError)
    x = ops.reshape(x.detach(), [])
    if x.dtype.is_floating_point and x.dtype != "float64":
        x = ops.cast(x, "float64")  # a Python float is a double: later arithmetic on it rounds as Python's
    return number_stand_in(x)


def assert_op(test, message, error="AssertionError"):
    """An ``assert`` op on symbolic ``test``, raising ``error`` (its Python name) with
    ``message`` and the user's file:line each time the program runs with a false test."""
    loc = user_frame()
    extra = {} if error == "AssertionError" else {"error": error}  # plain asserts keep their attrs
    apply("assert", test, message=message, where=f"{loc[0]}:{loc[1]}" if loc else "", **extra)


def convert_assert(test, message=None):
    """``assert test, message`` (``message`` a thunk). A symbolic test becomes an ``assert``
    op checked each time the program runs; a concrete or Python one is checked now."""
    if is_symbolic(test):
        msg = message() if message is not None else ""
        assert_op(test, "" if msg is None else str(msg))
        return
    if not test:
        msg = message() if message is not None else None
        raise AssertionError(msg) if msg is not None else AssertionError()


# A read of a local that may be unbound is checked by an assert op, so it lives here with `assert`
# (undefined.py, below this module, holds the placeholders themselves).
def checked(value, name):
    """``value``, read from local ``name`` where it may be unbound: an ``Undefined`` raises
    UnboundLocalError as Python would; a ``MaybeUnbound`` adds that check to the program (it
    runs each time the program does) and gives its value."""
    if type(value) is Undefined:
        raise unbound_error(name)
    if isinstance(value, MaybeUnbound):
        if type(value) is MaybeNone:
            message, error = (f"'{name}' is None here (the tensor loop that assigns it ran zero times) "
                              "and this use of it needs a value", TypeError)
        else:
            message, error = (f"cannot access local variable '{name}' where it is not associated with a "
                              "value", UnboundLocalError)
        if not is_symbolic(value.bound):
            if not bool(value.bound):
                raise at_user_line(message, error)
            return value.value
        assert_op(value.bound, message, error.__name__)
        return value.value
    return value


def convert_isinstance(obj, cls):
    """``isinstance``; a tensor standing for a Python number answers as that number would."""
    py = python_type(obj)
    if py is not None:
        return builtins.issubclass(py, cls)
    if isinstance(obj, NumberOrTensor):
        # a number of type pytype on some runs, else a tensor (or a number of else_type)
        answers = {builtins.issubclass(obj.pytype, cls),
                   builtins.issubclass(obj.else_type, cls) if obj.else_type is not None else
                   builtins.isinstance(plain_tensor(obj), cls)}
        if len(answers) > 1:
            raise at_user_line(_depends("isinstance()", obj), TypeError)
        return answers.pop()
    return builtins.isinstance(obj, cls)


def _depends(what, obj):
    other = f"a Python {obj.else_type.__name__}" if obj.else_type is not None else "a tensor"
    return (f"{what} of a value that is a Python {obj.pytype.__name__} on some runs and {other} on others, "
            "chosen by tensor data in a tensor `if`, max()/min() or loop: its answer is needed now, while the "
            "program is built, and differs between them. Make the value one kind on every path (a tensor: "
            "d2s.tensor(0.5); a number: float(t))")


def convert_type(*args):
    """``type(x)``: for a tensor standing for a Python number, that number's type (int, float,
    bool), as eager code sees it."""
    if len(args) == 1:
        py = python_type(args[0])
        if py is not None:
            return py
        if isinstance(args[0], NumberOrTensor):
            raise at_user_line(_depends("type()", args[0]), TypeError)
    return builtins.type(*args)


def _extreme(pyfn, opname, args, kwargs):
    """``max``/``min`` over tensors: Python picks one of the values by comparing them in turn,
    which a symbolic tensor cannot do while the program is built; the program makes the same
    choices with ``where`` (see ``_pick``)."""
    items = args[0] if len(args) == 1 else args
    if not kwargs and items is not args and not isinstance(items, (list, tuple, TensorArray, Tensor)):
        items = list(items)  # a generator (max(s.shape[0] for s in seqs)): read once, used twice below
        args = (items,)
    if kwargs or not builtins.any(is_symbolic(a) for a in (items if not isinstance(items, Tensor) else [items])):
        return pyfn(*args, **kwargs)
    if isinstance(items, Tensor):
        return _extreme_of_rows(items, opname)
    items = list(items)
    if not items:
        return pyfn(items)  # eager's ValueError
    return _pick(items, opname)


def _mixed(v):
    return isinstance(v, NumberOrTensor) and v.else_type is None


def _extreme_of_rows(t, opname):
    """``max(t)``: Python compares the rows of ``t`` in turn, which needs rows of one element,
    and keeps the first of the largest; a NaN is kept only when it comes first (no comparison
    with it is true)."""
    row = t.shape[1:]
    if not all(isinstance(d, int) for d in row) or int(np.prod(row, dtype=np.int64)) != 1:
        raise at_user_line(f"{opname}() of a tensor of shape {tuple(t.shape)} compares its rows, and the truth "
                           f"value of a row of shape {tuple(row)} is ambiguous: use d2s.{opname}(t) (or "
                           f"t.{opname}(dim=0))", ValueError)
    reduce = getattr(ops, "amax" if opname == "max" else "amin")
    if not t.dtype.is_floating_point:
        return reduce(t, 0)
    fill = float("-inf") if opname == "max" else float("inf")
    out = reduce(ops.where(ops.isnan(t), fill, t), 0)
    first = t[0]
    return ops.where(ops.isnan(first), first, out)


_KIND = {bool: 0, int: 1, float: 2}


def _pick(items, opname):
    """Python's ``max(a, b, ...)`` (``min``) with symbolic values: the current choice is replaced
    by each later value that compares greater (less), so ties and NaNs keep the earlier one. A
    choice between a tensor and a Python number depends on the data: the program carries which
    one it made and the number exactly, and a program returning the result gives back what
    eager code returns (see NumberOrTensor)."""
    # (an earlier choice, NumberOrTensor, is both: a tensor on some runs, a number on others)
    tensors = [v for v in items if isinstance(v, Tensor) and python_type(v) is None]
    numbers = [v for v in items if not (isinstance(v, Tensor) and python_type(v) is None) or _mixed(v)]
    for v in numbers:
        if type(v) not in _KIND and python_type(v) is None and not _mixed(v):
            raise at_user_line(f"{opname}() of a tensor and {type(v).__name__}: only tensors and Python numbers "
                               "can be compared in a program", TypeError)
    for v in tensors:
        shape = v.shape
        if not all(isinstance(d, int) for d in shape) or int(np.prod(shape, dtype=np.int64)) != 1:
            raise at_user_line(f"{opname}() compares its arguments, and the truth value of a tensor with shape "
                               f"{tuple(shape)} is ambiguous: use d2s.{'maximum' if opname == 'max' else 'minimum'}"
                               " for element-wise results", ValueError)
    if len({(str(v.dtype), tuple(v.shape)) for v in tensors}) > 1:
        raise at_user_line(f"{opname}() of tensors of different dtypes or shapes "
                           f"({', '.join(f'{v.dtype}{list(v.shape)}' for v in tensors)}): eager code returns one "
                           "of them as it is, chosen by the data, which a program cannot do; cast them to one "
                           "dtype and shape first", TypeError)
    pytypes = {v.pytype if _mixed(v) else number_type(v) for v in numbers}
    if len(pytypes) > 1:
        kinds = ", ".join(sorted(t.__name__ for t in pytypes))
        raise at_user_line(f"{opname}() of Python numbers of different types ({kinds}) "
                           "and a tensor: which type eager code returns depends on the data; give numbers of one type",
                           TypeError)
    pytype = pytypes.pop() if pytypes else None
    if tensors and pytype is not None:
        dt = tensors[0].dtype
        kind = 2 if dt.is_floating_point else 0 if str(dt) == "bool" else 1
        if _KIND[pytype] > kind:
            raise at_user_line(f"{opname}() of a tensor of dtype {dt} and a Python {pytype.__name__}: eager code "
                               "returns one or the other, chosen by the data, and the program cannot hold both in one dtype; "
                               f"cast the tensor first (.to(d2s.float32)) or compare them with an `if`", TypeError)
    ndtype = {float: "float64", int: "int64", bool: "bool", None: None}[pytype]
    tdtype = str(tensors[0].dtype) if tensors else None

    def as_exact(v):
        if _mixed(v):
            v = exact_number(v)
        elif number_type(v) is None:
            return ops.zeros([], dtype=ndtype)  # a tensor: never read as the number
        return ops.full([], v, dtype=ndtype) if not isinstance(v, Tensor) else (
            v if str(v.dtype) == ndtype else ops.cast(v, ndtype))

    def as_value(v):
        t = ops.full([], v, dtype=tdtype) if not isinstance(v, Tensor) else v
        return plain_tensor(t) if str(t.dtype) == tdtype else ops.cast(plain_tensor(t), tdtype)

    better = (lambda a, b: a > b) if opname == "max" else (lambda a, b: a < b)
    def is_num(v):
        return plain_tensor(v.is_number) if _mixed(v) else ops.full([], number_type(v) is not None, dtype="bool")

    first = items[0]
    # (value as a tensor of the tensors' dtype, is a number: bool tensor, the number exactly)
    cur = (as_value(first) if tdtype else None, is_num(first), as_exact(first) if ndtype else None)
    for v in items[1:]:
        v_num = is_num(v)
        # compared as eager code compares: against the number itself (weakly typed, as a Python
        # number meets a tensor) or the tensor itself, whichever the current choice is
        vs_tensor = better(v, cur[0]) if tdtype else None
        vs_number = better(v, number_stand_in(cur[2])) if ndtype else None
        take = vs_number if tdtype is None else vs_tensor if ndtype is None else ops.where(cur[1], vs_number,
                                                                                            vs_tensor)
        take = take if isinstance(take, Tensor) else ops.full([], bool(take), dtype="bool")
        take = plain_tensor(ops.reshape(take, []))
        cur = (ops.where(take, as_value(v), cur[0]) if tdtype else None,
               ops.logical_or(ops.logical_and(take, v_num), ops.logical_and(ops.logical_not(take), cur[1])),
               # (plain: ops.where gives two number stand-ins the default float dtype, as
               # d2s.where(c, 0.5, 0.7) does; both hold ndtype numbers exactly here)
               apply("where", take, _plain_number(as_exact(v)), _plain_number(cur[2])) if ndtype else None)
    if ndtype is None:
        return cur[0]
    if tdtype is None:
        return number_stand_in(cur[2])
    return number_or_tensor(cur[0], cur[1], True, pytype, number=cur[2])


def _plain_number(v):
    return plain_tensor(v) if isinstance(v, Tensor) else v


def convert_max(*args, **kwargs):
    return _extreme(builtins.max, "max", args, kwargs)


def convert_min(*args, **kwargs):
    return _extreme(builtins.min, "min", args, kwargs)


def convert_abs(x):
    return abs(x)  # a Tensor's __abs__ (a WeakIndex's keeps it weak)


def _is_tensor_array(x):
    return isinstance(x, TensorArray)


def _nonempty(ta, what):
    """An op raising eager's ShapeError when the program runs with tensor list ``ta`` empty
    (a list grown in a tensor loop that ran zero times, or in a branch not taken)."""
    if ta.data is None:
        getattr(ops, what)([])  # never appended to on any path: eager's error, now
    loc = user_frame()
    apply("assert", ops.gt(ta.length(), 0), message=f"{what}: needs at least one tensor",
          where=f"{loc[0]}:{loc[1]}" if loc else "", error="ShapeError")


def _dim_of(op, dim, axis):
    if dim is not None and axis is not None and dim != axis:
        raise TypeError(f"{op}: got both dim={dim!r} and its numpy alias axis={axis!r}; give one (dim=)")
    return dim if dim is not None else axis if axis is not None else 0


def convert_stack(tensors, dim=None, *, axis=None):
    """``d2s.stack`` that also takes a TensorArray (a list appended to in a tensor loop); an
    empty one raises ShapeError when the program runs, as eager ``stack([])`` does."""
    if not _is_tensor_array(tensors):
        return ops.stack(tensors, dim, axis=axis)
    _nonempty(tensors, "stack")
    return _stacked(tensors, _dim_of("stack", dim, axis))


def _stacked(ta, axis):
    out = ta.stack()
    if axis != 0:
        dims = list(range(1, out.ndim))
        axis = axis % out.ndim
        dims.insert(axis, 0)
        out = ops.permute(out, *dims)
    return out


def convert_concat(tensors, dim=None, *, axis=None):
    """``d2s.concat`` (``cat``, ``concatenate``) that also takes a TensorArray (empty:
    ShapeError when the program runs)."""
    if not _is_tensor_array(tensors):
        # (a sequence that a range loop op grows into a buffer: see convert/growing.py)
        return growing.on_cat(tensors, dim if axis is None else axis, lambda: ops.concat(tensors, dim, axis=axis))
    _nonempty(tensors, "concat")
    axis = _dim_of("concat", dim, axis)
    stacked = _stacked(tensors, axis)
    axis = axis % (stacked.ndim - 1)
    shape = list(stacked.shape)
    merged = shape[:axis] + [-1] + shape[axis + 2:]
    return ops.reshape(stacked, merged)


def convert_add_n(inputs):
    """``d2s.add_n`` that also takes a TensorArray (a list appended to in a tensor loop or
    branch): the sum of its stacked elements; an empty one raises ValueError when the program
    runs, as eager ``add_n([])`` does."""
    if not _is_tensor_array(inputs):
        return ops.add_n(inputs)
    if inputs.data is None:
        return ops.add_n([])  # never appended to on any path: eager's error, now
    loc = user_frame()
    apply("assert", ops.gt(inputs.length(), 0), message="add_n: needs at least one tensor",
          where=f"{loc[0]}:{loc[1]}" if loc else "", error="ValueError")
    return ops.sum(inputs.stack(), 0)

