"""d2s/transformers/while_walrus.py: a ``while`` whose test binds a name with ``:=`` carries
that name through the loop (tensor and Python bounds, zero trips, ``continue``, ``else``);
a walrus the pass cannot hoist exactly is refused at the user's line. Converted vs eager."""
import pytest

import d2s
from convert_helpers import check_exact
from d2s.user_errors import ConversionError


X = d2s.tensor([1.0, 2.0, 3.0])
BOUNDS = [0, 3, d2s.tensor(0), d2s.tensor(3)]


def counter_in_test(x, n):
    i = 0
    while (i := i + 1) <= n:
        x = x * 1.5
    return x


def tensor_bound_by_walrus(x, n):
    k = n
    while (k := k - 1) >= 0:
        x = x + k
    return x, k


def walrus_with_continue_and_else(x, n):
    i = 0
    s = x * 0.0
    while (i := i + 1) <= n:
        if i == 2:
            continue
        s = s + x * i
    else:
        s = s + 100.0
    return s


def walrus_with_break_skips_else(x, n):
    i = 0
    while (i := i + 1) <= n:
        x = x + 1.0
        if x.sum() > 10.0:
            break
    else:
        x = x * 0.0
    return x


@pytest.mark.parametrize("fn", [counter_in_test, walrus_with_continue_and_else, walrus_with_break_skips_else])
def test_walrus_counter_in_while_test(fn):
    assert check_exact(fn, [(X, n) for n in BOUNDS]).programs


def test_walrus_on_a_tensor_in_while_test():
    assert check_exact(tensor_bound_by_walrus, [(X, d2s.tensor(0)), (X, d2s.tensor(3))]).programs


def walrus_after_and(x, n):
    i = 0
    while n > 0 and (i := i + 1) <= n:
        x = x * 1.5
    return x


def test_walrus_that_python_may_skip_is_refused_at_its_line():
    with pytest.raises(ConversionError, match=":=") as info:
        d2s.jit.to_static(walrus_after_and)(X, 2)
    assert "test_while_walrus.py" in str(info.value)
