"""``print`` in converted code prints eager's sequence (issue 27, family 6): values, order and
count, on every call, with several prints per iteration, nested and zero-trip loops, branches,
f-strings with format specs, lists of tensors and Python-only arguments. Each case compares the
text a converted call prints with the eager call's, twice (the first call builds the program)."""
import contextlib
import io

import numpy as np
import pytest

import d2s

T = d2s.tensor


def _printed(fn, *args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args)
    return buf.getvalue()


def check_prints(fn, *input_sets):
    static = d2s.jit.to_static(fn)
    for args in input_sets:
        want = _printed(fn, *args)
        for _ in range(2):
            assert _printed(static, *args) == want, (args, want)
    return static


def several_per_iteration(x, n):
    i = 0
    print("start", n)
    while i < n:
        print("it", i, x)
        x = x + 1
        if x.sum() > 5:
            print("big", x.sum(), [x, i], (i,), {"x": x})
        print(f"after {i}: {x} sum={x.sum().item():.3f} [{i:>3d}] {i!r}", sep="", end="|\n")
        i += 1
    print("end")
    return x


def nested(x, n):
    for k in range(n):
        print("k", k)
        j = 0
        while j < k:
            print("  j", j, x[j], sep=":")
            j += 1
        if x[k] > 1.5:
            print("  skip")
            continue
        print("  done", k)
    return x


def branches(x):
    if x.sum() > 0:
        print("pos", x)
    else:
        print("neg", x, "constant")
    print("after")
    return x


def python_values_only(x, n):
    for _ in range(n):
        print("tick")  # no tensor among the arguments: still once per iteration, every call
    print("done", [1, 2], 0.5)
    return x


def unrolled_with_tensor_break(x):
    for k in range(4):
        print("step", k)
        if x.sum() > k:
            break
        x = x * 2
    return x


@pytest.mark.parametrize("n", [0, 1, 3])
def test_several_prints_per_iteration_with_fstrings_and_lists(n):
    check_prints(several_per_iteration, (T([1.0, 2.0]), T(n)))


def test_nested_loops_continue_and_zero_trips():
    x = T([1.0, 2.0, 0.5, 3.0])
    check_prints(nested, (x, T(4)), (x, T(0)), (x, T(2)))


def test_both_branches_and_python_only_prints():
    check_prints(branches, (T([1.0, 2.0]),), (T([-1.0, -2.0]),))
    check_prints(python_values_only, (T([1.0]), T(0)), (T([1.0]), T(3)))
    check_prints(unrolled_with_tensor_break, (T([0.5]),), (T([-0.5]),), (T([3.0]),))


def test_a_training_call_prints_once_and_gradients_are_eager_ones():
    static = d2s.jit.to_static(several_per_iteration)
    x, n = T([1.0, 2.0], requires_grad=True), T(2)
    want = _printed(lambda: several_per_iteration(T([1.0, 2.0]), n))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        static(x, n).sum().backward()
    assert buf.getvalue() == want
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


def format_spec_on_a_tensor(x, n):
    for _ in range(n):
        print(f"{x:.3f}")
    return x


def test_a_format_spec_on_a_tensor_is_eagers_type_error():
    with pytest.raises(TypeError):
        format_spec_on_a_tensor(T([1.0]), T(1))
    with pytest.raises(TypeError):
        d2s.jit.to_static(format_spec_on_a_tensor)(T([1.0]), T(1))


def numbers_on_some_runs(x):
    m = min(x.sum(), 0.5)
    v = 1 if x.sum() > 0 else 0.5
    print(m, v, [m], f"m={m} {m:.2f} v={v:.1f}")
    return x


def test_a_value_that_is_a_number_on_some_runs_prints_as_that_run_holds_it():
    # min() chose the number (printed 0.5) or the tensor (its repr), run by run; v an int or float
    check_prints(numbers_on_some_runs, (T([1.0, 2.0]),), (T([-1.0, -2.0]),), (T([0.1, 0.2]),))
