"""Shape-[1] tensors used as scalars (Paddle-style code): predicates and flags of any size-1
shape in `and`/`or`, `if`, `while` and `break`, and Python numbers that a tensor loop or a
tensor `if` turns into tensors of another shape. Converted vs eager on inputs taking every
branch, zero-trip loops included; values, dtypes and shapes compared."""
import numpy as np
import pytest

import d2s


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(fn, *input_sets, number_as_tensor=()):
    """``to_static(fn)`` equals eager ``fn`` on every input set: tensors in values, dtype and
    shape; Python values in value and type, except the outputs listed in ``number_as_tensor``,
    which a tensor loop carries (a Python number there comes back as a 0-d tensor)."""
    static = d2s.jit.to_static(fn)
    for args in input_sets:
        want, got = _flat(fn(*args)), _flat(static(*args))
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            if isinstance(w, d2s.Tensor):
                assert isinstance(g, d2s.Tensor), (k, g, w, args)
                assert (g.dtype, g.shape) == (w.dtype, w.shape), (k, g, w, args)
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, err_msg=f"output {k} on {args}")
            elif k in number_as_tensor:
                assert np.asarray(g).shape == () and np.asarray(g).item() == w, (k, g, w, args)
            else:
                assert type(g) is type(w) and g == w, (k, g, w, args)
    return static


T = d2s.tensor


# ------------------------------------------------------------------ and / or
def or_predicate(x):
    if x > 1 or x < -5:
        x = x + 1
    else:
        x = x - 1
    return x


def and_predicate(x):
    if x > -5 and x < 1:
        return x * 2
    return x


def mixed_ranks(x, s):
    # bool[1] meets bool[] inside the same `and`/`or`
    if (x > 0 and s.sum() > 0) or x < -10:
        return x + s.sum()
    return x - s.sum()


def chain_three(x):
    if x > 1 or x < -5 or x == 0:
        return x * 10
    return x


@pytest.mark.parametrize("fn", [or_predicate, and_predicate, chain_three])
def test_size1_predicates_in_and_or(fn):
    check(fn, *[(T([v]),) for v in (3, 0, -7, 1, -5)])


def test_size1_and_0d_predicates_mix():
    check(mixed_ranks, (T([2.0]), T([1.0, 2.0])), (T([2.0]), T([-1.0, -2.0])), (T([-20.0]), T([1.0])),
          (T([-1.0]), T([1.0])))


def test_size1_predicates_of_other_shapes():
    def fn(x):
        if x > 0 or x.sum() < -3:   # bool[1, 1] and bool[]
            return x * 2
        return x
    check(fn, (T([[2.0]]),), (T([[-1.0]]),), (T([[-4.0]]),))


def value_of_or(x, y):
    a = x or y            # Python returns the first true operand itself
    b = x and y
    return a, b


def test_and_or_give_the_operand_values():
    # same dtype and shape on both sides: the result is the operand, as in Python
    check(value_of_or, (T([2.0]), T([5.0])), (T([0.0]), T([5.0])), (T([0.0]), T([0.0])), (T(3), T(-1)))


def test_break_inside_while_on_size1_counter():
    def fn(n):
        i = d2s.zeros([1])
        while i < 10:
            i = i + 1
            if i > n:
                break
        return i
    check(fn, (T(4.0),), (T(0.0),), (T(20.0),), (T([3.0]),))


def test_size1_counter_with_continue_and_flag():
    def fn(x):
        i = d2s.zeros([1], dtype="int64")
        s = d2s.zeros([1])
        done = False
        while i < 6 and not done:
            i = i + 1
            if i % 2 == 0:
                continue
            s = s + x * i
            done = s > 20
        return i, s, done
    static = check(fn, (T([1.0]),), (T([9.0]),))
    # the loop may run zero times: done stays the Python False eagerly, a bool tensor here
    got = static(T([1.0]))
    assert got[2].dtype == d2s.bool


# ------------------------------------------------------------------ Python numbers become tensors
def loop_rank_change(n):
    c = 5
    i = 0
    while i < n:
        c = d2s.zeros([1]) + 3 + i
        i = i + 1
    return c


def for_rank_change(n, x):
    acc = 0
    for k in range(n):
        acc = acc + x * k          # a Python int becomes a [2, 2] float tensor
    return acc


def test_python_number_becomes_size1_tensor_in_while():
    # zero trips: eager keeps the Python int 5, and so does the converted call
    check(loop_rank_change, (T(1),), (T(3),), (T(0),))


def test_python_number_becomes_matrix_in_for():
    x = T([[1.0, 2.0], [3.0, -1.0]])
    check(for_rank_change, (T(1), x), (T(4), x))


def test_python_number_becomes_tensor_with_unknown_dims():
    def fn(x, n):
        s = 0.0
        i = 0
        while i < n:
            s = s + x[i] * x   # a Python float becomes a tensor whose shape is known only at run time
            i += 1
        return s

    static = d2s.jit.to_static(fn, input_spec=[d2s.jit.InputSpec([None]), d2s.jit.InputSpec([], "int64")])
    for x, n in ((T([1.0, 2.0, 3.0]), 2), (T([0.5]), 1), (T([1.0, -1.0, 2.0, 4.0]), 3)):
        want, got = fn(x, T(n)), static(x, T(n))
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_python_bool_flag_becomes_size1_tensor():
    def fn(x, n):
        found = False
        i = 0
        while i < n:
            found = d2s.reshape(x[i], [1]) > 2      # bool[1]
            i += 1
        return found
    x = T([1.0, 3.0, 0.0])
    check(fn, (x, T(1)), (x, T(2)), (x, T(3)))


