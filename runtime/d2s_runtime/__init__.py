"""d2s_runtime: what a deployed d2s model needs, and nothing more (numpy; cupy for 'gpu').

This package never imports ``d2s`` or ``gast``.
"""
from . import ops
from .dtypes import DTYPES, normalize as normalize_dtype
from .ops import OPS, ShapeError, TensorType, get_op, manual_seed
from .device import get_xp, xp_of

__version__ = "0.1.0"
