"""``a is b`` in converted code (d2s/convert/identity.py): after a tensor ``if`` or loop the
answer is eager's on every run (a Python bool back to the caller), not the traced path's."""
import numpy as np
import pytest

import d2s
from d2s.convert import ConvertError
from tests.convert_helpers import assert_exactly_eager, check_exact


def x_of(v):
    return d2s.tensor(np.array([v, 2.0 * v]))


def n_of(k):
    return d2s.tensor(np.array(k, dtype=np.int64))


def branch(x):
    c = x
    if x.sum() > 0:
        c = x * 2
    return c is x, c is not x


def branch_else(x):
    c = x * 3
    if x.sum() > 0:
        c = x
    else:
        c = c + 1
    return c is x


def both_rebind(x):
    if x.sum() > 0:
        c = x * 2
    else:
        c = x - 1
    return c is x


def test_after_a_tensor_if():
    for fn in (branch, branch_else, both_rebind):
        check_exact(fn, [(x_of(1.0),), (x_of(-1.0),)])


def loop(x, n):
    b = x
    i = n * 0
    while i < n:
        b = b * 0.5
        i = i + 1
    return b is x


def loop_sometimes(x, n):
    b = x
    for k in range(n):
        if (x.sum() + k) > 2:
            b = b * 0.5
    return b is x, b


def test_after_tensor_loops_with_zero_one_several_trips():
    for fn in (loop, loop_sometimes):
        check_exact(fn, [(x_of(v), n_of(k)) for v in (-1.0, 1.0) for k in (0, 1, 3)])


def test_as_a_branch_condition_and_with_in_place_updates():
    def f(x, n):
        b = x
        for _ in range(n):
            if x.sum() > 0:
                b = b * 2
        if b is x:
            y = x + 100
        else:
            y = b - 100
        b += 1  # reaches x exactly when b is still x
        return y, x
    static = d2s.jit.to_static(f)
    for v in (-1.0, 1.0):
        for k in (0, 2):  # fresh inputs for each call: the update may reach x
            assert_exactly_eager(static(x_of(v), n_of(k)), f(x_of(v), n_of(k)))


def test_objects_the_program_does_not_rebind():
    def f(x, y):
        z = x
        return z is x, x is y, x is not y, (z is None), [] is x
    check_exact(f, [(x_of(1.0), x_of(1.0))])


def test_python_values_keep_python_identity():
    def f(x, flag):
        a = b = [1]
        if flag:
            b = [1]
        return a is b, x
    check_exact(f, [(x_of(1.0), True), (x_of(1.0), False)])


def _same(a, b):
    return a is b


def test_an_untracked_identity_is_refused_at_the_users_line():
    # the caller neither updates in place nor tests identity itself, so its loop does not
    # carry "still the entry tensor" flags; the helper's `is` cannot be answered and refuses
    def f(x, n):
        b = x
        for k in range(n):
            if x.sum() > k:
                b = b * 0.5
        return _same(b, x)
    for k in (0, 2):
        with pytest.raises(ConvertError, match="identity depends on the run") as info:
            d2s.jit.to_static(f)(x_of(1.0), n_of(k))
        assert "return a is b" in str(info.value)
