"""ONNX export: ``d2s.onnx.export(obj, path, input_spec)``.

Control flow is kept as control flow: ``cond`` becomes ``If``, ``while`` becomes ``Loop``,
``scan`` a ``Loop`` with scan outputs; unknown dims (``InputSpec(None, ...)``) stay symbolic.
Needs the ``onnx`` extra (``pip install 'd2s[onnx]'``).
"""
from .export import ExportError, program_to_onnx


def export(obj, path, input_spec=None):
    """Write ``obj`` (a to_static function or module, a traced function, or a Program) as ONNX.

    Returns the list of ONNX output names. ``input_spec`` lists ``InputSpec``s (or example
    tensors) for the program's inputs; it may be omitted for a Program or a traced function.
    """
    from ..jit.export_support import program_and_params
    program, params = program_and_params(obj, input_spec)
    model, outputs = program_to_onnx(program, params)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return outputs


__all__ = ["export", "ExportError", "program_to_onnx"]
