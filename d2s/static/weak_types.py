"""Weak typing of Python numbers through control flow, as in JAX: a Python number among loop
vars, carries and branch outputs becomes a tensor of the dtype it meets (the body's result for
a carry, the other branch's output for a branch), eagerly as in programs, so both give the
same dtypes. Also the checks that a carry keeps its structure, and the eager halves' helpers."""
import numpy as np

from d2s_runtime.ops import TensorType

from .. import ops as d, pytree
from .._state import STATE
from ..autograd.grad_mode import no_grad
from ..pytree import tree_unflatten
from ..tensor import Tensor, tensor
from .builder import ProgramBuilder
from .cf_common import ControlFlowError, _type_of, tree_flatten


def _kept_whole(o):
    """Whether ``_tensorize`` leaves registered node ``o`` as it is; a node whose class says
    ``_d2s_numbers_inside`` (a maybe-unbound value: a loop index a Python ``for`` left, which
    a tensor loop around it carries) has its Python numbers made tensors like a tuple's."""
    return pytree.is_registered(o) and not getattr(type(o), "_d2s_numbers_inside", False)


def _tensorize(obj, like=None):
    """Python numbers (and numpy values) in a pytree become tensors (of the dtype of the
    tensor at the same place in ``like``, when ``like`` has the structure of ``obj``)."""
    leaves, treedef = pytree.tree_flatten(obj, is_leaf=_kept_whole)
    refs = [None] * len(leaves)
    if like is not None:
        like_leaves, like_def = pytree.tree_flatten(like, is_leaf=_kept_whole)
        if like_def == treedef:
            refs = like_leaves

    def conv(o, ref):
        if isinstance(o, (bool, int, float, np.generic, np.ndarray)) and not isinstance(o, Tensor):
            return tensor(o, dtype=ref.dtype if isinstance(ref, Tensor) else None)
        return o

    return tree_unflatten(treedef, [conv(o, r) for o, r in zip(leaves, refs)])


_NOT_WEAK = (Tensor, np.generic, np.ndarray)


def _weak_mask(obj):
    """For each leaf of ``tree_flatten(_tensorize(obj))``: whether it was a Python number.
    Such a leaf is weakly typed (as in JAX): when a loop body turns it into another dtype
    (``i + 0.5``, ``s + x.sum()`` with float64 ``x``), the loop var takes that dtype, as the
    Python value would in an eager loop."""
    leaves = pytree.tree_leaves(obj, leaf_types=(*_NOT_WEAK, bool, int, float))
    return [not isinstance(o, _NOT_WEAK) for o in leaves]


def _promote_weak(types, o_types, weak):
    """``types`` with each weak loop var's dtype (and rank) changed to the one the body returns
    for it (a Python number may become a tensor of any shape, as in eager code; unknown dims
    start as 1), or None when no weak loop var changed."""
    new, changed = list(types), False
    for i, (t, o) in enumerate(zip(types, o_types)):
        if weak[i] and (t.dtype != o.dtype or t.ndim != o.ndim):
            new[i] = TensorType(t.shape if t.ndim == o.ndim else [1 if d is None else d for d in o.shape], o.dtype)
            changed = True
    return new if changed else None


def _cast_leaves(b, leaves, in_names, types):
    """Cast (and broadcast) the initial loop vars whose type was promoted to their loop types."""
    for i, t in enumerate(types):
        have = b.block.lookup(in_names[i]).type
        if have.dtype != t.dtype or have.ndim != t.ndim:
            leaf = d.cast(leaves[i], t.dtype) if have.dtype != t.dtype else leaves[i]
            if have.ndim != t.ndim:
                leaf = d.broadcast_to(leaf, [1 if s is None else s for s in t.shape])
            leaves[i] = leaf
            in_names[i] = b.var_of(leaves[i])


def _is_weak(o):
    """A Python number (weakly typed, as in JAX); numpy scalars keep their dtype."""
    return isinstance(o, (bool, int, float)) and not isinstance(o, np.generic)


def _default_dtype(v):
    return "bool" if isinstance(v, bool) else "int64" if isinstance(v, int) else "float32"


def _tensorize_weak(obj, dtypes=None):
    """``obj`` with its Python numbers (and numpy values) as tensors, and, for each leaf of
    ``tree_flatten`` of the result, the Python number it was (None for a tensor).

    ``dtypes`` (one entry per leaf, None for "default") gives each Python number its dtype;
    without it a number gets d2s's default (float32, int64, bool)."""
    # the common results first (every eager cond and loop step comes through here)
    if isinstance(obj, Tensor):
        return obj, [None]
    if type(obj) in (tuple, list) and all(isinstance(o, Tensor) for o in obj):
        return obj, [None] * len(obj)
    weak = []

    def conv(o):
        if isinstance(o, Tensor):
            weak.append(None)
            return o
        if _is_weak(o):
            k = len(weak)
            weak.append(o)
            dt = dtypes[k] if dtypes is not None and k < len(dtypes) else None
            return tensor(o, dtype=dt)
        if isinstance(o, (np.generic, np.ndarray)):
            weak.append(None)
            return tensor(o)
        if pytree.is_registered(o):  # a TensorArray: its tensors as they are
            weak.extend([None] * len(tree_flatten(o)[0]))
        return o

    return pytree.tree_map(conv, obj, is_leaf=pytree.is_registered), weak


