"""Long Python loops: the unroll warning (once, at the loop's line), results unchanged; and
the memory plan's bookkeeping stays small on long chains of control-flow ops (no timings)."""
import importlib
import warnings

import pytest

import d2s
from d2s.convert import loops
from d2s.jit import UnrollWarning

from jit_helpers import check

memory_plan = importlib.import_module("d2s_runtime.passes.memory_plan")  # the module, not the pass


def long_for(x, n):
    for i in range(n):  # the loop the warning names
        x = x * 0.999 + 0.001
    return x


def long_while(x, n):
    i = 0
    while i < n:  # a Python counter: unrolls
        x = x + 0.5
        i += 1
    return x


def tensor_counter(x, n):
    for i in range(n):  # n passed as a tensor: one while op, whatever its value
        x = x * 0.999 + 0.001
    return x


def _unroll_warnings(fn, *args):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d2s.jit.to_static(fn)(*args)
    return [m for m in w if issubclass(m.category, UnrollWarning)]


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(loops, "UNROLL_WARNING_THRESHOLD", 20)
    monkeypatch.setattr(loops, "_UNROLL_WARNED", set())
    # (these loops would become loop ops: tests/convert/test_range_loops.py; here they unroll)
    monkeypatch.setattr(d2s.jit.config, "unroll_threshold", None)


@pytest.mark.parametrize("fn,marker", [(long_for, "for i in range(n)"), (long_while, "while i < n")])
def test_warns_once_naming_the_loop_line(small_threshold, fn, marker):
    x = d2s.ones(3)
    w = _unroll_warnings(fn, x, 25)
    assert len(w) == 1
    msg = str(w[0].message)
    assert marker in msg and "d2s.tensor(n)" in msg and "more than 20 times" in msg
    assert w[0].filename == __file__
    lines = open(__file__).read().splitlines()
    assert marker in lines[w[0].lineno - 1]
    assert _unroll_warnings(fn, x, 30) == []  # once per loop line (a new program, same line)


def test_short_loops_and_tensor_counters_do_not_warn(small_threshold):
    x = d2s.ones(3)
    assert _unroll_warnings(long_for, x, 20) == []
    assert _unroll_warnings(tensor_counter, x, d2s.tensor(500)) == []


def test_eager_loops_do_not_warn(small_threshold):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        long_for(d2s.ones(3), 50)
    assert not [m for m in w if issubclass(m.category, UnrollWarning)]


def test_unrolled_results_equal_eager(small_threshold):
    for n in (0, 1, 25, 60):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnrollWarning)
            check(long_for, d2s.tensor([1.0, -2.0, 0.5]), n)
            check(tensor_counter, d2s.tensor([1.0, -2.0, 0.5]), d2s.tensor(n))


def chain_of_conds(x, n):
    for i in range(n):
        if x.sum() > 0:
            x = x * 0.9 - 0.1
        else:
            x = x * 1.1 + 0.2
    return x


def test_memory_plan_roots_stay_small_on_cond_chains(monkeypatch):
    """Each cond output may alias its same-typed inputs only, so the set of buffers a value
    may share does not grow along a chain of conds (it did: quadratic planning)."""
    monkeypatch.setattr(d2s.jit.config, "unroll_threshold", None)  # a chain of 40 conds, unrolled
    sizes = []
    real = memory_plan._aliasable_inputs

    def spy(op, out, gb):
        got = real(op, out, gb)
        if op.type == "cond":  # never the bool predicate nor values of another type
            assert all(gb.vars[i].type.dtype == gb.vars[out].type.dtype for i in got)
        sizes.append(len(got))
        return got

    monkeypatch.setattr(memory_plan, "_aliasable_inputs", spy)
    prog = d2s.jit.to_static(chain_of_conds).get_program(d2s.jit.InputSpec([3]), 40)
    planned = memory_plan.memory_plan(prog)
    assert planned.annotations["memory_plan"]["planned_peak_bytes"] >= 0
    assert sizes and max(sizes) <= 3
    for v in ([1.0, 2.0, 3.0], [-5.0, 1.0, 0.0]):
        check(chain_of_conds, d2s.tensor(v), 40)
