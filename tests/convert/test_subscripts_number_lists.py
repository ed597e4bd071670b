"""d2s/convert/subscripts.py: a Python list of numbers read or written at an index known only
when the program runs (an int chosen by a tensor `if`, a loop counter) gives the Python numbers
eager code holds, of their types and exactly (a double for floats); a tensor written makes that
element a tensor on that run only. What the program cannot know (numbers of several types,
which element changes type) raises at the user's line."""
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


def numbers_written_at_tensor_chosen_index(x):
    k = 0
    if x.sum() > 0:
        k = 1
    counts = [0, 0]
    counts[k] = counts[k] + 1
    scores = [0.1, 0.2]
    scores[k] = 0.7
    return counts, scores


def tensor_written_into_numbers(x):
    k = 0
    if x.sum() > 0:
        k = 1
    vals = [0.5, 0.25]
    vals[k] = x.sum()
    return vals


@pytest.mark.parametrize("fn", [numbers_written_at_tensor_chosen_index, tensor_written_into_numbers])
def test_writing_at_a_tensor_index_keeps_the_other_numbers_numbers(fn):
    static = d2s.jit.to_static(fn)
    for x in XS:
        assert_same_outcome(fn, static, x)


def int_written_into_floats(x):
    k = 0
    if x.sum() > 0:
        k = 1
    vals = [0.5, 0.25]
    vals[k] = 1
    return vals


def test_a_number_of_another_type_written_raises_at_the_users_line():
    with pytest.raises(TypeError, match="a Python int written at a tensor index into a list of floats") as e:
        d2s.jit.to_static(int_written_into_floats)(XS[0])
    assert "test_subscripts_number_lists.py" in str(e.value)
