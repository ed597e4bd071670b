"""Input signatures and the program cache of a StaticFunction.

A call's signature is one flat, hashable tuple: for every tensor argument a tag, its shape and
its dtype; for every other argument its type and value (containers by type and length, then
their items). It is computed in a single walk that also collects the tensor arguments, so a
cache hit costs one walk and one dict lookup. With ``InputSpec``s, the first call of a new
shape computes the signature a second time with the spec's dims (``None`` where dynamic); the
program found (or built) for that generalized signature is then also stored under the call's
exact signature, so later calls of that shape take the fast path again.
"""
import numpy as np

from ..static.input_spec import InputSpec
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

SCALARS = frozenset({int, float, bool, str, bytes, type(None), complex})


def walk(a, key, leaves, types=None, spec=None):
    """Append ``a``'s part of the signature to ``key`` and its tensors to ``leaves``.

    ``types`` (when given) collects ``(shape, dtype, name)`` per tensor, the shape taken from
    ``spec`` (an InputSpec matching this argument; for a list, tuple or dict argument, specs
    of the same structure) when it is compatible.
    """
    t = type(a)
    if t is Tensor or isinstance(a, Tensor):
        d = a._data
        if d is None:
            raise TypeError("a symbolic tensor was passed to a to_static function outside of the "
                            "program it belongs to")
        shape, dtype = d.shape, d.dtype
        if spec is not None and isinstance(spec, InputSpec) and _compatible(spec, shape, dtype):
            shape = spec.shape
        key.append(TENSOR)
        key.append(shape)
        key.append(dtype)
        if type(d) is not np.ndarray:
            key.append(GPU)
        leaves.append(a)
        if types is not None:
            types.append((shape, dtype.name, getattr(spec, "name", None)))
    elif t in SCALARS:
        key.append(t)
        key.append(a)
    elif t is tuple or t is list:
        key.append(t)
        key.append(len(a))
        if spec is not None and isinstance(spec, (list, tuple)) and len(spec) == len(a):
            for x, sp in zip(a, spec):  # a nested spec: one per item
                walk(x, key, leaves, types, sp)
        else:
            for x in a:
                walk(x, key, leaves, types)
    elif t is dict:
        key.append(dict)
        key.append(len(a))
        sub = spec if isinstance(spec, dict) else {}
        for k, v in a.items():
            key.append(k)
            walk(v, key, leaves, types, sub.get(k))
    elif t is np.ndarray:
        walk(Tensor._make(a), key, leaves, types, spec)
    elif t is InputSpec:
        dtype = np.dtype(str(a.dtype))
        key.append(TENSOR)
        key.append(a.shape)
        key.append(dtype)
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


def _compatible(spec, shape, dtype):
    if len(spec.shape) != len(shape) or np.dtype(str(spec.dtype)) != dtype:
        return False
    for s, d in zip(spec.shape, shape):
        if s is not None and s != d:
            return False
    return True


def signature(head, args, kwargs, specs=None, types=None):
    """The signature key of a call and its tensor arguments (see the module docstring)."""
    key = list(head)
    leaves = []
    pos_specs = specs if isinstance(specs, list) else ()
    for i, a in enumerate(args):
        spec = pos_specs[i] if i < len(pos_specs) else None
        walk(a, key, leaves, types, spec)
    if kwargs:
        key.append(_KW)
        for k in sorted(kwargs):
            key.append(k)
            spec = specs.get(k) if isinstance(specs, dict) else None
            walk(kwargs[k], key, leaves, types, spec)
    return tuple(key), leaves


_KW = _Tag("<kwargs>")


def replace_leaves(obj, it):
    """``obj`` with each tensor / array / InputSpec replaced by the next item of ``it``
    (the same walk order as :func:`walk`)."""
    t = type(obj)
    if t is Tensor or isinstance(obj, (Tensor, np.ndarray, InputSpec)):
        return next(it)
    if t is tuple or t is list:
        return t(replace_leaves(x, it) for x in obj)
    if t is dict:
        return {k: replace_leaves(v, it) for k, v in obj.items()}
    return obj


def replace_kwargs(kwargs, it):
    return {k: replace_leaves(kwargs[k], it) for k in sorted(kwargs)}


class ProgramCache:
    """Signature -> :class:`~d2s.jit.concrete.ConcreteProgram`; several signatures (exact
    shapes seen at calls) may share one program built for an InputSpec signature."""

    def __init__(self):
        self.by_key = {}
        self.entries = []

    def get(self, key):
        return self.by_key.get(key)

    def add(self, key, entry):
        if entry not in self.entries:
            self.entries.append(entry)
        self.by_key[key] = entry

    def alias(self, key, entry):
        self.by_key[key] = entry

    def clear(self):
        self.by_key.clear()
        self.entries.clear()

    def __len__(self):
        return len(self.entries)
