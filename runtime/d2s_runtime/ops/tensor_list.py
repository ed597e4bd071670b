"""Tensor lists: values that loops append to (``list.append`` in converted code, the stack a
``while`` gradient pushes onto in its forward loop and pops in its backward loop).

A tensor list is an ordinary array whose leading dim is the list's length: element ``i`` is
``L[i]``. So a list is typed ``TensorType((None, *element_shape), dtype)`` (its length is
known only when the program runs; a new list is typed ``(0, *element_shape)``), and every list op is a plain functional primitive:
the executor, the passes, serialization and the ONNX exporter need nothing special.
Every op is pure: no value a program holds ever changes. ``list_push`` (and ``stack_push``
below) still costs amortized O(element), not O(length): see ``_append``.

=============  =============================  ==========================================
op             inputs -> outputs              meaning
=============  =============================  ==========================================
list_new       like -> L                      an empty list of elements shaped like ``like``
list_push      L, x -> L'                     ``L + [x]``
list_pop       L -> L', x                     ``L[:-1], L[-1]`` (error on an empty list)
list_get       L, i -> x                      ``L[i]`` (``i`` a 0-d int tensor, may be < 0)
list_len       L -> n                         ``len(L)`` as a 0-d int64 tensor
list_stack     L -> T                         the elements stacked along a new axis 0
list_index_check  ok ->                       raise IndexError unless ok (an effect op)
=============  =============================  ==========================================

``stack_rows`` reads the elements of a ragged stack (below) as one matrix.
"""
import sys
import weakref

import numpy as np

from .registry import ShapeError, TensorType, deflowering, defop
from .. import forksafe
from .rules import fmt_shape


class ProgramIndexError(IndexError):
    """A tensor list op met an empty list or an index out of range while a program ran: the
    ``IndexError`` Python's list would raise (the executor passes it through unwrapped)."""


def _no_outputs(*types, **attrs):
    return ()


@defop("list_index_check", _no_outputs, n_out=0, effect=True)
def _list_index_check(xp, ok, message="list index out of range", where=""):
    """Raise the ``IndexError`` a Python list would (``message``, at the user's ``where``)
    unless ``ok`` holds: the branch or loop that reads a too-short Python list runs."""
    if not bool(xp.all(ok)):
        raise ProgramIndexError(f"{message} (at {where})" if where else message)
    return ()


def list_type(elem):
    """The type of a list whose elements have type ``elem``."""
    return TensorType((None,) + tuple(elem.shape), elem.dtype)


# ------------------------------------------------------------------ growing arrays
# Appending to a list or stack is amortized O(element), not O(length): a list (or a stack's two
# arrays) is a view of the leading part of a larger array with room to grow, and appending to
# the newest view of such an array writes the new rows into the room after it instead of
# copying. No value any program holds ever changes: every view of a growing array ends at or
# before its fill mark (the end of its newest view) and an append writes only after it; an
# append to any other view (an older version of the list, one popped from, an array from
# outside) copies into a new growing array first (a "fork"), so the ops stay pure for the
# passes (CSE may merge two equal pushes, DCE drop an unused one, constant folding run one).

_TIPS = {}              # id(growing array) -> weak reference to its newest view (its fill mark)
_TIPS_LOCK = forksafe.Lock()
_MIN_CAPACITY = 8

# Growing arrays of at least _POOL_MIN_BYTES are kept in a pool once made, and handed out
# again once nothing references them any more (no view of them is alive: their reference
# count is the pool's own). A loop gradient's stacks grow to megabytes at every call of its
# program: taken from fresh memory, the pages the kernel zeroes on first touch cost about a
# third of the call, and growing by doubling copies every element about once more (measured
# on the RNN of benchmarks/bench_native.py). A new growing array is therefore the largest free
# pooled one of its dtype and element shape (one call's stacks start at the size the previous
# call's reached). At most _POOL_MAX_BYTES stay pooled; numpy arrays only (other array
# modules allocate as before).
_POOL = {}              # (dtype, trailing dims) -> [growing arrays], largest first
_POOL_MIN_BYTES = 1 << 16
_POOL_MAX_BYTES = 1 << 26
_pooled_bytes = [0]
_probe = [np.empty(1)]
_UNREFERENCED = sys.getrefcount(_probe[0])  # the count of an array only a list holds, as read below
del _probe