def test_functional_while_loop_number_becomes_tensor():
    def fn(n):
        return d2s.while_loop(lambda i, c: i < n, lambda i, c: (i + 1, d2s.zeros([3]) + i), (0, 0))
    static = d2s.jit.to_static(fn)
    for n in (1, 4):
        want, got = fn(T(n)), static(T(n))
        assert int(got[0]) == want[0]
        assert (got[1].dtype, got[1].shape) == (want[1].dtype, want[1].shape)
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


def test_python_number_in_one_branch_tensor_in_other():
    def fn(x):
        c = 5
        if x.sum() > 0:
            c = d2s.zeros([1]) + 3
        return c

    def fn2(x):
        if x.sum() > 0:
            c = x * 2
        else:
            c = 1.5
        return c

    # the branch giving the Python number gives that number, as eager code does
    check(fn, (T([1.0, 2.0]),), (T([-1.0]),))
    check(fn2, (T([1.0, 2.0]),), (T([-1.0, -2.0]),))


def test_tensor_rank_change_still_refused_clearly():
    def fn(n):
        c = d2s.tensor(5.0)
        i = 0
        while i < n:
            c = d2s.zeros([2]) + i
            i += 1
        return c
    with pytest.raises(Exception, match="rank|ranks"):
        d2s.jit.to_static(fn)(T(2))


def test_python_number_loop_var_becomes_size1_tensor_inside_tensor_if():
    def count(x, n):
        c = 0
        for i in range(n):
            if x[i] > 0:
                c = c + d2s.reshape(x[i], [1])
        return c

    def total(x, n):
        s = 0.0
        i = 0
        while i < n:
            if x[i] < 0:
                s = s - d2s.reshape(x[i], [1, 1]) * 2
            i += 1
        return s

    x = T([1.0, -2.0, 3.0])
    check(count, (x, T(3)), (x, T(1)))
    check(total, (x, T(3)), (x, T(2)))
    # zero trips: the Python number, as eager code gives
    check(count, (x, T(0)))
    # the loop ran but its tensor `if` never took the branch: still the Python number, as
    # eager code gives (the loop carries a flag saying so; issue 27)
    out = d2s.jit.to_static(total)(x, T(1))
    assert type(out) is float and out == 0.0 == total(x, T(1))


def test_and_or_of_different_types_as_a_value_is_a_clear_error():
    def fn(x):
        b = (x.sum() > 0) and x.min()    # a bool or a float, depending on the data
        return b

    with pytest.raises(d2s.convert.ConvertError, match=r"this `and` gives one of its operands.*"
                                                             r"bool\[\] and float32\[\]"):
        d2s.jit.to_static(fn)(T([1.0, 2.0]))


def test_and_or_of_different_types_as_a_condition():
    # only tested for truth: fine whatever the operands' types
    def fn(x, flag):
        y = x * 2 if x.sum() > 0 and flag else x
        while y.sum() < 10 and (flag or y.max()):
            y = y + 1
        assert not (y.sum() < 0 and x.min()), "negative"
        if (x.sum() > 0 and x.min()) or flag:
            y = y * 3
        return y

    for x in (T([1.0, 2.0]), T([-1.0, 0.5]), T([0.0, 0.0])):
        for flag in (T(True), T(False)):
            check(fn, (x, flag))


def test_and_or_of_size1_flags_as_a_value():
    def fn(x, done):
        keep = x > 0 and not done          # bool[1] and bool[]: the value keeps rank 1
        return keep

    static = d2s.jit.to_static(fn)
    for x in (T([1.0]), T([-1.0])):
        for done in (T(True), T(False)):
            want, got = fn(x, done), static(x, done)
            assert got.dtype == d2s.bool and bool(got) == bool(want)
            assert got.shape == (1,)


def range_of_size1(n, x):
    s = x * 0
    for i in range(1, n, 2):
        s = s + x * i
    return s


def truth_of_size1(x):
    y = x
    while y:
        y = y - 1
    if x:
        return y + 1
    return y - 1


def test_size1_bounds_and_truth_tests():
    x = T([1.0, 2.0])
    check(range_of_size1, (T([6]), x), (T([1]), x), (T([0]), x))
    check(truth_of_size1, (T([3]),), (T([0]),), (T([[2]]),))


def test_and_or_values_carry_gradients_like_eager():
    def fn(a, b):
        return (a.sum() or b.sum()) * 2 + (a.sum() and b.sum()) * 3

    static = d2s.jit.to_static(fn)
    for av in ([0.0, 0.0], [1.0, 2.0]):
        for bv in ([0.0, 0.0], [3.0, -1.0]):
            a1, b1 = T(av, requires_grad=True), T(bv, requires_grad=True)
            a2, b2 = T(av, requires_grad=True), T(bv, requires_grad=True)
            want, got = fn(a1, b1), static(a2, b2)
            assert got.dtype == want.dtype and got.item() == want.item()
            want.backward()
            got.backward()
            for e, c in ((a1, a2), (b1, b2)):
                np.testing.assert_allclose(c.grad.numpy(), e.grad.numpy())
