"""Errors from converted code point at the user's original file and line, naming the problem."""
import traceback

import numpy as np
import pytest

import d2s
from convert_helpers import build, check, t
from d2s.convert import ConvertError
from d2s.static import InputSpec
from d2s.transformers import ConversionError, SourceUnavailable, convert_function

X = t([1.0, 2.0])
SPEC = InputSpec([2])


def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def one_branch_used_after(x):
    if x.sum() > 0:
        y = x * 2
    return y


def test_name_defined_in_one_branch_and_used_after():
    """The program carries a flag saying whether the branch taken bound ``y``; reading it
    where it is not bound raises Python's UnboundLocalError at the user's line, at run time."""
    converted = d2s.jit.to_static(one_branch_used_after)
    np.testing.assert_allclose(converted(X).numpy(), one_branch_used_after(X).numpy())
    with pytest.raises(UnboundLocalError):
        one_branch_used_after(-X)
    with pytest.raises(UnboundLocalError) as e:
        converted(-X)
    msg = str(e.value)
    assert "cannot access local variable 'y'" in msg
    assert f'{__file__}:{_line_of(one_branch_used_after, "return y")}' in msg


def one_branch_unused_after(x):
    if x.sum() > 0:
        z = x * 2  # noqa: F841
    return x


def test_name_defined_in_one_branch_unused_after_is_fine():
    check(one_branch_unused_after, X, -X)


def different_structures(x):
    if x.sum() > 0:
        r = (x, x)
    else:
        r = x
    return r


def test_branches_with_different_structures():
    with pytest.raises(ConvertError, match="'r' has a different structure"):
        build(convert_function(different_structures).fn, SPEC)


def different_dtypes(x):
    if x.sum() > 0:
        r = x
    else:
        r = d2s.cast(x, "int64")
    return r


def test_branches_with_different_dtypes():
    with pytest.raises(ConvertError, match="'r' has dtype float32 in the true branch .* int64"):
        build(convert_function(different_dtypes).fn, SPEC)


def returns_different_dtypes(x):
    if x.sum() > 0:
        return x
    return d2s.cast(x, "int64")


def test_returns_with_different_dtypes():
    with pytest.raises(ConvertError, match="dtype"):
        build(convert_function(returns_different_dtypes).fn, SPEC)


def loop_var_changes_dtype(x):
    while x.sum() < 10:
        x = d2s.cast(x, "float64") * 2
    return x


def test_loop_variable_changing_dtype():
    with pytest.raises(ConvertError) as e:
        build(convert_function(loop_var_changes_dtype).fn, SPEC)
    assert "loop variable 'x' changes dtype from float32 to float64" in str(e.value)
    assert f'line {_line_of(loop_var_changes_dtype, "while x.sum()")}' in str(e.value)


def generator(x):
    yield x


def test_yield_is_rejected_at_its_line():
    with pytest.raises(ConversionError) as e:
        convert_function(generator)
    assert "`yield`" in str(e.value)
    assert e.value.lineno == _line_of(generator, "yield x")
    assert e.value.filename == __file__


async def coroutine(x):
    return x


def test_async_is_rejected():
    with pytest.raises(ConversionError, match="async"):
        convert_function(coroutine)


def try_around_tensor_if(x):
    try:
        if x.sum() > 0:
            x = x + 1
    except ValueError:
        pass
    return x


def test_try_around_tensor_control_flow_converts():
    check(try_around_tensor_if, X, -X)


def try_return_under_tensor_if(x):
    if x.sum() > 0:
        try:
            x = x + 1
        finally:
            return x
    return x


def with_around_tensor_while(x):
    with d2s.no_grad():
        while x.sum() < 5:
            x = x * 2
    return x


def test_with_around_tensor_control_flow_converts():
    check(with_around_tensor_while, X, t([3.0, 4.0]), t([0.1, 0.2]))


COUNTER = 0


def global_write(x):
    global COUNTER
    if x.sum() > 0:
        COUNTER = COUNTER + 1
    return x


def test_global_write_under_tensor_if():
    with pytest.raises(ConvertError, match="global/nonlocal name 'COUNTER'"):
        build(convert_function(global_write).fn, SPEC)


def test_global_write_under_python_if_works():
    global COUNTER
    COUNTER = 0
    convert_function(global_write).fn(X)
    assert COUNTER == 1


def for_else_tensor(m):
    acc = m[0]
    for row in m:
        acc = acc + row
    else:
        acc = acc * 2
    return acc


def test_for_else_over_tensor():
    # loop `else` clauses are lowered (tests/transformers/test_loop_else.py), no longer pinned
    check(for_else_tensor, t([[1.0, 2.0], [3.0, 4.0]]))


def while_else_tensor(x):
    while x.sum() < 10:
        x = x * 2
    else:
        x = x + 1
    return x


def test_while_else_with_tensor_condition():
    check(while_else_tensor, X)


@pytest.mark.parametrize("fn, spec, construct, text", [
    (try_return_under_tensor_if, SPEC, "holding a `return` inside a `try` block's handlers, `else` or `finally`",
     "if x.sum() > 0"),
    (global_write, SPEC, "global/nonlocal name 'COUNTER'", "if x.sum() > 0"),
])
def test_pinned_control_flow_errors_point_at_the_statement_line(fn, spec, construct, text):
    # the error names the construct and marks the if/while/for line itself, not its body's
    # last line
    with pytest.raises(ConvertError) as e:
        build(convert_function(fn).fn, spec)
    msg = str(e.value)
    assert construct in msg
    assert f'line {_line_of(fn, text)}\n' in msg
    assert text in msg


def test_source_unavailable_for_exec_defined_functions():
    ns = {}
    exec("def f(x):\n    return x\n", ns)
    with pytest.raises(SourceUnavailable):
        convert_function(ns["f"])
    exec("g = lambda x: x\n", ns)  # a lambda in a file converts; one without source cannot
    with pytest.raises(SourceUnavailable):
        convert_function(ns["g"])


def fails_inside(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = x.no_such_method()
    return y


def test_exceptions_show_the_users_frame_and_line():
    with pytest.raises(AttributeError) as e:
        convert_function(fails_inside).fn(-X)
    frames = traceback.extract_tb(e.value.__traceback__)
    user = [f for f in frames if f.filename == __file__]
    assert user[-1].lineno == _line_of(fails_inside, "x.no_such_method()")
    assert "no_such_method" in user[-1].line


def may_fall_off_the_end(x):
    c = x.sum() > 0
    if c:
        return x
    if not c:
        return -x


def test_return_value_mismatch_names_the_return_value_not_a_generated_variable():
    # the converter cannot know `c` and `not c` cover every case: falling off the end returns None
    with pytest.raises(ConvertError) as e:
        build(convert_function(may_fall_off_the_end).fn, SPEC)
    msg = str(e.value)
    assert "'the return value'" in msg and "retval" not in msg
    assert f'line {_line_of(may_fall_off_the_end, "if not c")}' in msg
