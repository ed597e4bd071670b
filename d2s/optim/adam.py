"""Adam (Kingma & Ba) with bias correction, as PyTorch computes it."""
import math

from .optimizer import Optimizer, writable


class Adam(Optimizer):
    """``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``, then
    ``p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``.

    Args:
        params: parameters or parameter groups.
        lr: learning rate.
        betas: decay rates of the first and second moment estimates.
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient (``g + weight_decay * p``).
        amsgrad: divide by the running maximum of ``v`` (the AMSGrad variant).
    """

    _decoupled = False  # AdamW decays the weights directly instead of through the gradient

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False):
        if lr < 0:
            raise ValueError(f"Adam: invalid learning rate {lr}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"Adam: betas must lie in [0, 1), got {betas}")
        if eps < 0:
            raise ValueError(f"Adam: invalid eps {eps}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=bool(amsgrad)))

    def _update(self, xp, data, grad, state, group):
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        orig = data
        if wd and self._decoupled:
            data = data * (1.0 - lr * wd) if not writable(data) else _scale_(data, 1.0 - lr * wd)
        elif wd:
            grad = grad + wd * data
        if "step" not in state:
            state["step"] = 0
            state["exp_avg"] = xp.zeros_like(data)
            state["exp_avg_sq"] = xp.zeros_like(data)
        state["step"] += 1
        t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        m *= b1
        m += (1.0 - b1) * grad
        v *= b2
        v += (1.0 - b2) * (grad * grad)
        step_size = lr / (1.0 - b1 ** t)
        if group.get("amsgrad"):
            vmax = state.get("max_exp_avg_sq")
            vmax = state["max_exp_avg_sq"] = v.copy() if vmax is None else xp.maximum(vmax, v, out=vmax)
            v = vmax
        denom = xp.sqrt(v) / math.sqrt(1.0 - b2 ** t) + eps
        update = (step_size * m / denom).astype(data.dtype, copy=False)
        if not writable(data):
            return data - update
        data -= update
        return None if data is orig else data  # a new array (orig was read-only) replaces it


def _scale_(data, factor):
    data *= factor
    return data


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as ``torch.optim.AdamW``:
    ``p -= lr * weight_decay * p`` before the Adam step, instead of adding the decay to the
    gradient. The default ``weight_decay`` is 0.01, as in PyTorch."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)
