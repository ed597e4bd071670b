"""Corpus cases that fail on today's converter, each with the reason.

Each entry makes its case an xfail(strict=True): when a fix lands the case passes, the strict
xfail turns red, and the entry must be deleted. The goal is an empty table. Reasons start with
a short cause tag so the table reads grouped.
"""

_UNDEF = "undefined: "
_CELL = "closure cell: "
_PYNUM = "python number out: a data-dependent Python int/float/len comes back as a 0-d tensor"
_LIST = "tensor list: "
_BLOCK = "try/with/else: "
_SHAPE1 = "shape-[1] scalar: "
_WEAK = "weak counter: the int64 loop index promotes an int32 accumulator; conversion refuses the dtype change"
_OP = "missing op: "

KNOWN_FAILING = {
    # a name bound on one path only, or only in a loop that runs zero times
    "conditionals.python_name_bound_in_one_branch": _UNDEF + "returns the placeholder <undefined i> where Python raises UnboundLocalError",
    "conditionals.tensor_name_bound_in_one_branch": _UNDEF + "refused at conversion, though eager answers on inputs taking the true branch",
    "loops.loop_creates_variable": _UNDEF + "zero-trip tensor while returns zeros where Python raises UnboundLocalError",
    "loops.for_creates_variable": _UNDEF + "zero-trip tensor for returns zeros where Python raises UnboundLocalError",
    "loops.loop_variable_after_loop": _UNDEF + "zero-trip tensor for leaves its target defined (0)",
    "loops.none_before_tensor_loop": _UNDEF + "h = None before a zero-trip tensor loop comes back as zeros, not None",
    # converting a body into a function changes which cell a closure reads
    "closures.closure_sees_loop_updates": _CELL + "a lambda reading the loop counter sees its stale value",
    "closures.lambdas_capture_late": _CELL + "lambdas appended in a loop do not see the final counter (late binding)",
    "closures.closure_over_tensor_updated_in_loop": _CELL + "a lambda over a variable rebound in a Python loop sees the old value",
    "closures.nonlocal_counter": _CELL + "a nonlocal counter bumped by a call in one branch of a tensor if counts both branches",
    "pythonic.walrus_in_while": "walrus in a while condition: UnboundLocalError inside the converted loop",
    # Python numbers computed from data
    "loops.while_counter": _PYNUM,
    "loops.break_on_tensor_condition": _PYNUM,
    "loops.counter_python_int_returned": _PYNUM,
    "loops.while_tensor_condition": _PYNUM,
    "returns.return_from_nested_loops": _PYNUM,
    "returns.return_python_number_in_tensor_branch": _PYNUM,
    "returns.return_int_vs_tensor": _PYNUM,
    "containers.len_of_list_grown_in_tensor_loop": _PYNUM,
    "containers.pop_in_loop": _PYNUM + " (and pop runs once at trace time: (8, 3) instead of (7, 2) for n=2)",
    "modules.GRUUntilSmall": _PYNUM,
    "containers.mutates_argument_list": _PYNUM + " (len of a list argument appended to in a tensor if, "
                                                 "when it is not refused)",
    "scalars.tensor_counter_used_as_float_factor": _PYNUM,
    "scalars.shape1_loop_bound": _PYNUM,
    "pythonic.attribute_update_on_simple_object": _PYNUM + " (an attribute set in a tensor if)",
    "pythonic.float_of_tensor_in_python": _PYNUM + " (float() of a symbolic tensor)",
    "scalars.item_in_python_logic": ".item() of a symbolic tensor gives a Tensor; round() then fails with a "
                                    "TypeError that names no line",
    # lists in tensor loops
    "containers.append_in_tensor_loop_return_list": _LIST + "the internal TensorArray object is returned instead of a list",
    "containers.list_concat_in_tensor_loop": _LIST + "s = s + [t] raises TypeError naming 'TensorArray'",
    "containers.list_extend_in_loop": _LIST + ".extend raises AttributeError naming 'TensorArray'",
    "containers.iterate_list_built_in_tensor_loop": _LIST + "for v in a list appended in a tensor loop hangs",
    "containers.list_literal_with_conditional": _LIST + "l = [x[0]] if pred else []; list(l) hangs",
    "containers.pop_inside_tensor_if_inside_loop": _LIST + "pop in a tensor if in a tensor loop: internal KeyError 'var ... is not defined in this program'",
    "containers.list_index_assignment": _LIST + "buf[i] = ... with a tensor i in a tensor loop: SymbolicValueError",
    "containers.python_list_read_with_tensor_index": _LIST + "reading a Python list with a tensor index in a tensor loop: SymbolicValueError",
    "containers.dict_key_first_set_in_tensor_loop": "dict key first assigned in a tensor loop is refused (loop vars do not fit)",
    "containers.namedtuple_result": "namedtuples from the two branches of a tensor if are refused as different Python values",
    # control flow inside try/with
    "pythonic.try_except_around_tensor_if": _BLOCK + "a tensor if inside try is refused",
    "pythonic.try_finally_counts": _BLOCK + "a tensor if inside try/finally is refused",
    "pythonic.with_no_grad_tensor_if": _BLOCK + "a tensor if inside with is refused",
    "pythonic.with_custom_context_manager": _BLOCK + "a tensor if inside with is refused",
    "returns.return_inside_try_in_if": _BLOCK + "return inside try inside a Python if is refused",
    "returns.return_inside_with_in_tensor_if": _BLOCK + "return inside with inside a tensor if is refused",
    # Paddle-style scalars and dtypes
    "scalars.shape1_or_predicate": _SHAPE1 + "`or` gives bool[] and bool[1] branches",
    "scalars.shape1_and_predicate": _SHAPE1 + "`and` gives bool[1] and bool[] branches",
    "scalars.shape1_while_with_break": _SHAPE1 + "break in while i < 10 with i of shape [1]",
    "scalars.python_number_becomes_shape1_tensor": _SHAPE1 + "a Python number reassigned a [1] tensor in a tensor loop is refused",
    "builtins_and_indexing.int_accumulator_becomes_float_tensor": _SHAPE1 + "s = 0 then s = s + x ([3]) in a tensor "
                                                                  "loop is refused for its rank change",
    "loops.int32_accumulator_with_loop_index": _WEAK,
    "scalars.weak_counter_keeps_int32": _WEAK,
    # gradients
    # ops and APIs
    "ops.add_n_terms": _OP + "d2s.add_n",
    "ops.cat_alias": _OP + "d2s.cat",
    "ops.chunk_halves": _OP + "d2s.chunk",
    "ops.identity_op": _OP + "d2s.identity",
    "ops.pad_in_branch": _OP + "d2s.pad",
    "ops.shape_as_tensor": _OP + "d2s.shape",
    "ops.unstack_rows": _OP + "d2s.unstack",
    "modules.HeadsByName": _OP + "nn.ModuleDict",
    "ops.print_op_in_loop": _OP + "d2s.print",
    "ops.concat_with_list_of_symbolic": "a list holding a symbolic scalar is not packed into a tensor (SymbolicValueError)",
    "ops.tensor_of_symbolic_scalars": "d2s.tensor([n, n + 1]) of symbolic scalars raises SymbolicValueError",
    "ops.zeros_with_tensor_shape": "d2s.zeros with a 1-D int tensor shape fails eagerly (ValueError) and in programs",
    # other silent differences
    "closures.python_if_binds_list_then_loop_mutates": "a list bound in one branch of a Python if, then appended "
                                                       "in a tensor loop, is refused as undefined",
    "closures.global_list_append": "a module-level list appended in a loop is treated as a local (UnboundLocalError)",
    "closures.method_on_helper_object": "a method setting an attribute inside a tensor if: internal KeyError "
                                        "'var ... is not defined in this program'",
    "builtins_and_indexing.nested_function_returns_early_in_loop": "return of a Python int from a tensor if in a "
                                                                   "Python loop is refused as 'defined only in the "
                                                                   "true branch'",
    "pythonic.mutates_input_tensor_in_branch": "SILENT: x[0] = 0 on an input tensor inside a tensor if does not "
                                               "reach the caller's tensor",
    "pythonic.raise_in_tensor_branch": "raise in one branch of a tensor if fires while tracing, on inputs where "
                                       "eager returns",
    "returns.return_different_python_types_from_loop": "refusal message names the converter's 'retval'",
}

