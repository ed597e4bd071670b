"""Graph building: symbolic tensors append ops to a Program (see ``builder``), functional
control flow (``control_flow``: the structured ops' family modules ``conditionals``,
``while_loops`` and ``scans``, each registering its op's rules when imported), tensor lists
(``tensor_array``) and static backward (``backward``)."""
from .builder import ProgramBuilder, build_program
from .input_spec import InputSpec
from . import control_flow_grad  # noqa: F401  (registers the tensor lists' gradient rules)
from .control_flow import cond, scan, while_loop  # (the family modules: their ops' rules register)
from .structured import fori_loop, map, switch  # noqa: A004  (d2s.static.map, like jax.lax.map)
from .backward import append_backward, gradients
from .tensor_array import TensorArray
from ..user_errors import SymbolicValueError

__all__ = ["ProgramBuilder", "build_program", "InputSpec", "cond", "while_loop", "scan", "fori_loop", "switch",
           "append_backward", "gradients", "TensorArray", "SymbolicValueError"]
# (``map`` stays out of __all__: a star import must not hide the builtin)
