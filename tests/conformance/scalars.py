"""Paddle-style scalars (shape-[1] tensors), dtypes of mixed Python/tensor arithmetic, weakly
typed counters, Python number inputs and .item()."""
import d2s

from .harness import T, case

X = T([0.5, -1.0, 2.0])


@case(T([3]), T([-7]), T([0]))
def shape1_or_predicate(x):
    if x > 1 or x < -5:
        return x * 2
    return x


@case(T([3.0]), T([-7.0]))
def shape1_and_predicate(x):
    if x > 1.0 and x < 5.0:
        x = x + 1.0
    return x


@case(T([3.0]), T([0.0]))
def shape1_while_with_break(x):
    i = d2s.zeros([1])
    while i < 10:
        i = i + 1.0
        if i > x:
            break
    return i


@case(T(2), T(0))
def python_number_becomes_shape1_tensor(n):
    c = 5
    for _ in range(n):
        c = d2s.zeros([1]) + 3
    return c


@case(T([2]), T([0]))
def shape1_loop_bound(n):
    s = 0
    i = 0
    while i < n:
        s = s + i
        i += 1
    return s


@case(T([1.0]), T([-1.0]))
def shape1_ternary(x):
    return x * 2.0 if x > 0 else x - 2.0


@case(T([4.0, 1.0]), T([-4.0, 1.0]))
def shape1_from_slicing(x):
    head = x[0:1]
    if head > 0:
        return head * 10.0
    return head


@case((X, 2), (X, 0), (X, T(2)))
def int_times_float_tensor(x, k):
    return x * k, k * 2


@case((X, 0.5), (X, 2.0))
def python_float_argument(x, scale):
    if scale > 1.0:
        return x * scale
    return x / scale


@case(T([1, 2, 3], dtype="int32"), T([5, 0, 1], dtype="int32"))
def int32_stays_int32(x):
    if x.sum() > 5:
        x = x + 1
    return x * 2


@case(T([1.0, 2.0], dtype="float64"), T([-1.0, 0.0], dtype="float64"))
def float64_stays_float64(x):
    if x.sum() > 0:
        x = x * 0.5
    return x + 1.0


@case(T([1, 2, 3]), T([0, 0, 1]))
def int_division_gives_float(x):
    if x.sum() > 2:
        return x / 2
    return x // 2


@case(X, T([3.0, 3.0, 3.0]))
def item_in_python_logic(x):
    top = x.max().item()
    if top > 2.5:
        return top, type(top).__name__
    return round(top, 3), "small"


@case(X, T([3.0, 3.0, 3.0]))
def bool_tensor_result(x):
    if x.mean() > 1.0:
        return x > 2.0
    return x < 0.0


@case((T([1], dtype="int32"), T(3)), (T([1], dtype="int32"), T(0)))
def weak_counter_keeps_int32(z, n):
    for i in range(n):
        z = z + i
    return z


@case((X, T(3)), (X, T(0)))
def tensor_counter_used_as_float_factor(x, n):
    k = 0
    while k < n:
        x = x + 0.5 * k
        k = k + 1
    return x, k


@case(T(2.5), T(-1.0))
def zero_dim_predicate(s):
    if s > 0:
        return s * 2.0
    return s


@case(T([[1.0, 2.0]]), T([[0.0, -2.0]]))
def size1_rows_predicate(x):
    if x.sum(axis=1) > 0:
        return x * 2.0
    return x


@case(T([2]), T([0]))
def shape1_int_tensor_as_range_bound(n):
    out = d2s.zeros([1])
    for i in range(n):
        out = out + i
    return out
