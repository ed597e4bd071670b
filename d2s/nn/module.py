"""``Module``, ``Parameter`` and ``Buffer``: the containers every layer is built from.

A module's attributes that are Parameters, Buffers or Modules register themselves (through
``__setattr__``), so ``parameters()``, ``state_dict()`` and ``train()``/``eval()`` see the
whole tree. Parameters and buffers are concrete tensors marked ``_d2s_parameter``: eagerly they
are ordinary tensors, and when a module runs inside a program builder the builder turns each
one into a program param (read at every call, never folded into a constant).
"""
from collections import OrderedDict, namedtuple

import numpy as np
from d2s_runtime.device import device_of, get_xp, to_host, xp_of

from .. import devices as _devices
from ..dtypes import as_dtype
from ..tensor import Tensor, tensor


def _array_of(data):
    """The concrete array behind ``data`` (a Tensor, array or nested list)."""
    if isinstance(data, Tensor):
        if data.is_symbolic:
            raise TypeError("nn.Parameter needs a concrete tensor, not a symbolic one: create "
                            "parameters outside of to_static/build_program (e.g. in __init__)")
        return data._data
    arr = tensor(data)._data
    # a raw array is copied, so training never writes into the caller's array
    return arr.copy() if arr is data else arr



_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class StateDictError(RuntimeError, KeyError):
    """A state dict whose keys do not match the module's (RuntimeError as in PyTorch)."""

    def __str__(self):  # KeyError would quote the message
        return RuntimeError.__str__(self)

class Parameter(Tensor):
    """A tensor that is a module parameter: requires grad by default, and registers itself
    when assigned as a Module attribute. ``Parameter(t)`` shares ``t``'s data."""

    __slots__ = ()
    # ProgramBuilder turns tensors with this mark into program params.
    _d2s_parameter = True

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = np.zeros((0,), dtype=np.float32)
        arr = _array_of(data)
        p = cls._make(arr)
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happens in __new__ (Tensor.__init__ would rebuild the data)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (Parameter, (Tensor._make(self._data), self.requires_grad))


class Buffer(Tensor):
    """A module tensor that is state but not trained (running statistics, masks, ...).

    Buffers register like parameters, appear in ``state_dict()`` and become program params
    inside programs, but do not require grad and are not returned by ``parameters()``.
    """

    __slots__ = ()
    _d2s_parameter = True

    def __new__(cls, data):
        return cls._make(_array_of(data))

    def __init__(self, data):
        pass


