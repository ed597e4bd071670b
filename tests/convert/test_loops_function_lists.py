"""d2s/convert/loops.py: a list of functions appended in a loop keeps Python's late binding
on Python bounds (every lambda sees the final counter); on a tensor bound the list's length
is chosen by tensor data, which a program cannot return: refused naming the list and line."""
import pytest

import d2s
from d2s.user_errors import ConvertError


def lambdas_capture_late(n, x):
    fns = []
    for i in range(n):
        fns.append(lambda: i)
    return [f() for f in fns], x * 2.0


@pytest.mark.parametrize("n", [0, 1, 3])
def test_python_bound_keeps_late_binding(n):
    x = d2s.tensor([1.0])
    got, want = d2s.jit.to_static(lambdas_capture_late)(n, x), lambdas_capture_late(n, x)
    assert got[0] == want[0] and all(type(v) is int for v in got[0])


@pytest.mark.parametrize("n", [0, 3])
def test_tensor_bound_is_refused_naming_the_list(n):
    with pytest.raises(ConvertError) as info:
        d2s.jit.to_static(lambdas_capture_late)(d2s.tensor(n), d2s.tensor([1.0]))
    text = str(info.value)
    assert "'fns' is a Python list of function values whose length this tensor loop changes" in text
    assert "test_loops_function_lists.py" in text
