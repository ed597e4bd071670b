"""Pytrees: nested lists, tuples, namedtuples, dicts and registered node types, flattened to
a list of leaves and a :class:`PyTreeDef` that rebuilds the structure (like JAX's
``tree_util``).

One walker for every part of d2s that takes nested Python values apart: the function
transforms (``d2s.func``), the control-flow builders (operands, carries, branch outputs),
converted code (fresh copies per branch), program outputs and exports. Callers differ in what
they count as a leaf, and say so per call:

- by default every value that is not a node is a leaf (``d2s.func``, ``tree_map``);
- ``leaf_types=Tensor``: only tensors are leaves; other values that are not nodes stay in the
  treedef as constants (the control-flow builders: a branch returning ``(x, "tag")``);
- ``is_leaf(obj)``: objects it accepts are leaves even when they are nodes (a namedtuple kept
  whole, a TensorArray treated as one value);
- ``plain=True``: only plain tuples, lists and dicts are nodes (call signatures of
  ``to_static`` functions: the cheapest walk, on every call).

Dict keys keep their insertion order unless ``sort_keys=True`` (what ``d2s.func`` does, as JAX
does); a dict is rebuilt as a plain dict. A namedtuple is rebuilt from its fields, another
subclass of list or tuple from the sequence of its items.

Other types become nodes with :func:`register_node` (``TensorArray`` registers itself). This
module imports nothing of d2s, so any layer may use it.
"""
from functools import partial
from operator import itemgetter

__all__ = ["PyTreeDef", "CONST", "register_node", "is_registered", "tree_flatten", "tree_unflatten", "tree_map",
           "tree_leaves", "tree_structure"]


class _Const:
    """The ``node_type`` of a treedef holding a constant (a non-leaf value kept in the treedef)."""

    def __repr__(self):
        return "CONST"


CONST = _Const()


