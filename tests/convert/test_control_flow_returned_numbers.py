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