def _growing_array(xp, rows, trailing, dtype):
    """An array of at least ``rows`` rows of ``trailing`` dims to append into (lock held)."""
    if xp is not np:
        return xp.empty((rows,) + trailing, dtype=dtype)
    dtype = np.dtype(dtype)
    row_bytes = dtype.itemsize
    for d in trailing:
        row_bytes *= d
    if rows * row_bytes < _POOL_MIN_BYTES:
        return np.empty((rows,) + trailing, dtype=dtype)
    key = (dtype.str, trailing)
    free = _POOL.get(key)
    if free:
        for i in range(len(free)):
            if free[i].shape[0] < rows:
                break
            if sys.getrefcount(free[i]) <= _UNREFERENCED:
                return free[i]
    base = np.empty((rows,) + trailing, dtype=dtype)
    if _pooled_bytes[0] + base.nbytes <= _POOL_MAX_BYTES:
        free = _POOL.setdefault(key, [])
        free.append(base)
        free.sort(key=lambda a: -a.shape[0])
        _pooled_bytes[0] += base.nbytes
    return base


def _append(xp, arr, rows):
    """``concatenate([arr, rows])`` along axis 0, in amortized O(len(rows)): written in place
    into ``arr``'s growing array when ``arr`` is its newest view and it has room, else into a
    new growing array with twice the needed room. Returns the new view. ``rows`` may be a
    tuple of Python ints, one row written number by number: on a device that needs no copy
    from the host, which would wait for the device."""
    one_row = type(rows) is tuple
    n, k = arr.shape[0], 1 if one_row else rows.shape[0]
    base = arr.base
    with _TIPS_LOCK:
        tip = _TIPS.get(id(base)) if base is not None else None
        if tip is None or tip() is not arr or n + k > base.shape[0]:
            base = _growing_array(xp, max(2 * (n + k), _MIN_CAPACITY), tuple(arr.shape[1:]), arr.dtype)
            base[:n] = arr
            if id(base) not in _TIPS:
                weakref.finalize(base, _TIPS.pop, id(base), None)
        if one_row:
            for j, d in enumerate(rows):
                base[n, j] = d
        else:
            base[n:n + k] = rows
        out = base[:n + k]
        _TIPS[id(base)] = weakref.ref(out)
    return out


def _merge_elem(op, lst, x):
    """Element type of ``lst`` checked against a new element ``x`` (unknown dims merge)."""
    elem = lst.shape[1:]
    if lst.ndim == 0 or len(elem) != x.ndim or lst.dtype != x.dtype or any(
            a is not None and b is not None and a != b for a, b in zip(elem, x.shape)):
        raise ShapeError(f"{op}: the list holds elements {lst.dtype}{fmt_shape(elem) if lst.ndim else '()'} "
                         f"but the new element is {x.dtype}{fmt_shape(x.shape)}; every element of a tensor "
                         "list must have the same dtype and rank (and equal known dims)")
    return TensorType([a if a == b else None for a, b in zip(elem, x.shape)], x.dtype)


def _need_list(op, lst):
    if lst.ndim == 0:
        raise ShapeError(f"{op}: expects a tensor list (an array with a leading length dim), got a 0-d {lst}")


@defop("list_new", lambda like: TensorType((0,) + tuple(like.shape), like.dtype))
def _list_new(xp, like):
    """An empty list of elements shaped like ``like``."""
    return xp.zeros((0,) + tuple(like.shape), dtype=like.dtype)


