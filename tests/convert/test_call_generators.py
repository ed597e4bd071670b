"""convert_call: generator functions called from converted code run as Python (not refused);
a tensor condition inside one raises at the generator's own line."""
import numpy as np
import pytest

import d2s
from d2s.static import SymbolicValueError


def scaled(x, n):
    for i in range(n):
        yield x * i


def sums_generator(x, n):
    total = x * 0.0
    for v in scaled(x, n):
        total = total + v
    if total.sum() > 1.0:
        total = total - 1.0
    return total


def nested_generator(x, n):
    def pieces():
        for i in range(n):
            if i % 2 == 0:
                yield x + i
    return d2s.stack(list(pieces())) if n > 0 else x


def tensor_steered(x):
    if x.sum() > 0:
        yield x
    yield x * 2.0


def consumes_tensor_steered(x):
    s = x * 0.0
    for v in tensor_steered(x):
        s = s + v
    return s


@pytest.mark.parametrize("fn", [sums_generator, nested_generator])
@pytest.mark.parametrize("data, n", [([1.0, 2.0], 3), ([-1.0, 0.5], 0), ([0.1, -0.2], 2)])
def test_generator_helpers_run_as_python(fn, data, n):
    static = d2s.jit.to_static(fn)
    for scale in (1.0, -2.0):  # the second call reuses the program of the first signature
        x = d2s.tensor(data) * scale
        want, got = fn(x, n), static(x, n)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_tensor_condition_inside_a_generator_names_its_line():
    with pytest.raises(SymbolicValueError) as e:
        d2s.jit.to_static(consumes_tensor_steered)(d2s.tensor([1.0, 2.0]))
    assert "if x.sum() > 0:" in str(e.value) and __file__ in str(e.value)
