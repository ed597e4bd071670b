"""Array namespaces per device: numpy for 'cpu', cupy for 'gpu', and any registered one.

A device is a name, an array namespace ``xp`` (numpy's API: ``xp.asarray``, ``xp.add``, ...),
the namespace's array type, and ``asnumpy`` (the explicit device-to-host copy). 'cpu' and
'gpu' are built in; :func:`register_device` adds others (a test device that behaves like
cupy on the CPU, another accelerator's numpy-compatible library).
"""
import numpy as np

_cupy = None


class _Device:
    __slots__ = ("name", "xp", "array_type", "asnumpy")

    def __init__(self, name, xp, array_type, asnumpy):
        self.name, self.xp, self.array_type, self.asnumpy = name, xp, array_type, asnumpy


# registered devices other than 'cpu' and 'gpu', by name
_DEVICES = {}


def register_device(name, xp, asnumpy, array_type=None):
    """Make ``device=name`` run on array namespace ``xp``.

    Args:
        name: the device name (not 'cpu', 'gpu' or 'cuda').
        xp: the namespace (numpy's function names; kernels call ``xp.<fn>``).
        asnumpy: ``asnumpy(array) -> numpy.ndarray``, the explicit copy to the host.
        array_type: the namespace's array type (default ``xp.ndarray``); arrays of this type
            are said to be on this device (:func:`xp_of`, :func:`device_of`).
    """
    if name in ("cpu", "gpu", "cuda"):
        raise ValueError(f"register_device: {name!r} is a built-in device")
    _DEVICES[name] = _Device(name, xp, array_type if array_type is not None else xp.ndarray, asnumpy)


def unregister_device(name):
    """Forget a device added by :func:`register_device` (no error if it is not there)."""
    _DEVICES.pop(name, None)


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


def known_devices():
    """The device names accepted here: 'cpu', 'gpu' (and its alias 'cuda') and registered ones."""
    return ("cpu", "gpu", "cuda") + tuple(_DEVICES)


def get_xp(device):
    """The array namespace for ``device`` ('cpu', 'gpu' or a registered one); clear errors otherwise."""
    if device in (None, "cpu"):
        return np
    if device in ("gpu", "cuda"):
        return _load_cupy()
    d = _DEVICES.get(device)
    if d is not None:
        return d.xp
    extra = "".join(f", {n!r}" for n in _DEVICES)
    raise ValueError(f"unknown device {device!r}: d2s supports 'cpu' (numpy) and 'gpu' (cupy){extra}")


def _device_for(array):
    """``(name, xp, asnumpy)`` of a non-numpy array, or None for host data."""
    if _cupy is None and type(array).__module__.startswith("cupy"):
        _load_cupy()  # a cupy array made before d2s loaded cupy
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return "gpu", _cupy, _cupy.asnumpy
    for d in _DEVICES.values():
        if isinstance(array, d.array_type):
            return d.name, d.xp, d.asnumpy
    return None


def xp_of(array):
    """numpy for numpy arrays and scalars, cupy for cupy arrays, a registered namespace for its arrays."""
    if isinstance(array, (np.ndarray, np.generic)):
        return np
    d = _device_for(array)
    return np if d is None else d[1]


def device_of(array):
    """The device name of ``array``: 'cpu', 'gpu' or a registered device's name."""
    if isinstance(array, (np.ndarray, np.generic)):
        return "cpu"
    d = _device_for(array)
    return "cpu" if d is None else d[0]


def to_host(array):
    """``array`` as a numpy array (numpy arrays and scalars as they are): the one explicit
    device-to-host copy (cupy's ``asnumpy``, a registered device's ``asnumpy``)."""
    if isinstance(array, (np.ndarray, np.generic)):
        return array
    d = _device_for(array)
    return np.asarray(array) if d is None else d[2](array)
