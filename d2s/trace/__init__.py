"""Trace mode: record one run of a function into a program, warn where a tensor's value
steered Python, and guard those places so a call that would take another path raises.

``trace`` (also ``d2s.jit.trace``), ``TracedFunction``, ``TracerWarning``,
``TraceGuardError``, ``TraceCheckError``; ``compare`` runs a function through eager, trace
and ``to_static`` side by side (``d2s compare FILE::FUNC`` on the command line).
"""
from .guards import TraceCheckError, TraceGuardError, TracerWarning
from .tracer import TracedFunction, Tracer, trace
from .compare import compare, compare_report

__all__ = ["trace", "TracedFunction", "Tracer", "TracerWarning", "TraceGuardError", "TraceCheckError",
           "compare", "compare_report"]
