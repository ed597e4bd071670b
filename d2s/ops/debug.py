"""Debug and check ops: ``d2s.print``, the ``assert`` op of converted code, and trace guards
(runtime: ``d2s_runtime/ops/debug.py`` and ``guard.py``). They have effects and no outputs:
nothing to differentiate.

Python's ``print`` inside converted code is a ``print`` op too, printing what eager code prints
(``d2s.convert.printing``). ``d2s.print`` is always the ``print`` op (like ``tf.print``): inside a program it prints on
every call, whatever its arguments; eagerly it prints at once. Tensors print as their values
(NumPy's format), the same way in both modes.
"""
from ..autograd.registry import non_differentiable
from ..dispatch import apply
from ..onnx.registry import onnx_unsupported
from ..tensor import Tensor


_NO_OUTPUTS = "it has no outputs to differentiate"


def print(*args, sep=" ", end="\n"):  # noqa: A001 - d2s.print, as tf.print
    """Print ``args`` (tensors as their values) each time this line runs, also inside a
    program on every call; ``sep`` and ``end`` as in Python's print."""
    parts, tensors = [], []
    for a in args:
        if isinstance(a, Tensor):
            parts.append(["t", len(tensors)])
            tensors.append(a)
        else:
            parts.append(["s", str(a)])
    apply("print", *tensors, parts=parts, sep=str(sep), end=str(end))


non_differentiable("print", "assert", "guard", reason=_NO_OUTPUTS)
onnx_unsupported("print", reason="ONNX has no print; remove d2s.print (or print of tensors) from the exported function")
onnx_unsupported("assert", reason="an ONNX graph cannot raise when a check fails; remove the assert on tensors "
                                  "from the exported function")
onnx_unsupported("guard", reason="a trace guard checks the traced path at run time, which ONNX cannot raise on; "
                                 "export with d2s.jit.trace(..., guards=False) or use to_static")
