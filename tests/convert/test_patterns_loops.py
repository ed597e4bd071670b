"""Converted vs eager: while and for loops (tensor and Python), ranges, rows, enumerate, zip."""
import d2s
from convert_helpers import check, t

X = t([1.0, 2.0, 3.0])


def n_(v):
    return d2s.tensor(v)  # an int64 0-d tensor


def while_tensor_cond(x):
    while x.sum() < 20:
        x = x * 2
    return x


def test_while_tensor_condition():
    check(while_tensor_cond, X, t([5.0, 6.0, 10.0]), t([0.5, 0.5, 0.5]))


def test_while_tensor_condition_zero_iterations():
    check(while_tensor_cond, t([30.0, 1.0, 1.0]))


def while_python_cond(x):
    i = 0
    while i < 4:
        x = x + i
        i += 1
    return x, i


def test_while_python_condition_unrolls():
    check(while_python_cond, X, t([0.0, 0.0, 0.0]))


def while_mixed(x, limit):
    i = 0
    while x.sum() < 100 and i < limit:
        x = x * 2
        i += 1
    return x


def test_while_condition_mixing_tensor_and_python():
    check(while_mixed, (X, 3), (X, 10), (t([200.0, 0.0, 0.0]), 3))


def while_or_not(x, stop_early):
    n = 0
    while not stop_early and (x.sum() < 10 or n < 2):
        x = x + 1
        n += 1
    return x, n


def test_while_with_or_and_not():
    check(while_or_not, (X, False), (X, True), (t([20.0, 0.0, 0.0]), False))


def nested_tensor_loops(x, n, m):
    total = x * 0
    i = 0
    while i < n:
        j = 0
        while j < m:
            total = total + x
            j += 1
        i += 1
    return total


def test_nested_loops_with_tensor_bounds():
    check(nested_tensor_loops, (X, n_(2), n_(3)), (X, n_(0), n_(3)), (X, n_(3), n_(0)))


def created_inside_loop(x, n):
    i = 0
    while i < n:
        last = x * float(i)
        i += 1
    return last


def test_variable_created_inside_loop_used_after():
    check(created_inside_loop, (X, n_(3)), (X, n_(1)))


def for_range_tensor(x, n):
    acc = x * 0
    for i in range(n):
        acc = acc + x * float(i)
    return acc


def test_for_range_tensor_bound():
    check(for_range_tensor, (X, n_(4)), (X, n_(0)), (X, n_(1)))


def for_range_start_stop_step(x, a, b):
    acc = x * 0
    for i in range(a, b, 2):
        acc = acc + float(i)
    return acc


def test_for_range_start_stop_step():
    check(for_range_start_stop_step, (X, n_(1), n_(8)), (X, n_(5), n_(5)), (X, n_(0), n_(7)))


def for_range_negative_step(x, n):
    acc = x * 0
    for i in range(n, 0, -1):
        acc = acc * 2 + float(i)
    return acc


def test_for_range_negative_step():
    check(for_range_negative_step, (X, n_(3)), (X, n_(0)), (X, n_(5)))


def loop_var_used_after(x, n):
    k = 0
    for k in range(n):
        x = x + 1
    return x, k


def test_loop_variable_used_after():
    check(loop_var_used_after, (X, n_(3)), (X, n_(1)))


def for_rows(m):
    acc = m[0] * 0
    for row in m:
        acc = acc + row * row
    return acc


def test_for_over_tensor_rows():
    check(for_rows, t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), t([[1.0, -1.0]]))
    check(for_rows, t([[1.0, 2.0], [3.0, 4.0]]), dynamic=True)


def for_enumerate(m):
    acc = m[0] * 0
    for i, row in enumerate(m):
        acc = acc + row * float(i)
    return acc


def test_for_enumerate_tensor():
    check(for_enumerate, t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))


def for_enumerate_start(m):
    acc = m[0] * 0
    for i, row in enumerate(m, 1):
        acc = acc + row * float(i)
    return acc


def test_for_enumerate_with_start():
    check(for_enumerate_start, t([[1.0, 2.0], [3.0, 4.0]]))


def for_zip(a, b):
    acc = a[0] * 0
    for u, v in zip(a, b):
        acc = acc + u * v
    return acc


def test_for_zip_of_tensors():
    check(for_zip, (t([[1.0], [2.0], [3.0]]), t([[4.0], [5.0], [6.0]])))


def for_python_list(x):
    for w in [1.0, -2.0, 3.0]:
        x = x * w
    for a, b in ((1, 2), (3, 4)):
        x = x + a * b
    for k, v in {"a": 1.0, "b": 2.0}.items():
        x = x + v
    return x


def test_for_over_python_lists_tuples_dict_items_unrolls():
    check(for_python_list, X, t([0.0, 1.0, 0.0]))


def for_static_shape(x):
    acc = x[0] * 0
    for i in range(x.shape[0]):
        acc = acc + x[i]
    return acc


def test_range_of_static_shape_is_a_python_loop():
    check(for_static_shape, X, t([4.0, 5.0]))


def len_and_range(x):
    acc = x[0] * 0
    for i in range(len(x)):
        acc = acc + x[i] * float(i)
    return acc


def test_len_and_range():
    check(len_and_range, X)
    check(len_and_range, X, dynamic=True)


def if_inside_while(x, n):
    i = 0
    while i < n:
        if x.sum() > 10:
            x = x - 1
        else:
            x = x + 3
        i += 1
    return x


def test_if_inside_tensor_while():
    check(if_inside_while, (X, n_(5)), (X, n_(0)))


def shape_changing_loop(x, n):
    i = 0
    while i < n:
        x = d2s.concat([x, x[:1]])
        i += 1
    return x.sum()


def test_loop_carried_shape_changes():
    check(shape_changing_loop, (X, n_(3)), (X, n_(0)))


def python_int_becomes_float(x, n):
    s = 0
    i = 0
    while i < n:
        s = s + x.sum()
        i += 1
    return s


def test_python_number_loop_var_adopts_tensor_dtype():
    check(python_int_becomes_float, (X, n_(3)), (X, n_(1)))


def float_times_index(x, n):
    acc = x * 0
    for i in range(n):
        acc = acc + x * i + i
    for j, row in enumerate(x[None]):
        acc = acc - j * row
    return acc


def test_tensor_range_index_promotes_like_a_python_int():
    check(float_times_index, (X, n_(3)), (X, n_(0)))
    from convert_helpers import run_static
    assert run_static(float_times_index, X, n_(2))[0].dtype == "float32"
