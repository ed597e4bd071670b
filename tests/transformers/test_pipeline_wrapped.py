"""convert_function on functools.wraps wrappers converts the wrapper itself (its own source),
so a decorator is never silently dropped; the wrapped function is converted when called."""
import functools

import numpy as np
import pytest

import d2s


def twice(fn):
    @functools.wraps(fn)
    def wrapper(v):
        return fn(fn(v))
    return wrapper


@twice
def halve_if_big(v):
    if v.max() > 1.0:
        return v * 0.5
    return v


def calls_decorated(x):
    return halve_if_big(x) + 1.0


@d2s.no_grad()
def under_no_grad(x):
    if x.sum() > 0:
        return x * 2.0
    return x - 1.0


INPUTS = [[8.0, 1.0, 1.0], [0.5, 0.25, -1.0], [3.0, 0.0, 0.0]]


@pytest.mark.parametrize("fn", [calls_decorated, halve_if_big])
def test_decorator_runs_in_the_converted_call(fn):
    static = d2s.jit.to_static(fn)
    for data in INPUTS:
        x = d2s.tensor(data)
        np.testing.assert_allclose(static(x).numpy(), fn(x).numpy(), rtol=1e-6)


def test_library_decorator_at_the_root_converts():
    static = d2s.jit.to_static(under_no_grad)
    for data in INPUTS:
        x = d2s.tensor(data, requires_grad=True)
        want, got = under_no_grad(x), static(x)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
