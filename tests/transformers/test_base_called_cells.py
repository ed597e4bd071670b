"""d2s/transformers/base.py called_cells/state_functions: a closure cell that a nested function
rebinds through ``nonlocal`` is carried by the ``if``s and loops whose code calls functions,
so a tensor ``if`` that traces both branches keeps the count of the branch the run takes, and
a tensor loop counts its iterations, as Python does. Converted vs eager, each branch, zero trips."""
import pytest

import d2s
from convert_helpers import check_exact


def counter_in_branch(x):
    calls = 0

    def step(v):
        nonlocal calls
        calls += 1
        return v * 0.5

    y = step(x)
    if y.sum() > 0:
        y = step(y)
    return y, calls


def counter_in_tensor_loop(x, n):
    calls = 0

    def step(v):
        nonlocal calls
        calls += 1
        return v + 1.0

    i = 0
    while i < n:
        x = step(x)
        i += 1
    return x, calls


def total_in_branches(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + v
        return v

    if x.sum() > 0:
        add(2.5)
    else:
        add(-1.0)
        add(-1.0)
    return x, total


POS, NEG = d2s.tensor([1.0, 2.0, 3.0]), d2s.tensor([-1.0, -2.0, -0.5])


@pytest.mark.parametrize("fn,inputs", [
    (counter_in_branch, [(POS,), (NEG,)]),
    (total_in_branches, [(POS,), (NEG,)]),
    (counter_in_tensor_loop, [(POS, d2s.tensor(0)), (POS, d2s.tensor(3)), (POS, 2)]),
], ids=["branch", "float_total", "tensor_loop"])
def test_nonlocal_cell_changed_by_calls_in_tensor_control_flow(fn, inputs):
    assert check_exact(fn, inputs).programs
