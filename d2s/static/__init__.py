"""Graph building: symbolic tensors append ops to a Program (see ``builder``)."""
from .builder import ProgramBuilder, build_program
from .input_spec import InputSpec

__all__ = ["ProgramBuilder", "build_program", "InputSpec"]
