"""d2s/convert/control_flow.py: a ``return`` of a Python number from one branch of a tensor
``if`` (the other branch returns later, or returns a number too) gives back the Python number
eager code returns, of the same type. Converted vs eager on inputs taking each path."""
import pytest

import d2s


def first_big(v):
    for i in range(3):
        if v[i] > 1.0:
            return i
    return -1


def first_big_float(v):
    for i in range(3):
        if v[i] > 1.0:
            return i * 0.5
    return -1.0


def flag_in_else(v):
    if v.sum() > 0:
        pass
    else:
        return True
    return False


def nested_in_helper(x):
    def helper(v):
        for i in range(3):
            if v[i] > 1.0:
                return i
        return -1
    return helper(x), x * 2.0


XS = [d2s.tensor([0.5, 2.0, 3.0]), d2s.tensor([4.0, 4.0, 4.0]), d2s.tensor([0.0, 0.0, 0.0]),
      d2s.tensor([-1.0, -1.0, 3.0])]


@pytest.mark.parametrize("fn", [first_big, first_big_float, flag_in_else, nested_in_helper])
def test_python_number_returned_from_tensor_branch(fn):
    static = d2s.jit.to_static(fn)
    for x in XS:
        want, got = fn(x), static(x)
        if isinstance(want, tuple):
            assert type(got[0]) is type(want[0]) and got[0] == want[0], (x, got, want)
            assert got[1].numpy().tolist() == want[1].numpy().tolist()
        else:
            assert type(got) is type(want) and got == want, (x, got, want)
    assert static.programs


def two_floats(x):
    if x.sum() > 0.5:
        y = 0.1
    else:
        y = 0.2
    return y


def float_or_tensor_then_math(x):
    if x.sum() > 0.5:
        y = 0.1
    else:
        y = x.sum()
    return y, y * 3, 1 / y


def float_or_int_tensor(x):
    if x.sum() > 1:
        y = 0.1
    else:
        y = x.sum()
    return y


@pytest.mark.parametrize("fn, xs", [
    (two_floats, [d2s.tensor([1.0, 2.0]), d2s.tensor([0.1, 0.2])]),
    (float_or_tensor_then_math, [d2s.tensor([1.0, 2.0]), d2s.tensor([0.1, 0.2])]),
    (float_or_int_tensor, [d2s.tensor([1, 2]), d2s.tensor([0, 1])]),
])
def test_a_python_float_comes_back_exactly(fn, xs):
    # the merged tensor has the tensor side's dtype (float32, int64), which would round 0.1
    static = d2s.jit.to_static(fn)
    for x in xs:
        want, got = fn(x), static(x)
        want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
        for w, g in zip(want, got):
            assert type(g) is type(w), (x, g, w)
            if isinstance(w, float):
                assert g == w, (x, g, w)
            else:
                assert g.dtype == w.dtype and g.numpy().tolist() == w.numpy().tolist()
