"""A tensor loop that rebinds a name on some runs only (``if c: b = b * 2``, or in every iteration
of a loop that may run zero times) while another name holds the tensor it entered with (``c = b``
before the loop): after the loop, an in-place update through either name reaches the other
exactly on the runs where the loop never rebound it, as in eager code. Names holding one tensor
that the loop updates in place and then rebinds one of (``b = a``; ``b += x; a = a * 2``) run
their first iteration on its own, after which they hold different tensors.

When the converted function may update a tensor in place (``d2s.transformers.base.
updates_in_place``), such a loop carries a bool per such name, "still its entry tensor"
(``_ObjectCarry.split_aliases``); when it does not, the loop carries nothing more, and an
in-place update made elsewhere (a helper function) through such a name is refused at the
user's line instead of missing the other name. Each case runs eagerly and converted on inputs
that take every branch and run the loop zero, one and several times."""
import numpy as np
import pytest

import d2s
from tests.convert_helpers import check_exact

X = np.array([1.0, 2.0, 0.5], np.float32)


def inputs(ns=(0, 1, 2, 3), scales=(0.1, 1.0, 3.0)):
    return [(d2s.tensor(X * s), d2s.tensor(n)) for n in ns for s in scales]


def while_then_update_b(x, n):
    b = x * 2.0
    c = b
    i = 0
    while i < n:
        if b.sum() > 8.0:
            b = b * 2.0
        i = i + 1
    b += 1.0
    return b, c


def while_then_update_c(x, n):
    b = x * 2.0
    c = b
    i = 0
    while i < n:
        if b.sum() > 8.0:
            b = b * 2.0
        i = i + 1
    c.add_(1.0)
    return b, c


def for_range_then_setitem(x, n):
    b = x + 0.0
    c = b
    for j in range(n):
        if (b * j).sum() > 3.0:
            b = b - 1.0
    b[0] = 7.0
    return b, c


def rebound_in_else(x, n):
    b = x * 1.0
    c = b
    i = 0
    while i < n:
        i = i + 1
        if b.max() < 2.0:
            pass
        else:
            b = b * 0.5
    b *= 3.0
    return c, b


def rebound_under_python_flag(x, n, flag=False):
    b = x * 1.0
    c = b
    i = 0
    while i < n:
        if flag:  # a Python value: the name keeps its entry tensor in every iteration
            b = b * 2.0
        i = i + 1
    b += 1.0
    return b, c


def nested_loops(x, n):
    b = x * 1.0
    c = b
    i = 0
    while i < n:
        for j in range(n):
            if (b + j).sum() > 6.0:
                b = b + 1.0
        i = i + 1
    b -= 1.0
    return b, c


def two_names_entry(x, n):
    a = x * 1.0
    b = a
    c = a
    i = 0
    while i < n:
        if a.sum() > 4.0:
            a = a * 2.0
        if b.sum() < 2.0:
            b = b + 1.0
        i = i + 1
    a += 1.0
    b += 10.0
    return a, b, c


def in_outer_if(x, n):
    b = x * 1.0
    c = b
    if x.sum() > 2.0:
        i = 0
        while i < n:
            if b.sum() > 6.0:
                b = b * 2.0
            i = i + 1
    b += 1.0
    return b, c


def rebound_every_iteration(x, n):
    # held by the name after the loop only when it ran zero times
    b = x * 1.0
    c = b
    for j in range(n):
        b = b * 0.5
    b += 1.0
    return b, c


def shared_updated_then_one_rebound(x, n):
    # `b = a`, then `b += ...` reaches a in the first iteration only (a is rebound after it)
    a = x * 1.0
    b = a
    c = a
    i = 0
    while i < n:
        b += x * 0.5
        a = a * 2.0
        i += 1
    return a, b, c


def shared_updated_then_rebound_in_if(x, n):
    a = x * 1.0
    b = a
    c = a
    i = 0
    while i < n:
        b += x * 0.5
        if b.sum() > 3.0:
            a = a * 2.0
        i += 1
    return a, b, c


def shared_updated_through_the_other(x, n):
    a = x * 1.0
    b = a
    for j in range(n):
        a.add_(1.0)
        b = b * 0.5 + j
    b += 1.0
    return a, b


@pytest.mark.parametrize("fn", [while_then_update_b, while_then_update_c, for_range_then_setitem, rebound_in_else,
                                rebound_under_python_flag, nested_loops, two_names_entry, in_outer_if,
                                rebound_every_iteration, shared_updated_then_one_rebound,
                                shared_updated_then_rebound_in_if, shared_updated_through_the_other])
def test_in_place_update_after_loop_reaches_entry_aliases(fn):
    check_exact(fn, inputs())


def _bump(t):
    t += 1.0  # an in-place update the loop's function cannot see
    return t


def update_in_helper(x, n):
    b = x * 2.0
    c = b
    i = 0
    while i < n:
        if b.sum() > 8.0:
            b = b * 2.0
        i = i + 1
    _bump(b)
    return b, c


def test_in_place_update_in_a_helper_is_refused_at_the_users_line():
    with pytest.raises(Exception) as err:
        d2s.jit.to_static(update_in_helper)(*inputs()[0])
    assert "in-place update" in str(err.value) and "t += 1.0" in str(err.value)


def no_update(x, n):
    b = x * 2.0
    c = b
    i = 0
    while i < n:
        if b.sum() > 8.0:
            b = b * 2.0
        i = i + 1
    return b + 1.0, c


def with_update(x, n):
    b = x * 2.0
    c = b
    i = 0
    while i < n:
        if b.sum() > 8.0:
            b = b * 2.0
        i = i + 1
    b += 1.0
    return b, c


def _while_inputs(fn):
    static = check_exact(fn, inputs())
    (prog,) = static.programs  # (one signature: one program)
    (op,) = [op for op in prog.block.ops if op.type == "while"]
    return len(op.outputs)  # (loop vars, flags included)


def test_loops_that_cannot_observe_identity_carry_no_flag():
    # the same loop: one bool loop var more where the function updates a tensor in place
    assert _while_inputs(with_update) == _while_inputs(no_update) + 1
