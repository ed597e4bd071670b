"""``Module``, ``Parameter`` and ``Buffer``: the containers every layer is built from.

A module's attributes that are Parameters, Buffers or Modules register themselves (through
``__setattr__``), so ``parameters()``, ``state_dict()`` and ``train()``/``eval()`` see the
whole tree. Parameters and buffers are concrete tensors marked ``_d2s_parameter``: eagerly they
are ordinary tensors, and when a module runs inside a program builder the builder turns each
one into a program param (read at every call, never folded into a constant).

The methods are PyTorch's (``named_modules``, ``state_dict(prefix=, keep_vars=)``,
``load_state_dict(strict=)``, ``get_submodule``, ``register_forward_hook``, ``to(dtype)``...),
with PyTorch's registration rules: a plain tensor assigned to a registered buffer's name stays
a buffer, ``None`` assigned to a parameter's name keeps the slot, a non-module assigned over a
submodule is refused.
"""
import itertools
from collections import OrderedDict, namedtuple

import numpy as np
from d2s_runtime.device import device_of, get_xp, to_host, xp_of

from .. import devices as _devices
from ..dtypes import as_dtype, default_float
from ..tensor import Tensor, tensor


def _array_of(data):
    """The concrete array behind ``data`` (a Tensor, array or nested list)."""
    if isinstance(data, Tensor):
        if data.is_symbolic:
            raise TypeError("nn.Parameter needs a concrete tensor, not a symbolic one: create "
                            "parameters outside of to_static/build_program (e.g. in __init__)")
        return data.array
    arr = tensor(data).array
    # a raw array is copied, so training never writes into the caller's array
    return arr.copy() if arr is data else arr


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns; printed as PyTorch prints it."""
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class StateDictError(RuntimeError, KeyError):
    """A state dict whose keys do not match the module's (RuntimeError as in PyTorch)."""

    def __str__(self):  # KeyError would quote the message
        return RuntimeError.__str__(self)


class StateDictShapeError(RuntimeError, ValueError):
    """A state dict entry whose shape differs from the module's (RuntimeError as in PyTorch)."""


class Parameter(Tensor):
    """A tensor that is a module parameter: requires grad by default, and registers itself
    when assigned as a Module attribute. ``Parameter(t)`` shares ``t``'s data."""

    __slots__ = ()
    # ProgramBuilder turns tensors with this mark into program params.
    _d2s_parameter = True

    def __new__(cls, data=None, requires_grad=True):
        if data is None:  # (of the default float dtype, as torch.empty(0))
            data = np.zeros((0,), dtype=default_float())
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
        return (Parameter, (Tensor._make(self.array), self.requires_grad))


class Buffer(Tensor):
    """A module tensor that is state but not trained (running statistics, masks, ...).

    Buffers register like parameters, appear in ``state_dict()`` and become program params
    inside programs, but do not require grad and are not returned by ``parameters()``.
    """

    __slots__ = ()
    _d2s_parameter = True

    def __new__(cls, data, persistent=True):
        return cls._make(_array_of(data))

    def __init__(self, data, persistent=True):
        pass

    def __reduce_ex__(self, protocol):  # (copy.deepcopy of a module with buffers)
        return (Buffer, (Tensor._make(self.array),))


class RemovableHandle:
    """What ``register_forward_hook`` and friends return: ``handle.remove()`` unregisters the
    hook (also usable as a context manager)."""

    _ids = itertools.count()

    def __init__(self, *registries):
        self.id = next(RemovableHandle._ids)
        self._registries = registries

    def remove(self):
        for reg in self._registries:
            reg.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def _check_name(kind, name, module):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')



# bumped by every change of any module's submodules or forward hooks: a to_static program holds
# the submodules (and their hooks) its build called, and checks them again only when this moved
STRUCTURE_VERSION = [0]


class _Tracked(OrderedDict):
    """A module's ``_modules`` and forward-hook dicts: an OrderedDict that counts its changes in
    STRUCTURE_VERSION."""
    __slots__ = ()

    def __setitem__(self, key, value):
        STRUCTURE_VERSION[0] += 1
        super().__setitem__(key, value)

    def __delitem__(self, key):
        STRUCTURE_VERSION[0] += 1
        super().__delitem__(key)

    def pop(self, *args):
        STRUCTURE_VERSION[0] += 1
        return super().pop(*args)

    def popitem(self, last=True):
        STRUCTURE_VERSION[0] += 1
        return super().popitem(last)

    def clear(self):
        STRUCTURE_VERSION[0] += 1
        super().clear()

    def setdefault(self, key, default=None):
        STRUCTURE_VERSION[0] += 1
        return super().setdefault(key, default)

    def move_to_end(self, key, last=True):
        STRUCTURE_VERSION[0] += 1
        super().move_to_end(key, last)


