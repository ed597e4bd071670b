"""d2s: eager deep learning with real control flow, turned into static graphs that run fast.

    import d2s
    from d2s import nn, optim
    import d2s.nn.functional as F
"""
import importlib as _importlib

from . import dtypes as _dtypes  # noqa: F401
from .dtypes import (bool_, dtype, float32, float64, int32, int64, float16, uint8, int8, int16, bfloat16, double,
                     half, long, short, finfo, iinfo, get_default_dtype, set_default_dtype)
from .tensor import Tensor, get_default_device, set_default_device, tensor  # first: the eager core (tensor, dispatch, autograd) loads with it
from .autograd import (enable_grad, grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                       set_grad_enabled)
from . import ops as _ops
from .ops import *  # noqa: F401,F403  (exactly d2s.ops.__all__: the public tensor functions)
from . import inplace as _inplace  # noqa: F401  (Tensor's in-place methods: add_, +=, ...)
globals().update(_inplace.FUNCTIONS)  # torch.relu_(x) and the other top-level in-place forms
from .autograd import function as _function  # noqa: F401  (custom Functions' op in programs)
from .ops.debug import print  # noqa: F401,A004  (d2s.print: prints on every call of a program)
from .ops.random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed,  # noqa: F401
                          seed, set_rng_state)
from .devices import device  # noqa: E402  (torch.device)
from .printing import set_printoptions  # noqa: E402,F401

bool = bool_  # d2s.bool, as in the API; Python's bool stays reachable as builtins.bool
float, int = _dtypes.float_, _dtypes.int_  # d2s.float is float32 and d2s.int int32, as torch's

__version__ = "0.1.0"

# Submodules and names that import lazily, so `import d2s` stays light and layers stay apart.
_LAZY_MODULES = {"nn", "optim", "data", "jit", "static", "passes", "func", "utils", "viz", "onnx", "distributions",
                 "autograd", "transformers", "convert", "cli", "trace", "distributed", "lax", "linalg", "return_types",
                 "special", "cuda", "backends", "accelerator", "amp", "settings"}
_LAZY_NAMES = {
    "cond": ("d2s.static.control_flow", "cond"),
    "while_loop": ("d2s.static.control_flow", "while_loop"),
    "scan": ("d2s.static.control_flow", "scan"),
    "fori_loop": ("d2s.static.structured", "fori_loop"),
    "switch": ("d2s.static.structured", "switch"),
    "map": ("d2s.static.structured", "map"),
    "to_static": ("d2s.jit", "to_static"),
    "save": ("d2s.serialization", "save"),
    "load": ("d2s.serialization", "load"),
    "autocast": ("d2s.amp", "autocast"),
    "compile": ("d2s.jit.api", "compile"),
    "is_autocast_enabled": ("d2s.amp", "is_autocast_enabled"),
}
_LAZY_NAMES.update((n, ("d2s.amp", n)) for n in (
    "get_autocast_dtype", "get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "get_autocast_xla_dtype",
    "is_autocast_cpu_enabled", "is_autocast_xla_enabled", "is_autocast_cache_enabled", "clear_autocast_cache",
    "autocast_increment_nesting", "autocast_decrement_nesting"))
# torch.*'s forms of functional layers, and PyTorch's global switches (d2s/settings.py)
_LAZY_NAMES.update((n, ("d2s.nn._torch_forms", n)) for n in (
    "layer_norm", "group_norm", "batch_norm", "instance_norm", "cosine_similarity", "selu", "celu", "threshold",
    "rms_norm", "pairwise_distance", "bilinear", "alpha_dropout", "rrelu", "conv3d", "conv_transpose3d",
    "max_pool3d", "kl_div", "margin_ranking_loss", "hinge_embedding_loss", "poisson_nll_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "binary_cross_entropy_with_logits"))
_LAZY_NAMES.update((n, ("d2s.settings", n)) for n in (
    "get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads",
    "get_float32_matmul_precision", "set_float32_matmul_precision", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled", "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled", "set_deterministic_debug_mode", "get_deterministic_debug_mode", "init_num_threads",
    "is_warn_always_enabled", "is_vulkan_available", "is_distributed"))
_LAZY_NAMES.update((n, ("d2s.nn.functional", n)) for n in ("threshold_", "rrelu_", "selu_", "celu_"))
_LAZY_NAMES["chain_matmul"] = ("d2s.linalg", "chain_matmul")
_LAZY_NAMES["triangular_solve"] = ("d2s.linalg", "triangular_solve")

# The public names of ``d2s`` (see the API contract and docs/api/d2s.md): tensors and dtypes, the
# op functions of d2s.ops, grad modes, functional control flow, and the subpackages.
__all__ = (["Tensor", "tensor", "set_default_device", "get_default_device", "dtype", "bool", "bool_", "float32", "float64", "int32", "int64",
            "float16", "uint8", "int8", "int16", "bfloat16", "double", "half", "long", "short", "float", "int",
            "finfo", "iinfo", "get_default_dtype", "set_default_dtype", "Generator", "default_generator",
            "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
            "is_inference_mode_enabled", "device", "set_printoptions"]
           + list(_ops.__all__) + list(_inplace.FUNCTIONAL_FORMS) + sorted(_LAZY_NAMES) + sorted(_LAZY_MODULES))
__all__ = list(dict.fromkeys(__all__))  # (d2s.trace is both the matrix trace and the trace package)


def __dir__():
    """``dir(d2s)`` (tab completion) lists the lazy submodules and names too (``jit``, ``cond``, ...)."""
    return sorted(set(globals()) | _LAZY_MODULES | set(_LAZY_NAMES))


def __getattr__(name):
    if name in _LAZY_MODULES:
        return _importlib.import_module(f"d2s.{name}")
    if name in _LAZY_NAMES:
        mod, attr = _LAZY_NAMES[name]
        return getattr(_importlib.import_module(mod), attr)
    raise AttributeError(f"module 'd2s' has no attribute {name!r}")
