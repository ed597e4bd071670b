"""A tensor loop whose body makes two loop variables one tensor (``b = a`` after ``a`` was
rebound) while it updates a loop variable in place: refused at the loop's line, since a later
iteration's in-place update would have to reach both names (found by the fuzzer, seed 0 #465).
The same join of a name with a tensor from outside the loop, under an early return's flag,
converts exactly (more such cases: tests/convert/test_alias_flags.py)."""
import numpy as np
import pytest

import d2s
from d2s.convert import ConvertError


def joins_then_updates(x, y, k):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < k:
        i += 1
        if x.sum() > 100.0:
            a = y * 0.5
        else:
            b += a
        b = a
    return a, b


def updates_without_joining(x, y, k):
    a = x * 1.0
    b = y + 0.5
    i = 0
    while i < k:
        i += 1
        if x.sum() > 100.0:
            a = y * 0.5
        else:
            b += a
    return a, b


X = d2s.tensor(np.array([1.0, 2.0], np.float32))
Y = d2s.tensor(np.array([3.0, 4.0], np.float32))


@pytest.mark.parametrize("k", [0, 1, 3])
def test_names_joined_by_the_body_are_refused_at_the_loop(k):
    with pytest.raises(ConvertError, match="hold the same one after an iteration") as info:
        d2s.jit.to_static(joins_then_updates)(X, Y, d2s.tensor(k))
    assert "test_control_flow_new_aliases.py" in str(info.value)


@pytest.mark.parametrize("k", [0, 1, 3])
@pytest.mark.parametrize("big", [False, True])
def test_in_place_updates_without_joining_equal_eager(k, big):
    x = X * 100.0 if big else X
    eager = updates_without_joining(x, Y, d2s.tensor(k))
    got = d2s.jit.to_static(updates_without_joining)(x, Y, d2s.tensor(k))
    for e, g in zip(eager, got):
        np.testing.assert_array_equal(e.numpy(), g.numpy())


def joins_then_returns_early(x, y, k):
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


@pytest.mark.parametrize("k", [0, 1, 2, 3])
@pytest.mark.parametrize("big", [False, True])
def test_join_under_an_early_return_flag_matches_eager(k, big):
    # (fuzz seed 0 #465, #870: `b = a` runs under the return flag's `if`; the loop carries a
    # flag saying whether b holds a, so the second iteration's `b += a` updates a as eager's)
    x = X * 100.0 if big else X
    np.testing.assert_array_equal(d2s.jit.to_static(joins_then_returns_early)(x, Y, d2s.tensor(k)).numpy(),
                                  joins_then_returns_early(x, Y, d2s.tensor(k)).numpy())
