"""d2s/convert/subscripts.py: a Python list of numbers read at an index known only when the
program runs (an int chosen by a tensor `if`, a loop counter) gives the Python number eager
code reads, of its type and exactly (a double for floats); numbers of several types in the
list raise at the user's line, since the type read depends on the index."""
import pytest

import d2s
from convert_helpers import assert_same_outcome

XS = [d2s.tensor(v) for v in ([1.0, 2.0], [-1.0, -2.0], [0.3, -0.3])]


def ints_at_tensor_chosen_index(x):
    k = 0
    if x.sum() > 0:
        k = 1
    return [10, 20, 30][k], x[k]


def floats_at_tensor_chosen_index(x):
    k = 0
    if x.sum() > 0:
        k = 2
    scales = [0.1, 0.25, 0.3]
    return scales[k], x * scales[k]


def stand_ins_at_tensor_chosen_index(x):
    k = 0
    if x.sum() > 0:
        k = 1
    return [x[0].item(), x[1].item()][k]


@pytest.mark.parametrize("fn", [ints_at_tensor_chosen_index, floats_at_tensor_chosen_index,
                                stand_ins_at_tensor_chosen_index])
def test_a_number_read_at_a_tensor_index_is_that_number(fn):
    static = d2s.jit.to_static(fn)
    for x in XS:
        assert_same_outcome(fn, static, x)


def mixed_types(x):
    k = 0
    if x.sum() > 0:
        k = 1
    return [1, 0.5][k]


def test_numbers_of_several_types_raise_at_the_users_line():
    with pytest.raises(TypeError, match="numbers of several types") as e:
        d2s.jit.to_static(mixed_types)(XS[0])
    assert "test_subscripts_number_lists.py" in str(e.value)
