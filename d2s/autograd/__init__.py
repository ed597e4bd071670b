"""Reverse-mode automatic differentiation: engine, nodes, the gradient-rule registry (the rules
sit next to their ops in ``d2s/ops/*.py``), functional API."""
from .anomaly import NumericsError, detect_anomaly
from .engine import backward, grad
from .function import Function, FunctionCtx
from .gradcheck import GradcheckError, gradcheck
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .node import AccumulateGrad, Node
from .registry import defgrad, grad_rule, non_differentiable
import importlib

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "Node", "AccumulateGrad", "defgrad", "grad_rule", "non_differentiable", "gradcheck", "GradcheckError",
           "Function", "FunctionCtx", "functional", "detect_anomaly", "NumericsError"]


def __getattr__(name):
    # d2s.autograd.functional (jacobian, hessian, ...) is written in d2s ops, a layer above the
    # autograd core that this package's other modules form: it loads on first use
    if name == "functional":
        return importlib.import_module("d2s.autograd.functional")
    raise AttributeError(f"module 'd2s.autograd' has no attribute {name!r}")
