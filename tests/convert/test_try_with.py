"""Converted vs eager: control flow inside try/with bodies, returns inside try/with bodies
(lowered like other early returns), and returns in a try's handlers or finally inside an
if/while/for (which stay real Python returns)."""
import contextlib

import pytest

import d2s
from convert_helpers import check, t
from d2s.convert import ConvertError
from d2s.transformers import convert_function

X = t([1.0, 2.0])


def return_in_try_in_python_if(x, c):
    if c:
        try:
            return x + 1
        finally:
            x = x * 0
    return x


def return_in_with_in_python_loop(x, n):
    for i in range(n):
        with contextlib.nullcontext():
            if i == 2:
                return x + i
    return x - 1


def return_in_try_beside_tensor_if(x, c):
    if x.sum() > 0:
        x = x * 2
    if c:
        try:
            return x + 1
        except ValueError:
            return x
    return x - 1


def raising_try_return(x, c):
    if c:
        try:
            raise ValueError("boom")
        except ValueError:
            return x * 3
    return x


def test_return_inside_try_or_with_inside_python_control_flow_runs_as_python():
    check(return_in_try_in_python_if, (X, True), (X, False))
    check(return_in_with_in_python_loop, (X, 0), (X, 2), (X, 5))
    check(return_in_try_beside_tensor_if, (X, True), (X, False), (-X, True), (-X, False))
    check(raising_try_return, (X, True), (X, False))


def return_in_try_under_tensor_if(x):
    if x.sum() > 0:
        try:
            return x + 1
        finally:
            pass
    return x


def test_return_inside_try_under_a_tensor_if_converts():
    # (was refused; issue 27: the early-return pass lowers returns in try bodies; a return in a
    # finally stays refused: test_patterns_errors)
    check(return_in_try_under_tensor_if, X, -X)


def tensor_if_in_with(x):
    with d2s.no_grad():
        if x.sum() > 0:
            y = x + 1
        else:
            y = x - 1
    return y


def tensor_loop_in_try(x, n):
    try:
        for i in range(n):
            if x.sum() > i:
                x = x + 1
            else:
                break
    except ValueError:
        x = x * 0
    finally:
        x = x * 2
    return x


def tensor_if_in_except_handler(x):
    try:
        raise KeyError("k")
    except KeyError:
        if x.sum() > 0:
            x = x + 10
    return x


def test_tensor_control_flow_inside_with_and_try_converts():
    check(tensor_if_in_with, X, -X)
    check(tensor_loop_in_try, (X, d2s.tensor(0)), (X, d2s.tensor(2)), (X, d2s.tensor(5)), (-X, d2s.tensor(3)))
    check(tensor_if_in_except_handler, X, -X)


def test_no_grad_inside_with_still_applies_to_both_branches():
    x = t([1.0, 2.0])
    x.requires_grad_()
    out = convert_function(tensor_if_in_with).fn(x)
    assert not out.requires_grad
