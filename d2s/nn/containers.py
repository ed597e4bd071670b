"""Containers: ``Sequential`` (modules in order), ``ModuleList`` and ``ModuleDict`` (registered
list and dict of modules), ``ParameterList`` and ``ParameterDict`` (of parameters), as PyTorch's."""
import operator
from collections import OrderedDict

from ..tensor import Tensor
from .module import Module, Parameter, _addindent


def _index(idx, n, what):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for a {what} of length {n}")
    return idx % n


class Sequential(Module):
    """Modules applied one after another: ``Sequential(Linear(10, 64), ReLU(), Linear(64, 1))``.

    Also accepts one ``OrderedDict`` of named modules. Indexing gives a module (or a
    ``Sequential`` for a slice, keeping the names); ``len()``, iteration, ``append``,
    ``insert``, ``extend``, ``pop``, ``del seq[i]`` and ``seq[i] = m`` work as for a list.
    """

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self), "Sequential")]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(self), "Sequential")]]):
            del self._modules[key]
        # as PyTorch: the remaining modules are renumbered
        items = list(self._modules.items())
        self._modules.clear()
        for i, (_, m) in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.values()))

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, got {type(other).__name__}")
        return Sequential(*self, *other)

    def __iadd__(self, other):
        return self.extend(other)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        """Insert ``module`` before position ``index`` (the names are renumbered)."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        mods = list(self._modules.values())
        mods.insert(index + n if index < 0 else index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m
        return self

    def pop(self, key):
        v = self[key]
        del self[key]
        return v


class ModuleList(Module):
    """A list of modules whose parameters belong to the owner (a plain list would hide them)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def insert(self, index, module):
        """Insert ``module`` before position ``index`` (the list's names are renumbered)."""
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for m in mods:
            self.append(m)

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(mods[idx])
        return mods[_index(idx, len(mods), "ModuleList")]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self), "ModuleList")]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys), "ModuleList")]]):
            del self._modules[key]
        mods = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.values()))

    def __repr__(self):
        # PyTorch's form: runs of identical modules print once, as "(0-5): 6 x Layer(...)"
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = [_addindent(f"({s}): {r}" if s == e else f"({s}-{e}): {e - s + 1} x {r}", 2) for s, e, r in blocks]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward(): iterate over it in your own module's forward")


class ModuleDict(Module):
    """A dict of modules whose parameters belong to the owner (a plain dict would hide them).

    Keys are strings and keep their insertion order; ``md[key]``, ``md[key] = m``,
    ``del md[key]``, ``key in md``, ``len``, iteration (over keys), ``keys()``, ``values()``,
    ``items()``, ``update()``, ``pop()`` and ``clear()`` work as for a dict.
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def _check_key(self, key):
        if not isinstance(key, str):
            raise TypeError(f"ModuleDict keys must be strings, got {type(key).__name__} {key!r}")
        if not key or "." in key:
            raise KeyError(f"ModuleDict key {key!r} must be a non-empty string without '.'")
        if key not in self._modules and (hasattr(type(self), key) or key in self.__dict__):
            raise KeyError(f"ModuleDict key {key!r} clashes with an attribute of ModuleDict; choose another name")

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self._check_key(key)
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules))

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return list(self._modules.keys())

    def values(self):
        return list(self._modules.values())

    def items(self):
        return list(self._modules.items())

    def update(self, modules):
        """Add ``modules``: a mapping or an iterable of (key, module) pairs."""
        pairs = modules.items() if hasattr(modules, "items") else modules
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"ModuleDict.update: expected (key, module) pairs, got {pair!r}")
            self[pair[0]] = pair[1]

    def pop(self, key):
        """Remove ``key`` and return its module."""
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward(): pick modules from it in your own module's forward")


def _as_parameter(value):
    """Tensors held by a ParameterList/Dict become Parameters (as in PyTorch)."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value, requires_grad=value.requires_grad or not value.is_symbolic)
    return value


def _param_line(key, p):
    if isinstance(p, Tensor):
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        size = "x".join(str(s) for s in p.shape)
        return f"  ({key}): {kind} containing: [{p.dtype!r} of size {size}]"
    return f"  ({key}): Object of type: {type(p).__name__}"


class ParameterList(Module):
    """A list of parameters registered on the owner (``'0'``, ``'1'``, ... in the state dict);
    tensors added to it become Parameters."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        vals = list(self._parameters.values())
        if isinstance(idx, slice):
            return ParameterList(vals[idx])
        return vals[_index(idx, len(vals), "ParameterList")]

    def __setitem__(self, idx, param):
        key = list(self._parameters)[_index(idx, len(self), "ParameterList")]
        setattr(self, key, _as_parameter(param))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(list(self._parameters.values()))

    def __iadd__(self, params):
        return self.extend(params)

    def append(self, value):
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(_param_line(k, p) for k, p in enumerate(self))

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterList has no forward(): use its parameters in your own module's forward")


class ParameterDict(Module):
    """A dict of parameters registered on the owner under their keys; tensors added to it
    become Parameters."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(list(self._parameters))

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return list(self._parameters.keys())

    def values(self):
        return list(self._parameters.values())

    def items(self):
        return list(self._parameters.items())

    def get(self, key, default=None):
        return self._parameters.get(key, default)

    def pop(self, key):
        return self._parameters.pop(key)

    def clear(self):
        self._parameters.clear()

    def update(self, parameters):
        """Add ``parameters``' entries: an OrderedDict, ParameterDict or sequence of pairs in
        their order, a plain mapping in sorted key order (as PyTorch, so the state_dict's
        order matches a checkpoint PyTorch wrote)."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = parameters.items()
        elif hasattr(parameters, "items"):
            pairs = sorted(parameters.items())
        else:
            pairs = parameters
        for k, v in pairs:
            self[k] = v

    def extra_repr(self):
        return "\n".join(_param_line(k, p) for k, p in self.items())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterDict has no forward(): use its parameters in your own module's forward")