class _ConstValue:
    """A constant inside a treedef: compares by ``==`` as a Python value (by identity when
    ``==`` does not give a bool, as for an array), hashes by value where it can."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        if not isinstance(other, _ConstValue):
            return NotImplemented
        a, b = self.value, other.value
        if a is b:
            return True
        try:
            return bool(a == b)
        except Exception:  # noqa: BLE001 - e.g. an array: equal only to itself
            return False

    def __hash__(self):
        try:
            return hash(self.value)
        except TypeError:
            return 0  # unhashable constants compare by ==; one bucket keeps hash and == consistent

    def __repr__(self):
        return repr(self.value)


class PyTreeDef(tuple):
    """The structure of a pytree: what :func:`tree_unflatten` needs besides the leaves.

    Immutable, comparable (``==``) and hashable, so it can be part of a cache key (it is a
    tuple underneath, so building, hashing and comparing one runs at C speed).

    Attributes:
        node_type: ``None`` for a leaf, :data:`CONST` for a constant, else the node's type
            (``list``, ``tuple``, ``dict``, a namedtuple class or a registered type).
        node_data: the constant's value, a dict's keys (a tuple, in flattening order), a
            registered node's auxiliary data, else None.
        children: the treedefs of the node's children (a tuple).
        num_leaves: how many leaves the tree holds.
    """

    __slots__ = ()

    def __new__(cls, node_type, node_data=None, children=(), num_leaves=None):
        if num_leaves is None:
            num_leaves = 1 if node_type is None else sum(c.num_leaves for c in children)
        if node_type is CONST:
            node_data = _ConstValue(node_data)
        return tuple.__new__(cls, (node_type, node_data, tuple(children), num_leaves))

    node_type = property(itemgetter(0))
    children = property(itemgetter(2))
    num_leaves = property(itemgetter(3))

    @property
    def node_data(self):
        data = self[1]
        return data.value if type(data) is _ConstValue else data

    def __repr__(self):
        return f"PyTreeDef({self.format()})"

    def format(self, leaves=()):
        """A readable form of the tree, with the strings ``leaves`` at its leaves (``'?'`` past
        their end; ``'*'`` when none are given): ``{'a': [*, *], 'b': (*,)}``."""
        it = iter(leaves)
        return _show(self, it, "?" if leaves else "*")


def _show(d, it, missing):
    if d.node_type is None:
        return str(next(it, missing))
    if d.node_type is CONST:
        return repr(d.node_data)
    inner = [_show(c, it, missing) for c in d.children]
    if d.node_type is dict:
        return "{" + ", ".join(f"{k!r}: {s}" for k, s in zip(d.node_data, inner)) + "}"
    if d.node_type is list:
        return "[" + ", ".join(inner) + "]"
    if d.node_type is tuple:
        return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
    return f"{d.node_type.__name__}(" + ", ".join(inner) + ")"


_make = partial(tuple.__new__, PyTreeDef)  # PyTreeDef from (type, data, children, num_leaves)
_LEAF = _make((None, None, (), 1))  # every leaf shares one treedef

# ------------------------------------------------------------------ node types
# type -> (flatten(obj) -> (children, aux), unflatten(aux, children) -> obj)
_registry = {}
_kinds = {}  # type -> its node kind, looked up once per type (subclasses included)
_SEQ, _NAMEDTUPLE, _DICT = "seq", "namedtuple", "dict"


def register_node(node_type, flatten, unflatten):
    """Make instances of ``node_type`` (and of its subclasses) pytree nodes.

    ``flatten(obj)`` returns ``(children, aux)``: the values to walk into, and hashable data
    that rebuilding needs (it is part of the treedef, so it should compare by ``==``);
    ``unflatten(aux, children)`` returns the rebuilt object.
    """
    _registry[node_type] = (flatten, unflatten)
    _kinds.clear()


def is_registered(obj):
    """Whether ``obj`` is an instance of a type registered with :func:`register_node`."""
    return type(_kind_of(type(obj))) is tuple


def _kind_of(t):
    """How values of type ``t`` are walked: ``_SEQ``, ``_NAMEDTUPLE``, ``_DICT``, a registered
    ``(flatten, unflatten)``, or None for a value that is not a node."""
    try:
        return _kinds[t]
    except KeyError:
        pass
    kind = None
    for base in t.__mro__:
        if base in _registry:
            kind = _registry[base]
            break
    else:
        if issubclass(t, tuple) and hasattr(t, "_fields"):
            kind = _NAMEDTUPLE
        elif issubclass(t, (list, tuple)):
            kind = _SEQ
        elif issubclass(t, dict):
            kind = _DICT
    _kinds[t] = kind
    return kind


def _walk(o, leaves, is_leaf, leaf_types, sort_keys):
    """The treedef of ``o``, appending its leaves to ``leaves`` (see :func:`tree_flatten`)."""
    if (leaf_types is not None and isinstance(o, leaf_types)) or (is_leaf is not None and is_leaf(o)):
        leaves.append(o)
        return _LEAF
    t = type(o)
    kind = _SEQ if t is list or t is tuple else _DICT if t is dict else _kind_of(t)
    if kind is None:
        if leaf_types is not None:
            return _make((CONST, _ConstValue(o), (), 0))
        leaves.append(o)
        return _LEAF
    start = len(leaves)
    if kind is _SEQ or kind is _NAMEDTUPLE:
        children = tuple([_walk(x, leaves, is_leaf, leaf_types, sort_keys) for x in o])
        return _make((t, None, children, len(leaves) - start))
    if kind is _DICT:
        keys = tuple(sorted(o)) if sort_keys else tuple(o)
        children = tuple([_walk(o[k], leaves, is_leaf, leaf_types, sort_keys) for k in keys])
        return _make((dict, keys, children, len(leaves) - start))
    items, aux = kind[0](o)
    children = tuple([_walk(x, leaves, is_leaf, leaf_types, sort_keys) for x in items])
    return _make((t, aux, children, len(leaves) - start))


_PLAIN = frozenset((tuple, list, dict))
_FLAT = {}  # (tuple or list, n) -> the treedef of n leaves in one, made once


def _walk_plain(o, leaves):
    """``_walk`` where only plain tuples, lists and dicts are nodes (call signatures: the
    cheapest walk, for the cache lookup of every call)."""
    t = type(o)
    if t is tuple or t is list:
        if _PLAIN.isdisjoint(map(type, o)):  # leaves only (``(h, c)``): a shared treedef
            leaves.extend(o)
            d = _FLAT.get((t, len(o)))
            if d is None:
                d = _FLAT[t, len(o)] = _make((t, None, (_LEAF,) * len(o), len(o)))
            return d
        start = len(leaves)
        return _make((t, None, tuple([_walk_plain(x, leaves) for x in o]), len(leaves) - start))
    if t is dict:
        start = len(leaves)
        keys = tuple(o)
        return _make((dict, keys, tuple([_walk_plain(o[k], leaves) for k in keys]), len(leaves) - start))
    leaves.append(o)
    return _LEAF


# ------------------------------------------------------------------ the API
def tree_flatten(tree, is_leaf=None, leaf_types=None, sort_keys=False, plain=False):
    """``(leaves, treedef)`` of ``tree``, leaves in depth-first order.

    Args:
        tree: any value; lists, tuples, namedtuples, dicts and registered types are walked.
        is_leaf: a predicate; values it accepts are leaves, not walked into.
        leaf_types: a type or tuple of types; when given, only their instances (and what
            ``is_leaf`` accepts) are leaves, and other values that are not nodes are kept in
            the treedef as constants (``tree_unflatten`` puts them back).
        sort_keys: flatten dicts in sorted key order (else in insertion order).
        plain: only plain tuples, lists and dicts (not their subclasses, namedtuples or
            registered types) are nodes; everything else is a leaf (the other options are
            ignored).
    """
    leaves = []
    if plain:
        return leaves, _walk_plain(tree, leaves)
    return leaves, _walk(tree, leaves, is_leaf, leaf_types, sort_keys)


def tree_unflatten(treedef, leaves):
    """The pytree of structure ``treedef`` holding ``leaves`` (any iterable, in order)."""
    it = iter(leaves)
    return _build(treedef, it)


def _build(d, it):
    t = d.node_type
    if t is None:
        return next(it)
    if t is CONST:
        return d.node_data
    if t is list:
        return [_build(c, it) for c in d.children]
    if t is tuple:
        return tuple(_build(c, it) for c in d.children)
    if t is dict:
        return {k: _build(c, it) for k, c in zip(d.node_data, d.children)}
    kind = _kind_of(t)
    if kind is _NAMEDTUPLE:
        return t(*[_build(c, it) for c in d.children])
    if kind is _SEQ:
        return t([_build(c, it) for c in d.children])
    if kind is _DICT:
        return {k: _build(c, it) for k, c in zip(d.node_data, d.children)}
    return kind[1](d.node_data, [_build(c, it) for c in d.children])


def tree_leaves(tree, is_leaf=None, leaf_types=None):
    """The leaves of ``tree`` (see :func:`tree_flatten`)."""
    leaves = []
    _walk(tree, leaves, is_leaf, leaf_types, False)
    return leaves


def tree_structure(tree, is_leaf=None, leaf_types=None, sort_keys=False):
    """The treedef of ``tree`` (see :func:`tree_flatten`)."""
    return _walk(tree, [], is_leaf, leaf_types, sort_keys)


def tree_map(fn, tree, *rest, is_leaf=None, leaf_types=None, sort_keys=False, plain=False):
    """``tree`` with each leaf ``x`` replaced by ``fn(x, *ys)``, the ``ys`` being the leaves at
    the same place in each tree of ``rest`` (which must have ``tree``'s structure)."""
    leaves, treedef = tree_flatten(tree, is_leaf, leaf_types, sort_keys, plain)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r, is_leaf, leaf_types, sort_keys, plain)
        if r_def != treedef:
            raise ValueError(f"tree_map: trees of different structures: {treedef} and {r_def}")
        others.append(r_leaves)
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others)])
