"""The ONNX converter registry: plain dicts filled by declarations next to each op.

Each op family module (``d2s/ops/*.py``) declares, beside the op's public wrapper, how the op
is written as ONNX nodes (``@onnx_converter("add")``) or why it has no ONNX form
(``onnx_unsupported("rand", reason=...)``). A converter is ``fn(g, op) -> None``: it reads
``op.inputs``/``op.outputs``/``op.attrs`` and adds nodes to the graph context ``g`` (see
``export.GraphCtx``), naming its outputs exactly ``op.outputs`` so later nodes find them.
ONNX wants both operands of an arithmetic node in one dtype where d2s follows NumPy
promotion, so converters cast operands first (:func:`promoted`).

This module imports nothing of d2s, so the op families (below the exporter) can fill it.
"""
import numpy as np

from d2s_runtime.dtypes import types_result

CONVERTERS = {}    # op name -> converter
UNSUPPORTED = {}   # op name -> the reason the exporter's error gives
CONSTANTS = set()  # ops with no inputs and no effect: the exporter writes their value as a constant
CONTROL_FLOW = {}  # structured ops (cond, while, scan) -> fn(exporter, g, op), declared in their family modules


def onnx_converter(*names):
    """Register the decorated function as the ONNX converter of ops ``names``."""

    def deco(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn

    return deco


def onnx_structured(name):
    """Register the decorated function ``fn(exporter, g, op)`` as the ONNX form of structured op
    ``name`` (one holding sub-blocks; declared in its family module, ``d2s/static``), which
    exports its blocks through the exporter (``exporter.subgraph``, ``exporter.emit_block``)."""

    def deco(fn):
        CONTROL_FLOW[name] = fn
        return fn

    return deco


def onnx_unsupported(*names, reason):
    """Declare that ops ``names`` have no ONNX form, with the reason the export error gives."""
    for n in names:
        UNSUPPORTED[n] = reason


def onnx_constant(*names):
    """Declare ops ``names`` (no inputs, no effect) exported as constants: the exporter runs
    their kernel once and writes the value."""
    CONSTANTS.update(names)


def elementwise(d2s_name, onnx_name, bool_form=None, compute_in_output_dtype=True):
    """Register op ``d2s_name`` as ONNX node ``onnx_name`` on promoted operands. ``bool_form``:
    the logical node written when the result is bool (NumPy's bool arithmetic is logic, and
    ONNX's arithmetic nodes take no bool)."""

    @onnx_converter(d2s_name)
    def conv(g, op):
        dt = g.dtype(op.outputs[0]) if compute_in_output_dtype else None
        name = bool_form if (bool_form and dt == "bool") else onnx_name
        g.node(name, promoted(g, op.inputs, dt), op.outputs)

    return conv


def i64(values):
    return np.asarray(values, dtype=np.int64)


def promoted(g, names, dtype=None):
    """``names`` cast to one dtype (``dtype``, or d2s's promotion of theirs: PyTorch's, where
    a 0-d operand does not widen a dimensioned one of its category)."""
    dtype = dtype or types_result(*(g.types[n] for n in names))
    return [g.cast(n, dtype) for n in names]


converter = onnx_converter  # the name control-flow converters use
_i64 = i64
