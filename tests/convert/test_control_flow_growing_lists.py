"""d2s/convert/control_flow.py: a Python list appended to in only one branch of a tensor ``if``
(the other branch leaves it empty, or as a list grown earlier) becomes a tensor list on both
sides, whatever other outputs the ``if`` has; a dict given a key in one branch only is refused
with an error naming the dict and the key. Converted vs eager on inputs taking each branch and
on zero-trip loops."""
import pytest

import d2s
from convert_helpers import check_exact

XS = [d2s.tensor([1.0, 2.0, 3.0]), d2s.tensor([-1.0, 0.5, 1.0]), d2s.tensor([-3.0, -2.0, -1.0])]
NS = [d2s.tensor(0), d2s.tensor(1), d2s.tensor(3)]


def grown_in_true_branch_in_loop(x, n):
    acc = []
    i = 0
    while i < n:
        if x.sum() > i:
            acc.append(x * i)
        i += 1
    tail = d2s.stack(acc).sum(axis=0) if len(acc) > 0 else x * 0.0
    return tail, len(acc)


def grown_in_false_branch_beside_other_outputs(x, n):
    acc = []
    s = x * 0.0
    for i in range(n):
        if x.mean() < 0.0:
            s = s + x
        else:
            acc.append(x + i)
    total = x * 0.0
    for v in acc:
        total = total + v
    return s, total


def numbers_grown_in_one_branch(x, n):
    seen = []
    for i in range(n):
        if x[0] > 0.0:
            seen.append(i)
    return len(seen), x


def grown_in_one_branch_no_loop(x):
    acc = []
    if x.sum() > 0:
        acc.append(x.max())
    return len(acc)


def grown_by_a_loop_in_one_branch(x, n):
    acc = []
    if x.min() < 0.0:
        i = 0
        while i < n:
            acc.append(x * i)
            i += 1
    return len(acc), d2s.stack(acc).sum(axis=0) if len(acc) > 0 else x * 0.0


def grown_in_nested_branch_in_loop_in_branch(x, n):
    acc = []
    if not (x.min() > 0.1):
        i = 0
        while i < n:
            if x.sum() > -0.25 * i:
                acc.append(x / (1.0 + x ** 2))
            i += 1
    tail = d2s.stack(acc).sum(axis=0) if len(acc) > 0 else x * 0.0
    return tail


@pytest.mark.parametrize("fn", [grown_by_a_loop_in_one_branch, grown_in_nested_branch_in_loop_in_branch,
                                grown_in_true_branch_in_loop, grown_in_false_branch_beside_other_outputs,
                                numbers_grown_in_one_branch])
def test_list_grown_in_one_branch_of_a_tensor_if_in_a_tensor_loop(fn):
    assert check_exact(fn, [(x, n) for x in XS for n in NS]).programs


def test_list_grown_in_one_branch_without_a_loop():
    assert check_exact(grown_in_one_branch_no_loop, [(x,) for x in XS]).programs


def key_in_one_branch(x):
    d = {"s": x}
    acc = []
    if x.sum() > 0:
        d["t"] = x * 2.0
    else:
        acc.append(x)
    return d["s"], len(acc)


def test_dict_key_in_one_branch_beside_a_list_grown_in_the_other():
    # (the key is held on some runs only: see tests/convert/test_dict_keys.py)
    assert check_exact(key_in_one_branch, [(x,) for x in XS]).programs

