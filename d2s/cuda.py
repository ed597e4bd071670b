"""``d2s.cuda``: the queries and switches PyTorch model files call at import and setup.

d2s runs on the GPU through cupy (the ``'gpu'`` device, also spelled ``'cuda'``). These answer
for that device; without cupy or a GPU, ``is_available()`` is False and moving a tensor there
raises an error naming what is missing.
"""
from d2s_runtime.device import get_xp

import functools as _functools
import sys as _sys
import types as _types

from . import amp as _amp
from . import devices as _devices
from .ops import random as _random

__all__ = ["is_available", "device_count", "current_device", "set_device", "get_device_name", "synchronize",
           "empty_cache", "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "is_initialized",
           "memory_allocated", "max_memory_allocated", "device", "amp", "is_bf16_supported"]

device = _devices.device

# ``torch.cuda.amp`` (PyTorch's older spelling, still common in training scripts): autocast and
# GradScaler for the 'cuda' device; ``from d2s.cuda.amp import GradScaler`` finds it here
amp = _types.ModuleType("d2s.cuda.amp", "torch.cuda.amp's autocast and GradScaler (for the 'cuda' device).")
amp.GradScaler = _functools.partial(_amp.GradScaler, "cuda")
amp.autocast = _functools.partial(_amp.autocast, "cuda")
_sys.modules[amp.__name__] = amp


def is_available():
    """Whether a GPU can be used (cupy imports and sees one)."""
    return _devices.available("gpu")


def is_bf16_supported(including_emulation=True):
    """Whether bfloat16 can be used on the GPU: never in d2s (it has no bfloat16 arithmetic)."""
    del including_emulation
    return False


def device_count():
    """How many GPUs cupy sees (0 without cupy or a GPU)."""
    if not is_available():
        return 0
    cp = get_xp("gpu")
    try:
        return int(cp.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - a cupy without the runtime API: the one device it uses
        return 1


def current_device():
    """The index of the GPU in use (d2s uses one: 0)."""
    return 0


def set_device(device):
    """Accepted for PyTorch code; d2s uses one GPU, index 0 (another index is refused)."""
    name_index = _devices.device("cuda", device) if isinstance(device, int) else _devices.device(device)
    if name_index.index not in (None, 0):
        raise RuntimeError(f"d2s.cuda.set_device({device!r}): d2s runs on one GPU, index 0")


def get_device_name(device=None):
    if not is_available():
        raise RuntimeError("d2s.cuda.get_device_name: no GPU is available (cupy is missing or sees no GPU)")
    cp = get_xp("gpu")
    try:
        props = cp.cuda.runtime.getDeviceProperties(0)
        name = props.get("name", b"GPU")
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001
        return "GPU"


def synchronize(device=None):
    """Wait for the GPU's queued work (nothing to wait for without one)."""
    if is_available():
        get_xp("gpu").cuda.get_current_stream().synchronize()


def empty_cache():
    """Give cupy's cached free GPU memory back (nothing without a GPU)."""
    if is_available():
        get_xp("gpu").get_default_memory_pool().free_all_blocks()


def memory_allocated(device=None):
    """Bytes of GPU memory cupy's pool holds for arrays now (0 without a GPU)."""
    return int(get_xp("gpu").get_default_memory_pool().used_bytes()) if is_available() else 0


def max_memory_allocated(device=None):
    return int(get_xp("gpu").get_default_memory_pool().total_bytes()) if is_available() else 0


def is_initialized():
    return is_available()


def manual_seed(seed):
    """Seed d2s's random sources (the GPU's among them: one seed serves every device)."""
    _random.manual_seed(seed)


manual_seed_all = manual_seed


def seed():
    _random.seed()


seed_all = seed


def initial_seed():
    return _random.initial_seed()
