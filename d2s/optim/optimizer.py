"""The optimizer base class: parameter groups, per-parameter state, zero_grad, state_dict.

Updates work on the parameters' arrays in place (numpy or cupy alike), outside autograd:
a Parameter object keeps its identity, so modules, programs built by ``to_static`` (which
read parameters at every call) and the optimizer all see the new values.

The arithmetic of every algorithm follows PyTorch's single-tensor CPU implementation
operation by operation (``lerp_`` for moving averages, ``addcmul_``/``addcdiv_`` in their
operand order, Python-float bias corrections, float32 ``step`` counters: float64 under a
float64 default dtype), so parameters after N steps equal PyTorch's to the last few bits.
Array state lives on the parameter's device; scalar state (``step``, NAdam's ``mu_product``,
ASGD's ``eta``/``mu``) on the host, as PyTorch keeps it on the CPU, so reading it never waits
for a device.
"""
import copy
import warnings
from collections import OrderedDict, defaultdict

import numpy as np

from d2s_runtime.device import to_host, xp_of

from ..autograd import enable_grad
from ..dtypes import default_float
from ..tensor import Tensor
from ._blocks import blockable, update_by_blocks


class _Required:
    """The default of a hyperparameter every parameter group must give (SGD's ``lr`` in old
    PyTorch versions); shown as ``<required parameter>``."""

    def __repr__(self):
        return "<required parameter>"


required = _Required()


def _to_float(value):
    """A hyperparameter as a Python float: PyTorch accepts 0-d (or one-element) tensors for
    ``lr`` and friends and reads their value at each step."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"a tensor hyperparameter must have one element, got shape {tuple(value.shape)}")
        return float(to_host(value.array).reshape(()))
    return float(value)


def _check(name, value, ok, what):
    """PyTorch's argument checks (``ValueError: Invalid learning rate: -1``)."""
    if not ok(_to_float(value)):
        raise ValueError(f"Invalid {what}: {value}")


def _scalar(value, dtype=None):
    """A host 0-d tensor: scalar state such as ``step``, in PyTorch's scalar dtype: float32, or
    float64 while the default dtype is float64 (``_get_scalar_dtype``; d2s kept float32, so
    NAdam's mu_product and ASGD's eta rounded where PyTorch's did not)."""
    if dtype is None:
        dtype = np.float64 if default_float() == "float64" else np.float32
    return Tensor._make(np.array(value, dtype=dtype))


def lerp_(start, end, weight):
    """``start += weight * (end - start)`` in place, computed as ``torch.lerp`` does: from the
    nearer end, so a weight close to 1 does not lose the bits of ``end``."""
    if abs(weight) < 0.5:
        diff = end - start
        diff *= weight
        start += diff
    else:
        diff = end - start
        diff *= 1.0 - weight
        start[...] = end - diff


