"""d2s/convert/raising.py: a ``raise`` (or failed Python ``assert``) in one branch of a tensor
``if`` raises the same exception type when the program takes that branch, and returns what
eager returns otherwise; compared with eager on inputs taking each branch."""
import numpy as np
import pytest

import d2s
from d2s.user_errors import ConvertError


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # the exception type is what is compared
        return "raise", e


def check(fn, *inputs):
    """Converted vs eager on each input tuple: same values, or the same exception type."""
    static = d2s.jit.to_static(fn)
    kinds = set()
    for args in inputs:
        e_kind, e_val = _outcome(fn, *args)
        s_kind, s_val = _outcome(static, *args)
        assert s_kind == e_kind, (args, e_val, s_val)
        kinds.add(e_kind)
        if e_kind == "raise":
            assert isinstance(s_val, type(e_val)), (type(s_val), type(e_val))
            assert str(e_val).splitlines()[0] in str(s_val)  # (pytest adds lines to asserts)
        else:
            np.testing.assert_allclose(s_val.numpy(), e_val.numpy(), rtol=1e-6)
            assert s_val.dtype == e_val.dtype
    assert static.programs, "no program was built"
    return kinds


POS, NEG = d2s.tensor([1.0, 2.0, 3.0]), d2s.tensor([-1.0, -2.0, -3.0])


def raise_value_error(x):
    if x.sum() < 0:
        raise ValueError("negative sum")
    return x * 2.0


def raise_in_else(x):
    if x.sum() < 0:
        y = x - 1.0
    else:
        raise RuntimeError(f"positive, shape {tuple(x.shape)}")
    return y


def raise_in_loop(x, n):
    i = 0
    while i < n:
        if x.sum() > 4.0 + i:
            raise KeyError("too big")
        x = x + 1.0
        i += 1
    return x


def python_assert_in_branch(x, limit):
    if x.sum() > 0:
        assert limit > 2, "limit too small"
        x = x * limit
    return x


def test_raise_in_true_branch():
    assert check(raise_value_error, (POS,), (NEG,)) == {"ok", "raise"}


def test_raise_in_false_branch_with_formatted_message():
    assert check(raise_in_else, (POS,), (NEG,)) == {"ok", "raise"}


def test_raise_in_branch_inside_tensor_loop_and_zero_trips():
    n0, n3 = d2s.tensor(0), d2s.tensor(3)
    assert check(raise_in_loop, (POS, n0), (POS, n3), (NEG, n3)) == {"ok", "raise"}


def test_failed_python_assert_in_tensor_branch_raises_only_when_taken():
    assert check(python_assert_in_branch, (POS, 1), (NEG, 1), (POS, 3)) == {"ok", "raise"}


def test_program_error_is_catchable_as_the_builtin_type():
    with pytest.raises(ValueError, match="negative sum"):
        d2s.jit.to_static(raise_value_error)(NEG)


class CustomError(Exception):
    pass


def raise_custom(x):
    if x.sum() < 0:
        raise CustomError("custom")
    return x


def test_user_defined_exception_is_refused_at_the_users_line():
    with pytest.raises(ConvertError, match="CustomError") as info:
        d2s.jit.to_static(raise_custom)(POS)
    assert "test_raising.py" in str(info.value)


def both_raise(x):
    if x.sum() < 0:
        raise ValueError("neg")
    else:
        raise ValueError("pos")


def test_both_branches_raising_raise_the_same_type_as_eager():
    # (both branches raise while the program is built: the type is eager's, the message is one
    # branch's)
    static = d2s.jit.to_static(both_raise)
    for x in (POS, NEG):
        with pytest.raises(ValueError):
            both_raise(x)
        with pytest.raises(ValueError):
            static(x)
