"""Every primitive op of d2s, registered once: kernel, shape rule, traits and lowerings side by side."""
from .registry import OPS, TRAITS, OpDef, ShapeError, TensorType, deflowering, defop, get_op, ops_with
from . import elementwise, pointwise, reduce, linalg, shape_ops, creation, indexing  # noqa: F401  (registration)
from . import nn_ops, grad_ops  # noqa: F401  (registration)
from . import guard  # noqa: F401  (registration: trace guards)
from . import tensor_list  # noqa: F401  (registration: tensor lists for loops)
from . import debug  # noqa: F401  (registration: print and assert inside programs)
from .creation import RNG, manual_seed

__all__ = ["OPS", "TRAITS", "OpDef", "ShapeError", "TensorType", "deflowering", "defop", "get_op", "ops_with", "RNG",
           "manual_seed"]