class Optimizer:
    """Base class. Subclasses pass their ``defaults`` (hyperparameters) and implement
    :meth:`_update` (and :meth:`_init_state` for their per-parameter state).

    Args:
        params: an iterable of tensors that require grad, of ``(name, tensor)`` pairs (as
            ``model.named_parameters()`` gives; the names are kept in ``param_names``), or of
            dicts (parameter groups) ``{'params': [...], 'lr': ...}`` overriding the defaults
            for their parameters.
        defaults: the hyperparameters of groups that do not override them.

    Attributes:
        param_groups: the groups, each a dict of hyperparameters and ``'params'``; writable
            (learning-rate schedules set ``group['lr']``, and so may users).
        state: per-parameter state, keyed by the parameter tensor (``opt.state[p]``), values
            tensors as in PyTorch (``'step'``, ``'exp_avg'``, ``'momentum_buffer'``, ...).
    """

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = defaultdict(dict)
        self._step_pre_hooks = OrderedDict()
        self._step_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError(f"{type(self).__name__}: params must be an iterable of tensors or dicts, got a "
                            "Tensor: pass [tensor] or model.parameters()")
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__} got an empty parameter list: pass model.parameters()")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for g in groups:
            self.add_param_group(g)

    # ------------------------------------------------------------ groups
    def add_param_group(self, param_group):
        """Add a group of parameters (a dict with ``'params'`` and hyperparameters overriding
        the defaults), e.g. to train layers unfrozen during fine-tuning."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        ps = param_group["params"]
        if isinstance(ps, Tensor):
            ps = [ps]
        elif isinstance(ps, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets changes between runs: use a list instead")
        else:
            ps = list(ps)
        names = [p[0] for p in ps if isinstance(p, tuple)]
        ps = [p[1] if isinstance(p, tuple) else p for p in ps]
        if names and len(names) != len(ps):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        for p in ps:
            if not isinstance(p, Tensor) or p.is_symbolic:
                raise TypeError(f"{type(self).__name__} can only optimize concrete tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"{type(self).__name__} can only optimize leaf tensors (parameters), "
                                 "not results of computations")
        param_group["params"] = ps
        if names:
            param_group["param_names"] = names
        for k, v in self.defaults.items():
            if v is required and k not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {k}")
            param_group.setdefault(k, v)
        if len({id(p) for p in ps}) != len(ps):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error", stacklevel=3)
        for g in self.param_groups:
            if ("param_names" in g) != ("param_names" in param_group):
                raise ValueError("all optimizer param groups should be with/without names")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in ps):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Clear the gradients of every parameter: to None (the default), or to zeros in place
        with ``set_to_none=False``."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                grad = p.grad
                grad.grad_fn, grad.requires_grad = None, False
                data = grad.array
                if getattr(getattr(data, "flags", None), "writeable", True):
                    data[...] = 0
                else:
                    grad.array = xp_of(data).zeros_like(data)
                grad._version += 1

    # ------------------------------------------------------------ stepping
    def step(self, closure=None):
        """Update every parameter that has a gradient (parameters whose ``grad`` is None are
        skipped, their state untouched).

        Args:
            closure: optional; recomputes the loss with grad enabled (it usually calls
                ``zero_grad`` and ``backward``). It runs first, and its result is returned.

        Returns:
            What ``closure`` returned, or None.
        """
        for hook in list(self._step_pre_hooks.values()):
            result = hook(self, (), {})
            if result is not None:
                raise RuntimeError("optimizer step pre-hooks that return new arguments are not supported")
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            hyper = self._hyper(group)
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.array
                if g is None:
                    raise RuntimeError(f"{type(self).__name__}.step(): a parameter's gradient is symbolic; "
                                       "step() runs eagerly, on concrete gradients")
                data = p.array
                if tuple(g.shape) != tuple(data.shape):
                    raise RuntimeError(f"{type(self).__name__}.step(): a parameter of shape {tuple(data.shape)} "
                                       f"has a gradient of shape {tuple(g.shape)}")
                xp = xp_of(data)
                g = g.astype(data.dtype, copy=False)
                w = data if _writable(data) else data.copy()  # read-only views (broadcasts) are replaced
                scalar = w.ndim == 0
                if scalar:  # numpy arithmetic on 0-d arrays returns new scalars: update a 1-element view
                    w, g = w.reshape(1), g.reshape(1)
                state = self.state[p]
                arrays = _Arrays(state, self._scalar_state if scalar else None)
                if not state:
                    self._init_state(xp, arrays, w, hyper)
                if self._by_blocks and blockable(xp, w, g, state):
                    update_by_blocks(lambda *a: self._update(*a, hyper), xp, w, g, state)
                else:
                    self._update(xp, w, g, arrays, hyper)
                if not state:  # (SGD without momentum keeps none: no entry, as in PyTorch's state dict)
                    del self.state[p]
                if scalar:
                    w = w.reshape(())
                if w is not data:
                    p.array = w
                p._version += 1
        for hook in list(self._step_post_hooks.values()):
            hook(self, (), {})
        return loss

    # state entries that are scalars whatever the parameter's shape (kept 0-d, on the host)
    _scalar_state = ("step",)
    # whether ``_update`` is element-wise, so that big parameters can be updated a block at a
    # time (``_blocks.py``): a subclass whose update reads across elements (a norm) sets False
    _by_blocks = True

    def _hyper(self, group):
        """The group's hyperparameters for one step. A tensor ``lr`` is read once per group as a
        numpy scalar of its dtype (float32), so the step size is computed in that precision, as
        PyTorch computes it from a tensor learning rate."""
        out = dict(group)
        lr = out.get("lr")
        if isinstance(lr, Tensor):
            _to_float(lr)  # checks it has one element
            out["lr"] = to_host(lr.array).reshape(())[()]
        if "betas" in out:
            out["betas"] = tuple(_to_float(b) for b in out["betas"])
        if "weight_decay" in out:
            out["weight_decay"] = _to_float(out["weight_decay"])
        return out

    def _init_state(self, xp, state, w, group):
        """Create the state of a parameter on its first update (in PyTorch's key order)."""

    def _update(self, xp, w, grad, state, group):
        """Update ``w`` in place from ``grad``; ``state`` gives the state's arrays by name."""
        raise NotImplementedError

    def register_step_pre_hook(self, hook):
        """Call ``hook(optimizer, args, kwargs)`` before each :meth:`step`; returns a handle
        whose ``remove()`` unregisters it."""
        return _Handle(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """Call ``hook(optimizer, args, kwargs)`` after each :meth:`step`."""
        return _Handle(self._step_post_hooks, hook)

    # ------------------------------------------------------------ state
    def _index(self):
        """Parameters in group order, numbered 0, 1, ... as in PyTorch's state dicts."""
        return [p for g in self.param_groups for p in g["params"]]

    def state_dict(self):
        """The optimizer's state, structured as PyTorch's:
        ``{'state': {index: {name: value}}, 'param_groups': [{hyperparameters, 'params': [index]}]}``
        with parameters numbered in group order. Tensors are copies (stepping on does not
        change a saved state dict)."""
        index = {}
        for p in self._index():
            index.setdefault(id(p), len(index))
        state = {}
        for p, s in self.state.items():
            key = index[id(p)] if isinstance(p, Tensor) else p
            state[key] = {k: _copy_value(v) for k, v in s.items()}
        groups = []
        for g in self.param_groups:
            d = {k: copy.deepcopy(v) for k, v in g.items() if k != "params"}
            d["params"] = [index[id(p)] for p in g["params"]]
            groups.append(d)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore hyperparameters and state saved by :meth:`state_dict` (of this library, or
        PyTorch's with tensors converted by ``np.asarray``) from an optimizer over parameters
        of the same shapes, in the same order. Floating state takes its parameter's dtype and
        device, as in PyTorch; ``step`` stays a host float32 scalar."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(f"{type(self).__name__}.load_state_dict: loaded state dict has a different number "
                             f"of parameter groups ({len(groups)}) than this optimizer ({len(self.param_groups)})")
        if any(len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ValueError(f"{type(self).__name__}.load_state_dict: the saved parameter groups "
                             f"({[len(g['params']) for g in groups]} parameters) do not match this "
                             f"optimizer's ({[len(g['params']) for g in self.param_groups]})")
        id_map = dict(zip((i for g in groups for i in g["params"]), self._index()))
        new_state = defaultdict(dict)
        for i, s in state_dict["state"].items():
            p = id_map.get(int(i)) if isinstance(i, (int, np.integer)) or str(i).isdigit() else None
            if p is None:
                new_state[i] = s
                continue
            new_state[p] = {k: _cast_state(self, k, v, p, i) for k, v in s.items()}
        for g, saved in zip(self.param_groups, groups):
            params = g["params"]
            names = g.get("param_names")
            g.clear()
            g.update({k: copy.deepcopy(v) for k, v in saved.items() if k != "params"})
            g["params"] = params
            if names is not None and "param_names" not in g:
                g["param_names"] = names
        self.state = new_state

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        return "\n".join(lines) + "\n)"


class _Arrays:
    """A parameter's state as arrays: ``state['exp_avg']`` is the array inside the state's
    tensor (updated in place, so the tensor users hold sees the new values)."""

    __slots__ = ("_state", "_flat")

    def __init__(self, state, flat=None):
        # flat: for a 0-d parameter, the keys of its scalar state; its other (parameter-shaped,
        # 0-d) arrays are handed out as 1-element views, which in-place arithmetic updates
        self._state, self._flat = state, flat

    def __getitem__(self, key):
        v = self._state[key]
        v = v.array if isinstance(v, Tensor) else v
        if self._flat is not None and key not in self._flat and getattr(v, "ndim", None) == 0:
            v = v.reshape(1)
        return v

    def __setitem__(self, key, value):
        if hasattr(value, "shape") and not isinstance(value, Tensor):
            if self._flat is not None and key not in self._flat:
                value = value.reshape(())
            value = Tensor._make(value)
        self._state[key] = value

    def __contains__(self, key):
        return key in self._state

    def get(self, key, default=None):
        return self[key] if key in self._state else default


class _Handle:
    """What ``register_step_*_hook`` returns: ``remove()`` unregisters the hook."""

    _next = [0]

    def __init__(self, hooks, hook):
        self._hooks, self.id = hooks, _Handle._next[0]
        _Handle._next[0] += 1
        hooks[self.id] = hook

    def remove(self):
        self._hooks.pop(self.id, None)


def _writable(a):
    """Whether array ``a`` can be updated in place (views of broadcasts cannot)."""
    flags = getattr(a, "flags", None)
    return getattr(flags, "writeable", True)


def _copy_value(v):
    if isinstance(v, Tensor):
        return Tensor._make(v.array.copy())
    if hasattr(v, "shape") and hasattr(v, "copy"):
        return Tensor._make(v.copy())
    return copy.deepcopy(v)


def _cast_state(opt, key, value, p, index):
    """One loaded state value: arrays on the parameter's device (floating ones in its dtype),
    ``step`` and other scalars on the host."""
    if isinstance(value, Tensor):
        value = value.array
    elif not hasattr(value, "shape") or isinstance(value, (float, int)):
        if value is not None and not isinstance(value, (bool, int, float, str, list, tuple, dict)):
            value = np.asarray(value)  # e.g. a torch tensor
        else:
            return copy.deepcopy(value)
    if not isinstance(value, np.ndarray) and xp_of(value) is np:
        value = np.asarray(value)
    data = p.array
    floating = np.dtype(data.dtype).kind in "fc"
    if len(value.shape) == 0:
        host = np.array(to_host(value))
        if key != "step" and floating:
            host = host.astype(data.dtype)
        return Tensor._make(host)
    if getattr(opt, "_state_shaped", True) and tuple(value.shape) != tuple(data.shape):
        raise ValueError(f"{type(opt).__name__}.load_state_dict: state {key!r} of parameter {index} has shape "
                         f"{tuple(value.shape)}, the parameter has {tuple(data.shape)}")
    xp = xp_of(data)
    if xp_of(value) is not xp:
        value = xp.asarray(to_host(value))  # saved on another device: through the host
    dtype = data.dtype if floating and np.dtype(value.dtype).kind in "fc" else value.dtype
    return Tensor._make(value.astype(dtype, copy=True))
