"""d2s/transformers/return_statements.py (and unsupported_features.py): a ``with`` block that
always returns, inside a tensor ``if`` outside loops, is lowered like any early return, so the
``if`` converts (the context manager still wraps the returned computation); returns inside
``with`` in loops or ``try`` stay real returns, pinned to Python as before. Converted vs eager."""
import numpy as np
import pytest

import d2s


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # the exception type is compared
        return "raise", e


def check(fn, inputs):
    static = d2s.jit.to_static(fn)
    for args in inputs:
        e_kind, e_val = _outcome(fn, *args)
        s_kind, s_val = _outcome(static, *args)
        assert s_kind == e_kind, (args, e_val, s_val)
        if e_kind == "raise":
            assert isinstance(s_val, type(e_val))
            continue
        assert type(s_val) is type(e_val)
        assert s_val.dtype == e_val.dtype
        np.testing.assert_allclose(s_val.numpy(), e_val.numpy(), rtol=1e-6)
    assert static.programs


def return_inside_with(x):
    if x.sum() > 0:
        with d2s.no_grad():
            return x * 3.0
    return x * 1.0


def return_inside_with_in_else(x):
    y = x + 1.0
    if y.sum() > 0:
        y = y * 2.0
    else:
        with d2s.no_grad():
            y = y - 1.0
            return y * 5.0
    return y


def nested_withs(x, flag):
    if flag:
        if x.mean() > 1.0:
            with d2s.no_grad():
                with d2s.enable_grad():
                    return x * 2.0
    return x - 1.0


XS = [d2s.tensor([1.0, 2.0, 3.0], requires_grad=True), d2s.tensor([-1.0, -2.0, 0.5], requires_grad=True)]


@pytest.mark.parametrize("fn", [return_inside_with, return_inside_with_in_else])
def test_return_inside_with_in_tensor_if(fn):
    check(fn, [(x,) for x in XS])


def test_nested_withs_under_python_and_tensor_ifs():
    check(nested_withs, [(x, flag) for x in XS for flag in (True, False)])
