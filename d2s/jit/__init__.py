"""Dynamic to static: ``to_static`` (source conversion), ``trace``, ``save``/``load``.

    @d2s.jit.to_static
    def f(x):
        if x.sum() > 0:      # becomes a cond op
            x = x * 2
        return x

    f(d2s.randn(4))          # builds, caches and runs the program for this signature
    f.get_program(d2s.jit.InputSpec([None]))
"""
import importlib

from ..convert.loops import UnrollWarning  # noqa: F401  (d2s.jit.UnrollWarning)
from ..static.input_spec import InputSpec
from . import config
from .api import (Attribute, Final, annotate, export, ignore, is_scripting, is_tracing, not_to_static, script,
                  to_static, unused)
from .static_function import SourceUnavailableError, StaticFunction, enable_to_static

# Names implemented elsewhere, imported on first use (trace mode lives in d2s.trace, a layer above).
_LAZY = {
    "trace": ("d2s.trace", "trace"),
    "TracedFunction": ("d2s.trace", "TracedFunction"),
    "TracerWarning": ("d2s.trace", "TracerWarning"),
    "TraceGuardError": ("d2s.trace", "TraceGuardError"),
    "TraceCheckError": ("d2s.trace", "TraceCheckError"),
    "save": ("d2s.jit.save_load", "save"),
    "load": ("d2s.jit.save_load", "load"),
}


def __dir__():
    """``dir(d2s.jit)`` (tab completion) lists the lazily imported names too (``trace``, ``save``, ...)."""
    return sorted(set(globals()) | set(_LAZY))


def __getattr__(name):
    if name in _LAZY:
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod), attr)
    raise AttributeError(f"module 'd2s.jit' has no attribute {name!r}")


__all__ = ["to_static", "not_to_static", "enable_to_static", "StaticFunction", "SourceUnavailableError",
           "script", "ignore", "unused", "export", "is_scripting", "is_tracing", "Final", "Attribute", "annotate",
           "InputSpec", "config",
           "trace", "TracedFunction", "TracerWarning", "TraceGuardError", "save", "load"]
