"""d2s/static/weak_index.py: arithmetic on the tensors that stand for Python numbers in a
program (``float(t)``, ``t.item()``, ``int(t)``, loop counters, ``min``/``max`` of a tensor and
a number) computes what Python computes: ``/``, ``//``, ``%`` by zero and ``0.0 ** -1`` raise
ZeroDivisionError with Python's message where eager code does (a tensor op would give inf or
nan, or fail in an integer kernel on a run whose number is not used), ``int / int`` is a
double, ``int ** -1`` a float. Converted vs eager on inputs that take every path: the same
types and values exactly, or eager's error."""
import pytest

import d2s
from convert_helpers import assert_same_outcome

XS = [d2s.tensor(v) for v in ([1.0, 2.0], [-1.0, -2.0], [0.1, 0.2], [0.0, 0.0], [0.3, -0.3], [0.7, 3.0, -0.2])]


def min_chose_zero(x):
    m = min(x.sum(), 0.0)
    return 1.0 / m


def max_chose_zero(x):
    m = max(x.sum(), 0.0)
    return 1.0 / m, x / m


def floordiv_by_int_zero(x):
    m = max(x.sum(), 0)
    return 1 // m


def mod_and_pow(x):
    m = max(x.sum(), 0.0)
    return 5.0 % m, m ** -1


def number_divided_by_constant_zero(x):
    m = max(x.sum(), 0.0)
    return m / 0.0


def zero_or_mean(x):
    v = 0.0
    if x.sum() > 0:
        v = x.mean()
    return 1.0 / v


def over_float_of_sum(x):
    return 1.0 / float(x.sum()), 2 // x.sum().item()


def modulo_int_of_sum(x):
    return 7 % int(x.sum())


def running_mean(x):
    total = 0.0
    n = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            total += x[i].item()
            n += 1
    return total / n


def positive_ratio(x):
    pos = 0
    n = 0
    for i in range(x.shape[0]):
        n += 1
        if x[i] > 0:
            pos += 1
    return pos / n, n // 2, n % 2, -pos // 2


def counter_in_tensor_while(x):
    k = 0
    while x.sum() > k:
        k += 1
    return 10 / (k - 3)


def running_max_of_items(x):
    best = -1.0
    for i in range(x.shape[0]):
        best = max(best, x[i].item())
    return best


def constant_negative_power(x):
    n = int(x.sum())
    return n ** -1 if n != 0 else 0.0


# (the unused tensor side of a number run divides by zero too: numpy's warning, not the result)
@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value")
@pytest.mark.parametrize("fn", [
    min_chose_zero, max_chose_zero, floordiv_by_int_zero, mod_and_pow, number_divided_by_constant_zero,
    zero_or_mean, over_float_of_sum, modulo_int_of_sum, running_mean, positive_ratio, counter_in_tensor_while,
    constant_negative_power])
def test_python_arithmetic_on_number_stand_ins(fn):
    static = d2s.jit.to_static(fn)
    raised = 0
    for x in XS:
        try:
            fn(x)
        except ZeroDivisionError:
            raised += 1
        assert_same_outcome(fn, static, x)
    if fn not in (constant_negative_power, positive_ratio):
        assert 0 < raised < len(XS), fn  # the inputs take both the raising and the computing path


def test_max_of_two_number_stand_ins_keeps_the_double():
    # max(best, x[i].item()) where both stand for Python floats: float64 (where() of two number
    # stand-ins gives the default float32, as d2s.where(c, 0.5, 0.7) does)
    static = d2s.jit.to_static(running_max_of_items)
    for v in ([0.1, 0.2], [0.3, -0.3], [-2.0, -3.0]):
        assert_same_outcome(running_max_of_items, static, d2s.tensor(v, dtype=d2s.float64))


def int_to_a_tensor_power(x):
    n = int(x.sum())
    return 2 ** n


def test_an_int_to_a_negative_int_power_known_only_at_run_time_raises_at_the_users_line():
    static = d2s.jit.to_static(int_to_a_tensor_power)
    assert_same_outcome(int_to_a_tensor_power, static, d2s.tensor([1.0, 2.0]))  # 2 ** 3: an int
    with pytest.raises(ValueError, match="a negative int power is a float in Python") as e:
        static(d2s.tensor([-1.0, -2.0]))
    assert "test_weak_index_python_arith.py" in str(e.value)


def test_the_zero_division_error_names_the_users_line():
    with pytest.raises(ZeroDivisionError, match="float division by zero") as e:
        d2s.jit.to_static(min_chose_zero)(d2s.tensor([1.0, 2.0]))
    assert "test_weak_index_python_arith.py" in str(e.value)


def counted(x):
    c = 0
    for v in x:
        if v > 0:
            c += 1
    return c == 0, c > 1, c != 2, float(x.sum()) <= 0.5, c * 1.5


def test_comparisons_of_number_stand_ins_are_python_bools():
    static = d2s.jit.to_static(counted)
    for x in XS:
        assert_same_outcome(counted, static, x)
