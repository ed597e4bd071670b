"""The runtime's own error types, below every module that raises them (so a control-flow rule,
the code generator or a file reader raises them without importing the executor or the loader)."""


class ExecutionError(RuntimeError):
    """An op failed while a program ran; the message names the op and its input shapes."""


class LoopLimitError(ExecutionError):
    """A ``while`` op ran more iterations than the executor's ``max_loop_iterations``."""


class LoweringUnsupported(Exception):
    """A compiling backend (the native one) does not lower something in the program (a
    one-line reason naming the op): the program runs on the Python backend instead."""


class FormatError(ValueError):
    """A saved program that cannot be loaded: missing, truncated, malformed or unsupported."""


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """An integer ``//``, ``%``, ``fmod`` or truncating division by zero: PyTorch raises
    ``RuntimeError: ZeroDivisionError`` there (NumPy would give 0 with a warning). Both
    ``except RuntimeError`` and ``except ZeroDivisionError`` catch it."""
