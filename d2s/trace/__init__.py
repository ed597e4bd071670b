"""Trace mode: record one run of a function into a program, warn where a tensor's value
steered Python, and guard those places so a call that would take another path raises.

``trace`` (also ``d2s.jit.trace``), ``TracedFunction``, ``TracerWarning``,
``TraceGuardError``, ``TraceCheckError``; ``compare`` runs a function through eager, trace
and ``to_static`` side by side (``d2s compare FILE::FUNC`` on the command line).
"""
from ..guards import TraceCheckError, TraceGuardError, TracerWarning
from .tracer import TracedFunction, Tracer, trace
from .compare import compare, compare_report

import sys as _sys
import types as _types


class _TraceModule(_types.ModuleType):
    """This package is also ``d2s.trace``, a name PyTorch gives to the sum of a matrix's
    diagonal: importing the package replaces the function ``d2s.trace`` (``d2s.ops.trace``)
    on ``d2s``, so calling the package computes it (``d2s.trace(x)`` as ``torch.trace(x)``)."""

    def __call__(self, input):
        # imported here: d2s.ops is below this package, and calling it as torch.trace is rare
        from ..ops.linalg import trace as matrix_trace
        return matrix_trace(input)


_sys.modules[__name__].__class__ = _TraceModule

__all__ = ["trace", "TracedFunction", "Tracer", "TracerWarning", "TraceGuardError", "TraceCheckError",
           "compare", "compare_report"]
