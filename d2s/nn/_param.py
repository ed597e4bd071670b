"""Creating uninitialized parameters of a given shape, dtype and device."""
from d2s_runtime.device import get_xp

from ..dtypes import as_dtype
from ..tensor import get_default_device
from .module import Parameter


def new_parameter(shape, dtype=None, device=None):
    """A zero-filled Parameter (float32 unless ``dtype`` says otherwise); layers then fill it
    with an initializer from ``nn.init``."""
    xp = get_xp(device if device is not None else get_default_device())
    return Parameter(xp.zeros(tuple(shape), dtype=str(as_dtype(dtype or "float32"))))
