"""A converted call returns the Python numbers eager code returns (d2s/static/weak_index.py):
loop counters, numbers carried by tensor loops or merged by tensor `if`s, len() of lists grown
in tensor loops, int()/float()/.item()/round() of tensor values. Each function runs eagerly and
through ``to_static`` on inputs that take zero, one and several trips and both branches; the
values AND the Python types must match."""
import numpy as np
import pytest

import d2s
from convert_helpers import assert_exactly_eager, check_exact


def _check(fn, *inputs):
    check_exact(fn, inputs, atol=1e-6, float_rtol=1e-5)  # Python floats to 1e-5


X_POS = d2s.tensor([0.5, 1.0, 2.0])
X_NEG = d2s.tensor([-0.5, -1.0, -2.0])
TRIPS = [d2s.tensor(k) for k in (0, 1, 4)]


def while_counter(x, n):
    i = 0
    while i < n:
        x = x * 1.5
        i += 1
    return x, i


def for_counter(n):
    count = 0
    for _ in range(n):
        count += 1
    return count


def float_accumulator(n):
    s = 0.0
    for i in range(n):
        s = s + 0.5 * i
    return s


def bool_flag(x, n):
    found = False
    for _ in range(n):
        x = x * 2.0
        if x.max() > 3.0:
            found = True
    return found, x


def counter_until_small(x):
    steps = 0
    while x.abs().max() > 0.6:
        x = x * 0.5
        steps += 1
    return steps


def index_divided(n):
    r = 0
    for i in range(n):
        r = i / 2
    return r


@pytest.mark.parametrize("n", TRIPS, ids=["0trips", "1trip", "4trips"])
def test_loop_numbers_come_back_as_python_numbers(n):
    _check(while_counter, (X_POS, n))
    _check(for_counter, (n,))
    _check(float_accumulator, (n,))
    _check(bool_flag, (X_POS, n), (X_NEG, n))
    _check(index_divided, (n,))


def test_counter_of_a_tensor_condition():
    _check(counter_until_small, (X_POS,), (X_NEG * 0.1,), (X_NEG * 10.0,))


def number_from_branches(x):
    if x.sum() > 0:
        return 1.0
    return 2.0


def int_or_tensor(x):
    if x.mean() > 0:
        return x.sum()
    return 0


def counter_set_in_branch(x):
    r = 0
    if x.sum() > 0:
        r = 2
    return r, x


def test_numbers_merged_by_a_tensor_if():
    for fn in (number_from_branches, int_or_tensor, counter_set_in_branch):
        _check(fn, (X_POS,), (X_NEG,))


def return_from_nested_loops(x, n):
    for i in range(n):
        for j in range(n):
            x = x + 0.5
            if x.max() > 3.5:
                return x, i
    return x, -1


@pytest.mark.parametrize("n", TRIPS + [d2s.tensor(2)], ids=["0trips", "1trip", "4trips", "2trips"])
def test_counter_returned_from_nested_loops(n):
    _check(return_from_nested_loops, (X_POS, n), (X_NEG, n), (d2s.tensor([-2.0, 0.5, 1.0]), n))


def len_of_grown_list(x, n):
    items = []
    for i in range(n):
        items.append(x[0] * i)
    return len(items)


def test_len_of_a_list_grown_in_a_tensor_loop():
    _check(len_of_grown_list, *[(X_POS, n) for n in TRIPS])


def python_side_conversions(x):
    v = x.max().item()
    return round(v), round(v, 1), int(x.sum()), float(x.min()), bool(x.sum()), v


def float_then_branch(x):
    v = float(x.sum())
    if v > 0:
        return v * 2
    return v


def test_int_float_item_round_give_python_numbers():
    for data in ([0.5, 1.5, 2.5], [2.45, -1.25, 3.5], [-0.5, -1.5, -2.5], [0.0, 0.0, 0.0]):
        _check(python_side_conversions, (d2s.tensor(data),))
    _check(float_then_branch, (X_POS,), (X_NEG,))


def item_feeds_tensor_ops(x):
    return x * x.sum().item() + int(x.max())


def test_item_inside_tensor_math_stays_a_tensor_with_eager_dtype():
    _check(item_feeds_tensor_ops, (X_POS,), (X_NEG,))


def float_item_of_float64(x):
    v = x.sum().item()
    return float(x.sum()), float(x[0] * 3), v, v / 3, x.float() * v


def test_float_and_item_keep_every_digit_of_a_double():
    # a Python float is a double: float() of a float64 tensor gave a float32-rounded number
    x = d2s.tensor([0.1, 0.2, 0.3000000000000001], dtype=d2s.float64)
    check_exact(float_item_of_float64, [(x,), (x * 7,), (x.float(),)])