def _join_weak(branches):
    """The dtype each output leaf takes when the branches of a cond/switch give it: a Python
    number takes the dtype of the tensor the other branches return there (when it fits that
    dtype: an int fits a float tensor, a float does not fit an int tensor); numbers on every
    side combine as Python would (int and float give float32).

    ``branches`` is a list of ``(types, weak)``; returns one dtype or None per leaf (None: no
    Python number there, or dtypes that do not fit, which the caller reports)."""
    from d2s_runtime.dtypes import scalar_result
    targets = []
    for i in range(len(branches[0][0])):
        strong = {types[i].dtype for types, weak in branches if weak[i] is None}
        numbers = [weak[i] for _, weak in branches if weak[i] is not None]
        if not numbers or len(strong) > 1:
            targets.append(None)
        elif strong:
            (dt,) = strong
            targets.append(dt if all(scalar_result(dt, v) == dt for v in numbers) else None)
        else:
            dt = _default_dtype(numbers[0])
            for v in numbers[1:]:
                dt = scalar_result(dt, v)
            targets.append(dt)
    return targets


def _abstract(fn):
    """``(treedef, types, weak)`` of ``fn()``'s result (see ``_tensorize_weak``), traced into a
    throwaway block so nothing is computed; None when tracing it fails.

    Eager code uses it to learn the type a value would have in a program: the branch not
    taken, or a loop body on its initial carry (as a program builds it)."""
    b = STATE.builder
    scope = b.sub_block() if b is not None else ProgramBuilder()
    try:
        with scope, no_grad():
            out, weak = _tensorize_weak(fn())
            leaves, tree = tree_flatten(out)
            return tree, [_type_of(t) for t in leaves], weak
    except Exception:  # noqa: BLE001 - an untaken branch that cannot be traced: default dtypes
        return None


def _eager_branch(taken, others, operands):
    """Run branch ``taken``; its result as tensors, a Python number taking the dtype the other
    branches give that output (so eager code returns what a program would)."""
    out = taken(*operands)
    if isinstance(out, Tensor):
        return out
    conv, weak = _tensorize_weak(out)
    if weak.count(None) == len(weak):
        return conv
    leaves, tree = tree_flatten(conv)
    branches = [([_type_of(t) for t in leaves], weak)]
    for fn in others:
        info = _abstract(lambda fn=fn: fn(*operands))
        if info is not None and info[0] == tree:
            branches.append(info[1:])
    return _tensorize_weak(out, _join_weak(branches))[0]


_LEAF = (Tensor, bool, int, float, np.ndarray, np.generic)


def _same_structure(a, b):
    """Whether two carries have the same pytree structure, with tensors, arrays and Python
    numbers all as leaves (a TensorArray matches one of its own type, whatever it holds)."""
    a_leaves, a_def = pytree.tree_flatten(a, is_leaf=pytree.is_registered, leaf_types=_LEAF)
    b_leaves, b_def = pytree.tree_flatten(b, is_leaf=pytree.is_registered, leaf_types=_LEAF)
    if a_def != b_def:
        return False
    for x, y in zip(a_leaves, b_leaves):
        x_leaf, y_leaf = isinstance(x, _LEAF), isinstance(y, _LEAF)
        if x_leaf != y_leaf or (not x_leaf and type(x) is not type(y)):
            return False
    return True


def _check_carry(what, old, new):
    """Eager loops check the carry kept its structure (the final one against the initial
    one, so the check costs nothing per step), as a program must."""
    if not _same_structure(old, new):
        raise ControlFlowError(f"{what} must return a carry of the same structure as it takes: it takes "
                               f"{_describe(old)} and returns {_describe(new)}")


def _describe(o):
    leaves, treedef = pytree.tree_flatten(o, is_leaf=pytree.is_registered)
    return treedef.format([f"{x.dtype}{list(x.shape)}" if isinstance(x, Tensor) else repr(x) for x in leaves])


def _finish_carry(carry, step):
    """An eager loop's final carry as tensors: a Python number left in it gets the dtype a
    program gives it, that of ``step()`` (the body on the initial carry, traced abstractly)."""
    conv, weak = _tensorize_weak(carry)
    if all(w is None for w in weak):
        return conv
    info = _abstract(step)
    if info is None or info[0] != tree_flatten(conv)[1]:
        return conv
    targets = [t.dtype if w is not None else None for t, w in zip(info[1], weak)]
    return _tensorize_weak(carry, targets)[0]


def _weak_carry_types(types, weak, probe):
    """``types`` with each weak carry's dtype set to what the body makes of the Python number
    (``probe()``: the body's new carry from the initial one, Python numbers and all, traced
    abstractly). A loop carrying ``0`` that adds int32 tensors to it then carries int32, as
    eager code does."""
    if not any(weak):
        return types
    info = _abstract(probe)
    if info is None or len(info[1]) != len(types):
        return types
    return [TensorType(t.shape, o.dtype) if w and t.ndim == o.ndim else t
            for t, o, w in zip(types, info[1], weak)]


def _fmt_tree(treedef, types):
    """A readable form of a pytree of types, for error messages."""
    return treedef.format([str(t) for t in types])
