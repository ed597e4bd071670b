"""Control-flow ops (cond, while, scan, tensor lists): shape rules and executor rules.

``RULES[op_type](ctx, op, input_values) -> list of output values`` runs one control-flow op;
``ctx.run_block(block, input_values)`` runs a sub-block and returns the values of its outputs.
Filled in by the control-flow module owner.
"""

RULES = {}
