"""d2s/transformers/analysis/activity.py: a method call that mutates a name counts as a
mutation also when the undefined-reads pass has wrapped the name in ``_jst.checked`` (a list
bound in one branch of a Python ``if``, then appended to in a loop, is carried by the loop).
Converted vs eager, with tensor and Python bounds and zero trips."""
import gast
import pytest

import d2s
from d2s.transformers.analysis import activity


def test_checked_receiver_is_mutated():
    tree = gast.parse("_jst.checked(items, 'items').append(i)\nys.pop()\nf(zs).append(1)")
    assert activity.mutating_calls(tree) == {"items", "ys"}


def binds_in_python_if_then_appends(flag, n):
    if flag:
        items = []
    for i in range(n):
        items.append(i)
    return len(items)


def binds_in_python_if_then_appends_no_read_after(flag, n):
    if flag:
        items = [0]
    for i in range(n):
        items.append(i * 2)
    return n * 2


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # the exception type is compared
        return "raise", e


@pytest.mark.parametrize("fn", [binds_in_python_if_then_appends, binds_in_python_if_then_appends_no_read_after])
def test_list_bound_in_python_if_then_mutated_in_loop(fn):
    static = d2s.jit.to_static(fn)
    kinds = set()
    for flag in (True, False):
        for n in (0, 2, d2s.tensor(0), d2s.tensor(2)):
            e_kind, e_val = _outcome(fn, flag, n)
            s_kind, s_val = _outcome(static, flag, n)
            assert s_kind == e_kind, (flag, n, e_val, s_val)
            kinds.add(e_kind)
            if e_kind == "raise":
                assert isinstance(s_val, type(e_val)), (flag, n, s_val, e_val)
            elif isinstance(e_val, d2s.Tensor):
                assert s_val.dtype == e_val.dtype and s_val.numpy().tolist() == e_val.numpy().tolist()
            else:
                assert type(s_val) is type(e_val) and s_val == e_val, (flag, n, s_val, e_val)
    assert kinds == {"ok", "raise"}
    assert static.programs
