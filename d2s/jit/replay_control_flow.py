"""Replaying saved control-flow ops through d2s's functional control flow (``d2s.cond``,
``d2s.while_loop``, ``d2s.scan``), so a loaded program can be differentiated.

``REPLAY[op_type](op, input_tensors) -> output tensors``.
"""

REPLAY = {}
