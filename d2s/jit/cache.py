"""Input signatures and the program cache of a StaticFunction.

A call's signature is one flat, hashable tuple: the arguments' nesting of tuples, lists and dicts
(a ``d2s.pytree`` treedef) and the keyword names, then for every tensor argument a tag, its shape,
its dtype, whether it requires grad (the program sees ``x.requires_grad``) and its strides
(a reshape of a transposed array copies, see d2s/layouts.py; with InputSpec dims, only where it
is not row-major), and for every other argument its type and value. It is computed in a single
flatten that also collects the tensor arguments, so a cache hit costs one walk and one dict
lookup. With ``InputSpec``s, the first call of a new
shape computes the signature a second time with the spec's dims (``None`` where dynamic); the
program found (or built) for that generalized signature is then also stored under the call's
exact signature, so later calls of that shape take the fast path again.
"""
from collections import namedtuple
from itertools import count

import numpy as np

from d2s_runtime import forksafe

from .. import pytree
from ..static.input_spec import InputSpec
from ..layouts import layout_key
from ..tensor import Tensor


class _Tag:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


TENSOR = _Tag("<tensor>")   # a tensor argument: followed by its shape and dtype
GPU = _Tag("<gpu>")         # follows a tensor whose data is not a numpy array
OBJ = _Tag("<object>")      # an unhashable argument, keyed by identity
ALIASED = _Tag("<aliased>")  # followed by the first leaf index of each tensor argument

SCALARS = frozenset({int, float, bool, str, bytes, type(None), complex})


def leaf_key(a, key, leaves, types=None, spec=None):
    """Append argument leaf ``a``'s part of the signature to ``key`` and its tensor to ``leaves``.

    ``types`` (when given) collects ``(shape, dtype, name)`` per tensor, the shape taken from
    ``spec`` (the InputSpec at ``a``'s place, if any) when it is compatible.
    """
    t = type(a)
    if t is Tensor or isinstance(a, Tensor):
        d = a.array
        if d is None:
            raise TypeError("a symbolic tensor was passed to a to_static function outside of the "
                            "program it belongs to")
        shape, dtype = d.shape, d.dtype
        strides = d.strides  # (with the exact shape, strides say no more than the layout)
        if spec is not None and isinstance(spec, InputSpec) and _compatible(spec, shape, dtype):
            shape = spec.shape
            strides = layout_key(d)
        key.append(TENSOR)
        key.append(shape)
        key.append(dtype)
        key.append(a.requires_grad)
        key.append(strides)
        if type(d) is not np.ndarray:
            key.append(GPU)
        leaves.append(a)
        if types is not None:
            types.append((shape, dtype.name, getattr(spec, "name", None)))
    elif t in SCALARS:
        key.append(t)
        key.append(a)
    elif t is np.ndarray:
        leaf_key(Tensor._make(a), key, leaves, types, spec)
    elif t is InputSpec:
        dtype = np.dtype(str(a.dtype))
        key.append(TENSOR)
        key.append(a.shape)
        key.append(dtype)
        key.append(False)  # (requires_grad)
        key.append(None)  # (any layout: row-major)
        leaves.append(a)
        if types is not None:
            types.append((a.shape, dtype.name, a.name))
    elif isinstance(a, np.generic):
        key.append(t)
        key.append(a.item())
    else:
        try:
            hash(a)
        except TypeError:
            key.append(OBJ)
            key.append(id(a))
        else:
            key.append(t)
            key.append(a)


def _leaf_specs(treedef, spec, out):
    """Append to ``out``, per leaf of ``treedef``, the part of ``spec`` at its place (None where
    the spec's nesting does not reach it)."""
    if treedef.node_type is None:
        out.append(spec)
    elif treedef.node_type is dict:
        sub = spec if isinstance(spec, dict) else {}
        for k, c in zip(treedef.node_data, treedef.children):
            _leaf_specs(c, sub.get(k), out)
    else:
        nested = isinstance(spec, (list, tuple)) and len(spec) == len(treedef.children)
        for i, c in enumerate(treedef.children):
            _leaf_specs(c, spec[i] if nested else None, out)


def _compatible(spec, shape, dtype):
    if len(spec.shape) != len(shape) or np.dtype(str(spec.dtype)) != dtype:
        return False
    for s, d in zip(spec.shape, shape):
        if s is not None and s != d:
            return False
    return True


_ARGS_DEF = {}  # number of arguments -> the treedef of a call whose arguments are all tensors


