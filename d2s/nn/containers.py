"""Containers: ``Sequential`` (modules in order), ``ModuleList`` and ``ModuleDict`` (registered list and dict)."""
from collections import OrderedDict

from .module import Module


class Sequential(Module):
    """Modules applied one after another: ``Sequential(Linear(10, 64), ReLU(), Linear(64, 1))``.

    Also accepts one ``OrderedDict`` of named modules. Indexing gives a module (or a
    ``Sequential`` for a slice); ``len()`` and iteration work as for a list.
    """

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return Sequential(*mods[idx])
        return mods[idx]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.values()))

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self


class ModuleList(Module):
    """A list of modules whose parameters belong to the owner (a plain list would hide them)."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def __iadd__(self, modules):
        return self.extend(modules)

    def insert(self, index, module):
        """Insert ``module`` before position ``index`` (the list's names are renumbered)."""
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for m in mods:
            self.append(m)

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(mods[idx])
        return mods[idx]

    def __setitem__(self, idx, module):
        key = list(self._modules)[idx]
        self.add_module(key, module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.values()))

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