@defop("list_push", lambda lst, x: list_type(_merge_elem("list_push", lst, x)))
def _list_push(xp, lst, x):
    """The list with ``x`` appended, in amortized O(x.size) (see ``_append``: the result may
    share memory with ``lst``, whose value stays unchanged)."""
    x = xp.asarray(x, dtype=lst.dtype)
    if lst.shape[0] == 0:
        # an empty list takes its element shape from its first element (the element type it
        # was created with may hold placeholder sizes for dims unknown until the program runs)
        lst = xp.empty((0,) + tuple(x.shape), dtype=lst.dtype)
    elif tuple(lst.shape[1:]) != tuple(x.shape):
        raise ShapeError(f"list_push: the list holds elements of shape {tuple(lst.shape[1:])} but the new element "
                         f"has shape {tuple(x.shape)}; every element of a tensor list must have the same shape")
    return _append(xp, lst, x[None])


def _pop_infer(lst):
    _need_list("list_pop", lst)
    return list_type(TensorType(lst.shape[1:], lst.dtype)), TensorType(lst.shape[1:], lst.dtype)


@defop("list_pop", _pop_infer, n_out=2)
def _list_pop(xp, lst):
    """(the list without its last element, that element)."""
    if lst.shape[0] == 0:
        raise ProgramIndexError("pop from empty list")
    return lst[:-1], lst[-1]


def _get_infer(lst, i):
    _need_list("list_get", lst)
    if i.ndim != 0 or not i.dtype.startswith("int"):
        raise ShapeError(f"list_get: the index must be a 0-d integer tensor, got {i}")
    return TensorType(lst.shape[1:], lst.dtype)


@defop("list_get", _get_infer)
def _list_get(xp, lst, i):
    """Element ``i`` of the list (negative indices count from the end)."""
    n = lst.shape[0]
    k = int(i)
    if not -n <= k < n:
        raise ProgramIndexError(f"list index out of range (index {k}, length {n})")
    return lst[k]


def _len_infer(lst):
    _need_list("list_len", lst)
    return TensorType((), "int64")


defop("list_len", _len_infer, doc="The number of elements, as a 0-d int64 tensor.")(
    lambda xp, lst: xp.asarray(lst.shape[0], dtype="int64"))


def _stack_infer(lst):
    _need_list("list_stack", lst)
    return TensorType(lst.shape, lst.dtype)


# a copy, not the list itself: an output must never alias a buffer the memory planner may reuse
defop("list_stack", _stack_infer, doc="The elements stacked along a new leading axis (a copy).")(
    lambda xp, lst: lst.copy())


# ------------------------------------------------------------------ ragged stacks
# The stack a ``while`` gradient keeps: elements of one dtype and rank whose shapes may differ
# from push to push (loop vars that grow, tensor lists carried by the loop). A stack is two
# arrays: ``buf``, the flattened elements end to end (1-D), and ``shapes``, one row of dims
# per element (int64, ``[length, rank]``).
#
# Pushes cost amortized O(element) (see ``_append``); pops return views.

def _stack_new_infer(like):
    # the length is unknown: the stack grows with every push (it is typed as it will be
    # carried, so a stack handed from one program to another passes input checks)
    return TensorType((None,), like.dtype), TensorType((None, like.ndim), "int64")


@defop("stack_new", _stack_new_infer, n_out=2, unique=True)
def _stack_new(xp, like):
    """An empty ragged stack for elements of ``like``'s dtype and rank."""
    return xp.zeros((0,), dtype=like.dtype), xp.zeros((0, like.ndim), dtype="int64")


def _stack_push_infer(buf, shapes, x):
    if buf.ndim != 1 or shapes.ndim != 2 or buf.dtype != x.dtype or shapes.shape[1] not in (None, x.ndim):
        raise ShapeError(f"stack_push: a stack of {buf.dtype} rank-{shapes.shape[1] if shapes.ndim == 2 else '?'} "
                         f"elements cannot take {x}")
    return buf, shapes


