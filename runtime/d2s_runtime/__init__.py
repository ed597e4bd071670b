"""d2s_runtime: what a deployed d2s model needs, and nothing more (numpy; cupy for 'gpu').

This package never imports ``d2s`` or ``gast``.
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
from .verify import VerifyError, verify
from .version import __version__


def __getattr__(name):
    # serialization loads lazily: a plain Executor user never pays for json/zipfile imports
    if name in ("load", "save_program", "load_program", "Model"):
        from . import serialize  # lazily: see above
        return getattr(serialize, name)
    if name == "InputError":  # inputs that do not fit a loaded model
        from .saved_model import InputError  # lazily too: saved_model reads files (json/zipfile)
        return InputError
    raise AttributeError(f"module 'd2s_runtime' has no attribute {name!r}")

