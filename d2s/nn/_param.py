"""Creating uninitialized parameters of a given shape, dtype and device."""
from d2s_runtime.device import get_xp

from .. import dtypes as _dtypes
from ..dtypes import as_dtype
from ..tensor import get_default_device
from .module import Parameter


def default_float(dtype=None):
    """``dtype``, or the default float dtype (float32 unless ``d2s.set_default_dtype`` changed
    it) as the name of a dtype: PyTorch's layers make their parameters in the default dtype."""
    return dtype if dtype is not None else _dtypes.default_float()


def new_parameter(shape, dtype=None, device=None):
    """A zero-filled Parameter (of the default float dtype unless ``dtype`` says otherwise);
    layers then fill it with an initializer from ``nn.init``."""
    xp = get_xp(device if device is not None else get_default_device())
    return Parameter(xp.zeros(tuple(shape), dtype=str(as_dtype(default_float(dtype)))))
