"""Reverse-mode automatic differentiation: engine, nodes, the gradient-rule registry (the rules
sit next to their ops in ``d2s/ops/*.py``), functional API."""
from .anomaly import NumericsError, detect_anomaly
from .engine import backward, grad
from .function import Function, FunctionCtx
from .gradcheck import GradcheckError, gradcheck
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .node import AccumulateGrad, Node
from .registry import defgrad, grad_rule, non_differentiable
from . import functional  # noqa: E402  (d2s.autograd.functional.jacobian, ...)

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "Node", "AccumulateGrad", "defgrad", "grad_rule", "non_differentiable", "gradcheck", "GradcheckError",
           "Function", "FunctionCtx", "functional", "detect_anomaly", "NumericsError"]
