"""d2s_runtime: what a deployed d2s model needs, and nothing more (numpy; cupy for 'gpu').

This package never imports ``d2s`` or ``gast``. ``load`` reads a directory written by
``d2s.jit.save`` into a callable :class:`Model`; :class:`Executor` runs a :class:`Program`.
``OPS`` is the op registry (name -> definition: kernel, shape rule, traits; see
:func:`get_op`) and ``DTYPES`` the names of the dtypes programs may use.
"""
from . import ops
from .dtypes import DTYPES, normalize as normalize_dtype
from .ops import OPS, ShapeError, TensorType, get_op, manual_seed
from .device import get_xp, register_device, to_host, xp_of
from .ops.guard import GuardError
from .ops.debug import ProgramAssertionError, ProgramTypeError, ProgramUnboundLocalError
from .ir import Block, Op, Program, Var
from .errors import ExecutionError, FormatError, LoopLimitError
from .executor import Executor
from . import tiers  # noqa: F401  (registers the tier ladder an Executor's calls climb: see tiers.py)
from .verify import VerifyError, verify
from .version import __version__

# The public names (the deployment API): loading and running saved models, the program IR, the
# op registry, devices and the errors a program raises. The last five load lazily (below).
__all__ = ["Executor", "Program", "Block", "Op", "Var", "TensorType", "verify", "OPS", "get_op", "DTYPES",
           "normalize_dtype", "manual_seed", "register_device", "get_xp", "to_host", "xp_of", "ShapeError",
           "GuardError", "ProgramAssertionError", "ProgramTypeError", "ProgramUnboundLocalError", "ExecutionError",
           "FormatError", "LoopLimitError", "VerifyError",
           "load", "Model", "InputError", "save_program", "load_program"]
_LAZY = ("load", "save_program", "load_program", "Model", "InputError")


def __dir__():
    """``dir(d2s_runtime)`` lists the lazily loaded names too (``load``, ``Model``, ...)."""
    return sorted(set(globals()) | set(_LAZY))


def __getattr__(name):
    # serialization loads lazily: a plain Executor user never pays for json/zipfile imports
    if name in ("load", "save_program", "load_program", "Model"):
        from . import serialize  # lazily: see above
        return getattr(serialize, name)
    if name == "InputError":  # inputs that do not fit a loaded model
        from .saved_model import InputError  # lazily too: saved_model reads files (json/zipfile)
        return InputError
    raise AttributeError(f"module 'd2s_runtime' has no attribute {name!r}")

