"""d2s/convert/values.py: namedtuples are containers whose fields are leaves, so tensor ``if``s
and loops carry them field by field and hand back the same namedtuple type (with Python
numbers kept Python numbers). Converted vs eager on inputs taking each branch and zero-trip
loops."""
import collections

import pytest

import d2s
from convert_helpers import check_exact
from d2s.pytree import tree_flatten as leaves, tree_unflatten as rebuild  # what converted code carries

Pair = collections.namedtuple("Pair", ["lo", "hi"])


def branch_results(x):
    if x.sum() > 2.0:
        return Pair(x.min(), x.max())
    return Pair(x.max(), x.min())


def carried_by_loop(x, n):
    p = Pair(x.min(), x.max())
    i = 0
    while i < n:
        p = Pair(p.lo - 1.0, p.hi + i)
        i += 1
    return p, p.hi - p.lo


def early_return_in_loop(x, n):
    for i in range(n):
        if x.sum() > i:
            return Pair(x * i, i)
    return Pair(x, -1)


def python_field_in_branch(x, k):
    p = Pair(x, k)
    if x.sum() > 0:
        p = Pair(x * 2.0, k + 1)
    return p


POS, NEG = d2s.tensor([1.0, 2.0, 3.0]), d2s.tensor([-1.0, 0.0, 0.5])
CASES = [
    (branch_results, [(POS,), (NEG,)]),
    (carried_by_loop, [(POS, d2s.tensor(0)), (POS, d2s.tensor(2))]),
    (early_return_in_loop, [(x, d2s.tensor(n)) for x in (POS, NEG) for n in (0, 3)]),
    (python_field_in_branch, [(POS, 3), (NEG, 3)]),
]


@pytest.mark.parametrize("fn,inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_namedtuple_converted_equals_eager(fn, inputs):
    assert check_exact(fn, inputs).programs


def test_leaves_walk_namedtuple_fields_and_rebuild_the_type():
    vals, skel = leaves((Pair(1, [2, 3]), 4))
    assert vals == [1, 2, 3, 4]
    back = rebuild(skel, [10, 20, 30, 40])
    assert back == (Pair(10, [20, 30]), 40) and type(back[0]) is Pair
