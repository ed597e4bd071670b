"""ONNX export: ``d2s.onnx.export(obj, path, input_spec)``.

Control flow is kept as control flow: ``cond`` becomes ``If``, ``while`` becomes ``Loop``,
``scan`` a ``Loop`` with scan outputs; unknown dims (``InputSpec(None, ...)``) stay symbolic.
Needs the ``onnx`` extra (``pip install 'd2s[onnx]'``).
"""
from . import control_flow  # noqa: F401  (registers If/Loop lowering and tensor-list converters)
from .export import ExportError, program_to_onnx


def export(obj, path, input_spec=None, params=None, *, random_ops=False):
    """Write ``obj`` as an ONNX model file.

    Args:
        obj: a to_static function, a to_static'd ``nn.Module`` (its ``forward``), a traced
            function, a plain function (built like ``d2s.static.build_program``), or a Program.
        path: the ``.onnx`` file to write.
        input_spec: ``InputSpec``s (or example tensors) for the inputs; optional for a traced
            function, a Program, or a to_static function given its own ``input_spec``.
        params: for a Program with params: their arrays, by param var name.
        random_ops: True writes ``multinomial`` (sampling in a ``generate``) as ONNX's own
            ``Multinomial`` node: the same distribution, but onnxruntime's random numbers, so
            its samples differ from d2s's for the same seed. False (the default) refuses a
            program that draws random numbers.

    Returns:
        ``(input_names, output_names)`` of the ONNX graph.
    """
    # d2s.ops imports this package for its converter registry, so the package itself stays
    # below jit; only an export reaches up to it
    from ..jit.export_support import program_and_params
    exported = program_and_params(obj, input_spec, params=params)
    model, inputs, outputs = program_to_onnx(exported.program, exported.params, exported.input_names,
                                             exported.output_names, random_ops=random_ops)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return inputs, outputs


__all__ = ["export", "ExportError", "program_to_onnx"]
