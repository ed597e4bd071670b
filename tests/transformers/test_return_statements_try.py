"""d2s/transformers/return_statements.py: a ``return`` under a tensor ``if`` inside a ``try``
or ``with`` body (issue 27, family 2; was refused) is lowered to the result variable and the
return flag; the rest of the body is skipped by the flag, so ``__exit__`` and ``finally`` run
exactly once, after the body, on both paths, as when Python returns. Converted vs eager on
inputs that take every path (loops included, zero-trip ones too), values and gradients; and
the context manager's and the finally's events, which Python code records while the program is
built: once each, in eager's order, although the build traces both sides of the `if`."""
import contextlib

import numpy as np
import pytest

import d2s

from convert_helpers import check_exact
from jit_helpers import check as check_grads

T = d2s.tensor
LOG = []


@d2s.jit.not_to_static
def _record(event):
    # the converted functions record through this helper, which runs as Python while the
    # program is built: a converted function (or helper) that changed LOG would be refused (a
    # program changes a global list once, eager code at every call), and these events are the
    # build's, on purpose
    LOG.append(event)


@contextlib.contextmanager
def section(name):
    LOG.append(("enter", name))
    try:
        yield
    finally:
        LOG.append(("exit", name))


def in_with(x):
    with section("a"):
        if x.sum() > 0:
            return x * 2
        y = x + 1
    return y


def in_try_finally(x):
    y = x * 1.0
    try:
        if x.sum() > 0:
            return y  # the value returned is y now: the finally's rebinding does not change it
        y = x + 1
    finally:
        _record("finally")
        y = y * 10
    return y


def try_else_skipped(x):
    try:
        if x.mean() > 1.0:
            return x - 1
    except ValueError:
        _record("except")
    else:
        x = x * 3  # (skipped on runs that returned, as Python skips a try's else then)
    return x


def nested_blocks(x):
    with section("outer"):
        try:
            with section("inner"):
                if x.sum() > 0:
                    if x.max() > 2.5:
                        return x * 100
                    x = x + 1
                x = x * 2
            if x.min() < 0:
                return -x
        finally:
            _record("finally")
        x = x + 0.5
    return x


def in_loops(x, n):
    total = x * 0
    for i in range(n):
        with section("iter"):
            k = 0
            while k < i:
                k += 1
                if (total + x).sum() > 6:
                    return total
                total = total + x
            if i == 3:
                continue
            total = total + 0.5
    return total * -1


def in_unrolled_loop(x):
    for i in range(3):
        try:
            if x.sum() > i:
                return x + i
            x = x * 2
        finally:
            _record(i)
    return x


XS = [T([1.0, 2.0]), T([-1.0, -2.0]), T([3.0, 0.5]), T([0.1, -0.3])]


@pytest.mark.parametrize("fn", [in_with, in_try_finally, try_else_skipped, nested_blocks, in_unrolled_loop])
def test_returns_in_with_and_try_bodies_equal_eager(fn):
    check_exact(fn, [(x,) for x in XS])
    for x in XS:
        check_grads(fn, x)


def test_exit_and_finally_run_once_per_build_in_order():
    LOG.clear()
    d2s.jit.to_static(in_with)(T([5.0, 6.0]))
    assert LOG == [("enter", "a"), ("exit", "a")]
    LOG.clear()
    d2s.jit.to_static(in_try_finally)(T([5.0, 6.0]))
    assert LOG == ["finally"]
    LOG.clear()
    d2s.jit.to_static(nested_blocks)(T([5.0, 6.0]))
    assert LOG == [("enter", "outer"), ("enter", "inner"), ("exit", "inner"), "finally", ("exit", "outer")]


@pytest.mark.parametrize("n", [0, 1, 3, 5])
def test_returns_in_with_bodies_inside_tensor_loops(n):
    for x in (T([1.0, 2.0]), T([0.2, 0.1]), T([-1.0, 0.5])):
        check_exact(in_loops, [(x, T(n))])
        check_grads(in_loops, x, T(n))


def return_value_read_in_finally(x):
    out = None
    try:
        if x.sum() > 0:
            out = x * 2
            return out
        out = x - 1
    finally:
        out = out + 1  # rebinding the name does not change what return evaluated
    return out


def test_finally_rebinding_the_returned_name():
    check_exact(return_value_read_in_finally, [(x,) for x in XS])
    np.testing.assert_allclose(d2s.jit.to_static(return_value_read_in_finally)(T([1.0])).numpy(), [2.0])
