"""Containers: ``Sequential`` (modules applied in order) and ``ModuleList`` (a registered list)."""
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
