"""Reading a variable that is not bound: converted code raises what Python raises.

With Python values the converted function raises UnboundLocalError (or NameError for a global)
where eager does, never returning a placeholder. Inside programs, a variable first bound in a
tensor loop or in one branch of a tensor ``if`` carries a run-time "bound" flag: reading it on
a run where it is not bound raises UnboundLocalError naming it and the line; otherwise the
value equals eager's. Each case runs eagerly and converted on inputs taking every path.
"""
import inspect

import numpy as np
import pytest

import d2s


def _outcome(fn, args):
    try:
        return "value", fn(*args)
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return "error", e


def _same(fn, *input_sets):
    """Converted ``fn`` (to_static, so tensor inputs build a program) equals eager on each input
    set: same value and type, or an exception of the same type."""
    converted = d2s.jit.to_static(fn)
    for args in input_sets:
        args = args if isinstance(args, tuple) else (args,)
        kind, expected = _outcome(fn, args)
        got_kind, got = _outcome(converted, args)
        assert got_kind == kind, (args, expected, got)
        if kind == "error":
            assert isinstance(got, type(expected)), (args, expected, got)
            continue
        if isinstance(expected, d2s.Tensor):
            assert isinstance(got, d2s.Tensor) and got.dtype == expected.dtype
            np.testing.assert_allclose(got.numpy(), expected.numpy())
        elif isinstance(got, d2s.Tensor) and isinstance(args[-1], d2s.Tensor):
            # a Python number computed in a tensor loop is a 0-d tensor of the program (the
            # loop counter is one); its value must still be eager's
            assert got.ndim == 0 and got.item() == expected, (args, expected, got)
        else:
            assert type(got) is type(expected) and got == expected, (args, expected, got)


