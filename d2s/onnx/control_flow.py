"""Control-flow ops as ONNX control flow: ``cond`` -> ``If``, ``while`` -> ``Loop``,
``scan`` -> ``Loop`` with scan outputs. Filled in below once per op type."""

CONTROL_FLOW = {}
