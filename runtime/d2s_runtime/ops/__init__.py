"""Every primitive op of d2s, registered once: kernel, shape rule, traits and lowerings side by side."""
from .registry import OPS, TRAITS, OpDef, ShapeError, TensorType, deflowering, defop, get_op, ops_with
from . import elementwise, pointwise, reduce, linalg, shape_ops, creation, random, indexing  # noqa: F401  (registration)
from . import nn_ops, conv_ops, pool_ops, norm_ops, grad_ops  # noqa: F401  (registration)
from . import sorting  # noqa: F401  (registration)
from . import guard  # noqa: F401  (registration: trace guards)
from . import tensor_list  # noqa: F401  (registration: tensor lists for loops)
from . import debug  # noqa: F401  (registration: print and assert inside programs)
from .random import RNG, Generator, manual_seed

__all__ = ["OPS", "TRAITS", "OpDef", "ShapeError", "TensorType", "deflowering", "defop", "get_op", "ops_with", "RNG",
           "Generator", "manual_seed"]
