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
