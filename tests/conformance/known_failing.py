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
    "closures.lambdas_capture_late": _CELL + "lambdas appended in a tensor loop: a list of functions whose length "
                                             "the loop changes is refused (late binding not modelled)",
    "closures.nonlocal_counter": _CELL + "a nonlocal counter bumped by a call in one branch of a tensor if counts both branches",
    "pythonic.walrus_in_while": "walrus in a while condition: UnboundLocalError inside the converted loop",
    # lists
    "containers.mutates_argument_list": _LIST + "a list argument appended to in a tensor if: the appends "
                                                "do not reach the caller's list",
    # lists in tensor loops
    "containers.namedtuple_result": "namedtuples from the two branches of a tensor if are refused as different Python values",
    # control flow inside try/with, loop else clauses
    "returns.return_inside_with_in_tensor_if": _BLOCK + "return inside with inside a tensor if is refused",
    # Paddle-style scalars and dtypes
    # gradients
    # ops and APIs
    "ops.add_n_terms": _OP + "d2s.add_n",
    # generators
    # other silent differences
    "closures.python_if_binds_list_then_loop_mutates": "a list bound in one branch of a Python if, then appended "
                                                       "in a tensor loop, is refused as undefined",
    "closures.method_on_helper_object": "a method setting an attribute inside a tensor if: internal KeyError "
                                        "'var ... is not defined in this program'",
    "builtins_and_indexing.nested_function_returns_early_in_loop": "return of a Python int from a tensor if in a "
                                                                   "Python loop is refused as 'defined only in the "
                                                                   "true branch'",
    "pythonic.raise_in_tensor_branch": "raise in one branch of a tensor if fires while tracing, on inputs where "
                                       "eager returns",
    "returns.return_different_python_types_from_loop": "refusal message names the converter's 'retval'",
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
}