# Cases where raising a clear error at the user's line (instead of eager's answer) is the
# accepted behaviour, because what eager returns is a Python value or structure chosen by
# tensor data, which no static program can return. The error must name the corpus file.
REFUSED = {
    "closures.lambda_in_branch": "a function chosen by a tensor condition",
    "returns.return_none_or_tensor": "None or a tensor, chosen by tensor data",
    "returns.bare_return_in_branch": "None or a tensor, chosen by tensor data",
    "returns.return_different_python_types_from_loop": "a Python string chosen by tensor data",
    "scalars.int_division_gives_float": "a dtype chosen by tensor data",
    "ops.reshape_with_computed_shape": "a rank chosen by tensor data",
    "containers.mutates_argument_list": "a list length chosen by tensor data",
    "containers.mutates_argument_dict": "a dict's keys chosen by tensor data",
    "containers.comprehension_with_tensor_filter": "a list length chosen by tensor data",
    "scalars.item_in_python_logic": "Python arithmetic (round) on a number read from tensor data",
    "pythonic.float_of_tensor_in_python": "a Python float read from tensor data",
    "pythonic.global_assigned_in_tensor_branch": "a global's Python value chosen by tensor data",
    "pythonic.recursion_with_tensor_condition": "a recursion depth chosen by tensor data",
}
