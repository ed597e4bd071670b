"""Reverse-mode automatic differentiation: engine, nodes, the gradient-rule registry (the rules
sit next to their ops in ``d2s/ops/*.py``), functional API."""
from .anomaly import NumericsError, detect_anomaly
from .engine import backward, grad
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from .node import AccumulateGrad, Node
from .registry import defgrad, grad_rule, non_differentiable
import importlib

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "Variable",
           "Node", "AccumulateGrad", "defgrad", "grad_rule", "non_differentiable", "gradcheck", "GradcheckError",
           "Function", "FunctionCtx", "functional", "detect_anomaly", "NumericsError"]


# Modules above the autograd core: Function and gradcheck build on Tensor, and functional
# (jacobian, hessian, ...) is written in d2s ops. Importing the core (which Tensor does) must not
# load them, or Tensor would import itself back: they load on first use.
_LAZY = {"functional": ("d2s.autograd.functional", None), "Function": ("d2s.autograd.function", "Function"),
         "FunctionCtx": ("d2s.autograd.function", "FunctionCtx"), "gradcheck": ("d2s.autograd.gradient_check", "gradcheck"),
         "GradcheckError": ("d2s.autograd.gradient_check", "GradcheckError")}


def Variable(data, requires_grad=False, volatile=False):
    """PyTorch's legacy ``Variable(t)``: a tensor sharing ``t``'s data, cut from its history
    (a new leaf; ``requires_grad=True`` makes it require grad). ``volatile`` is ignored, as in
    PyTorch since 0.4."""
    from ..tensor import Tensor, tensor  # (Tensor imports this package's core: it is not loaded yet here)
    t = data.detach() if isinstance(data, Tensor) else tensor(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def __getattr__(name):
    if name in _LAZY:
        module_name = _LAZY[name][0]
        module = importlib.import_module(module_name)
        # bind every name the module provides, so later reads skip this hook
        for lazy_name, (mod, attr) in _LAZY.items():
            if mod == module_name:
                globals()[lazy_name] = module if attr is None else getattr(module, attr)
        return globals()[name]
    raise AttributeError(f"module 'd2s.autograd' has no attribute {name!r}")
