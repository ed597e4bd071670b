"""d2s/convert/loops.py: a value that is a Python number on some runs and a tensor on others
(``m = min(x.sum(), 0.5)``) and that a tensor loop carries stays one or the other, run by run,
after the loop (the loop carries which one it is and the number exactly), including when the
loop runs zero times. Converted vs eager: the same types and values exactly."""
import pytest

import d2s
from convert_helpers import assert_same_outcome

XS = [d2s.tensor(v, dtype=d2s.float64) for v in ([1.0, 2.0], [-1.0, -2.0], [0.1, 0.2], [0.7, 3.0, -0.2])]


def raised_until_above(x):
    m = min(x.sum(), 0.5)
    while x.sum() > m:
        m = m + 1
    return m


def shifted_n_times(x, n):
    m = min(x.sum(), 0.5)
    for i in range(n):
        m = m + 1
    return m


def replaced_by_a_tensor(x, n):
    m = min(x.sum(), 0.5)
    for i in range(n):
        m = x.sum() * i
    return m


def used_to_scale(x, n):
    m = max(x.mean(), 0.25)
    for i in range(n):
        x = x * m
        m = m * 0.5
    return m, x


@pytest.mark.parametrize("fn", [shifted_n_times, replaced_by_a_tensor, used_to_scale])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_number_on_some_runs_carried_by_a_counted_loop(fn, n):
    static = d2s.jit.to_static(fn)
    for x in XS:
        assert_same_outcome(fn, static, x, d2s.tensor(n))


def test_a_number_on_some_runs_carried_by_a_tensor_while():
    static = d2s.jit.to_static(raised_until_above)
    for x in XS:
        assert_same_outcome(raised_until_above, static, x)
    assert {type(raised_until_above(x)) for x in XS} == {float, d2s.Tensor}


def made_an_int(x, n):
    m = min(x.sum(), 0.5)
    for i in range(n):
        m = 3
    return m


def test_a_number_of_another_type_raises_at_the_users_line():
    with pytest.raises(TypeError, match="one number type per value") as e:
        d2s.jit.to_static(made_an_int)(XS[0], d2s.tensor(2))
    assert "test_loops_mixed_numbers.py" in str(e.value)


def int_or_float_in_a_loop(x, n):
    v = 1 if x.sum() > 0 else 0.5
    for i in range(n):
        v = v + 1
    return v, v * 0.5


@pytest.mark.parametrize("n", [0, 2])
def test_an_int_on_some_runs_and_a_float_on_others_carried_by_a_loop(n):
    static = d2s.jit.to_static(int_or_float_in_a_loop)
    for x in XS:
        assert_same_outcome(int_or_float_in_a_loop, static, x, d2s.tensor(n))
