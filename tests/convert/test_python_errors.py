"""Python's own errors, with Python's types, in converted code (issue 27, family 3): what eager
code raises (iterating a 0-d tensor or an int, unpacking an int, stacking an empty list, int()
of a tensor of several elements, an index out of range) the converted function raises with the
same type, at the user's line; when only the data decides, on exactly the runs where eager
raises (a loop that runs zero times, a branch not taken)."""
import traceback

import pytest

import d2s
from d2s_runtime.ops import ShapeError

from convert_helpers import check_exact

T = d2s.tensor
HERE = __file__


def _raises_like_eager(fn, args, error):
    """Eager and converted ``fn`` raise ``error`` on ``args`` (converted: at this file's line)."""
    with pytest.raises(error):
        fn(*args)
    with pytest.raises(error) as info:
        d2s.jit.to_static(fn)(*args)
    # the user's line: named by the message, or the traceback's last frame in the user's file
    frames = [f for f in traceback.extract_tb(info.tb) if f.filename == HERE]
    assert HERE in str(info.value) or frames[-1].name == fn.__name__, str(info.value)
    return info.value


def iterate_0d(x):
    s = x * 0
    for v in x.sum():
        s = s + v
    return s


def iterate_counter(x, n):
    i = 0
    while i < n:
        for v in i:  # eagerly a Python int: TypeError on runs that reach it
            x = x + v
        i += 1
    return x


def unpack_int(x):
    a, b = 3
    return x + a


def unpack_0d(x):
    a, b = x.sum()
    return a


def iterate_int(x):
    for v in 3:
        x = x + v
    return x


def test_iteration_over_a_0d_tensor_is_a_type_error():
    err = _raises_like_eager(iterate_0d, (T([1.0, 2.0]),), TypeError)
    assert "iteration over a 0-d tensor" in str(err)
    _raises_like_eager(unpack_0d, (T([1.0, 2.0]),), TypeError)


def test_iterating_or_unpacking_an_int_is_pythons_type_error():
    _raises_like_eager(unpack_int, (T([1.0, 2.0]),), TypeError)
    _raises_like_eager(iterate_int, (T([1.0, 2.0]),), TypeError)


def test_iterating_a_counter_raises_only_when_the_loop_runs():
    x = T([1.0, 2.0])
    static = d2s.jit.to_static(iterate_counter)
    assert (static(x, T(0)).numpy() == iterate_counter(x, T(0)).numpy()).all()
    with pytest.raises(TypeError, match="'int' object is not iterable"):
        iterate_counter(x, T(2))
    with pytest.raises(TypeError, match=r"'int' object is not iterable.*test_python_errors.py"):
        static(x, T(2))


def stack_of_selected(x):
    xs = []
    for i in range(x.shape[0]):
        if x[i] > 100:
            xs.append(x[i])
    return d2s.stack(xs)


def stack_of_loop(x, n):
    xs = []
    for i in range(n):
        xs.append(x * i)
    return d2s.stack(xs), d2s.concat(xs), d2s.stack(xs, 1)


@pytest.mark.parametrize("values,n", [([1.0, 2.0], 2), ([1.0, 200.0], 0)])
def test_stack_of_an_empty_list_raises_shape_error_on_the_runs_where_eager_does(values, n):
    x = T(values)
    for fn, args in ((stack_of_selected, (x,)), (stack_of_loop, (x, T(n)))):
        static = d2s.jit.to_static(fn)
        try:
            want = fn(*args)
        except ShapeError as e:
            with pytest.raises(ShapeError, match="needs at least one tensor") as info:
                static(*args)
            assert "test_python_errors.py" in str(info.value) and "stack" in str(e)
            continue
        check_exact(fn, [args])
        assert want is not None


def int_of_vector(x):
    return int(x) + 1


def test_int_of_a_tensor_of_several_elements_is_a_value_error():
    _raises_like_eager(int_of_vector, (T([1.0, 2.0]),), ValueError)
    check_exact(int_of_vector, [(T([3.5]),), (T(2.0),)])


def index_past_the_end(x, n):
    for i in range(n):
        x = x + x[5]
    return x


def test_a_static_index_out_of_range_raises_index_error_when_the_loop_runs():
    x = T([1.0, 2.0])
    check_exact(index_past_the_end, [(x, T(0))])
    with pytest.raises(IndexError):
        index_past_the_end(x, T(1))
    with pytest.raises(IndexError, match="out of range"):
        d2s.jit.to_static(index_past_the_end)(x, T(1))
