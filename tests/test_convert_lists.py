"""Converted vs eager: Python lists in loops and branches (tensor lists, packing sequences of
tensors, names of enclosing scopes), and what is refused with a clear error."""
import pytest

import d2s
from convert_helpers import check, run_static, t
from d2s.convert.errors import ConvertError
from d2s.transformers import convert_function

X = t([1.0, 2.0])


def n_(v):
    return d2s.tensor(v)  # an int64 0-d tensor


# ------------------------------------------------------------------ names of enclosing scopes
LOG = []


def append_to_global(x, n):
    for i in range(n):
        LOG.append(i)
    return x + len(LOG)


def test_global_list_appended_in_python_loop():
    for n in (0, 3):
        LOG.clear()
        expected = append_to_global(X, n)
        LOG.clear()
        got = convert_function(append_to_global).fn(X, n)
        assert LOG == list(range(n))
        assert got.tolist() == expected.tolist()


def test_global_list_mutated_in_tensor_loop_is_refused():
    LOG[:] = [7]
    with pytest.raises(ConvertError, match="enclosing scope") as e:
        run_static(append_to_global, X, n_(3))
    assert "for i in range(n)" in str(e.value)
    assert LOG == [7]  # the build left it untouched


def make_closure_appender():
    acc = []

    def g(x, n):
        for i in range(n):
            acc.append(x * i)
        out = d2s.stack(acc) if acc else x
        acc.clear()
        return out
    return g


def test_closure_list_appended_in_python_loop():
    check(make_closure_appender(), (X, 0), (X, 3))


def make_closure_np_style():
    import numpy as np
    arr = np.zeros(0)

    def g(x, n):
        out = arr
        for i in range(n):
            out = np.append(out, i)
        return x + float(out.sum())
    return g


def test_closure_module_attribute_call_named_append_is_not_a_local():
    check(make_closure_np_style(), (X, 0), (X, 3))


def bound_in_one_branch_then_mutated(x, c):
    if c:
        lst = [x]
    for i in range(3):
        lst.append(x * i)
    return d2s.stack(lst)


def test_name_bound_in_one_python_branch_then_mutated_in_loop():
    check(bound_in_one_branch_then_mutated, (X, True))
    conv = convert_function(bound_in_one_branch_then_mutated).fn
    with pytest.raises(NameError):
        bound_in_one_branch_then_mutated(X, False)
    with pytest.raises(NameError):
        conv(X, False)
