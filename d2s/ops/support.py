"""What other packages' wrappers build on (``d2s.nn``, ``d2s.distributions``): argument helpers of
the ops' wrappers, and wrappers of ops that are no public function of d2s themselves (nn's
normalization layers build on ``normalize_moments``, ``F.unfold``/``F.fold`` on ``im2col``/
``col2im``). Not part of ``d2s.ops.__all__``."""
from . import _dim_args as dim_args  # noqa: F401  (PyTorch's dim=/keepdim=/dtype= arguments, for d2s.linalg)
from ._util import _as_tensor as as_tensor, _axes as axes, _static_shape as static_shape, with_slope
from .conv import _col2im as col2im, _im2col as im2col
from .norm import _normalize as normalize_moments

__all__ = ["as_tensor", "axes", "static_shape", "dim_args", "col2im", "im2col", "normalize_moments", "with_slope"]
