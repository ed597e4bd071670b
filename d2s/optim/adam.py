"""Adam (Kingma & Ba) and its relatives: AdamW, Adamax, NAdam, RAdam, as PyTorch computes them."""
import math

from .optimizer import Optimizer, _check, _scalar, lerp_
from .sgd import _options


def _check_adam(name, lr, betas, eps, weight_decay, differentiable):
    _check("lr", lr, lambda v: v >= 0, "learning rate")
    _check("eps", eps, lambda v: v >= 0, "epsilon value")
    _check("betas[0]", betas[0], lambda v: 0.0 <= v < 1.0, "beta parameter at index 0")
    _check("betas[1]", betas[1], lambda v: 0.0 <= v < 1.0, "beta parameter at index 1")
    _check("weight_decay", weight_decay, lambda v: v >= 0, "weight_decay value")
    _options(name, differentiable=differentiable)
    return tuple(betas)


def _decay(w, grad, lr, weight_decay, decoupled):
    """Weight decay: decoupled (AdamW: ``p *= 1 - lr * wd``) or L2 (added to the gradient)."""
    if weight_decay != 0:
        if decoupled:
            w *= 1 - lr * weight_decay
        else:
            grad = grad + weight_decay * w
    return grad


class Adam(Optimizer):
    """``m = lerp(m, g, 1 - b1)``, ``v = b2 v + (1 - b2) g^2``, then
    ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``, as ``torch.optim.Adam``.

    Args:
        params: parameters or parameter groups.
        lr: learning rate (a float or a one-element tensor).
        betas: decay rates of the first and second moment estimates.
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient (``g + weight_decay * p``), or with
            ``decoupled_weight_decay`` (AdamW) ``p *= 1 - lr * weight_decay``.
        amsgrad: divide by the running maximum of ``v`` (the AMSGrad variant).
        maximize: ascend the objective instead of descending it.
        decoupled_weight_decay: AdamW's decay.
        foreach, capturable, fused: accepted for PyTorch compatibility; no effect on the result.
        differentiable: only False.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        betas = _check_adam(type(self).__name__, lr, betas, eps, weight_decay, differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _init_state(self, xp, state, w, group):
        state["step"] = _scalar(0.0)
        state["exp_avg"] = xp.zeros_like(w)
        state["exp_avg_sq"] = xp.zeros_like(w)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = xp.zeros_like(w)

    def _update(self, xp, w, grad, state, group):
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grad = -grad
        step_t = state["step"]
        step_t += 1
        grad = _decay(w, grad, lr, group["weight_decay"], group["decoupled_weight_decay"])
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq *= beta2
        # (in place where PyTorch's order allows: one temporary instead of two)
        square = grad * (1 - beta2)
        square *= grad
        exp_avg_sq += square
        step = float(step_t)
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if group["amsgrad"]:
            vmax = state.get("max_exp_avg_sq")
            if vmax is None:  # amsgrad switched on after the first step (PyTorch raises; start from v)
                vmax = state["max_exp_avg_sq"] = xp.zeros_like(w)
            xp.maximum(vmax, exp_avg_sq, out=vmax)
            denom = xp.sqrt(vmax)
        else:
            denom = xp.sqrt(exp_avg_sq)
        denom /= bias_correction2_sqrt
        denom += eps
        w += -step_size * exp_avg / denom


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as ``torch.optim.AdamW``:
    ``p *= 1 - lr * weight_decay`` before the Adam step, instead of adding the decay to the
    gradient. The default ``weight_decay`` is 0.01, as in PyTorch."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class Adamax(Optimizer):
    """Adam with the infinity norm, as ``torch.optim.Adamax``: ``u = max(b2 u, |g| + eps)``,
    ``p -= lr / (1 - b1^t) * m / u``.

    Args:
        params: parameters or parameter groups.
        lr: learning rate.
        betas: decay rates of the first moment and of the infinity norm.
        eps: added to ``|g|`` for numerical stability.
        weight_decay: L2 penalty added to the gradient.
        maximize: ascend instead of descend.
        foreach, capturable: accepted; no effect on the result.
        differentiable: only False.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        betas = _check_adam("Adamax", lr, betas, eps, weight_decay, differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    def _init_state(self, xp, state, w, group):
        state["step"] = _scalar(0.0)
        state["exp_avg"] = xp.zeros_like(w)
        state["exp_inf"] = xp.zeros_like(w)

    def _update(self, xp, w, grad, state, group):
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grad = -grad
        step_t = state["step"]
        step_t += 1
        grad = _decay(w, grad, lr, group["weight_decay"], False)
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        lerp_(exp_avg, grad, 1 - beta1)
        exp_inf *= beta2
        norm = xp.abs(grad)
        norm += eps
        xp.maximum(exp_inf, norm, out=exp_inf)
        clr = lr / (1 - beta1 ** float(step_t))
        w += -clr * exp_avg / exp_inf


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat), as ``torch.optim.NAdam``, with its momentum
    schedule ``mu_t = b1 (1 - 0.5 * 0.96^(t * momentum_decay))``.

    Args:
        params: parameters or parameter groups.
        lr: learning rate.
        betas: decay rates of the first and second moment estimates.
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient, or decoupled (``p *= 1 - lr * wd``)
            with ``decoupled_weight_decay``.
        momentum_decay: the momentum schedule's decay.
        decoupled_weight_decay: AdamW-style decay (NAdamW).
        maximize: ascend instead of descend.
        foreach, capturable: accepted; no effect on the result.
        differentiable: only False.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        betas = _check_adam("NAdam", lr, betas, eps, weight_decay, differentiable)
        _check("momentum_decay", momentum_decay, lambda v: v >= 0, "momentum_decay value")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable))

    _scalar_state = ("step", "mu_product")

    def _init_state(self, xp, state, w, group):
        state["step"] = _scalar(0.0)
        state["mu_product"] = _scalar(1.0)  # a float32 product, as PyTorch keeps it
        state["exp_avg"] = xp.zeros_like(w)
        state["exp_avg_sq"] = xp.zeros_like(w)

    def _update(self, xp, w, grad, state, group):
        lr, eps, md = group["lr"], group["eps"], group["momentum_decay"]
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grad = -grad
        step_t = state["step"]
        step_t += 1
        step = float(step_t)
        bias_correction2 = 1 - beta2 ** step
        grad = _decay(w, grad, lr, group["weight_decay"], group["decoupled_weight_decay"])
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * md))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
        mu_product = state["mu_product"]
        mu_product *= mu  # in the scalar's own dtype (float32 unless loaded for a float64 parameter)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        denom = xp.sqrt(exp_avg_sq / bias_correction2)
        denom += eps
        mp = float(mu_product)
        mu_product_next = mp * mu_next
        w += -lr * (1.0 - mu) / (1.0 - mp) * grad / denom
        w += -lr * mu_next / (1.0 - mu_product_next) * exp_avg / denom


