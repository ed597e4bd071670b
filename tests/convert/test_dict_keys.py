"""Dict keys set in one branch of a tensor `if`, or first inside a tensor loop
(``d2s/convert/dict_keys.py``): Python's dict holds them on some runs only. Converted code
gives Python's answers run by run (``d[k]`` raises KeyError(k) where the key is absent,
``k in d``, ``d.get(k, default)``), or a clear error at the user's line where the answer would
be a Python value that depends on the data (``len(d)``, iterating over it). Each case runs
eagerly and converted on inputs that take every branch and run loops zero, one and several
times."""
import inspect

import numpy as np
import pytest

import d2s
from d2s.convert import ConvertError
from tests.convert_helpers import check_exact

X = np.array([0.5, 1.0, -0.25], np.float32)


def inputs(ns=(0, 1, 3), scales=(0.1, 1.0, 3.0)):
    return [(d2s.tensor(X * s), d2s.tensor(n)) for n in ns for s in scales]


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def run_both(fn, args):
    """(eager result or exception, converted result or exception)."""
    out = []
    for f in (fn, d2s.jit.to_static(fn)):
        try:
            out.append(f(*args))
        except Exception as e:  # noqa: BLE001 - compared below
            out.append(e)
    return out


# ------------------------------------------------------------------ a key set in one branch
def set_in_one_branch_unread(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    d["s"] = d["s"] + x
    return d["s"] + 1.0


def set_in_else_then_both(x, n):
    d = {"s": x * 1.0}
    if x.sum() > 1.0:
        pass
    else:
        d["t"] = x - 1.0
    d["t"] = x * 3.0  # the last key: bound on every run from here on
    return d["s"] + d["t"], list(d)


def membership_and_get(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    else:
        d["u"] = x + 1.0
    has_t = "t" in d
    no_u = "u" not in d
    return d.get("t", x), d.get("u", x * 0.0), has_t, no_u, type(has_t).__name__


def read_under_the_same_condition(x, n):
    d = {"s": x * 1.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    out = d["s"]
    if "t" in d:
        out = out + d["t"]
    return out


def key_set_in_nested_ifs(x, n):
    d = {"s": x * 1.0}
    if x.sum() > 0.2:
        if x.max() > 1.5:
            d["t"] = x * 2.0
        d["s"] = d["s"] - 1.0
    if "t" in d:
        return d["t"]
    return d["s"]


def carried_through_a_loop(x, n):
    d = {"s": x * 1.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    i = 0
    while i < n:
        d["s"] = d["s"] + 1.0
        i += 1
    return d["s"], "t" in d, d.get("t", x)


@pytest.mark.parametrize("fn", [set_in_one_branch_unread, set_in_else_then_both, membership_and_get,
                                read_under_the_same_condition, key_set_in_nested_ifs, carried_through_a_loop])
def test_keys_set_on_some_runs_give_pythons_answers(fn):
    check_exact(fn, inputs())


def read_after_one_branch(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    return d["t"] + 1.0


def test_reading_an_absent_key_raises_key_error_naming_it():
    for args in inputs():
        eager, conv = run_both(read_after_one_branch, args)
        if isinstance(eager, KeyError):
            assert isinstance(conv, KeyError), conv
            assert "'t'" in str(conv) and f":{_line_of(read_after_one_branch, 'return d[')}" in str(conv)
        else:
            np.testing.assert_allclose(conv.numpy(), eager.numpy())


def length_of(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    return len(d)


def iterate_keys(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    out = x * 0.0
    for k in d:
        out = out + d[k]
    return out


def comprehension_over(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    return [k for k in d]


def keys_method(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    return list(d.keys())


def set_before_later_keys(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    d["u"] = x
    d["t"] = x + 1.0
    return d["t"]


def unpack_keys(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    a, b = d
    return a


def compare_dicts(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    return {"s": 0} == d


@pytest.mark.parametrize("fn, line", [(length_of, "return len(d)"), (iterate_keys, "for k in d"),
                                      (unpack_keys, "a, b = d"), (compare_dicts, 'return {"s": 0} == d'),
                                      (comprehension_over, "return [k for k in d]"),
                                      (keys_method, "return list(d.keys())"),
                                      (set_before_later_keys, 'd["t"] = x + 1.0'),])
def test_answers_that_depend_on_the_data_are_refused_at_the_users_line(fn, line):
    with pytest.raises(ConvertError) as e:
        d2s.jit.to_static(fn)(*inputs()[0])
    assert "'t'" in str(e.value) and f":{_line_of(fn, line)}" in str(e.value).replace(", line ", ":")


def returned_dict(x, n):
    d = {"s": x * 0.0}
    if x.sum() > 1.0:
        d["t"] = x * 2.0
    return d


def test_a_returned_dict_is_exact_where_the_key_is_set_and_an_error_where_not():
    static = d2s.jit.to_static(returned_dict)
    big, small = d2s.tensor(X * 3.0), d2s.tensor(X * 0.1)
    got, want = static(big, d2s.tensor(0)), returned_dict(big, d2s.tensor(0))
    assert type(got) is dict and list(got) == list(want)
    np.testing.assert_allclose(got["t"].numpy(), want["t"].numpy())
    with pytest.raises(KeyError, match="did not set on this run"):
        static(small, d2s.tensor(0))


# ------------------------------------------------------------------ a key first set in a tensor loop
def first_set_in_loop_unread(x, n):
    d = {"s": x * 0.0}
    i = 0
    while i < n:
        d["t"] = x * i
        d["s"] = d["s"] + x
        i += 1
    return d["s"]


def first_set_in_loop_read_if_present(x, n):
    d = {"s": x * 0.0}
    for i in range(n):
        if (x * i).sum() > 1.0:
            d["t"] = x * i
    if "t" in d:
        return d["s"] + d["t"]
    return d["s"] - 1.0


def first_set_in_loop_read_in_loop(x, n):
    d = {"s": x * 0.0}
    for i in range(n):
        if "t" in d:
            d["s"] = d["s"] + d["t"]
        d["t"] = x + i
    return d["s"], d.get("t", x)


@pytest.mark.parametrize("fn", [first_set_in_loop_unread, first_set_in_loop_read_if_present,
                                first_set_in_loop_read_in_loop])
def test_keys_first_set_in_a_tensor_loop_give_pythons_answers(fn):
    check_exact(fn, inputs())


def first_set_in_loop_read_after(x, n):
    d = {}
    for i in range(n):
        d["a"] = x * i
    return d["a"]


def test_zero_trip_loop_then_read_raises_key_error():
    for args in inputs():
        eager, conv = run_both(first_set_in_loop_read_after, args)
        if isinstance(eager, KeyError):
            assert isinstance(conv, KeyError) and "'a'" in str(conv), conv
        else:
            np.testing.assert_allclose(conv.numpy(), eager.numpy())
