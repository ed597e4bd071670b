"""The optimizer base class: parameter groups, per-parameter state, zero_grad, state_dict.

Updates work on the parameters' arrays in place (numpy or cupy alike), outside autograd:
a Parameter object keeps its identity, so modules, programs built by ``to_static`` (which
read parameters at every call) and the optimizer all see the new values.
"""
import copy

from d2s_runtime.device import to_host, xp_of

from ..autograd import enable_grad
from ..tensor import Tensor


class Optimizer:
    """Base class. Subclasses set ``defaults`` (hyperparameters) and implement ``_update``.

    Args:
        params: an iterable of tensors that require grad, or of dicts (parameter groups)
            ``{'params': [...], 'lr': ...}`` overriding the defaults for their parameters.
        defaults: the hyperparameters of groups that do not override them.
    """

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}  # id(param) -> dict of state arrays (and 'step')
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__} got an empty parameter list: pass model.parameters()")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group):
        group = dict(group)
        ps = group["params"]
        ps = [ps] if isinstance(ps, Tensor) else list(ps)
        for p in ps:
            if not isinstance(p, Tensor) or p.is_symbolic:
                raise TypeError(f"{type(self).__name__} can only optimize concrete tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"{type(self).__name__} can only optimize leaf tensors (parameters), "
                                 "not results of computations")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in ps):
            raise ValueError("a parameter appears in more than one parameter group")
        group["params"] = ps
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Clear the gradients of every parameter (to None, or to zeros with ``set_to_none=False``)."""
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad = Tensor._make(xp_of(p.grad._data).zeros_like(p.grad._data))

    def step(self, closure=None):
        """Update every parameter that has a gradient. ``closure`` (optional, as in PyTorch)
        recomputes the loss with grad enabled; its result is returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad._data
                if g is None:
                    raise RuntimeError(f"{type(self).__name__}.step(): a parameter's gradient is symbolic; "
                                       "step() runs eagerly, on concrete gradients")
                data = p._data
                g = g.astype(data.dtype, copy=False)
                state = self.state.setdefault(id(p), {})
                new = self._update(xp_of(data), data, g, state, group)
                if new is not None:  # the update could not be written in place
                    p._data = new
                p._version += 1
        return loss

    def _update(self, xp, data, grad, state, group):
        raise NotImplementedError

    # ------------------------------------------------------------ state
    def _index(self):
        """Parameters in group order, numbered 0, 1, ... as in PyTorch's state dicts."""
        return [p for g in self.param_groups for p in g["params"]]

    def state_dict(self):
        """``{'state': {index: {name: value}}, 'param_groups': [{hyperparams, 'params': [index]}]}``
        with parameters numbered in group order; arrays are copies held as tensors."""
        index = {id(p): i for i, p in enumerate(self._index())}
        state = {}
        for p in self._index():
            s = self.state.get(id(p))
            if s:
                state[index[id(p)]] = {k: Tensor._make(v.copy()) if hasattr(v, "shape") and len(v.shape) else v
                                       for k, v in s.items()}
        groups = []
        for g in self.param_groups:
            d = {k: copy.deepcopy(v) for k, v in g.items() if k != "params"}
            d["params"] = [index[id(p)] for p in g["params"]]
            groups.append(d)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore hyperparameters and state saved by :meth:`state_dict` from an optimizer over
        parameters of the same shapes, in the same order."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ValueError(f"{type(self).__name__}.load_state_dict: the saved parameter groups "
                             f"({[len(g['params']) for g in groups]} parameters) do not match this "
                             f"optimizer's ({[len(g['params']) for g in self.param_groups]})")
        params = self._index()
        new_state = {}
        for i, s in state_dict["state"].items():
            p = params[int(i)]
            entry = {}
            for k, v in s.items():
                if isinstance(v, Tensor):
                    v = v._data
                if hasattr(v, "shape") and len(v.shape):
                    if tuple(v.shape) != tuple(p.shape):
                        raise ValueError(f"{type(self).__name__}.load_state_dict: state {k!r} of parameter {i} "
                                         f"has shape {tuple(v.shape)}, the parameter has {tuple(p.shape)}")
                    xp = xp_of(p._data)
                    if xp_of(v) is not xp:
                        v = to_host(v)  # saved on another device: through the host
                    v = xp.asarray(v).astype(p._data.dtype, copy=True)
                entry[k] = v
            new_state[id(p)] = entry
        for g, saved in zip(self.param_groups, groups):
            for k, v in saved.items():
                if k != "params":
                    g[k] = copy.deepcopy(v)
        self.state = new_state

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k, v in sorted(g.items()):
                if k != "params":
                    lines.append(f"    {k}: {v}")
        return "\n".join(lines) + "\n)"


def writable(a):
    """Whether array ``a`` can be updated in place (views of broadcasts cannot)."""
    flags = getattr(a, "flags", None)
    return getattr(flags, "writeable", True)
