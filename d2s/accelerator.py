"""``d2s.accelerator``: PyTorch's device-generic queries (``torch.accelerator``) for d2s's GPU."""
from . import cuda as _cuda
from . import devices as _devices

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "synchronize"]


def is_available():
    """Whether an accelerator (a GPU through cupy) can be used."""
    return _cuda.is_available()


def current_accelerator(check_available=False):
    """``d2s.device('cuda')`` where a GPU can be used (or, unless ``check_available``, where
    d2s would use one), else None."""
    if _cuda.is_available():
        return _devices.device("cuda")
    return None


def device_count():
    return _cuda.device_count()


def current_device_index():
    return 0


def set_device_index(index):
    _cuda.set_device(index)


def synchronize(device=None):
    _cuda.synchronize(device)
