"""A tensor appended to a list in a tensor loop is the list's element in eager code: an
in-place update of that tensor after the append changes the element too (fuzz seed 1 #183).
In a program the list keeps values, so the converted code writes the new value into the
element while it is still the list's last one, in the block of the append; elsewhere the
update is refused with an error at the user's line."""
import numpy as np
import pytest

import d2s
from d2s.convert import ConvertError
from tests.convert_helpers import check_exact

X = np.array([0.5, -1.0, 2.0], np.float32)
Y = np.array([1.0, 0.3, -0.7], np.float32)


def append_then_update(x, y, n):
    acc = []
    b = y + 0.5
    for _ in range(n):
        acc.append(b)
        b -= x * 0.5  # the element just appended changes with it
        b = b * 2.0
    tail = d2s.stack(acc).sum(axis=0) if len(acc) > 0 else x * 0.0
    return b + tail


def append_update_twice(x, y, n):
    acc = []
    b = y * 1.0
    i = 0
    while i < n:
        i += 1
        acc.append(b)
        b += x
        b *= 0.5
        b = b + 1.0
    return d2s.stack(acc).sum(axis=0) if len(acc) > 0 else x * 0.0


def append_then_update_in_branch(x, y, n):
    acc = []
    b = y * 1.0
    for _ in range(n):
        acc.append(b)
        if b.sum() > 0.0:
            b -= x
        b = b * 2.0
    return d2s.stack(acc).sum(axis=0) if len(acc) > 0 else x * 0.0


@pytest.mark.parametrize("fn", [append_then_update, append_update_twice])
def test_update_after_append_reaches_the_list(fn):
    check_exact(fn, [(d2s.tensor(X * s), d2s.tensor(Y), d2s.tensor(n)) for n in (0, 1, 2, 3) for s in (1.0, -2.0)])


def test_update_of_an_appended_tensor_in_a_nested_branch_is_refused_at_its_line():
    for n in (0, 2):  # eager runs
        append_then_update_in_branch(d2s.tensor(X), d2s.tensor(Y), d2s.tensor(n))
    with pytest.raises(ConvertError, match="a list holds") as info:
        d2s.jit.to_static(append_then_update_in_branch)(d2s.tensor(X), d2s.tensor(Y), d2s.tensor(2))
    assert "test_list_append_aliasing.py" in str(info.value) and "b -= x" in str(info.value)


def append_the_tensor_each_iteration_updates(x, y, n):
    # fuzz seed 2 #131, minimized: every element is the one tensor b, updated in every iteration
    acc = []
    b = y + 0.5
    for _ in range(1, n + 1):
        b -= x * 0.5
        acc.append(b)
    return d2s.stack(acc).sum(axis=0) if len(acc) > 0 else x * 0.0


def test_appending_a_tensor_the_loop_keeps_updating_is_refused_at_the_loop():
    append_the_tensor_each_iteration_updates(d2s.tensor(X), d2s.tensor(Y), d2s.tensor(2))
    with pytest.raises(ConvertError, match="appends to a list a tensor that it updates in place") as info:
        d2s.jit.to_static(append_the_tensor_each_iteration_updates)(d2s.tensor(X), d2s.tensor(Y), d2s.tensor(2))
    assert "test_list_append_aliasing.py" in str(info.value)


def append_in_branch_then_update_next_iteration(x, y, n):
    # fuzz seed 2 #378, minimized: appended in a tensor `if`, updated again by the next iteration
    acc = []
    b = y + 0.5
    for _ in range(n):
        b -= x * 0.5
        if b.sum() > -1.0:
            acc.append(b)
    return d2s.stack(acc).sum(axis=0) if len(acc) > 0 else x * 0.0


def test_appending_in_a_branch_a_tensor_the_loop_keeps_updating_is_refused():
    append_in_branch_then_update_next_iteration(d2s.tensor(X), d2s.tensor(Y), d2s.tensor(2))
    with pytest.raises(ConvertError, match="appends to a list a tensor that it updates in place") as info:
        d2s.jit.to_static(append_in_branch_then_update_next_iteration)(d2s.tensor(X), d2s.tensor(Y), d2s.tensor(2))
    assert "test_list_append_aliasing.py" in str(info.value)
