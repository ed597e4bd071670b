"""Refusals that show a Python value describe a function by its name and line, never by a repr
that names the converter's wrappers."""
import pytest

import d2s
from d2s.convert import ConvertError


def picks_a_lambda(x):
    f = (lambda v: v * 2.0) if x.sum() > 0 else (lambda v: v - 2.0)
    return f(x)


def test_function_chosen_by_tensor_data_is_named_plainly():
    with pytest.raises(ConvertError) as e:
        d2s.jit.to_static(picks_a_lambda)(d2s.tensor([1.0, 2.0]))
    msg = str(e.value)
    assert "__d2s" not in msg and "<locals>" not in msg
    assert "the function <lambda> (line" in msg and __file__ in msg
