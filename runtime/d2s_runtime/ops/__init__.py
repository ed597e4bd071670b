"""Every op of d2s, registered once: kernel (or, for a structured op, its block layout and
rules), shape rule, traits and lowerings side by side."""
from .registry import (OPS, RULE_ROLES, TRAITS, BlockLayout, OpDef, ShapeError, TensorType, deflowering, defop,
                       defrule, defstructured, get_op, ops_with)
from . import elementwise, pointwise, reduce, linalg, shape_ops, creation, random, indexing, gather_scatter  # noqa: F401  (registration)
from . import nn_ops, conv_ops, pool_ops, norm_ops, grad_ops  # noqa: F401  (registration)
from . import sorting, counting, gamma, decompositions  # noqa: F401  (registration)
from . import guard  # noqa: F401  (registration: trace guards)
from . import tensor_list  # noqa: F401  (registration: tensor lists for loops)
from . import debug  # noqa: F401  (registration: print and assert inside programs)
from . import control_flow  # noqa: F401  (registration: the structured ops cond, while, scan)
from .random import RNG, Generator, manual_seed

__all__ = ["OPS", "TRAITS", "RULE_ROLES", "OpDef", "BlockLayout", "ShapeError", "TensorType", "deflowering", "defop",
           "defrule", "defstructured", "get_op", "ops_with", "RNG", "Generator", "manual_seed"]
