"""d2s/convert/logical.py: ``not x`` is a Python bool in eager code whatever ``x`` is (a tensor
of one element, a number, a comparison): the converted call returns that bool, and raises
eager's ValueError for a tensor of several elements instead of negating it element-wise.
Converted vs eager on inputs of one and several elements."""
import pytest

import d2s
from convert_helpers import assert_same_outcome

XS = [d2s.tensor(v) for v in ([1.0], [0.0], [0.3, -0.3], [1.0, 2.0])]


def not_tensor(x):
    return not x


def not_comparison(x):
    return not (x.sum() > 0)


def not_kept_and_used(x):
    ok = not (x.max() > 1)
    if ok:
        y = x + 1
    else:
        y = x - 1
    return ok, y


def not_of_a_mixed_value(x):
    m = min(x.sum(), 0.5)
    return not m


@pytest.mark.parametrize("fn", [not_tensor, not_comparison, not_kept_and_used, not_of_a_mixed_value])
def test_not_returns_a_python_bool(fn):
    static = d2s.jit.to_static(fn)
    for x in XS:
        assert_same_outcome(fn, static, x)


def test_not_of_a_tensor_of_unknown_size_checks_it_has_one_element():
    static = d2s.jit.to_static(not_tensor, input_spec=[d2s.jit.InputSpec([None], "float32")])
    assert static(d2s.tensor([0.0])) is True
    with pytest.raises(ValueError, match="ambiguous"):
        static(d2s.tensor([1.0, 2.0]))


def and_or_of_python_bools(x):
    v = x.sum().item()
    c = int(x.sum())
    return v > 0.5 and v < 10, c > 0 or c < -5


def test_and_or_of_two_python_bools_is_a_python_bool():
    static = d2s.jit.to_static(and_or_of_python_bools)
    for x in XS + [d2s.tensor([-7.0])]:
        assert_same_outcome(and_or_of_python_bools, static, x)