class Module:
    """Base class of every layer and model: subclasses set attributes in ``__init__`` and
    define ``forward``; calling the module calls ``forward``.

    Parameters, buffers and submodules assigned as attributes register themselves, in
    assignment order, under the attribute's name.
    """

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # ------------------------------------------------------------ registration
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {name!r} before Module.__init__() is called: call "
                                 f"super().__init__() first in {type(self).__name__}.__init__")
        if name in self._parameters and value is not None and not isinstance(value, Parameter):
            # as in PyTorch: a plain tensor would silently drop the parameter from
            # parameters(), the optimizer and the state dict
            raise TypeError(f"cannot assign {type(value).__name__} as parameter {name!r} of "
                            f"{type(self).__name__} (nn.Parameter or None expected); wrap it in "
                            "nn.Parameter(...) or update the values in place under d2s.no_grad()")
        # a registry that gets the name again keeps its place (as in PyTorch): replacing a
        # submodule by its converted self, or a parameter by a new one, keeps parameters() order
        target = (self._parameters if isinstance(value, Parameter) else self._buffers if isinstance(value, Buffer)
                  else self._modules if isinstance(value, Module) else None)
        for d in (self._parameters, self._buffers, self._modules):
            if d is not target:
                d.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
            self.__dict__.pop(name, None)
        elif isinstance(value, Buffer):
            self._buffers[name] = value
            self.__dict__.pop(name, None)
        elif isinstance(value, Module):
            self._modules[name] = value
            self.__dict__.pop(name, None)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        # only reached when normal lookup fails: look in the registries
        d = self.__dict__
        for reg in ("_parameters", "_buffers", "_modules"):
            if reg in d and name in d[reg]:
                return d[reg][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        for reg in (self._parameters, self._buffers, self._modules):
            if name in reg:
                del reg[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        """Register ``param`` (a Parameter or None) under ``name``."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter({name!r}): expected an nn.Parameter, got {type(param).__name__}")
        if param is None:
            self._parameters.pop(name, None)
            object.__setattr__(self, name, None)
        else:
            setattr(self, name, param)

    def register_buffer(self, name, value, persistent=True):
        """Register a non-trained tensor as module state (in ``state_dict()`` unless not persistent)."""
        if value is None:
            object.__setattr__(self, name, None)
            return
        setattr(self, name, value if isinstance(value, Buffer) else Buffer(value))
        if not persistent:
            self._non_persistent.add(name)
        else:
            self._non_persistent.discard(name)

    def add_module(self, name, module):
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"add_module({name!r}): expected an nn.Module, got {type(module).__name__}")
        setattr(self, name, module)

    # ------------------------------------------------------------ calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------ traversal
    def named_children(self):
        """(name, module) for each direct submodule."""
        return iter(list(self._modules.items()))

    def children(self):
        return (m for _, m in self.named_children())

    def named_modules(self, prefix=""):
        """(dotted name, module) for this module and every descendant, each module once."""
        seen = set()
        stack = [(prefix, self)]
        out = []
        while stack:
            name, mod = stack.pop()
            if id(mod) in seen:
                continue
            seen.add(id(mod))
            out.append((name, mod))
            for child_name, child in reversed(list(mod._modules.items())):
                if child is not None:
                    stack.append((f"{name}.{child_name}" if name else child_name, child))
        return iter(out)

    def modules(self):
        return (m for _, m in self.named_modules())

    def _named_tensors(self, registry, prefix="", recurse=True):
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mod_name, mod in mods:
            for name, t in getattr(mod, registry).items():
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield (f"{mod_name}.{name}" if mod_name else name), t

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, Parameter) for every parameter of the tree (only this module's own
        with ``recurse=False``), each tensor once."""
        return self._named_tensors("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True):
        return self._named_tensors("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers(recurse=recurse))

    def apply(self, fn):
        """Call ``fn(module)`` on every submodule (children first) and then on this one, as
        PyTorch does (typically to initialize weights); returns this module."""
        for child in self.children():
            if child is not None:
                child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ modes
    def train(self, mode=True):
        """Set training mode (Dropout active) on this module and every descendant."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad = bool(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's gradient (to None, or to zeros with ``set_to_none=False``)."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = Tensor._make(p.grad._data * 0)

    # ------------------------------------------------------------ state
    def _state_items(self):
        for mod_name, mod in self.named_modules():
            pre = f"{mod_name}." if mod_name else ""
            for name, p in mod._parameters.items():
                if p is not None:
                    yield pre + name, p
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent:
                    yield pre + name, b

    def state_dict(self):
        """An ordered dict from dotted names to detached tensors sharing the module's data."""
        return OrderedDict((k, Tensor._make(v._data)) for k, v in self._state_items())

    def load_state_dict(self, state_dict, strict=True):
        """Copy values (tensors or arrays) from ``state_dict`` into this module's parameters and
        buffers, in place, keeping their dtypes.

        With ``strict`` (the default) missing or unexpected keys raise ``StateDictError`` (a ``RuntimeError``, as in PyTorch, and a ``KeyError``); a shape
        mismatch always raises ``ValueError``. Returns a named tuple ``(missing_keys,
        unexpected_keys)``, as PyTorch does.
        """
        own = OrderedDict(self._state_items())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing keys {missing}")
            if unexpected:
                parts.append(f"unexpected keys {unexpected}")
            raise StateDictError(f"load_state_dict for {type(self).__name__}: " + " and ".join(parts) +
                           "; pass strict=False to load only the keys that match")
        updates = []
        for k, target in own.items():
            if k not in state_dict:
                continue
            value = state_dict[k]
            arr = value._data if isinstance(value, Tensor) else value
            if arr is None:
                raise TypeError(f"load_state_dict: entry {k!r} is a symbolic tensor; pass concrete values")
            shape = tuple(arr.shape if hasattr(arr, "shape") else np.shape(arr))
            if shape != tuple(target.shape):
                raise ValueError(f"load_state_dict for {type(self).__name__}: {k!r} has shape {shape} in "
                                 f"the state dict but {tuple(target.shape)} in the module")
            updates.append((target, arr))
        # all checks pass before anything is written, so a failed load leaves the module as it was
        for target, arr in updates:
            xp_arr = target._data
            if hasattr(arr, "dtype") and device_of(arr) != device_of(xp_arr):
                # another device: through the host (the one explicit copy), then onto the target's
                arr = to_host(arr)
                if not isinstance(xp_arr, np.ndarray):
                    arr = xp_of(xp_arr).asarray(arr)
            xp_arr[...] = arr
            target._version += 1
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------ conversion
    def _apply_to_tensors(self, fn):
        for t in list(self.parameters()) + list(self.buffers()):
            t._data = fn(t._data)
            if t.grad is not None:
                t.grad = Tensor._make(fn(t.grad._data))
        return self

    def to(self, *args, device=None, dtype=None, non_blocking=False):
        """Move (``'cpu'``, ``'cuda'``, ``'cuda:0'``, ``'gpu'``, a ``d2s.device``) and/or cast floating
        point parameters and buffers in place, as ``torch.nn.Module.to`` (``m.to(device)``,
        ``m.to(dtype)``, ``m.to(device, dtype)``, ``m.to(tensor)``); the Parameter objects stay the
        same, so optimizers built before keep working. Returns the module."""
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif a is None:
                continue
            elif _devices.is_device(a):
                device = a
            else:
                dtype = a  # module.to('float64'); as_dtype below names a bad one
        device = _devices.as_device_name(device)
        xp = get_xp(device) if device is not None else None
        dt = str(as_dtype(dtype)) if dtype is not None else None

        def convert(a):
            if dt is not None and a.dtype.kind == "f":
                a = a.astype(dt)
            if xp is not None and xp_of(a) is not xp:
                a = to_host(a)  # through the host: the one explicit copy between devices
                if xp is not np:
                    a = xp.asarray(a)
            return a

        return self._apply_to_tensors(convert)

    def cuda(self, device=None):
        """Parameters and buffers moved to the GPU (cupy), in place; returns the module."""
        return self.to("gpu" if device is None or isinstance(device, int) else device)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype="float64")

    def float(self):
        return self.to(dtype="float32")

    # ------------------------------------------------------------ printing
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {sub}")
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n" + "\n".join(lines) + "\n)"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))
