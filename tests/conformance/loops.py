"""while/for loops: tensor and Python bounds, zero-trip loops, break/continue, for/else,
loop-created variables, nested loops, counters and their dtypes."""
import d2s

from .harness import T, case

X = T([0.5, -1.0, 2.0])
N0, N1, N3 = T(0), T(1), T(3)


@case((X, N0), (X, N1), (X, N3), (X, 0), (X, 3))
def for_range_accumulate(x, n):
    s = x * 0.0
    for i in range(n):
        s = s + x * i
    return s


@case((X, N0), (X, N3), (X, 2))
def while_counter(x, n):
    i = 0
    while i < n:
        x = x * 1.5
        i += 1
    return x, i


@case(N0, N1, N3, 0, 2)
def loop_creates_variable(n):
    i = 0
    while i < n:
        v = d2s.ones([2])
        i += 1
    return v


@case(N0, N1, N3, 0, 2)
def for_creates_variable(n):
    for k in range(n):
        v = d2s.ones([2]) * k
    return v


@case(N0, N3, 0, 2)
def loop_variable_after_loop(n):
    for k in range(n):
        pass
    return k


@case(N0, N1, N3, 0, 2)
def none_before_tensor_loop(n):
    h = None
    for k in range(n):
        h = d2s.ones([2]) * (k + 1)
    return h


@case((X, N0), (X, N3), (X, 4))
def break_on_tensor_condition(x, n):
    i = 0
    while i < n:
        x = x * 2.0
        if x.max() > 6.0:
            break
        i += 1
    return x, i


@case((X, N0), (X, N3), (X, 4))
def continue_skips_odd(x, n):
    s = x * 0.0
    for i in range(n):
        if i % 2 == 1:
            continue
        s = s + x
    return s


@case((X, N0), (X, N3), (X, 3), (X, 0))
def for_else_without_break(x, n):
    for i in range(n):
        x = x + 1.0
    else:
        x = x * 10.0
    return x


@case((T([1.0, 2.0, 3.0]), 5.0), (T([1.0, 2.0, 3.0]), 2.5), (T([4.0, 5.0]), 1.0))
def for_else_with_break(xs, limit):
    found = -1.0
    for v in xs:
        if v > limit:
            found = v
            break
    else:
        found = d2s.tensor(0.0)
    return found


@case((X, N0), (X, N3), (X, 2))
def while_else(x, n):
    i = 0
    while i < n:
        i += 1
        if x.sum() > 100.0:
            break
        x = x * 2.0
    else:
        x = x - 1.0
    return x


@case((X, N0), (X, N1), (X, N3), (X, 0), (X, 2))
def nested_loops_tensor_inner(x, n):
    total = x * 0.0
    for i in range(3):
        for j in range(n):
            total = total + x * (i + j)
    return total


@case((X, N0), (X, N1), (X, N3))
def nested_loops_both_tensor(x, n):
    total = x * 0.0
    for i in range(n):
        for j in range(n):
            total = total + x * (i * 10 + j)
    return total


@case(X, T([3.0, 3.0, 3.0]), T([-5.0, 0.1, 0.2]))
def while_tensor_condition(x):
    steps = 0
    while x.abs().max() > 1.0:
        x = x * 0.5
        steps += 1
    return x, steps


@case(T([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), T([[1.0, -1.0]]))
def for_over_tensor_rows(m):
    acc = d2s.zeros([2])
    for row in m:
        acc = acc + row * row
    return acc


@case(T([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
def enumerate_rows(m):
    acc = d2s.zeros([2])
    for i, row in enumerate(m):
        acc = acc + row * i
    return acc


@case((T([1.0, 2.0]), T([3.0, 4.0])), (T([0.0]), T([1.0])))
def zip_two_tensors(a, b):
    s = 0.0
    for u, v in zip(a, b):
        s = s + u * v
    return s


@case(([1.0, 2.0, 3.0],), ([],))
def for_over_python_list(values):
    total = 0.0
    for v in values:
        total += v
    return total


@case((X, N3), (X, N0), (X, 3))
def range_with_start_and_step(x, n):
    s = x * 0.0
    for i in range(1, n + 5, 2):
        s = s + i
    return s


@case((X, N3), (X, N0), (X, 3))
def reversed_counting_while(x, n):
    k = n
    while k > 0:
        x = x + k
        k = k - 1
    return x, k


@case((T([1], dtype="int32"), N3), (T([1], dtype="int32"), N0), (T([1], dtype="int32"), 2))
def int32_accumulator_with_loop_index(z, n):
    for i in range(n):
        z = z + i
    return z


@case(N0, N1, N3, 0, 3)
def counter_python_int_returned(n):
    count = 0
    for _ in range(n):
        count += 1
    return count


@case((X, N3), (X, N0))
def loop_index_float_math(x, n):
    for i in range(n):
        x = x + 0.5 * i / (i + 1)
    return x


@case((X, N3), (X, N0), (X, 2))
def while_true_with_break(x, n):
    i = 0
    while True:
        if i >= n:
            break
        x = x + 1.0
        i += 1
    return x


@case((X, N3), (X, N0), (X, 5))
def nested_break_only_inner(x, n):
    out = x * 0.0
    for i in range(n):
        j = 0
        while True:
            j += 1
            if j > i:
                break
        out = out + j
    return out


@case((X, N3), (X, N0))
def loop_swaps_variables(x, n):
    a, b = x, x * 2.0
    for _ in range(n):
        a, b = b, a + b
    return a, b


@case((T([3.0, 1.0, 2.0]), N3), (T([3.0, 1.0, 2.0]), N0))
def loop_with_shape_change_guarded(x, n):
    y = x
    for _ in range(n):
        y = y * 0.5 + 1.0
    return y.shape[0], y


@case((X, N3), (X, N1), (X, 2))
def break_inside_nested_if(x, n):
    i = 0
    while i < n:
        i += 1
        if x.sum() > 0:
            if x.max() > 3.0:
                break
        x = x + 1.0
    return x
