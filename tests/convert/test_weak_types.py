"""Loop counters and other values that eager code holds as Python ints stay weakly typed in
programs (as JAX's weak types): ``z + i`` keeps an int32 ``z`` int32 and a float32 ``x``
float32, whether ``i`` is a ``for`` counter over a tensor ``range``, a ``while`` counter that
started as ``0``, or a Python int merged by a tensor ``if``. Converted vs eager on several
inputs (zero-trip loops included), dtypes compared."""
import numpy as np
import pytest

import d2s


def check(fn, *input_sets, ints=()):
    """``to_static(fn)`` equals eager ``fn``: tensors in value, dtype and shape. Outputs listed
    in ``ints`` are Python ints eagerly (the program gives 0-d int64 tensors)."""
    static = d2s.jit.to_static(fn)
    for args in input_sets:
        want, got = fn(*args), static(*args)
        want = list(want) if isinstance(want, tuple) else [want]
        got = list(got) if isinstance(got, tuple) else [got]
        for k, (g, w) in enumerate(zip(got, want)):
            if k in ints:
                assert int(g) == w, (k, g, w, args)
                continue
            assert isinstance(g, d2s.Tensor), (k, g, w)
            assert g.dtype == w.dtype, (k, g.dtype, w.dtype, args)
            assert g.shape == w.shape, (k, g.shape, w.shape, args)
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


T = d2s.tensor
NS = [(T(0),), (T(1),), (T(4),)]


def for_counter(n):
    z = d2s.zeros([1], dtype="int32")
    for i in range(n):
        z = z + i
    return z


def for_counter_expressions(n):
    z = d2s.zeros([2], dtype="int32")
    x = d2s.ones([2])
    for i in range(1, n + 1):
        z = z + (i * 2 - 1) + (-i) + abs(i) // 1 + i % 3
        x = x * i + i / 2
    return z, x


def while_counter(n):
    z = d2s.zeros([1], dtype="int32")
    i = 0
    while i < n:
        z = z * 2 + i
        i += 1
    return z, z + i, i


def counter_used_after_loop(n):
    z = d2s.zeros([3], dtype="int32")
    k = 0
    for k in range(n):
        z = z + 1
    return z + k


def counter_in_tensor_if(n, x):
    z = d2s.zeros([1], dtype="int32")
    for i in range(n):
        if x.sum() > i:
            z = z + i
        else:
            z = z - 2 * i
    return z


def python_int_merged_by_if(x):
    z = d2s.ones([2], dtype="int32")
    c = 0
    if x.sum() > 0:
        c = 3
    return z * c, z + c


def enumerate_counter(xs):
    z = d2s.zeros([1], dtype="int32")
    for i, v in enumerate(xs):
        z = z + i
    return z


@pytest.mark.parametrize("fn", [for_counter, for_counter_expressions, counter_used_after_loop])
def test_for_counter_keeps_dtypes(fn):
    check(fn, *NS)


def test_while_counter_that_started_as_python_int():
    check(while_counter, *NS, ints=(2,))


def test_counter_inside_tensor_if():
    x = T([1.0, 2.0])
    check(counter_in_tensor_if, (T(0), x), (T(3), x), (T(5), -x))


def test_python_int_merged_by_tensor_if_stays_weak():
    check(python_int_merged_by_if, (T([1.0]),), (T([-1.0]),))


def test_enumerate_over_symbolic_rows():
    static = d2s.jit.to_static(enumerate_counter, input_spec=[d2s.jit.InputSpec([None, 2])])
    for n in (0, 1, 3):
        xs = T(np.ones((n, 2), "float32"))
        want, got = enumerate_counter(xs), static(xs)
        assert got.dtype == want.dtype == d2s.int32
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_counter_with_float32_and_float64():
    def fn(n, a, b):
        for i in range(n):
            a = a + i
            b = b * i + 1
        return a, b
    check(fn, (T(3), T([1.0]), T([1.0], dtype="float64")), (T(0), T([2.0]), T([2.0], dtype="float64")))


def test_weak_int_meeting_bool_gives_int64_like_python():
    def fn(x, m):
        c = 0
        if x.sum() > 0:
            c = 2
        for i in range(x.shape[0]):
            c = c + i
        return m + c     # bool tensor + Python int is int64 eagerly
    static = d2s.jit.to_static(fn, input_spec=[d2s.jit.InputSpec([None]), d2s.jit.InputSpec([2], "bool")])
    m = T([True, False])
    for x in (T([1.0, 2.0]), T([-1.0]), T(np.zeros(0, "float32"))):
        want, got = fn(x, m), static(x, m)
        assert got.dtype == want.dtype == d2s.int64
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_counter_meeting_int32_makes_the_var_int32():
    def fn(n):
        i = 0
        while i < n:
            i = i + d2s.ones([], dtype="int32")   # the Python int becomes an int32 tensor, as eagerly
        return i
    check(fn, (T(3),))


def test_counter_in_function_forms_of_ops():
    def fn(n, x):
        z = d2s.zeros([2], dtype="int32")
        y = d2s.zeros([2])
        for i in range(n):
            z = d2s.maximum(z, i) + d2s.sub(z, i) - d2s.where(x > 0, i, z)
            y = d2s.minimum(y, i) + d2s.mul(x, i)
        return z, y
    x = T([1.0, -1.0])
    check(fn, (T(0), x), (T(3), x))
