"""Corpus cases that fail on today's converter, each with the reason.

Each entry makes its case an xfail(strict=True): when a fix lands the case passes, the strict
xfail turns red, and the entry must be deleted. The goal is an empty table. Reasons start with
a short cause tag so the table reads grouped.
"""

_UNDEF = "undefined: "
_CELL = "closure cell: "
_LIST = "tensor list: "
_BLOCK = "try/with/else: "
_SHAPE1 = "shape-[1] scalar: "
_WEAK = "weak counter: the int64 loop index promotes an int32 accumulator; conversion refuses the dtype change"
_OP = "missing op: "

KNOWN_FAILING = {
    # converting a body into a function changes which cell a closure reads
    # lists
    # lists in tensor loops
    # control flow inside try/with, loop else clauses
    # Paddle-style scalars and dtypes
    # gradients
    # ops and APIs
    # generators
    # other silent differences
}

# Cases where raising a clear error at the user's line (instead of eager's answer) is the
# accepted behaviour, because what eager returns is a Python value or structure chosen by
# tensor data, which no static program can return. The error must name the corpus file.
REFUSED = {
    "closures.lambda_in_branch": "a function chosen by a tensor condition",
    "pythonic.recursion_with_tensor_condition": "a recursion depth chosen by tensor data",
    "returns.return_none_or_tensor": "None or a tensor, chosen by tensor data",
    "returns.bare_return_in_branch": "None or a tensor, chosen by tensor data",
    "returns.return_different_python_types_from_loop": "a Python string chosen by tensor data",
    "scalars.int_division_gives_float": "a dtype chosen by tensor data",
    "ops.reshape_with_computed_shape": "a rank chosen by tensor data",
    "containers.mutates_argument_list": "a list length chosen by tensor data",
    "containers.mutates_argument_dict": "a dict's keys chosen by tensor data",
    "containers.comprehension_with_tensor_filter": "a list length chosen by tensor data",
    "scalars.item_in_python_logic": "a Python string (type name) chosen by tensor data",
    "pythonic.global_assigned_in_tensor_branch": "a global's Python value chosen by tensor data",
    "closures.lambdas_capture_late": "a list of functions whose length a tensor loop chooses (Python ints on "
                                     "Python bounds are exact)",
    "closures.method_on_helper_object": "not yet carried: an attribute set by a method called in a tensor if "
                                        "(refused, naming the attribute; an assignment in the branch works)",
}