class Module:
    """Base class of every layer and model: subclasses set attributes in ``__init__`` and
    define ``forward``; calling the module calls ``forward`` (with its hooks, if any).

    Parameters, buffers and submodules assigned as attributes register themselves, in
    assignment order, under the attribute's name.
    """

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments: Module.__init__ takes none")
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", _Tracked())
        object.__setattr__(self, "_forward_hooks", _Tracked())
        object.__setattr__(self, "_forward_pre_hooks", _Tracked())
        object.__setattr__(self, "_hooks_with_kwargs", set())
        object.__setattr__(self, "training", True)

    # ------------------------------------------------------------ registration
    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if params is None:
            raise AttributeError(f"cannot assign {name!r} before Module.__init__() is called: call "
                                 f"super().__init__() first in {type(self).__name__}.__init__")
        buffers, modules = d["_buffers"], d["_modules"]
        # a registry that gets the name again keeps its place (as in PyTorch): replacing a
        # submodule by its converted self, or a parameter by a new one, keeps parameters() order
        if isinstance(value, Parameter):
            self._forget(name, keep=params)
            params[name] = value
        elif name in params:
            if value is not None:
                # as in PyTorch: a plain tensor would silently drop the parameter from
                # parameters(), the optimizer and the state dict
                raise TypeError(f"cannot assign {type(value).__name__} as parameter {name!r} of "
                                f"{type(self).__name__} (nn.Parameter or None expected); wrap it in "
                                "nn.Parameter(...) or update the values in place under d2s.no_grad()")
            params[name] = None
        elif isinstance(value, Module):
            self._forget(name, keep=modules)
            modules[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(nn.Module or None expected)")
            modules[name] = None
        elif isinstance(value, Buffer):
            self._forget(name, keep=buffers)
            buffers[name] = value
        elif name in buffers and (value is None or (isinstance(value, Tensor) and not value.is_symbolic)):
            # PyTorch keeps a tensor assigned to a buffer's name a buffer (``self.running =
            # self.running * m + ...``), so the state dict keeps it; the new Buffer shares the
            # tensor's array. A tensor that requires grad stays itself (its history matters).
            if isinstance(value, Tensor) and not value.requires_grad:
                value = Buffer(value)
            buffers[name] = value
        elif name in buffers and not isinstance(value, Tensor):
            raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (a d2s Tensor or None "
                            "expected)")
        else:
            # (a symbolic tensor over a buffer's name, while to_static builds: the build puts
            # the registry back and writes the value after each call)
            for reg in (params, buffers, modules):
                reg.pop(name, None)
            object.__setattr__(self, name, value)

    def _forget(self, name, keep):
        d = self.__dict__
        for reg in (d["_parameters"], d["_buffers"], d["_modules"]):
            if reg is not keep:
                reg.pop(name, None)
        d.pop(name, None)

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
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        """Register ``param`` (a Parameter or None) under ``name``."""
        _check_name("parameter", name, self)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter {name!r} "
                            "(nn.Parameter or None required)")
        if name not in self._parameters and (name in self.__dict__ or hasattr(type(self), name)):
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._forget(name, keep=self._parameters)
            self._parameters[name] = None
        else:
            setattr(self, name, param)

    def register_buffer(self, name, tensor, persistent=True):
        """Register a non-trained tensor (or None) as module state, in ``state_dict()`` unless
        ``persistent=False``."""
        _check_name("buffer", name, self)
        if name not in self._buffers and (name in self.__dict__ or name in self._parameters
                                          or name in self._modules or hasattr(type(self), name)):
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(a d2s Tensor or None required)")
        self._forget(name, keep=self._buffers)
        if tensor is not None and not isinstance(tensor, Buffer) and not (tensor.is_symbolic or tensor.requires_grad):
            tensor = Buffer(tensor)  # shares the tensor's array
        # (a symbolic tensor, in a module built inside a program, or one with a history stays itself)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)
        else:
            self._non_persistent.discard(name)

    def add_module(self, name, module):
        """Register ``module`` (a Module or None) as the submodule ``name``."""
        _check_name("module", name, self)
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass (an nn.Module or None expected)")
        if name not in self._modules and (name in self.__dict__ or hasattr(type(self), name)):
            raise KeyError(f"attribute '{name}' already exists")
        self._forget(name, keep=self._modules)
        self._modules[name] = module

    register_module = add_module

    def _lookup(self, target, what):
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if what == "module" and not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_submodule(self, target):
        """The submodule at dotted path ``target`` (``'encoder.layers.0'``; ``''`` is self)."""
        return self._lookup(target, "module")

    def get_parameter(self, target):
        """The parameter at dotted path ``target`` (``'encoder.layers.0.weight'``)."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        p = getattr(mod, name)
        if not isinstance(p, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return p

    def get_buffer(self, target):
        """The buffer at dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    # ------------------------------------------------------------ calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if not d.get("_forward_hooks") and not d.get("_forward_pre_hooks"):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(self.forward, args, kwargs)

    def _has_hooks(self):
        d = self.__dict__
        return bool(d.get("_forward_hooks") or d.get("_forward_pre_hooks"))

    def _call_with_hooks(self, forward, args, kwargs):
        """``forward(*args, **kwargs)`` with the pre-hooks before and the hooks after, as
        PyTorch's ``Module.__call__`` (converted code calls it with the converted forward)."""
        with_kwargs = self.__dict__.get("_hooks_with_kwargs", ())
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError("a forward pre-hook registered with with_kwargs=True must return "
                                           f"None or a tuple (new_args, new_kwargs), got {res!r}")
                    args, kwargs = res
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        out = forward(*args, **kwargs)
        for hid, hook in list(self._forward_hooks.items()):
            res = hook(self, args, kwargs, out) if hid in with_kwargs else hook(self, args, out)
            if res is not None:
                out = res
        return out

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call ``hook(module, args)`` before every forward; a non-None result replaces the
        arguments (``with_kwargs=True``: ``hook(module, args, kwargs)`` returning both).
        Returns a handle whose ``remove()`` unregisters it."""
        return self._add_hook(self._forward_pre_hooks, hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """Call ``hook(module, args, output)`` after every forward; a non-None result replaces
        the output (``with_kwargs=True``: ``hook(module, args, kwargs, output)``). Returns a
        handle whose ``remove()`` unregisters it."""
        return self._add_hook(self._forward_hooks, hook, prepend, with_kwargs)

    def _add_hook(self, registry, hook, prepend, with_kwargs):
        handle = RemovableHandle(registry)
        registry[handle.id] = hook
        if prepend:
            registry.move_to_end(handle.id, last=False)
        if with_kwargs:
            self._hooks_with_kwargs.add(handle.id)
        return handle

    # ------------------------------------------------------------ traversal
    def named_children(self):
        """(name, module) for each direct submodule."""
        seen = set()
        for name, m in list(self._modules.items()):
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        return (m for _, m in self.named_children())

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for this module and every descendant, depth first, each
        module once (unless ``remove_duplicate=False``)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in list(self._modules.items()):
            if m is None:
                continue
            yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self):
        return (m for _, m in self.named_modules())

    def _named_tensors(self, registry, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_name, mod in mods:
            for name, t in getattr(mod, registry).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield (f"{mod_name}.{name}" if mod_name else name), t

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Parameter) for every parameter of the tree (only this module's own
        with ``recurse=False``), each tensor once."""
        return self._named_tensors("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_tensors("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers(recurse=recurse))

    def apply(self, fn):
        """Call ``fn(module)`` on every submodule (children first) and then on this one, as
        PyTorch does (typically to initialize weights); returns this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ modes
    def train(self, mode=True):
        """Set training mode (Dropout active) on this module and every descendant (each
        child's own ``train`` is called, as in PyTorch)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for child in self.children():
            child.train(mode)
        return self

    def eval(self):
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's gradient: to None, or (``set_to_none=False``) to zeros
        written into the gradient tensor itself, as PyTorch."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
                continue
            g = p.grad
            g.grad_fn, g.requires_grad = None, False
            if getattr(getattr(g.array, "flags", None), "writeable", True):
                g.array[...] = 0
                g._version += 1
            else:
                p.grad = Tensor._make(g.array * 0)

    # ------------------------------------------------------------ state
    def _state_items(self):
        # every path, as PyTorch's state_dict recursion: a module or tensor held under two names
        # (tied weights) is saved under both
        for mod_name, mod in self.named_modules(remove_duplicate=False):
            pre = f"{mod_name}." if mod_name else ""
            for name, p in mod._parameters.items():
                if p is not None:
                    yield pre + name, p
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent:
                    yield pre + name, b

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ordered dict from dotted names (each starting with ``prefix``) to the module's
        parameters and persistent buffers: detached tensors sharing their data, or the
        Parameter and Buffer objects themselves with ``keep_vars=True``."""
        if args:  # PyTorch's old positional form state_dict(destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        out = OrderedDict() if destination is None else destination
        for k, v in self._state_items():
            out[prefix + k] = v if keep_vars else Tensor._make(v.array)
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values from ``state_dict`` into this module's parameters and buffers, in place,
        keeping their dtypes. Values may be d2s tensors, numpy arrays or anything with
        ``.numpy()`` (a PyTorch checkpoint's tensors load directly).

        With ``strict`` (the default) missing or unexpected keys raise ``StateDictError`` (a
        ``RuntimeError``, as in PyTorch, and a ``KeyError``); a shape mismatch always raises
        ``StateDictShapeError`` (a ``RuntimeError`` and a ``ValueError``), and nothing is
        written. Returns a named tuple ``(missing_keys, unexpected_keys)``, as PyTorch does.
        """
        if assign:
            raise NotImplementedError("load_state_dict(assign=True) is not supported: d2s copies the values into "
                                      "the module's own tensors; drop assign=")
        own = OrderedDict(self._state_items())
        legacy = self._legacy_keys(state_dict)
        missing = [k for k in own if k not in state_dict and k not in legacy]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
            if unexpected:
                parts.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            raise StateDictError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" +
                                 "\n\t".join(parts) + "\n(pass strict=False to load only the keys that match)")
        updates = []
        for k, target in own.items():
            if k not in state_dict:
                continue
            arr = _loadable_array(state_dict[k], k)
            shape = tuple(arr.shape if hasattr(arr, "shape") else np.shape(arr))
            if shape != tuple(target.shape):
                raise StateDictShapeError(
                    f"Error(s) in loading state_dict for {type(self).__name__}: size mismatch for {k}: copying a "
                    f"param with shape {shape} from checkpoint, the shape in current model is {tuple(target.shape)}")
            updates.append((target, arr))
        # all checks pass before anything is written, so a failed load leaves the module as it was
        for target, arr in updates:
            xp_arr = target.array
            if hasattr(arr, "dtype") and device_of(arr) != device_of(xp_arr):
                # another device: through the host (the one explicit copy), then onto the target's
                arr = to_host(arr)
                if not isinstance(xp_arr, np.ndarray):
                    arr = xp_of(xp_arr).asarray(arr)
            xp_arr[...] = arr
            target._version += 1
        return _IncompatibleKeys(missing, unexpected)

    # buffers a state dict of an older format may lack (PyTorch's _load_from_state_dict keeps
    # the module's own value for them): a subclass names them
    _version_2_buffers = ()

    def _legacy_keys(self, state_dict):
        """The keys a state dict may lack, as PyTorch fills them in: the ``_version_2_buffers``
        of each module whose version in the dict's ``_metadata`` is not 2 or more (none there:
        a plain dict, e.g. a checkpoint converted with a dict comprehension)."""
        meta = getattr(state_dict, "_metadata", None) or {}
        keys = set()
        for mod_name, mod in self.named_modules(remove_duplicate=False):
            names = [n for n in mod._version_2_buffers if mod._buffers.get(n) is not None]
            version = (meta.get(mod_name) or {}).get("version")
            if names and (version is None or version < 2):
                keys.update(f"{mod_name}.{n}" if mod_name else n for n in names)
        return keys

    # ------------------------------------------------------------ conversion
    def _apply_to_tensors(self, fn):
        for t in list(self.parameters()) + list(self.buffers()):
            t.array = fn(t.array)
            if t.grad is not None:
                t.grad = Tensor._make(fn(t.grad.array))
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

    def half(self):
        return self.to(dtype="float16")

    def bfloat16(self):
        return self.to(dtype="bfloat16")  # (refused: numpy has no bfloat16; as_dtype says so)

    def type(self, dst_type):
        return self.to(dtype=dst_type)

    # ------------------------------------------------------------ printing
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """The layer's own settings, printed inside its ``repr`` (override it, as in PyTorch)."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(m), 2) for key, m in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))


def _loadable_array(value, key):
    """The array a state dict entry holds: a d2s tensor's, a numpy array, or (a PyTorch tensor
    and the like) what ``.detach().cpu().numpy()`` gives."""
    if isinstance(value, Tensor):
        if value.array is None:
            raise TypeError(f"load_state_dict: entry {key!r} is a symbolic tensor; pass concrete values")
        return value.array
    if hasattr(value, "shape") and hasattr(value, "dtype") and not hasattr(value, "numpy"):
        return value  # numpy or cupy
    if hasattr(value, "numpy"):  # a torch tensor (state dicts hold detached CPU ones)
        v = value
        for name in ("detach", "cpu"):
            if hasattr(v, name):
                v = getattr(v, name)()
        return np.asarray(v.numpy())
    if isinstance(value, np.ndarray):
        return value
    return np.asarray(value)
