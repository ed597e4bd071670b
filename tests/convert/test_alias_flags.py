"""Names that hold one tensor object on some runs only (rebound in a nested tensor `if`, under a
return or break flag, or in some iterations of a tensor loop), while the code updates a tensor
in place: the converted call must update every name eager code would, on every input.

A nested tensor `if` hands out, for each output that may be an outside tensor through links
made inside its branches, a bool output saying whether it is; a tensor loop carries, for each
name that may hold a tensor object from outside the iteration, a bool loop var saying whether
it does (``_ObjectCarry.split_aliases``). Each case runs eagerly and converted on inputs that
take every branch, zero-trip loops included."""
import numpy as np
import pytest

import d2s
from tests.convert_helpers import check_exact

X = np.array([1.0, 2.0], np.float32)
Y = np.array([3.0, 4.0], np.float32)


def pairs(ks=(0, 1, 2, 3), scales=(1.0, 100.0)):
    """(x, y, k) inputs: k a 0-d int tensor (zero trips included), x small or big."""
    return [(d2s.tensor(X * s), d2s.tensor(Y), d2s.tensor(k)) for k in ks for s in scales]


# ------------------------------------------------------------------ early returns in loops
def join_then_return(x, y, k):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < k:
        i += 1
        if x.sum() > 100.0:
            return a + b
        else:
            b += a
        b = a
    return a + b * 0.5


def rebind_then_return(x, y, k):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < k:
        i += 1
        if x.sum() > 100.0:
            return a + b
        else:
            b += a
        b = b * 2.0
    return a + b * 0.5


def join_in_branch_then_return(x, y, k):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < k:
        i += 1
        if x.sum() > 100.0:
            return a + b, a
        else:
            b += a
            b = a
    return a, b


def join_then_break(x, y, k):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < k:
        i += 1
        if x.sum() > 100.0:
            break
        b += a
        b = a
    return a, b


def for_range_join_then_return(x, y, k):
    a = x * 1.0
    b = y + 0.5
    for _ in range(k):
        b += a
        if b.sum() > 30.0:
            return b, a
        b = a
    return a, b


@pytest.mark.parametrize("fn", [join_then_return, rebind_then_return, join_in_branch_then_return,
                                join_then_break, for_range_join_then_return])
def test_early_exit_with_aliases_equals_eager(fn):
    check_exact(fn, pairs())


# ------------------------------------------------------------------ aliases across iterations
def join_every_iteration(x, y, k):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < k:
        i += 1
        b += a  # from the second iteration on, b is a: this doubles a
        b = a
    return a, b


def join_on_one_iteration(x, y, k):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < k:
        i += 1
        a += 1.0  # reaches b once b is a
        if i == 2:
            b = a
    return a, b


def swap_after_update(x, y, k):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < k:
        i += 1
        b += a
        if b.sum() > 20.0:
            a, b = b, a
    return a, b


def alias_before_loop(x, y, k):
    a = x * 1.0
    b = a
    i = 0
    while i < k:
        i += 1
        if i == 2:
            b = b * 2.0
        b += 1.0  # updates a too until b is rebound
    return a, b


def flag_set_in_one_branch(x, y, k):
    a = x * 1.0
    b = y + 0.5
    c = b
    seen = False
    i = 0
    while i < k:
        i += 1
        if i == 1:
            seen = True
        else:
            b += a  # the first time, b is still c's tensor
            b = b * 2.0
    return b, c, seen


@pytest.mark.parametrize("fn", [join_every_iteration, join_on_one_iteration, swap_after_update, alias_before_loop,
                                flag_set_in_one_branch])
def test_aliases_made_in_some_iterations_equal_eager(fn):
    check_exact(fn, pairs(ks=(0, 1, 2, 3, 4)))


# ------------------------------------------------------------------ nested tensor ifs
def nested_if_join(x, y):
    a = x * 1.0
    b = y + 0.5
    if x.sum() > 2.0:
        if y.sum() > 6.0:
            b = a
        else:
            b = b * 2.0
    b += 1.0  # updates a exactly when both conditions held
    return a, b


