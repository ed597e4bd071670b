"""d2s/convert/control_flow.py: an attribute of a user object set by a method called inside a
tensor ``if`` is refused with an error naming it (both branches are traced, so the object would
see both writes); an attribute assigned in the branch itself is carried. Converted vs eager."""
import numpy as np
import pytest

import d2s
from d2s.user_errors import ConvertError

XS = [d2s.tensor([1.0, 2.0, 3.0]), d2s.tensor([-1.0, 0.5, 1.0]), d2s.tensor([-3.0, -2.0, -1.0])]


def check(fn, inputs):
    static = d2s.jit.to_static(fn)
    for args in inputs:
        got, want = static(*args), fn(*args)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert static.programs


class Acc:
    def __init__(self):
        self.total = 0.0

    def add(self, v):
        self.total = self.total + v


def method_sets_attribute_in_branch(x):
    a = Acc()
    a.add(x)
    if a.total.sum() > 0:
        a.add(x)
    return a.total


def attribute_assigned_in_branch(x):
    a = Acc()
    a.add(x)
    if a.total.sum() > 0:
        a.total = a.total + x
    return a.total


def test_attribute_set_by_a_call_in_a_tensor_branch_is_refused_naming_it():
    with pytest.raises(ConvertError, match="sets attribute 'total' of an object of class Acc") as info:
        d2s.jit.to_static(method_sets_attribute_in_branch)(XS[0])
    assert "test_control_flow_objects.py" in str(info.value)


def test_attribute_assigned_in_the_branch_itself_is_carried():
    check(attribute_assigned_in_branch, [(x,) for x in XS])
