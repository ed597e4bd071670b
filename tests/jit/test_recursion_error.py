"""A recursion ended by a tensor condition is refused with a clear error at the user's line
(not a bare RecursionError); one ended by a Python value converts."""
import numpy as np
import pytest

import d2s
from d2s.convert import ConvertError


def factorial(n):
    if n <= 1:
        return n * 0 + 1
    return n * factorial(n - 1)


def test_tensor_ended_recursion_names_the_users_line():
    with pytest.raises(ConvertError) as e:
        d2s.jit.to_static(factorial)(d2s.tensor(3))
    msg = str(e.value)
    assert "recursion" in msg and __file__ in msg and "not_to_static" in msg


def test_python_ended_recursion_converts():
    static = d2s.jit.to_static(factorial)
    for n in (1, 4):
        assert static(n) == factorial(n)
    np.testing.assert_array_equal(d2s.jit.to_static(lambda x: x * factorial(3))(d2s.tensor([1.0])).numpy(), [6.0])
