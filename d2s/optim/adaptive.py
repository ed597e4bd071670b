"""Per-coordinate adaptive methods: RMSprop, Adagrad and Adadelta, as PyTorch computes them."""
from d2s_runtime.device import xp_of

from .optimizer import Optimizer, _Arrays, _check, _scalar, lerp_
from .sgd import _options


class RMSprop(Optimizer):
    """``v = alpha v + (1 - alpha) g^2``; ``p -= lr * g / (sqrt(v) + eps)`` (centered: the
    variance ``v - mean(g)^2`` instead of ``v``; with momentum through a buffer), as
    ``torch.optim.RMSprop``.

    Args:
        params: parameters or parameter groups.
        lr: learning rate.
        alpha: smoothing constant.
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient.
        momentum: momentum factor.
        centered: normalize by the estimated variance of the gradient.
        maximize: ascend instead of descend.
        foreach, capturable: accepted; no effect on the result.
        differentiable: only False.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check("lr", lr, lambda v: v >= 0, "learning rate")
        _check("eps", eps, lambda v: v >= 0, "epsilon value")
        _check("momentum", momentum, lambda v: v >= 0, "momentum value")
        _check("weight_decay", weight_decay, lambda v: v >= 0, "weight_decay value")
        _check("alpha", alpha, lambda v: v >= 0, "alpha value")
        _options("RMSprop", differentiable=differentiable)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                                      weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    def _init_state(self, xp, state, w, group):
        state["step"] = _scalar(0.0)
        state["square_avg"] = xp.zeros_like(w)
        if group["momentum"] > 0:
            state["momentum_buffer"] = xp.zeros_like(w)
        if group["centered"]:
            state["grad_avg"] = xp.zeros_like(w)

    def _update(self, xp, w, grad, state, group):
        lr, alpha, eps, momentum = group["lr"], group["alpha"], group["eps"], group["momentum"]
        if group["maximize"]:
            grad = -grad
        step_t = state["step"]
        step_t += 1
        wd = group["weight_decay"]
        if wd != 0:
            grad = grad + wd * w
        square_avg = state["square_avg"]
        square_avg *= alpha
        square_avg += (1 - alpha) * grad * grad
        if group["centered"]:
            grad_avg = state.get("grad_avg")
            if grad_avg is None:  # centered switched on later: start the mean at zero
                grad_avg = state["grad_avg"] = xp.zeros_like(w)
            lerp_(grad_avg, grad, 1 - alpha)
            avg = square_avg + -1 * grad_avg * grad_avg
            avg = xp.sqrt(avg, out=avg)
        else:
            avg = xp.sqrt(square_avg)
        avg += eps
        if momentum > 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = xp.zeros_like(w)
            buf *= momentum
            buf += grad / avg
            w += -lr * buf
        else:
            w += -lr * grad / avg


class Adagrad(Optimizer):
    """``s += g^2``; ``p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)``, as
    ``torch.optim.Adagrad`` (whose state starts when the optimizer is made, at
    ``initial_accumulator_value``).

    Args:
        params: parameters or parameter groups.
        lr: learning rate.
        lr_decay: learning-rate decay per step.
        weight_decay: L2 penalty added to the gradient.
        initial_accumulator_value: the starting value of the sums of squares.
        eps: added to the denominator for numerical stability.
        maximize: ascend instead of descend.
        foreach, fused: accepted; no effect on the result.
        differentiable: only False.
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check("lr", lr, lambda v: v >= 0, "learning rate")
        _check("lr_decay", lr_decay, lambda v: v >= 0, "lr_decay value")
        _check("weight_decay", weight_decay, lambda v: v >= 0, "weight_decay value")
        _check("initial_accumulator_value", initial_accumulator_value, lambda v: v >= 0,
               "initial_accumulator_value value")
        _check("eps", eps, lambda v: v >= 0, "epsilon value")
        _options("Adagrad", differentiable=differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))
        # PyTorch starts the state of the constructor's parameters now (a state dict saved
        # before the first step has it); groups added later start on their first step
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(xp_of(p.array), _Arrays(self.state[p]), p.array, group)

    def _init_state(self, xp, state, w, group):
        state["step"] = _scalar(0.0)
        state["sum"] = xp.full_like(w, self.defaults["initial_accumulator_value"])

    def _update(self, xp, w, grad, state, group):
        lr, eps, lr_decay = group["lr"], group["eps"], group["lr_decay"]
        step_t = state["step"]
        step_t += 1
        step = float(step_t)
        if group["maximize"]:
            grad = -grad
        wd = group["weight_decay"]
        if wd != 0:
            grad = grad + wd * w
        clr = lr / (1 + (step - 1) * lr_decay)
        state_sum = state["sum"]
        state_sum += 1 * grad * grad
        std = xp.sqrt(state_sum)
        std += eps
        w += -clr * grad / std


class Adadelta(Optimizer):
    """``v = rho v + (1 - rho) g^2``; ``d = sqrt(u + eps) / sqrt(v + eps) * g``;
    ``u = rho u + (1 - rho) d^2``; ``p -= lr * d``, as ``torch.optim.Adadelta``.

    Args:
        params: parameters or parameter groups.
        lr: scale of the delta (1.0 in the paper).
        rho: decay rate of the running averages.
        eps: added inside the square roots.
        weight_decay: L2 penalty added to the gradient.
        maximize: ascend instead of descend.
        foreach, capturable: accepted; no effect on the result.
        differentiable: only False.
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check("lr", lr, lambda v: v >= 0, "learning rate")
        _check("rho", rho, lambda v: 0.0 <= v <= 1.0, "rho value")
        _check("eps", eps, lambda v: v >= 0, "epsilon value")
        _check("weight_decay", weight_decay, lambda v: v >= 0, "weight_decay value")
        _options("Adadelta", differentiable=differentiable)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      capturable=capturable, foreach=foreach, differentiable=differentiable))

    def _init_state(self, xp, state, w, group):
        state["step"] = _scalar(0.0)
        state["square_avg"] = xp.zeros_like(w)
        state["acc_delta"] = xp.zeros_like(w)

    def _update(self, xp, w, grad, state, group):
        lr, rho, eps = group["lr"], group["rho"], group["eps"]
        step_t = state["step"]
        step_t += 1
        if group["maximize"]:
            grad = -grad
        wd = group["weight_decay"]
        if wd != 0:
            grad = grad + wd * w
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg *= rho
        square_avg += (1 - rho) * grad * grad
        std = square_avg + eps
        std = xp.sqrt(std, out=std)
        delta = acc_delta + eps
        delta = xp.sqrt(delta, out=delta)
        delta /= std
        delta *= grad
        acc_delta *= rho
        acc_delta += (1 - rho) * delta * delta
        w += -lr * delta