@defop("stack_push", _stack_push_infer, n_out=2)
def _stack_push(xp, buf, shapes, x):
    """The ragged stack with ``x`` pushed (its elements appended, its shape a new row), in
    amortized O(x.size): the result may share memory with ``buf`` and ``shapes``, whose values
    stay unchanged (see the section comment)."""
    x = xp.asarray(x)
    if buf.ndim != 1 or shapes.ndim != 2 or x.dtype != buf.dtype or shapes.shape[1] != x.ndim:
        raise ShapeError(f"stack_push: a stack of {buf.dtype} rank-{shapes.shape[1] if shapes.ndim == 2 else '?'} "
                         f"elements cannot take a {x.dtype} array of shape {tuple(x.shape)}")
    row = np.asarray(x.shape, dtype="int64").reshape(1, x.ndim) if xp is np else tuple(int(d) for d in x.shape)
    return _append(xp, buf, x.reshape(-1)), _append(xp, shapes, row)


def _stack_pop_infer(buf, shapes, shape, dtype=None):
    return buf, shapes, TensorType(shape, buf.dtype)


@defop("stack_pop", _stack_pop_infer, n_out=3)
def _stack_pop(xp, buf, shapes, shape, dtype=None):
    """Pop the last element; ``shape`` (attr) is its static type's shape (None: unknown).
    Returns views of ``buf`` and ``shapes`` (no copy)."""
    if shapes.shape[0] == 0:
        raise IndexError("stack_pop: pop from an empty stack")
    if xp is not np and shape is not None and all(type(d) is int for d in shape):
        # the element's type is exact: its dims are not read back from the device (a sync)
        dims = tuple(shape)
    else:
        dims = tuple(int(d) for d in shapes[-1].tolist())
    n = 1
    for d in dims:
        n *= d
    if n > buf.shape[0]:
        raise ShapeError(f"stack_pop: the stack holds {buf.shape[0]} numbers, fewer than an element of shape {dims}")
    cut = buf.shape[0] - n
    return buf[:cut], shapes[:-1], buf[cut:].reshape(dims)


def _stack_rows_infer(buf, width):
    if buf.ndim != 1 or type(width) is not int or width < 1:
        raise ShapeError(f"stack_rows: takes a stack's element buffer (1-d) and a positive int width, got {buf} "
                         f"and {width!r}")
    return TensorType((None, width), buf.dtype)


@defop("stack_rows", _stack_rows_infer)
def _stack_rows(xp, buf, width):
    """The elements of a stack whose elements are all ``(k, width)`` arrays, one under the other:
    a ``(total k, width)`` matrix (a view of ``buf``, oldest element first)."""
    if buf.shape[0] % width:
        raise ShapeError(f"stack_rows: a stack holding {buf.shape[0]} numbers is not made of rows of {width}")
    return buf.reshape(-1, width)


# The native backend holds a stack as growing arrays with a header (``StackFormat.stack_new`` in
# native/stacks.py): pushes and pops cost O(element) there too, and a program's stack outputs
# come back in this module's format.
@deflowering("stack_new", "native")
def _stack_new_native(e, like):
    return e.stack_new(like)


@deflowering("stack_push", "native")
def _stack_push_native(e, buf, shapes, x):
    return e.stack_push(buf, shapes, x)


@deflowering("stack_pop", "native")
def _stack_pop_native(e, buf, shapes, shape, dtype=None):
    return e.stack_pop(buf, shapes, shape)


@deflowering("stack_rows", "native")
def _stack_rows_native(e, buf, width):
    return e.stack_rows(buf, width)


_stack_push_native.reads_stacks = _stack_pop_native.reads_stacks = True  # they read the native stack format
_stack_rows_native.reads_stacks = True
