"""Array namespaces per device: numpy for 'cpu', cupy for 'gpu'."""
import numpy as np

_cupy = None


def _load_cupy():
    global _cupy
    if _cupy is None:
        try:
            import cupy
        except ImportError:
            raise RuntimeError("device 'gpu' needs cupy, which is not installed: "
                               "pip install 'd2s[gpu]' (cupy for your CUDA version)") from None
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # cupy raises its own CUDARuntimeError without a driver
            raise RuntimeError(f"device 'gpu' needs a CUDA GPU: cupy is installed but found none ({e})") from None
        if n == 0:
            raise RuntimeError("device 'gpu' needs a CUDA GPU: cupy is installed but found none")
        _cupy = cupy
    return _cupy


def get_xp(device):
    """The array namespace for ``device`` ('cpu' or 'gpu'); clear errors otherwise."""
    if device in (None, "cpu"):
        return np
    if device in ("gpu", "cuda"):
        return _load_cupy()
    raise ValueError(f"unknown device {device!r}: d2s supports 'cpu' (numpy) and 'gpu' (cupy)")


def xp_of(array):
    """numpy for numpy arrays and scalars, cupy for cupy arrays."""
    if isinstance(array, (np.ndarray, np.generic)) or _cupy is None:
        return np
    return _cupy if isinstance(array, _cupy.ndarray) else np


def device_of(array):
    return "cpu" if xp_of(array) is np else "gpu"