def nested_if_join_in_loop(x, y, k):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < k:
        i += 1
        if i > 1:
            if x.sum() > 100.0:
                b = a
            else:
                b = b * 2.0
        b += 1.0
    return a, b


def test_nested_if_join_equals_eager():
    check_exact(nested_if_join, [(d2s.tensor(X * sx), d2s.tensor(Y * sy)) for sx in (1.0, 0.1) for sy in (1.0, 0.1)])


def test_nested_if_join_in_loop_equals_eager():
    check_exact(nested_if_join_in_loop, pairs())


# ------------------------------------------------------------------ arguments updated through an alias
def update_argument_until_rebound(x, y, k):
    b = y
    i = 0
    while i < k:
        i += 1
        if i == 2:
            b = x * 1.0
        b += 1.0  # the first iteration updates the caller's y
    return b


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_argument_updated_through_a_name_rebound_later_equals_eager(k):
    static = d2s.jit.to_static(update_argument_until_rebound)
    ye, ys = d2s.tensor(Y), d2s.tensor(Y)
    want = update_argument_until_rebound(d2s.tensor(X), ye, d2s.tensor(k))
    got = static(d2s.tensor(X), ys, d2s.tensor(k))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(ys.numpy(), ye.numpy())


# ------------------------------------------------------------------ aliases that outlive the loop
def joined_in_tensor_for_then_updated(x, y, n):
    # fuzz seed 1 #49, minimized: after the loop b is a exactly when the loop ran
    a = x * 1.0
    b = y + 0.5
    for _ in range(n):
        b = a
    b -= (a + 1.0) * 0.5
    return a, b


def joined_in_branch_of_loop_then_updated(x, y, n):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < n:
        i += 1
        if x.sum() > 100.0:
            b = a
    b += 1.0
    return a, b


@pytest.mark.parametrize("fn", [joined_in_tensor_for_then_updated, joined_in_branch_of_loop_then_updated])
def test_alias_made_in_a_loop_reaches_updates_after_it(fn):
    check_exact(fn, pairs())


def joined_with_a_loop_var_then_updated(x, y, n, k):
    # fuzz seed 1 #961, minimized: `a` is a loop var of the tensor loop (bound in a branch that
    # never runs), `b = a` makes both names one tensor, which the update after the loop reaches
    a = x * 1.0
    for p1 in range(k):
        for _ in range(n):
            b = a
            if p1 > 5:
                a = b + 1.0
    a += y * 0.5
    return a + b * 0.5


def swap_then_update(x, y, n):
    a = x * 1.0
    b = y * 1.0
    i = 0
    while i < n:
        i += 1
        a, b = b, a + b
    a += 1.0  # after one iteration, a holds the tensor b entered with
    return a, b


@pytest.mark.parametrize("k", [1, 2])
def test_alias_between_loop_vars_reaches_updates_after_the_loop(k):
    check_exact(joined_with_a_loop_var_then_updated,
                [(d2s.tensor(X * s), d2s.tensor(Y), d2s.tensor(n), k) for n in (1, 2, 3) for s in (1.0, -1.0)])


def test_swapping_loop_vars_then_updating_equals_eager():
    check_exact(swap_then_update, pairs(ks=(0, 1, 2, 3)))


def joined_to_a_new_tensor_then_updated(x, y, n):
    # b = a after a is rebound to a tensor made in the iteration: both names hold it after the
    # loop (when it ran), so the update reaches b
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < n:
        i += 1
        a = x * 2.0
        if y.sum() > 5.0:
            b = a
    a += 1.0
    return a, b


def test_loop_vars_joined_to_a_tensor_of_the_loop_then_updated_equal_eager():
    check_exact(joined_to_a_new_tensor_then_updated,
                [(d2s.tensor(X), d2s.tensor(Y * s), d2s.tensor(n)) for n in (0, 1, 2) for s in (1.0, 0.1)])