def _line(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


# ------------------------------------------------------------------ Python values
def bound_in_one_branch(c):
    if c:
        i = 1
    return i


def bound_in_else_only(c):
    if c:
        pass
    else:
        k = 2
    return k + 1


def bound_in_python_loop(n):
    for j in range(n):
        v = j * 2
    return v


def bound_in_python_while(n):
    i = 0
    while i < n:
        w = i
        i += 1
    return w


def augmented_before_bound(c):
    if c:
        s = 1
    s += 1
    return s


def global_never_bound(c):
    if c:
        return NOT_DEFINED_ANYWHERE  # noqa: F821
    return 0


def read_inside_nested_if(c, d):
    if c:
        q = 3
    if d:
        return q * 2
    return -1


def test_python_values_raise_what_python_raises():
    _same(bound_in_one_branch, True, False)
    _same(bound_in_else_only, True, False)
    _same(bound_in_python_loop, 0, 3)
    _same(bound_in_python_while, 0, 2)
    _same(augmented_before_bound, True, False)
    _same(global_never_bound, True, False)
    _same(read_inside_nested_if, (True, True), (False, True), (False, False), (True, False))


def test_python_unbound_error_names_variable_and_line():
    with pytest.raises(UnboundLocalError) as e:
        d2s.jit.to_static(bound_in_one_branch)(False)
    msg = str(e.value)
    assert "cannot access local variable 'i' where it is not associated with a value" in msg
    assert f"line {_line(bound_in_one_branch, 'return i')}" in msg


def test_no_placeholder_is_ever_returned():
    out = d2s.jit.to_static(bound_in_python_loop)
    with pytest.raises(UnboundLocalError):
        out(0)
    assert out(2) == 2


# ------------------------------------------------------------------ tensor loops and ifs
def while_binds(n):
    i = d2s.tensor(0)
    while i < n:
        v = d2s.ones([2]) * i
        i = i + 1
    return v


def for_range_binds(n):
    for k in range(n):
        v = d2s.ones([2]) * k
    return v


def for_binds_python_number(n):
    for k in range(n):
        c = k + 1
    return c


def loop_binds_read_on_one_path(n):
    i = d2s.tensor(0)
    while i < n:
        v = d2s.ones([3]) + i
        i = i + 1
    if n > 0:
        return v
    return d2s.zeros([3])


def loop_binds_in_tensor_if(x, n):
    for k in range(n):
        if x.sum() > k:
            y = x * k
    return y


def tensor_if_one_branch(x):
    if x.sum() > 0:
        y = x * 2
    return y


def tensor_if_else_only(x):
    if x.sum() > 0:
        pass
    else:
        y = x - 1
    return y + 1


def tensor_if_unbound_not_read(x):
    if x.sum() > 0:
        z = x * 2  # noqa: F841
    return x


def read_in_comprehension_after_loop(x, n):
    for k in range(n):
        v = x * k
    return [v + j for j in range(2)][1]


def read_in_lambda_after_loop(x, n):
    i = d2s.tensor(0)
    while i < n:
        v = x + i
        i = i + 1
    get = lambda: v * 2.0  # noqa: E731
    return get()


def python_lambda_reads_unbound(c):
    if c:
        w = 3
    f = lambda: w + 1  # noqa: E731
    return f()


N = [d2s.tensor(np.int64(k)) for k in range(4)]
X = d2s.tensor([1.0, 2.0, -0.5])


def test_zero_trip_tensor_loops_raise_at_run_time():
    _same(while_binds, *N)
    _same(for_range_binds, *N)
    _same(for_binds_python_number, *N)
    _same(loop_binds_read_on_one_path, *N)
    _same(loop_binds_in_tensor_if, *[(X, n) for n in N], *[(-X, n) for n in N])


def test_reads_inside_comprehensions_and_lambdas_are_checked_too():
    _same(read_in_comprehension_after_loop, *[(X, n) for n in N])
    _same(read_in_lambda_after_loop, *[(X, n) for n in N])
    _same(python_lambda_reads_unbound, True, False)


def test_variables_bound_in_one_branch_of_a_tensor_if():
    _same(tensor_if_one_branch, X, -X)
    _same(tensor_if_else_only, X, -X)
    _same(tensor_if_unbound_not_read, X, -X)


def test_run_time_error_names_variable_and_line():
    converted = d2s.jit.to_static(while_binds)
    converted(N[2])  # builds the program on a run that binds v
    with pytest.raises(UnboundLocalError) as e:
        converted(N[0])  # same program, zero trips
    msg = str(e.value)
    assert "cannot access local variable 'v'" in msg
    assert f"{__file__}:{_line(while_binds, 'return v')}" in msg
    assert len(converted.programs) == 1


def test_program_holds_one_check_and_still_runs_after_an_error():
    converted = d2s.jit.to_static(for_range_binds)
    with pytest.raises(UnboundLocalError):
        converted(N[0])
    np.testing.assert_allclose(converted(N[3]).numpy(), for_range_binds(N[3]).numpy())
    ops = [op.type for op in converted.programs[0].block.ops]
    assert ops.count("assert") == 1


# ------------------------------------------------------------------ h = None before a tensor loop
def none_then_loop_checked(x, n):
    h = None
    for k in range(n):
        h = x if h is None else h + x
    if h is None:
        return x * 0.0 - 1.0
    return h * 2.0


def none_then_loop_used(x, n):
    h = None
    i = d2s.tensor(0)
    while i < n:
        h = x * i if h is None else h + x
        i = i + 1
    return h * 2.0


def none_then_loop_returned(x, n):
    h = None
    i = d2s.tensor(0)
    while i < n:
        h = x * i if h is None else h + x
        i = i + 1
    return h, i


def none_then_loop_is_not_none(x, n):
    h = None
    for k in range(n):
        h = x * k if h is None else h * 0.5
    return h is not None


def test_none_before_a_tensor_loop_stays_none_on_zero_trips():
    cases = [(X, n) for n in N]
    _same(none_then_loop_checked, *cases)
    _same(none_then_loop_used, *cases)
    converted = d2s.jit.to_static(none_then_loop_returned)
    for x, n in cases:
        got, expected = converted(x, n), none_then_loop_returned(x, n)
        assert (got[0] is None) == (expected[0] is None)
        if expected[0] is not None:
            np.testing.assert_allclose(got[0].numpy(), expected[0].numpy())
        assert got[1].item() == expected[1].item()
    assert len(converted.programs) == 1
    converted = d2s.jit.to_static(none_then_loop_is_not_none)
    for x, n in cases:
        assert bool(converted(x, n)) == none_then_loop_is_not_none(x, n)


def test_saved_program_keeps_the_check(tmp_path):
    """Deployment with the numpy-only runtime raises the same UnboundLocalError."""
    import d2s_runtime
    path = str(tmp_path / "while_binds")
    d2s.jit.save(d2s.jit.to_static(while_binds), path, input_spec=[d2s.jit.InputSpec([], "int64", name="n")])
    runner = d2s_runtime.load(path)
    np.testing.assert_allclose(runner(np.int64(3)), while_binds(N[3]).numpy())
    with pytest.raises(UnboundLocalError):
        runner(np.int64(0))


# ------------------------------------------------------------------ a Python loop's index in a tensor loop
def layer_index_after_inner_loop(x, layers):
    # the index a Python `for` leaves, read after it inside a tensor `while` (unbound on runs
    # the while loop does not enter): it was carried as a constant, so a value that changed
    # between iterations failed the build ("MaybeUnbound(0, ...)" vs "MaybeUnbound(2, ...)")
    steps = 0
    while steps < 3 and x.sum() < 30.0:
        steps += 1
        for i in range(layers):
            x = x + 1.0
        else:
            x = x + i
    return x, i


def test_a_python_loop_index_read_inside_a_tensor_loop_equals_eager():
    converted = d2s.jit.to_static(layer_index_after_inner_loop)
    for args in ((d2s.ones(3), 3), (d2s.ones(3), 1), (d2s.ones(3), 3)):
        (want, want_i), (got, got_i) = layer_index_after_inner_loop(*args), converted(*args)
        assert type(got_i) is int and got_i == want_i
        assert got.numpy().tobytes() == want.numpy().tobytes()
    with pytest.raises(UnboundLocalError):  # the while loop not entered: `i` never bound
        converted(d2s.full((3,), 20.0), 3)
