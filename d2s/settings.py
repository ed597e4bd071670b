"""PyTorch's global switches that model and training files set or read: thread counts,
``float32`` matmul precision, deterministic algorithms and anomaly detection's state.

d2s accepts each and reports back what it was told, where that changes nothing d2s computes:
its kernels are numpy's and BLAS's (their threads are BLAS's own, set by its environment
variables), every float32 matmul is computed in float32 exactly (PyTorch's ``'highest'``, which
``'high'`` and ``'medium'`` only permit lowering on GPUs), and d2s's kernels are deterministic
(no atomics), so ``use_deterministic_algorithms(True)`` holds already.
"""
import os

from ._state import STATE

_SETTINGS = {"threads": os.cpu_count() or 1, "interop": os.cpu_count() or 1, "matmul": "highest",
             "deterministic": False, "warn_only": False}


def get_num_threads():
    """The number of intra-op threads last set with :func:`set_num_threads` (default: the CPU
    count), as ``torch.get_num_threads``."""
    return _SETTINGS["threads"]


def set_num_threads(n):
    """Record the number of intra-op threads (``torch.set_num_threads``); d2s's kernels are
    numpy's, whose BLAS threads are set by its environment variables (``OMP_NUM_THREADS``)."""
    if int(n) <= 0:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n}")
    _SETTINGS["threads"] = int(n)


def get_num_interop_threads():
    """The number of inter-op threads (``torch.get_num_interop_threads``)."""
    return _SETTINGS["interop"]


def set_num_interop_threads(n):
    """Record the number of inter-op threads (``torch.set_num_interop_threads``)."""
    if int(n) <= 0:
        raise RuntimeError(f"set_num_interop_threads expects a positive integer, got {n}")
    _SETTINGS["interop"] = int(n)


def get_float32_matmul_precision():
    """The float32 matmul precision last set (``'highest'`` by default), as
    ``torch.get_float32_matmul_precision``."""
    return _SETTINGS["matmul"]


def set_float32_matmul_precision(precision):
    """Accept ``'highest'``, ``'high'`` or ``'medium'`` (``torch.set_float32_matmul_precision``).
    d2s computes every float32 matmul in float32 exactly whichever is set (what ``'highest'``
    means; the others only permit TF32/bfloat16 on GPUs)."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: expected 'highest', 'high' or 'medium'")
    _SETTINGS["matmul"] = precision


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record the deterministic-algorithms switch (``torch.use_deterministic_algorithms``); d2s's
    kernels give the same results on every run, so either setting holds."""
    _SETTINGS["deterministic"], _SETTINGS["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled():
    """Whether :func:`use_deterministic_algorithms` was last set to True."""
    return _SETTINGS["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    """Whether :func:`use_deterministic_algorithms` was last set with ``warn_only=True``."""
    return _SETTINGS["warn_only"]


def is_anomaly_enabled():
    """Whether ``d2s.autograd.detect_anomaly`` is active in this thread (``torch.is_anomaly_enabled``)."""
    return STATE.anomaly is not None


def is_anomaly_check_nan_enabled():
    """Whether the active ``detect_anomaly`` checks gradients for NaN (False outside one)."""
    return STATE.anomaly is not None and bool(getattr(STATE.anomaly, "check_nan", False))


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """Record the deterministic debug mode (``torch.set_deterministic_debug_mode``): 0 or
    ``'default'``, 1 or ``'warn'``, 2 or ``'error'``; as :func:`use_deterministic_algorithms`
    records it (d2s's kernels are deterministic)."""
    mode = _DEBUG_MODES.get(debug_mode, debug_mode) if isinstance(debug_mode, str) else debug_mode
    if mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected one of 0, 1, 2 or 'default', 'warn', 'error', "
                           f"but got {debug_mode!r}")
    _SETTINGS["deterministic"], _SETTINGS["warn_only"] = mode > 0, mode == 1


def get_deterministic_debug_mode():
    """The deterministic debug mode (``torch.get_deterministic_debug_mode``): 0, 1 (warn only) or
    2, following :func:`use_deterministic_algorithms`."""
    if not _SETTINGS["deterministic"]:
        return 0
    return 1 if _SETTINGS["warn_only"] else 2


def init_num_threads():
    """``torch.init_num_threads``: nothing to set up in d2s (numpy's BLAS starts its own threads)."""


def is_warn_always_enabled():
    """False, as PyTorch's default (``torch.is_warn_always_enabled``): d2s warns once per place."""
    return False


def is_vulkan_available():
    """False: d2s has no Vulkan backend (``torch.is_vulkan_available``)."""
    return False


def is_distributed(input):
    """False, as PyTorch's ``torch.is_distributed`` for every tensor it makes."""
    del input
    return False