def _tensor_args_key(head, args):
    """:func:`signature`'s key for a call whose arguments are all plain CPU tensors (the common
    case, checked in one pass without the general walk), or None for any other call."""
    key = [*head, None, ()]
    for a in args:
        if type(a) is not Tensor:
            return None
        d = a.array
        if type(d) is not np.ndarray:
            return None
        key.append(TENSOR)
        key.append(d.shape)
        key.append(d.dtype)
        key.append(a.requires_grad)
        key.append(d.strides)
    treedef = _ARGS_DEF.get(len(args))
    if treedef is None:
        treedef = _ARGS_DEF[len(args)] = pytree.tree_flatten(tuple(args), plain=True)[1]
    key[len(head)] = treedef
    if len(args) > 1:
        _alias_key(args, key)
    return tuple(key)


def alias_pattern(leaves):
    """For each leaf, the index of the first leaf that is the same tensor object (``(0, 0)``
    for ``f(x, x)``), or None when every tensor leaf is a distinct object."""
    first = {}
    pattern = [first.setdefault(id(t), i) if isinstance(t, Tensor) else i for i, t in enumerate(leaves)]
    return tuple(pattern) if len(first) < sum(isinstance(t, Tensor) for t in leaves) else None


def _alias_key(leaves, key):
    """Appends to ``key`` which tensor arguments are one object (``attn(x, x, x)``): the program
    is built with one symbolic tensor for them, so ``key is query`` (self-attention's one
    projection) and in-place writes through one name seen by the other hold as in eager code."""
    if len(leaves) == 2:  # (the common cases first: no tensor passed twice)
        if leaves[0] is not leaves[1]:
            return
    elif len({id(t) for t in leaves}) == len(leaves):
        return
    pattern = alias_pattern(leaves)
    if pattern is not None:
        key.append(ALIASED)
        key.append(pattern)


def signature(head, args, kwargs, specs=None, types=None):
    """The signature key of a call and its tensor arguments (see the module docstring)."""
    if not kwargs and specs is None and types is None:
        key = _tensor_args_key(head, args)
        if key is not None:
            return key, list(args)
    names = tuple(sorted(kwargs)) if kwargs else ()
    # (a call of leaves only, the common case, walks one level and gets a shared treedef)
    tree = (args, tuple([kwargs[k] for k in names])) if names else args
    parts, treedef = pytree.tree_flatten(tree, plain=True)
    key = [*head, treedef, names]
    leaves = []
    if specs is None:
        for a in parts:
            leaf_key(a, key, leaves, types)
        if len(leaves) > 1:
            _alias_key(leaves, key)
        return tuple(key), leaves
    pos_specs = specs if isinstance(specs, list) else ()
    kw_specs = specs if isinstance(specs, dict) else {}
    arg_defs, kw_defs = treedef.children if names else (treedef, None)
    part_specs = []
    for i, d in enumerate(arg_defs.children):
        _leaf_specs(d, pos_specs[i] if i < len(pos_specs) else None, part_specs)
    for k, d in zip(names, kw_defs.children if names else ()):
        _leaf_specs(d, kw_specs.get(k), part_specs)
    for a, spec in zip(parts, part_specs):
        leaf_key(a, key, leaves, types, spec)
    if len(leaves) > 1:
        _alias_key(leaves, key)
    return tuple(key), leaves


def _replaced(o, it):
    return next(it) if isinstance(o, (Tensor, np.ndarray, InputSpec)) else o


def replace_leaves(obj, it):
    """``obj`` with each tensor / array / InputSpec replaced by the next item of ``it``
    (in the order :func:`signature` takes them)."""
    return pytree.tree_map(lambda o: _replaced(o, it), obj, plain=True)


def replace_kwargs(kwargs, it):
    return {k: replace_leaves(kwargs[k], it) for k in sorted(kwargs)}


CacheInfo = namedtuple("CacheInfo", "hits misses size limit evictions")
CacheInfo.__doc__ = """What :meth:`StaticFunction.cache_info` reports: ``hits`` (calls that ran a
cached program), ``misses`` (programs built), ``size`` (programs cached now), ``limit``
(``d2s.jit.config.cache_size_limit`` at the time, ``None`` for none) and ``evictions``
(programs dropped to stay within the limit)."""


def _peek(counter):
    """The next value an ``itertools.count`` would give, without taking it."""
    return int(repr(counter)[6:-1])


