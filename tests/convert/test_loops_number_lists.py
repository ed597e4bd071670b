"""d2s/convert/loops.py and control_flow.py: a list of Python numbers grown in a tensor loop or
under a tensor `if` (``vals.append(x[i].item())``, ``vals.append(i * 0.1)``, ``vals.append(0.3)``)
comes back as a list of Python numbers, floats exactly (doubles, not float32 roundings), as
eager code builds it. Converted vs eager on inputs that append zero, one and several times."""
import pytest

import d2s
from convert_helpers import assert_same_outcome

XS = [d2s.tensor(v, dtype=d2s.float64) for v in ([1.0, 2.0], [-1.0, -2.0], [0.3, -0.3], [0.7, 3.0, -0.2])]


def constant_appended_in_if(x):
    vals = [0.1]
    if x.sum() > 0:
        vals.append(0.3)
    return vals


def counter_multiples_in_while(x):
    vals = []
    i = 0
    while i < x.sum():
        vals.append(i * 0.1)
        i += 1
    return vals


def items_appended_in_if(x):
    vals = []
    for i in range(x.shape[0]):
        if x[i] > 0:
            vals.append(x[i].item())
    return vals, len(vals)


def ints_appended_in_if(x):
    ns = [1]
    if x.sum() > 0:
        ns.append(2)
    return ns


@pytest.mark.parametrize("fn", [constant_appended_in_if, counter_multiples_in_while, items_appended_in_if,
                                ints_appended_in_if])
def test_a_list_of_numbers_grown_in_tensor_control_flow_comes_back_as_numbers(fn):
    static = d2s.jit.to_static(fn)
    for x in XS:
        assert_same_outcome(fn, static, x)
