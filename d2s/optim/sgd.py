"""Stochastic gradient descent with momentum, and its averaged (ASGD) and sign-based (Rprop) relatives."""
import numpy as np

from ..dtypes import default_float
from .optimizer import Optimizer, _check, _scalar


def _options(name, differentiable=False, **_ignored):
    """PyTorch's implementation switches: ``foreach``/``fused`` (how the update is batched) and
    ``capturable`` (CUDA-graph capture) do not change the result and are accepted;
    ``differentiable`` (an update autograd can see through) is not supported."""
    if differentiable:
        raise ValueError(f"{name}(differentiable=True) is not supported: d2s optimizers update parameters "
                         "outside autograd; write the update with tensor ops (d2s.func) to differentiate it")


class SGD(Optimizer):
    """``p -= lr * g``; with momentum, ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g``
    on the first step) and ``p -= lr * buf`` (``g + momentum * buf`` with nesterov), as
    ``torch.optim.SGD``.

    Args:
        params: parameters or parameter groups.
        lr: learning rate (a float or a one-element tensor).
        momentum: momentum factor (0 disables it).
        dampening: dampening for momentum.
        weight_decay: L2 penalty added to the gradient (``g + weight_decay * p``).
        nesterov: Nesterov momentum (needs momentum > 0 and dampening 0).
        maximize: ascend the objective instead of descending it.
        foreach, fused: accepted for PyTorch compatibility; no effect on the result.
        differentiable: only False.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check("lr", lr, lambda v: v >= 0, "learning rate")
        _check("momentum", momentum, lambda v: v >= 0, "momentum value")
        _check("weight_decay", weight_decay, lambda v: v >= 0, "weight_decay value")
        _options("SGD", differentiable=differentiable)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def _update(self, xp, w, grad, state, group):
        lr, momentum, wd = group["lr"], group["momentum"], group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        if wd != 0:
            grad = grad + wd * w
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = grad.copy()
                state["momentum_buffer"] = buf
            else:
                buf *= momentum
                buf += (1 - group["dampening"]) * grad
            grad = grad + momentum * buf if group["nesterov"] else buf
        w -= lr * grad


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky), as ``torch.optim.ASGD``: ``p *= 1 - lambd * eta``,
    ``p -= eta * g``, and the average ``ax`` of the iterates from step ``t0`` on, with
    ``eta = lr / (1 + lambd * lr * t) ** alpha``.

    Args:
        params: parameters or parameter groups.
        lr: learning rate.
        lambd: decay term.
        alpha: power for the eta update.
        t0: the step at which averaging starts.
        weight_decay: L2 penalty added to the gradient.
        maximize: ascend instead of descend.
        foreach, capturable: accepted; no effect on the result.
        differentiable: only False.
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check("lr", lr, lambda v: v >= 0, "learning rate")
        _check("weight_decay", weight_decay, lambda v: v >= 0, "weight_decay value")
        _options("ASGD", differentiable=differentiable)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    _scalar_state = ("step", "eta", "mu")

    def _init_state(self, xp, state, w, group):
        state["step"] = _scalar(0.0)
        state["eta"] = _scalar(group["lr"])
        state["mu"] = _scalar(1.0)
        state["ax"] = xp.zeros_like(w)

    def _update(self, xp, w, grad, state, group):
        lambd, lr = group["lambd"], group["lr"]
        if group["maximize"]:
            grad = -grad
        step_t = state["step"]
        step_t += 1
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * w
        eta = float(state["eta"])
        w *= 1 - lambd * eta
        w -= eta * grad
        ax, mu = state["ax"], float(state["mu"])
        if mu != 1:
            diff = w - ax
            diff *= mu
            ax += diff
        else:
            ax[...] = w
        step = float(step_t)
        # PyTorch copies torch.as_tensor(value), of the default dtype, into the state: rounded
        # through float32 even where a loaded state dict made eta and mu the parameter's float64
        default = default_float()
        state["eta"][...] = np.asarray(lr / (1 + lambd * lr * step) ** group["alpha"], dtype=default)
        state["mu"][...] = np.asarray(1 / max(1, step - group["t0"]), dtype=default)


class Rprop(Optimizer):
    """Resilient backpropagation, as ``torch.optim.Rprop``: each entry's step size grows by
    ``etas[1]`` while its gradient keeps its sign and shrinks by ``etas[0]`` when it flips
    (clamped to ``step_sizes``); the parameter moves by the step size against the sign.

    Args:
        params: parameters or parameter groups.
        lr: the initial step size.
        etas: (decrease, increase) factors.
        step_sizes: (minimal, maximal) step size.
        maximize: ascend instead of descend.
        foreach, capturable: accepted; no effect on the result.
        differentiable: only False.
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check("lr", lr, lambda v: v >= 0, "learning rate")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _options("Rprop", differentiable=differentiable)
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def _init_state(self, xp, state, w, group):
        state["step"] = _scalar(0.0)
        state["prev"] = xp.zeros_like(w)
        state["step_size"] = xp.full_like(w, group["lr"])

    def _update(self, xp, w, grad, state, group):
        etaminus, etaplus = group["etas"]
        lo, hi = group["step_sizes"]
        if group["maximize"]:
            grad = -grad
        step_t = state["step"]
        step_t += 1
        prev, step_size = state["prev"], state["step_size"]
        sign = xp.sign(grad * prev)
        factor = xp.where(sign > 0, xp.full((), etaplus, dtype=w.dtype),
                          xp.where(sign < 0, xp.full((), etaminus, dtype=w.dtype), xp.ones((), dtype=w.dtype)))
        step_size *= factor
        xp.clip(step_size, lo, hi, out=step_size)
        # a sign flip: no move this step, and the next step does not see the flip again
        grad = xp.where(sign < 0, xp.zeros_like(grad), grad)
        w -= xp.sign(grad) * step_size
        prev[...] = grad
