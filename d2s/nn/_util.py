"""Small helpers shared by the layer modules of ``d2s.nn`` (not public)."""
from ..dispatch import apply
from ..ops.support import axes as _axes, static_shape as _static_shape  # noqa: F401  (re-exported for the layer modules)
from ..tensor import Tensor, tensor


def as_tensor(x):
    """Tensors unchanged; Python numbers, lists and arrays as tensors (d2s dtype defaults)."""
    return x if isinstance(x, Tensor) else tensor(x)


def known(d):
    """A static dim as an int, or None where it is known only when a program runs."""
    return d if isinstance(d, int) else None


def const(value, like, dtype=None):
    """``value`` (an array or Python data) as a tensor on ``like``'s device (a CPU tensor
    meeting a GPU one is an error, as in PyTorch)."""
    return tensor(value, dtype=dtype, device=like.device)
