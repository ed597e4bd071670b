"""A to_static function that assigns into a tensor argument in place (``x[i] = v``) leaves the
caller's tensor as eager code does, on every call."""
import numpy as np
import pytest

import d2s


def zero_first(x):
    x[0] = 0.0
    return x.sum()


def fill_in_loop(x, n):
    for i in range(n):
        x[i] = x[i] * 10.0
    if x.sum() > 5.0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y, x


def reads_only(x):
    y = x.clone()
    y[0] = 5.0
    return y


@pytest.mark.parametrize("fn, extra", [(zero_first, ()), (fill_in_loop, (2,)), (reads_only, ()),
                                       (fill_in_loop, (0,))])
def test_caller_tensor_mutated_as_in_eager(fn, extra):
    static = d2s.jit.to_static(fn)
    for data in ([1.0, 2.0, 3.0], [-4.0, 0.5, 0.25], [0.1, 0.2, 0.3]):
        a, b = d2s.tensor(data), d2s.tensor(data)
        want, got = fn(a, *extra), static(b, *extra)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
        np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_one_tensor_passed_as_several_arguments_is_one_object_in_the_program():
    # eager code sees `a is b` and a write through `a` read back through `b`; the program had an
    # input per argument, so `f(x, x)` took the other branch and read b before the write
    def pick(a, b):
        return a * 2.0 if a is b else a * 3.0

    def write_then_read(a, b):
        a.add_(1.0)
        return b * 2.0

    for fn, arg in ((pick, 1.0), (write_then_read, 1.0)):
        sf = d2s.jit.to_static(fn)
        x, y = d2s.tensor(np.full(2, arg)), d2s.tensor(np.full(2, arg))
        np.testing.assert_array_equal(sf(x, x).numpy(), fn(y, y).numpy())
        np.testing.assert_array_equal(x.numpy(), y.numpy())
        x, y, u, v = (d2s.tensor(np.full(2, arg)) for _ in range(4))
        np.testing.assert_array_equal(sf(x, y).numpy(), fn(u, v).numpy())  # distinct: its own program


def test_gradients_of_a_tensor_passed_twice_sum_its_uses():
    def f(a, b, c):
        return (a * b + c).sum()

    sf = d2s.jit.to_static(f)
    for g in (f, sf):
        x = d2s.tensor(np.arange(3.0), requires_grad=True)
        g(x, x, x).backward()
        np.testing.assert_array_equal(x.grad.numpy(), 2 * np.arange(3.0) + 1)
