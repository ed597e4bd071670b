"""d2s/convert/builtins.py convert_add_n: ``d2s.add_n`` of a list grown in a tensor ``if`` or
loop (a tensor list in the program) equals eager's, dtypes included; an empty one raises
ValueError when the program runs, as eager does. Converted vs eager."""
import numpy as np
import pytest

import d2s


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # the exception type is compared
        return "raise", e


def check(fn, inputs):
    static = d2s.jit.to_static(fn)
    kinds = set()
    for args in inputs:
        e_kind, e_val = _outcome(fn, *args)
        s_kind, s_val = _outcome(static, *args)
        assert s_kind == e_kind, (args, e_val, s_val)
        kinds.add(e_kind)
        if e_kind == "raise":
            assert isinstance(s_val, type(e_val)), (s_val, e_val)
        else:
            assert s_val.dtype == e_val.dtype and tuple(s_val.shape) == tuple(e_val.shape)
            np.testing.assert_allclose(s_val.numpy(), e_val.numpy(), rtol=1e-6)
    assert static.programs
    return kinds


def grown_in_branch(x):
    terms = [x, x * 2.0]
    if x.sum() > 0:
        terms.append(x * 3.0)
    return d2s.add_n(terms)


def ints_grown_in_loop(x, n):
    terms = []
    for i in range(n):
        terms.append(x * (i + 1))
    return d2s.add_n(terms)


def test_add_n_of_list_grown_in_tensor_if():
    check(grown_in_branch, [(d2s.tensor([1.0, 2.0]),), (d2s.tensor([-4.0, 1.0]),)])


@pytest.mark.parametrize("x", [d2s.tensor([1.0, 2.0]), d2s.tensor([3, 4])], ids=["float32", "int64"])
def test_add_n_of_list_grown_in_tensor_loop_and_empty_after_zero_trips(x):
    kinds = check(ints_grown_in_loop, [(x, d2s.tensor(n)) for n in (0, 1, 3)])
    assert kinds == {"ok", "raise"}