class ProgramCache:
    """Signature -> :class:`~d2s.jit.concrete.ConcreteProgram`; several signatures (exact
    shapes seen at calls) may share one program built for an InputSpec signature.

    Bounded: :meth:`add` drops the least recently used program (and every signature that
    reached it) when ``limit`` programs are cached. A hit stamps its entry with the next value
    of one counter (``touch``), a cheap atomic step under the GIL, so recency needs no lock;
    changes to the cache take ``lock``, and readers get snapshots.
    """

    def __init__(self):
        self.by_key = {}
        self._entries = {}  # entry -> None, in the order they were built
        self.lock = forksafe.Lock()
        self.clock = count(1)
        self.misses = 0
        self.evictions = 0
        self._add_stamps = 0  # clock values taken by add() rather than by hits
        self.warned = False
        self.warned_state = False  # warned that the forward keeps changing a Python attribute
        self.state_rebuilds = 0  # builds caused by a changed Python attribute of the module

    @property
    def entries(self):
        return list(self._entries)

    def get(self, key):
        return self.by_key.get(key)

    def touch(self, entry):
        """Mark ``entry`` as just used (one hit)."""
        entry.stamp = next(self.clock)

    def add(self, key, entry, limit=None):
        """Cache ``entry`` (a newly built program) under ``key``; returns the entries evicted
        to make room (``limit``: the most programs kept, ``None`` for no limit)."""
        evicted = []
        with self.lock:
            if entry not in self._entries:
                self.misses += 1
                if limit is not None:
                    while len(self._entries) >= max(int(limit), 1):
                        victim = min(self._entries, key=lambda e: getattr(e, "stamp", 0))
                        self._drop(victim)
                        evicted.append(victim)
                self._entries[entry] = None
            self._add_stamps += 1
            entry.stamp = next(self.clock)
            entry.cache_key = key  # the signature it was built for (never trimmed)
            self.by_key[key] = entry
        return evicted

    def replace(self, old, new):
        """Put ``new`` in ``old``'s place, under every signature that reached ``old``."""
        with self.lock:
            if old in self._entries:
                self._entries = {(new if e is old else e): None for e in self._entries}
            new.stamp = next(self.clock)
            self._add_stamps += 1
            new.cache_key = getattr(old, "cache_key", None)
            for k in [k for k, e in self.by_key.items() if e is old]:
                self.by_key[k] = new

    def alias(self, key, entry):
        """Also find ``entry`` under ``key`` (unless it was evicted meanwhile)."""
        with self.lock:
            if entry in self._entries:
                if len(self.by_key) >= _MAX_KEYS:
                    self._trim_aliases()
                self.by_key[key] = entry

    def _drop(self, entry):
        del self._entries[entry]
        for k in [k for k, e in self.by_key.items() if e is entry]:
            del self.by_key[k]
        self.evictions += 1

    def _trim_aliases(self):
        # aliases only save a second signature walk: forgetting the older half is harmless
        aliases = [k for k, e in self.by_key.items() if getattr(e, "cache_key", None) != k]
        for k in aliases[:len(aliases) // 2 + 1]:
            del self.by_key[k]

    def info(self, limit):
        with self.lock:
            hits = _peek(self.clock) - 1 - self._add_stamps
            return CacheInfo(hits, self.misses, len(self._entries), limit, self.evictions)

    def clear(self):
        with self.lock:
            self.by_key.clear()
            self._entries.clear()

    def __len__(self):
        return len(self._entries)


# signatures remembered per function (programs are bounded separately, by the limit)
_MAX_KEYS = 4096


def varying_dims(entries):
    """What differs between the signatures ``entries`` (ConcretePrograms) were built for.

    Returns ``(lines, suggestion)``: strings such as ``"x: dim 0 took 3, 4, 5"``, and an
    ``input_spec=[...]`` text with ``None`` at those dims (or None when no spec would help).
    """
    typed = [e for e in entries if getattr(e, "leaf_types", None) is not None]
    if len(typed) < 2:
        return [], None
    first = typed[0]
    n = len(first.leaf_types)
    if not all(len(e.leaf_types) == n for e in typed):
        return ["the number of tensor arguments changes between calls"], None
    labels = first.leaf_labels
    lines, dims_of = [], []
    for i in range(n):
        shapes = [e.leaf_types[i][0] for e in typed]
        ranks = sorted({len(s) for s in shapes})
        if len(ranks) != 1:
            lines.append(f"{labels[i]}: rank took {', '.join(map(str, ranks))}")
            dims_of.append(None)
            continue
        dims = []
        for d in range(ranks[0]):
            values = sorted({s[d] for s in shapes}, key=lambda v: (v is None, v or 0))
            if len(values) > 1:
                shown = ", ".join(map(str, values[:6])) + (", ..." if len(values) > 6 else "")
                lines.append(f"{labels[i]}: dim {d} took {shown}")
                dims.append(None)
            else:
                dims.append(values[0])
        dims_of.append(dims)
    if not lines:
        return ["the non-tensor (Python) argument values, which tensor arguments require grad, or the grad "
                "mode (no_grad) change between calls, and each combination builds its own program (pass such "
                "values as tensors, or keep them to a few)"], None
    layout = getattr(first, "arg_leaf", None)
    if layout is None or any(d is None for d in dims_of) or sorted(i for i in layout if i is not None) != list(range(n)):
        return lines, None  # tensors inside containers or keywords: no simple positional spec
    specs = ["None" if i is None else f"InputSpec({dims_of[i]}, {first.leaf_types[i][1]!r})" for i in layout]
    return lines, "input_spec=[" + ", ".join(specs) + "]"
