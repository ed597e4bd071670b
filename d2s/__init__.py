"""d2s: eager deep learning with real control flow, turned into static graphs that run fast.

    import d2s
    from d2s import nn, optim
    import d2s.nn.functional as F
"""
import importlib

from . import dtypes as _dtypes
from ._state import STATE as _STATE
from .autograd import enable_grad, grad, is_grad_enabled, no_grad, set_grad_enabled
from .dtypes import bool_, dtype, float32, float64, int32, int64
from .ops import *  # noqa: F401,F403
from .ops import (abs, add, all, any, arange, argmax, argmin, broadcast_to, cast, clip, clone, concat, cos,  # noqa: F401
                  div, eq, exp, eye, flatten, full, full_like, ge, gt, le, linspace, log, logical_and,
                  logical_not, logical_or, logical_xor, lt, manual_seed, matmul, max, maximum, mean, min,
                  minimum, mul, ne, neg, ones, ones_like, permute, pow, prod, rand, randint, randn, relu,
                  reshape, sigmoid, sign, sin, split, sqrt, squeeze, stack, stop_gradient, sub, sum, tanh,
                  transpose, unsqueeze, where, zeros, zeros_like)
from .tensor import Tensor, tensor
from .nn_ops import cumsum, gather, log_softmax, logsumexp, one_hot, softmax  # noqa: F401
from .ops import add_n, cat, chunk, identity, numel, pad, shape, unstack  # noqa: F401
from .printing import print  # noqa: F401,A004  (d2s.print: prints on every call of a program)

bool = bool_  # d2s.bool, as in the API; Python's bool stays reachable as builtins.bool

__version__ = "0.1.0"

# Submodules and names that import lazily, so `import d2s` stays light and layers stay apart.
_LAZY_MODULES = {"nn", "optim", "data", "jit", "static", "passes", "func", "utils", "viz", "onnx",
                 "autograd", "transformers", "convert", "cli", "trace", "distributed", "lax"}
_LAZY_NAMES = {
    "cond": ("d2s.static.control_flow", "cond"),
    "while_loop": ("d2s.static.control_flow", "while_loop"),
    "scan": ("d2s.static.control_flow", "scan"),
    "fori_loop": ("d2s.static.structured", "fori_loop"),
    "switch": ("d2s.static.structured", "switch"),
    "map": ("d2s.static.structured", "map"),
    "to_static": ("d2s.jit", "to_static"),
}


def __getattr__(name):
    if name in _LAZY_MODULES:
        return importlib.import_module(f"d2s.{name}")
    if name in _LAZY_NAMES:
        mod, attr = _LAZY_NAMES[name]
        return getattr(importlib.import_module(mod), attr)
    raise AttributeError(f"module 'd2s' has no attribute {name!r}")
