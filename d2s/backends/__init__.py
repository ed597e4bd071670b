"""``d2s.backends``: PyTorch's backend switches, accepted so model files run unchanged.

``cudnn.benchmark``, ``cudnn.deterministic``, ``cuda.matmul.allow_tf32`` and the like may be
read and set; d2s has no cuDNN autotuning or TF32 math to switch, so setting them changes
nothing (d2s's GPU results are already deterministic for a given program). ``mps`` is never
available.
"""
from types import SimpleNamespace

from .. import devices as _devices

__all__ = ["cudnn", "cuda", "mps", "mkldnn", "openmp"]


class _Switches:
    """A namespace of settable flags that d2s records and otherwise ignores."""

    def __init__(self, name, **flags):
        object.__setattr__(self, "_name", name)
        self.__dict__.update(flags)

    def __repr__(self):
        flags = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if not k.startswith("_") and not callable(v))
        return f"<d2s.backends.{self._name}: {flags}>"


cudnn = _Switches("cudnn", enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
                  is_available=lambda: _devices.available("gpu"), version=lambda: None)
cuda = _Switches("cuda", matmul=_Switches("cuda.matmul", allow_tf32=False, allow_fp16_reduced_precision_reduction=True),
                 is_built=lambda: True, is_flash_attention_available=lambda: False)
mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
mkldnn = _Switches("mkldnn", enabled=True, is_available=lambda: False)
openmp = SimpleNamespace(is_available=lambda: False)
