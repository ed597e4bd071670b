"""d2s/convert/control_flow.py and mixed_numbers.py: a value that is a Python number on some
runs and a tensor on others (builtin ``min``/``max`` of a tensor and a number, ``v = 0.0`` then
``v = x.mean()`` in a tensor `if`) keeps being one or the other, run by run, through a SECOND
tensor `if` that reads, rebinds or only carries it; numbers of two types from the two sides of a
tensor `if` come back as that type. Converted vs eager on inputs taking every path: the same
Python types and the same values exactly, or eager's error; what a program cannot reproduce
raises at the user's line."""
import pytest

import d2s
from convert_helpers import assert_same_outcome

XS = [d2s.tensor(v) for v in ([1.0, 2.0], [-1.0, -2.0], [0.1, 0.2], [0.0, 0.0], [0.3, 0.3], [0.7, 3.0, -0.2])]


def min_then_scaled_in_if(x):
    m = min(x.sum(), 0.5)
    if x.max() > 1:
        m = m * 2
    return m


def mean_or_zero_then_shifted(x):
    v = 0.0
    if x.sum() > 0:
        v = x.mean()
    if x.max() > 1:
        v = v + 1
    return v


def carried_through_both_branches(x):
    v = 0.0
    if x.sum() > 0:
        v = x.mean()
    if x.max() > 1:
        y = v
    else:
        y = v * 2
    return y


def number_rebound_in_second_if(x):
    m = max(x.sum(), 0.5)
    if x.max() > 0.25:
        m = 1.0
    return m


def tensor_rebound_in_second_if(x):
    m = min(x.sum(), 0.5)
    if x.max() > 0.25:
        m = x.max()
    return m


def carried_untouched(x):
    m = min(x.sum(), 0.5)
    if x.max() > 1:
        y = x * m
    else:
        y = x
    return m, y


def divided_after_second_if(x):
    m = max(x.sum(), 0.0)
    if x.max() > 1:
        m = m * 2
    return 1.0 / m


def in_a_dict_and_ternary(x):
    best = min(x.mean(), 0.25)
    stats = {"best": best if x.sum() > 0.5 else 0.0, "n": 1}
    return stats


def int_or_float(x):
    if x.sum() > 0:
        v = 1
    else:
        v = 0.5
    return v, v * 2, v / 2, -v, v > 0.7, x * v


def int_of_tensor_or_float(x):
    if x.sum() > 0:
        v = int(x.sum())
    else:
        v = 0.5
    return v


def ternary_int_or_float(x):
    return 1 if x.sum() > 0 else 0.5


def both_mixed(x):
    m = min(x.sum(), 0.5)
    n = max(x.mean(), 0.25)
    return m + n, m * n, m / n


# (the unused tensor side of a number run divides by zero too: numpy's warning, not the result)
@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value")
@pytest.mark.parametrize("fn", [
    min_then_scaled_in_if, mean_or_zero_then_shifted, carried_through_both_branches, number_rebound_in_second_if,
    tensor_rebound_in_second_if, carried_untouched, divided_after_second_if, in_a_dict_and_ternary,
    int_or_float, int_of_tensor_or_float, ternary_int_or_float, both_mixed])
def test_a_number_on_some_runs_stays_one_through_a_second_tensor_if(fn):
    static = d2s.jit.to_static(fn)
    for x in XS:
        assert_same_outcome(fn, static, x)


def test_the_inputs_take_both_kinds():
    # (the test above must see the number and the tensor: the inputs take both)
    kinds = {type(min_then_scaled_in_if(x)) for x in XS}
    assert kinds == {float, d2s.Tensor}
    assert {type(int_or_float(x)[0]) for x in XS} == {int, float}


def number_types_differ(x):
    v = 0.0
    if x.sum() > 0:
        v = x.mean()
    if x.max() > 1:
        v = 3
    return v


def isinstance_of_mixed(x):
    m = min(x.sum(), 0.5)
    return isinstance(m, float)


def type_of_mixed(x):
    m = min(x.sum(), 0.5)
    return type(m) is float


@pytest.mark.parametrize("fn, match", [
    (number_types_differ, "of type float and int depending on the data"),
    (isinstance_of_mixed, r"isinstance\(\) of a value that is a Python float on some runs and a tensor"),
    (type_of_mixed, r"type\(\) of a value that is a Python float on some runs and a tensor"),
])
def test_what_the_program_cannot_know_raises_at_the_users_line(fn, match):
    with pytest.raises(TypeError, match=match) as e:
        d2s.jit.to_static(fn)(XS[0])
    assert "test_control_flow_mixed_numbers.py" in str(e.value)


def converted_to_numbers(x):
    m = min(x.sum(), 0.1)
    return float(m), int(m), bool(m)


def test_float_int_bool_of_a_number_on_some_runs_use_the_number_exactly():
    # (the tensor holds 0.1 in float32; float() of the number run gives 0.1 itself)
    static = d2s.jit.to_static(converted_to_numbers)
    for v in ([1.0, 2.0], [-1.0, -2.0], [0.01, 0.02]):
        assert_same_outcome(converted_to_numbers, static, d2s.tensor(v))


def rounded(x):
    m = min(x.sum(), 0.1)
    return round(m)


def test_round_of_a_number_on_some_runs_raises_at_the_users_line():
    with pytest.raises(TypeError, match="round\\(\\) of a value that is a Python float on some runs") as e:
        d2s.jit.to_static(rounded)(XS[0])
    assert "test_control_flow_mixed_numbers.py" in str(e.value)


def returned_early_from_a_loop(x):
    m = min(x.sum(), 0.5)
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            return m
    return 0.0


def test_a_number_on_some_runs_returned_early_from_a_tensor_if():
    static = d2s.jit.to_static(returned_early_from_a_loop)
    xs = [d2s.tensor(v) for v in ([0.7, -1.0], [1.0, 2.0], [0.1, 0.2])]  # tensor, number, no early return
    for x in xs:
        assert_same_outcome(returned_early_from_a_loop, static, x)
    assert {type(returned_early_from_a_loop(x)) for x in xs} == {float, d2s.Tensor}


def int_or_float_then_second_if(x):
    v = 1 if x.sum() > 0 else 0.5
    if x.max() > 1:
        v = v * 2
    w = v
    if x.min() < 0:
        w = v * 0.5
    return v, w


def int_or_float_then_tensor_in_second_if(x):
    v = 1 if x.sum() > 0 else 0.5
    if x.max() > 1:
        v = x.max()
    return v


def test_an_int_on_some_runs_and_a_float_on_others_through_a_second_tensor_if():
    static = d2s.jit.to_static(int_or_float_then_second_if)
    for x in XS:
        assert_same_outcome(int_or_float_then_second_if, static, x)
    with pytest.raises(TypeError, match="two number types, not three kinds") as e:
        d2s.jit.to_static(int_or_float_then_tensor_in_second_if)(XS[0])
    assert "test_control_flow_mixed_numbers.py" in str(e.value)
