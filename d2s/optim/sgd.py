"""Stochastic gradient descent with optional momentum (PyTorch semantics)."""
from .optimizer import Optimizer, writable


class SGD(Optimizer):
    """``p -= lr * g``; with momentum, ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g``
    on the first step) and ``p -= lr * buf`` (``g + momentum * buf`` with nesterov).

    Args:
        params: parameters or parameter groups.
        lr: learning rate.
        momentum: momentum factor (0 disables it).
        dampening: dampening for momentum.
        weight_decay: L2 penalty added to the gradient (``g + weight_decay * p``).
        nesterov: Nesterov momentum.
    """

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        if lr < 0:
            raise ValueError(f"SGD: invalid learning rate {lr}")
        if momentum < 0:
            raise ValueError(f"SGD: invalid momentum {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov momentum needs momentum > 0 and dampening 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    def _update(self, xp, data, grad, state, group):
        lr, momentum, wd = group["lr"], group["momentum"], group["weight_decay"]
        if wd:
            grad = grad + wd * data
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.copy()
            else:
                buf *= momentum
                buf += (1.0 - group["dampening"]) * grad
            grad = grad + momentum * buf if group["nesterov"] else buf
        if not writable(data):
            return data - lr * grad
        data -= lr * grad
        return None
