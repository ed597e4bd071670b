"""A Python number carried through nested tensor loops keeps its weak type (issue 27, family
1): ``total = 0`` before two nested tensor loops that add int32 products to it becomes an
int32 tensor, as eagerly (was: "changes dtype from int64 to int32"). Converted vs eager with
``check_exact`` (values, dtypes, Python types) on inputs that run every loop, the inner ones
zero times, and the outer one zero times."""
import pytest

import d2s
from d2s.user_errors import ConvertError

from convert_helpers import check_exact

T = d2s.tensor


def i32(v):
    return d2s.tensor(v, dtype="int32")


def total_of_products(n, m):
    total = 0
    while n > 0:
        n = n - 1
        k = m
        while k > 0:
            k = k - 1
            total += n * k
    return total


def nested_for_with_jumps(n, m):
    total, count, s = 0, 0, 0.0
    for i in range(n):
        for j in range(m):
            if j == 2:
                continue
            total += i * j
            s = s + 0.5
            count += 1
            if total > 20:
                break
    return total, count, s


def three_deep(n):
    t = 0
    for i in range(n):
        for j in range(n):
            for k in range(n):
                t = t + i * j * k
    return t


def float_carry(x, n):
    s = 0.0
    for i in range(n):
        for j in range(i + 1):
            s = s + x[j] * 0.5
    return s


def int_tensor_into_number(xs, n):
    acc = 0
    for i in range(n):
        j = 0
        while j < i:
            acc = acc + xs[j]
            j += 1
    return acc


@pytest.mark.parametrize("n,m", [(3, 2), (4, 5), (0, 2), (1, 1)])
def test_python_number_through_nested_while_loops(n, m):
    check_exact(total_of_products, [(i32(n), i32(m))])


@pytest.mark.parametrize("n,m", [(3, 4), (5, 5), (0, 3), (2, 1)])
def test_several_numbers_through_nested_for_loops_with_break_and_continue(n, m):
    check_exact(nested_for_with_jumps, [(i32(n), i32(m)), (T(n), T(m))])


@pytest.mark.parametrize("n", [0, 2, 3])
def test_three_nested_loops(n):
    check_exact(three_deep, [(i32(n),)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_float_number_takes_the_dtype_of_the_tensors_added_to_it(dtype):
    x = d2s.tensor([1.0, 2.0, 3.0], dtype=dtype)
    check_exact(float_carry, [(x, T(3)), (x, T(2)), (x, T(0))])


def test_int32_elements_added_to_a_number_in_an_inner_while():
    xs = d2s.tensor([1, 2, 3], dtype="int32")
    check_exact(int_tensor_into_number, [(xs, T(3)), (xs, T(0))])


def promote_once(xs, n):
    c = d2s.tensor(1, dtype="int32")
    for i in range(n):
        c = c + xs[i]  # int32 + int64: int64 after the first iteration
    return c


def promote_once_unrolled(xs):
    c = d2s.tensor(1, dtype="int32")
    for i, v in enumerate(xs):  # a static length: the loop unrolls, the first iteration promotes
        c = c + v + i
    return c


def test_a_carry_promoted_in_the_first_iteration():
    # the trip count is known when the program is built: eager's promotion, iteration by iteration
    check_exact(promote_once_unrolled, [(T([1, 2, 3]),), (T([4]),)])
    # known only when it runs: int32 after zero iterations, int64 after one, which no program can
    # return; refused, naming the variable, the dtypes and the line
    with pytest.raises(ConvertError, match=r"(?s)loop variable 'c' changes dtype from int32 to int64.*"
                                           r"number of iterations.*for i in range\(n\)"):
        d2s.jit.to_static(promote_once)(T([1, 2, 3]), T(3))


def copy_of_a_counter(n):
    c = d2s.tensor(1, dtype="int32")
    for i in range(n):
        c = c + d2s.tensor(i) * 0  # d2s.tensor(i) is an int64 tensor, not a Python int
    return c


def test_tensor_of_a_counter_is_a_plain_int64_tensor():
    with pytest.raises(ConvertError, match="changes dtype from int32 to int64"):
        d2s.jit.to_static(copy_of_a_counter)(T(2))
    assert copy_of_a_counter(T(2)).dtype == "int64"


def number_kept_by_an_if(x, n):
    s = 0
    for i in range(n):
        if x[i] > 0:
            s = s + x[i]
    return s


def test_a_number_stays_a_python_number_on_runs_where_no_iteration_made_it_a_tensor():
    # one program for all inputs: whether `total` is still eager's Python int is decided per run
    # (the outer loop ran but every inner one ran zero times: still the int 0)
    check_exact(total_of_products, [(i32(n), i32(m)) for n, m in ((3, 2), (2, 0), (0, 2), (1, 1), (4, 0))])
    x = d2s.tensor([1.0, 2.0, 3.0])
    check_exact(float_carry, [(x, T(3)), (x, T(1)), (x, T(0))])
    check_exact(number_kept_by_an_if, [(T([-1.0, 2.0]), T(2)), (T([-1.0, -2.0]), T(2)), (T([1.0]), T(0))])
