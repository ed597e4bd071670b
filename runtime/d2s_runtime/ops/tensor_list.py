"""Tensor lists: values that loops append to (``list.append`` in converted code, the stack a
``while`` gradient pushes onto in its forward loop and pops in its backward loop).

A tensor list is an ordinary array whose leading dim is the list's length: element ``i`` is
``L[i]``. So a list is typed ``TensorType((None, *element_shape), dtype)`` (its length is
known only when the program runs; a new list is typed ``(0, *element_shape)``), and every list op is a plain functional primitive:
the executor, the passes, serialization and the ONNX exporter need nothing special.
``list_push`` copies (O(length)), which keeps the ops pure; the lists d2s builds are short
stacks of per-iteration values.

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
"""
from .registry import ShapeError, TensorType, defop
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
    """The list with ``x`` appended (a new array)."""
    x = xp.asarray(x, dtype=lst.dtype)
    if lst.shape[0] == 0:
        # an empty list takes its element shape from its first element (the element type it
        # was created with may hold placeholder sizes for dims unknown until the program runs)
        return x[None].copy()
    return xp.concatenate([lst, x[None]], axis=0)


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

def _stack_new_infer(like):
    # the length is unknown: the stack grows with every push (it is typed as it will be
    # carried, so a stack handed from one program to another passes input checks)
    return TensorType((None,), like.dtype), TensorType((None, like.ndim), "int64")


@defop("stack_new", _stack_new_infer, n_out=2)
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
    """The ragged stack with ``x`` pushed (its elements appended, its shape a new row)."""
    x = xp.asarray(x)
    row = xp.asarray(x.shape, dtype="int64").reshape(1, x.ndim)
    return xp.concatenate([buf, x.reshape(-1)]), xp.concatenate([shapes, row])


def _stack_pop_infer(buf, shapes, shape, dtype=None):
    return buf, shapes, TensorType(shape, buf.dtype)


@defop("stack_pop", _stack_pop_infer, n_out=3)
def _stack_pop(xp, buf, shapes, shape, dtype=None):
    """Pop the last element; ``shape`` (attr) is its static type's shape (None: unknown)."""
    if shapes.shape[0] == 0:
        raise IndexError("stack_pop: pop from an empty stack")
    dims = tuple(int(d) for d in shapes[-1])
    n = 1
    for d in dims:
        n *= d
    cut = buf.shape[0] - n
    return buf[:cut], shapes[:-1], buf[cut:].reshape(dims)