def numbers_into_new_tensors(i, y):
    v, s = y.max().item(), float(y.sum())
    return (i * v, i + s, d2s.full((2,), v), d2s.tensor(s), d2s.tensor([v, 1.0]), d2s.as_tensor(v),
            d2s.where(i > 1, v, 0.0), d2s.where(i > 1, i, s), y.float() * s, i.float().clamp(max=v))


def test_a_number_from_a_tensor_meets_ints_and_creation_as_a_python_float():
    # eagerly int tensor * Python float and d2s.tensor(Python float) are float32; the number's
    # stand-in in a program (float64, to keep its digits) must not make them float64
    i = d2s.tensor([0, 1, 2, 3])
    check_exact(numbers_into_new_tensors, [(i, d2s.tensor([0.5, 1.5], dtype=d2s.float64)),
                                           (i, d2s.tensor([2.5, -1.0]))])


def attribute_of_plain_object(x):
    class State:
        pass

    st = State()
    st.steps = 0
    if x.sum() > 0:
        st.steps = 1
    return st.steps


def test_attribute_set_in_a_tensor_if():
    _check(attribute_of_plain_object, (X_POS,), (X_NEG,))


def sum_becomes_tensor(x, n):
    s = 0
    for _ in range(n):
        s = s + x.sum()
    return s


def test_a_number_the_loop_turns_into_a_tensor_stays_a_tensor():
    # after one trip or more eager code holds a tensor, and so does the converted result
    _check(sum_becomes_tensor, (X_POS, d2s.tensor(1)), (X_POS, d2s.tensor(3)))


def loss_and_steps(w, n):
    steps = 0
    y = w
    while steps < n:
        y = y * w
        steps += 1
    return y.sum(), steps


@pytest.mark.parametrize("n", TRIPS, ids=["0trips", "1trip", "4trips"])
def test_gradients_unchanged_by_a_returned_counter(n):
    static = d2s.jit.to_static(loss_and_steps)
    we = d2s.tensor([0.5, 1.5], requires_grad=True)
    ws = d2s.tensor([0.5, 1.5], requires_grad=True)
    le, ke = loss_and_steps(we, n)
    ls, ks = static(ws, n)
    assert_exactly_eager(ks, ke, atol=1e-6, float_rtol=1e-5)
    le.backward()
    ls.backward()
    np.testing.assert_allclose(ws.grad.numpy(), we.grad.numpy(), rtol=1e-5)


def number_becomes_shape1_tensor(n):
    c = 5
    for _ in range(n):
        c = d2s.zeros([1]) + 3
    return c


def int_becomes_float(n):
    r = 0
    i = 0
    while i < n:
        r = i / 2
        i += 1
    return r, i


def int_becomes_vector(x, n):
    s = 0
    for _ in range(n):
        s = s + x
    return s


@pytest.mark.parametrize("n", TRIPS, ids=["0trips", "1trip", "4trips"])
def test_type_decided_by_the_trip_count(n):
    # zero trips: the Python number it started as; otherwise what the body made it
    _check(number_becomes_shape1_tensor, (n,))
    _check(int_becomes_float, (n,))
    _check(int_becomes_vector, (X_POS, n))


def pop_numbers(n):
    l = [1, 2, 3, 4]
    s = 0
    for _ in range(n):
        s += l.pop()
    return s, len(l)


@pytest.mark.parametrize("n", [d2s.tensor(k) for k in (0, 1, 3)], ids=["0trips", "1trip", "3trips"])
def test_numbers_popped_from_a_list_in_a_tensor_loop(n):
    _check(pop_numbers, (n,))


def type_of_numbers(x, n):
    k = 0
    for _ in range(n):
        k += 1
    v = x.max().item()
    return (type(k).__name__, type(v).__name__, isinstance(k, int), isinstance(v, float),
            isinstance(v, (int, bool)), isinstance(k, d2s.Tensor), type(x).__name__)


def test_type_and_isinstance_see_python_numbers():
    _check(type_of_numbers, (X_POS, d2s.tensor(0)), (X_NEG, d2s.tensor(3)))


def longest_and_shortest(seqs):
    # max()/min() of a generator: the converted builtin reads it once (it was consumed by the
    # check for symbolic items, then max() found it empty)
    longest = max(s.shape[0] for s in seqs)
    shortest = min(iter([s.shape[0] for s in seqs]))
    return longest, shortest, max(s.sum() for s in seqs)


def test_max_and_min_of_a_generator():
    check_exact(longest_and_shortest, [([d2s.ones(3), d2s.ones(5) * 2],), ([d2s.ones(2)],)])


def dims_of(x):
    return x.size(0), x.shape[-1], x.shape[0] * 2, len(x)


def test_dynamic_dims_come_back_as_python_ints():
    # with an unknown dim the program computes it; the caller gets the int eager code returns
    static = d2s.jit.to_static(dims_of, input_spec=[d2s.jit.InputSpec([None, 4], "float32")])
    for n in (3, 1, 5):
        x = d2s.ones(n, 4)
        assert_exactly_eager(static(x), dims_of(x))
