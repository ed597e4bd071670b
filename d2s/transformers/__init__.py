"""Source-to-source conversion of eager Python into graph-building Python (to_static's core).

The contract with ``d2s.jit``:

* ``convert_function(fn) -> ConvertedFunction`` with ``.fn`` (the converted function: same
  signature, compiled with ``fn``'s globals and closure cells; for a bound method, the
  converted ``__func__`` rebound to the same object), ``.code`` (converted source via
  ``ast.unparse``), ``.source_map`` (generated line -> (original file, original line, original
  text)) and ``.original``. Converted code is compiled under the ORIGINAL filename with the
  ORIGINAL line numbers, so tracebacks and errors raised inside it already show the user's
  frame and line.
* ``ConversionError`` (a SyntaxError carrying filename/lineno/text) for unsupported syntax;
  ``SourceUnavailable`` when ``inspect.getsource`` fails (REPL, exec, lambdas): fall back
  to eager with a warning.
* Converted code reaches its runtime helpers (``d2s.convert``) under the one global name
  ``_jst``, injected into the function's module globals. Calls inside it go through
  ``_jst.convert_call(f)``, which converts user functions recursively (cached per function)
  and leaves alone library code and functions with ``fn.__d2s_not_to_static__ = True``
  (what ``d2s.jit.not_to_static`` sets).

The pipeline (``pipeline.PIPELINE``) runs one transformer per syntax, in an order explained
there; the name analysis in ``analysis/`` decides what each branch and loop carries.
"""
from ..user_errors import ConversionError, SourceUnavailable
from .pipeline import PIPELINE, ConvertedFunction, convert_function

__all__ = ["convert_function", "ConvertedFunction", "ConversionError", "SourceUnavailable", "PIPELINE"]
