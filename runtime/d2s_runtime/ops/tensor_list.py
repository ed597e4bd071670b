"""Tensor lists: values that loops append to (``list.append`` in converted code, the stack a
``while`` gradient pushes onto in its forward loop and pops in its backward loop).

A tensor list is an ordinary array whose leading dim is the list's length: element ``i`` is
``L[i]``. So a list is typed ``TensorType((None, *element_shape), dtype)`` (its length is
known only when the program runs), and every list op is a plain functional primitive:
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
=============  =============================  ==========================================
"""
from .registry import ShapeError, TensorType, defop
from .rules import fmt_shape


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


@defop("list_new", lambda like: list_type(like))
def _list_new(xp, like):
    """An empty list of elements shaped like ``like``."""
    return xp.zeros((0,) + tuple(like.shape), dtype=like.dtype)


@defop("list_push", lambda lst, x: list_type(_merge_elem("list_push", lst, x)))
def _list_push(xp, lst, x):
    return xp.concatenate([lst, xp.asarray(x, dtype=lst.dtype)[None]], axis=0)


def _pop_infer(lst):
    _need_list("list_pop", lst)
    return list_type(TensorType(lst.shape[1:], lst.dtype)), TensorType(lst.shape[1:], lst.dtype)


@defop("list_pop", _pop_infer, n_out=2)
def _list_pop(xp, lst):
    if lst.shape[0] == 0:
        raise IndexError("list_pop: pop from an empty tensor list")
    return lst[:-1], lst[-1]


def _get_infer(lst, i):
    _need_list("list_get", lst)
    if i.ndim != 0 or not i.dtype.startswith("int"):
        raise ShapeError(f"list_get: the index must be a 0-d integer tensor, got {i}")
    return TensorType(lst.shape[1:], lst.dtype)


@defop("list_get", _get_infer)
def _list_get(xp, lst, i):
    n = lst.shape[0]
    k = int(i)
    if not -n <= k < n:
        raise IndexError(f"list_get: index {k} is out of range for a tensor list of length {n}")
    return lst[k]


def _len_infer(lst):
    _need_list("list_len", lst)
    return TensorType((), "int64")


defop("list_len", _len_infer)(lambda xp, lst: xp.asarray(lst.shape[0], dtype="int64"))


def _stack_infer(lst):
    _need_list("list_stack", lst)
    return TensorType(lst.shape, lst.dtype)


# a copy, not the list itself: an output must never alias a buffer the memory planner may reuse
defop("list_stack", _stack_infer)(lambda xp, lst: lst.copy())