class RAdam(Optimizer):
    """Rectified Adam (Liu et al.), as ``torch.optim.RAdam``: plain momentum steps while the
    variance estimate is unreliable (``rho_t <= 5``), rectified adaptive steps after.

    Args:
        params: parameters or parameter groups.
        lr: learning rate.
        betas: decay rates of the first and second moment estimates.
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient, or decoupled with
            ``decoupled_weight_decay``.
        decoupled_weight_decay: AdamW-style decay (RAdamW).
        maximize: ascend instead of descend.
        foreach, capturable: accepted; no effect on the result.
        differentiable: only False.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        betas = _check_adam("RAdam", lr, betas, eps, weight_decay, differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable))

    def _init_state(self, xp, state, w, group):
        state["step"] = _scalar(0.0)
        state["exp_avg"] = xp.zeros_like(w)
        state["exp_avg_sq"] = xp.zeros_like(w)

    def _update(self, xp, w, grad, state, group):
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grad = -grad
        step_t = state["step"]
        step_t += 1
        step = float(step_t)
        grad = _decay(w, grad, lr, group["weight_decay"], group["decoupled_weight_decay"])
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        update = exp_avg / bias_correction1 * lr
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            denom = xp.sqrt(exp_avg_sq)
            denom += eps
            update = update * (bias_correction2 ** 0.5 / denom)
            update *= rect
        w -= update
