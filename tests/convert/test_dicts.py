"""Converted vs eager: dicts carried by tensor loops, keys first assigned inside the loop."""
import pytest

import d2s
from convert_helpers import check, run_static, t
from d2s.convert import ConvertError

X = t([1.0, 2.0])


def n_(v):
    return d2s.tensor(v)


def key_first_assigned_in_loop(x, n):
    d = {}
    for i in range(n):
        d["a"] = x * i
        d["b"] = d["a"] + 1
    return d["a"], d["b"]


def key_updated_and_added(x, n):
    d = {"s": x * 0}
    i = 0
    while i < n:
        d["s"] = d["s"] + x
        d["last"] = i
        i += 1
    return d["s"], d["last"]  # (a returned dict: see tests/convert/test_dict_keys.py)


def key_holding_a_string(x, n):
    d = {}
    for i in range(n):
        d["name"] = "step"
        x = x + 1
    return x


def test_dict_key_first_assigned_in_a_tensor_loop():
    check(key_first_assigned_in_loop, (X, n_(1)), (X, n_(3)))
    check(key_updated_and_added, (X, n_(1)), (X, n_(4)))


def test_zero_trip_loop_leaves_such_keys_out_as_a_run_time_error():
    with pytest.raises(KeyError):
        key_first_assigned_in_loop(X, n_(0))
    fn = d2s.jit.to_static(key_first_assigned_in_loop)
    assert fn(X, n_(2))[0].tolist() == [1.0, 2.0]
    # Python's KeyError, where Python raises it: the read of the key (see convert/dict_keys.py)
    with pytest.raises(KeyError, match=r"'a'") as e:
        fn(X, n_(0))
    import inspect
    lines, first = inspect.getsourcelines(key_first_assigned_in_loop)
    read_line = first + next(k for k, line in enumerate(lines) if 'return d["a"]' in line)
    assert f"test_dicts.py:{read_line}" in str(e.value)


def test_dict_key_holding_a_python_object_is_refused():
    with pytest.raises(ConvertError, match="gets key 'name' first inside this tensor loop"):
        run_static(key_holding_a_string, X, n_(2))
