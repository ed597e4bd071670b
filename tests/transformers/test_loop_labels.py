"""d2s/transformers/for_loops.py, while_loops.py: loop variables are named in messages as the
user knows them (the early-return pass's result variable is "the return value"), and a Python
value returned from a tensor branch inside a tensor loop is refused with that reason."""
import pytest

import d2s
from d2s.user_errors import ConvertError


def str_from_tensor_branch_in_for(x, n):
    for i in range(n):
        if x.sum() > 3.0:
            return "big"
        x = x + 1.0
    return "small"


def str_from_tensor_branch_in_while(x, n):
    i = 0
    while i < n:
        if x.sum() > 3.0:
            return "big"
        x = x + 1.0
        i += 1
    return "small"


@pytest.mark.parametrize("fn", [str_from_tensor_branch_in_for, str_from_tensor_branch_in_while])
def test_python_value_chosen_by_tensor_data_is_refused_naming_the_return_value(fn):
    assert fn(d2s.tensor([1.0, 2.0, 3.0]), 0) == "small"  # eager: a str chosen by the data
    with pytest.raises(ConvertError) as info:
        d2s.jit.to_static(fn)(d2s.tensor([1.0, 2.0, 3.0]), d2s.tensor(2))
    text = str(info.value)
    assert "'the return value' is str 'big'" in text and "cannot be returned by a program" in text
    assert "retval" not in text and "test_loop_labels.py" in text
