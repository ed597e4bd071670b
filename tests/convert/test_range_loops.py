"""A long ``for`` over a range of Python ints becomes one loop op when its body allows it, with
exactly eager's values; otherwise it unrolls, and the unroll warning says why (issue 29)."""
import contextlib
import io
import warnings

import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.convert import loops
from d2s.jit import InputSpec, UnrollWarning
from d2s.user_errors import ConvertError

from generate_helpers import assert_exact, count_ops as _count, top_ops as _top
from jit_helpers import check


# ------------------------------------------------------------------ one loop op
def halve_and_shift(x, n):
    for i in range(n):
        x = x * 0.5 + i  # the counter meets a float32 tensor as a Python int would
    return x


def test_long_loop_is_one_while_op_with_eager_values():
    x = d2s.tensor([1.0, -3.0, 0.25])
    sf = assert_exact(halve_and_shift, x, 20)
    small, big = sf.get_program(x, 20), sf.get_program(x, 300)
    assert _top(small, "while") == 1 and _top(big, "while") == 1
    assert len(str(small).splitlines()) == len(str(big).splitlines())  # no copy per iteration
    assert_exact(halve_and_shift, x, 300, sf=sf)
    assert sf(x, 20).dtype == d2s.float32


def test_short_loops_unroll_and_the_threshold_is_a_setting(monkeypatch):
    x = d2s.tensor([1.0, 2.0])
    limit = d2s.jit.config.unroll_threshold
    sf = assert_exact(halve_and_shift, x, limit)
    assert _count(sf.get_program(x, limit), "while") == 0
    assert _count(sf.get_program(x, limit + 1), "while") == 1
    monkeypatch.setattr(d2s.jit.config, "unroll_threshold", None)
    sf = assert_exact(halve_and_shift, x, 40)
    assert _count(sf.get_program(x, 40), "while") == 0


def ranged(x, a, b, s):
    for i in range(a, b, s):
        x = x + i * 2
    return x


@pytest.mark.parametrize("a,b,s", [(3, 40, 1), (50, -3, -4), (-7, 60, 5)])
def test_start_stop_step(a, b, s):
    x = d2s.tensor([0.5, 1.5], dtype="float64")
    sf = assert_exact(ranged, x, a, b, s)
    assert _count(sf.get_program(x, a, b, s), "while") == 1


def doubling_until(x, n):
    for i in range(n):
        x = x * 2
        if x.sum() > 100:
            break
    return x


def early_return(x, n):
    for i in range(n):
        if x.max() > 10:
            return x, i
        x = x + 1.5
    return x, -1


@pytest.mark.parametrize("v", [[1.0, 2.0], [-1.0, 0.5], [0.0, 0.0]])
def test_break_and_return_on_tensor_conditions(v):
    x = d2s.tensor(v)
    sf = assert_exact(doubling_until, x, 30)
    assert _top(sf.get_program(x, 30), "while") == 1
    sf = assert_exact(early_return, x, 30)
    assert _top(sf.get_program(x, 30), "while") == 1


def python_branch_on_counter(x, n):
    for i in range(n):
        if i % 5 == 0:  # a Python branch when unrolled, a cond in the loop op: the same values
            x = x * 2
        else:
            x = x - 1
    return x


def list_of_tensors_at_counter(x, ws, n):
    for i in range(n):
        x = x * ws[i % 3]
    return x


def test_counter_as_a_number_in_tensor_code():
    x = d2s.tensor([1.0, 2.0, 3.0])
    sf = assert_exact(python_branch_on_counter, x, 23)
    assert _top(sf.get_program(x, 23), "while") == 1
    ws = [d2s.tensor([1.0, 0.5, 2.0]), d2s.tensor([0.5, 2.0, 1.0]), d2s.tensor([2.0, 1.0, 0.5])]
    sf = assert_exact(list_of_tensors_at_counter, x, ws, 16)
    assert _top(sf.get_program(x, ws, 16), "while") == 1


def decays_from_none(x, n):
    h = None
    for _ in range(n):
        h = x if h is None else h * 0.9 + x
    return h


def tuple_state(x, n):
    hc = (x, d2s.zeros_like(x))
    for _ in range(n):
        hc = (d2s.tanh(hc[0] + hc[1]), hc[1] + hc[0] * 0.5)
    return hc


def writes_into_outer_buffer(x, n):
    out = d2s.zeros(n, 3)
    for i in range(n):
        out[i] = x * i
        x = x + 1
    return out, x


def nested(x, n, m):
    for i in range(n):
        for j in range(m):
            x = x * 0.75 + j - i
    return x


def test_carries_none_tuples_in_place_writes_and_nested_loops():
    x = d2s.tensor([0.5, -1.0, 2.0])
    assert_exact(decays_from_none, x, 12)
    assert_exact(tuple_state, x, 12)
    sf = assert_exact(writes_into_outer_buffer, x, 12)
    assert _top(sf.get_program(x, 12), "while") == 1
    sf = assert_exact(nested, x, 10, 11)
    prog = sf.get_program(x, 10, 11)
    assert _top(prog, "while") == 1 and _count(prog, "while") == 2


def noisy(x, n):
    for _ in range(n):
        x = x + d2s.randn(3) * 0.1
    return x


def test_random_draws_match_eager_for_the_same_seed():
    x = d2s.ones(3)
    sf = assert_exact(noisy, x, 25)
    assert _top(sf.get_program(x, 25), "while") == 1


def printing(x, n):
    for i in range(n):
        x = x + 1
        print("step", i, x.sum())
    return x


def test_print_in_the_loop_prints_what_eager_prints():
    x = d2s.tensor([1.0, 2.0])
    sf = d2s.jit.to_static(printing)
    out_e, out_s = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out_e):
        printing(x, 12)
    with contextlib.redirect_stdout(out_s):
        sf(x, 12)
    assert out_s.getvalue() == out_e.getvalue() and out_e.getvalue().count("step") == 12
    assert _top(sf.get_program(x, 12), "while") == 1


def recurrent(h, w, x, n):
    for _ in range(n):
        h = d2s.tanh(h @ w + x)
    return h


def test_gradients_through_the_loop_op():
    rng = np.random.default_rng(0)
    h = d2s.tensor(rng.standard_normal((2, 4)), dtype="float64")
    w = d2s.tensor(rng.standard_normal((4, 4)) * 0.5, dtype="float64")
    x = d2s.tensor(rng.standard_normal((2, 4)), dtype="float64")
    sf = check(recurrent, h, w, x, 15)
    assert _top(sf.get_program(h, w, x, 15), "while") == 1


def test_dynamic_dims():
    sf = d2s.jit.to_static(halve_and_shift)
    prog = sf.get_program(InputSpec([None, 3]), 50)
    assert _top(prog, "while") == 1
    for rows in (1, 4):
        x = d2s.tensor(np.arange(rows * 3, dtype=np.float32).reshape(rows, 3))
        assert np.array_equal(sf(x, 50).numpy(), halve_and_shift(x, 50).numpy())


# ------------------------------------------------------------------ unrolled as before
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        d2s.manual_seed(0)
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(12)])

    def forward(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i](x)  # the counter indexes a module list: a Python value
        return x


def python_counter(x, n):
    k = 0
    for _ in range(n):
        x = x + 1
        k += 2
    return x, k


def counter_set_late(x, n):
    last = 0
    for i in range(n):
        x = x * 0.5
        if i == n - 1:
            last = 7  # a Python number some iterations set: unrolling keeps it one
    return x, last


def flips(x, n):
    for _ in range(n):
        x = x.t()  # its shape changes every iteration
    return x


def appends(x, n):
    xs = []
    for i in range(n):
        xs.append(x * i)
    return xs


def test_bodies_that_need_python_values_unroll():
    m = Stack().eval()
    x = d2s.tensor([[1.0, 2.0, 3.0]])
    sm = d2s.jit.to_static(Stack().eval())
    with d2s.no_grad():
        assert np.array_equal(sm(x).numpy(), m(x).numpy())
    assert _count(sm.forward.get_program(x), "while") == 0
    for fn, args in ((python_counter, (x, 20)), (counter_set_late, (x, 20)), (flips, (d2s.ones(2, 3), 11))):
        sf = assert_exact(fn, *args)
        assert _count(sf.get_program(*args), "while") == 0
    sf = d2s.jit.to_static(appends)
    got, want = sf(x, 12), appends(x, 12)
    assert type(got) is list and len(got) == 12
    assert all(np.array_equal(g.numpy(), w.numpy()) for g, w in zip(got, want))


def test_the_unroll_warning_names_the_line_that_forced_it(monkeypatch):
    monkeypatch.setattr(loops, "UNROLL_WARNING_THRESHOLD", 10)
    monkeypatch.setattr(loops, "_UNROLL_WARNED", set())
    sm = d2s.jit.to_static(Stack().eval())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        sm(d2s.ones(1, 3))
    w = [m for m in w if issubclass(m.category, UnrollWarning)]
    assert len(w) == 1
    msg = str(w[0].message)
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1) if "x = self.layers[i](x)" in text)
    assert f"{__file__}:{line}" in msg and "cannot be one loop op" in msg, msg
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d2s.jit.to_static(halve_and_shift)(d2s.ones(2), 50)  # a loop op: no warning
    assert not [m for m in w if issubclass(m.category, UnrollWarning)]


def counter_after_the_loop(x, n):
    for i in range(n):
        x = x * 1.5
    return x, i  # the loop's target, read after it: eager's Python int


def counter_at_break(x, n):
    for step in range(n):
        x = x + 1
        if x.max() > 20:
            break
    return x, step


def test_the_counter_after_the_loop():
    x = d2s.tensor([1.0, 2.0])
    sf = assert_exact(counter_after_the_loop, x, 30)
    assert _top(sf.get_program(x, 30), "while") == 1 and type(sf(x, 30)[1]) is int
    for v in ([1.0, 2.0], [-30.0, 0.0]):
        sf = assert_exact(counter_at_break, d2s.tensor(v), 40)
        assert _top(sf.get_program(d2s.tensor(v), 40), "while") == 1


def prefill_then_steps(x, n):
    h = x * 2  # (t, 3): a prompt's states
    for _ in range(n):
        h = d2s.tanh(h[-1:] + 0.5)  # (1, 3) from the first iteration on
    return h


def test_a_first_iteration_that_changes_shapes_runs_on_its_own():
    x = d2s.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    sf = assert_exact(prefill_then_steps, x, 30)
    small, big = sf.get_program(x, 30), sf.get_program(x, 300)
    assert _top(small, "while") == 1
    assert len(str(small).splitlines()) == len(str(big).splitlines())


def reads_an_iterator(x, batches, n):
    it = iter(batches)
    for _ in range(n):
        x = x + next(it)  # each iteration its own batch: Python state the loop op cannot follow
    return x


def counts_in_a_closure(x, n):
    calls = [0]

    def step():
        calls[0] += 1
        return calls[0]

    for _ in range(n):
        x = x * 0.5 + step()
    return x


def batches_of_a_generator(x, n):
    def batches():
        for k in range(100):
            yield d2s.tensor([float(k), 1.0])

    gen = batches()
    for _ in range(n):
        for b in gen:  # the next batch of the generator, then out
            x = x * 0.5 + b
            break
    return x


def test_bodies_reading_an_iterator_unroll_before_it_moves():
    x = d2s.tensor([1.0, 2.0])
    batches = [d2s.tensor([float(k), -float(k)]) for k in range(30)]  # more than the loop reads
    for fn, args in ((reads_an_iterator, (x, batches, 12)), (batches_of_a_generator, (x, 12))):
        sf = assert_exact(fn, *args)
        assert _count(sf.get_program(*args), "while") == 0


def test_a_body_reading_other_changing_state_is_refused():
    with pytest.raises(ConvertError, match="reads Python state that changes") as e:
        d2s.jit.to_static(counts_in_a_closure)(d2s.tensor([1.0, 2.0]), 12)
    assert "unroll_threshold = None" in str(e.value) and "for _ in range(n)" in str(e.value)
    limit = d2s.jit.config.unroll_threshold
    d2s.jit.config.unroll_threshold = None
    try:  # the way out the error names
        assert_exact(counts_in_a_closure, d2s.tensor([1.0, 2.0]), 12)
    finally:
        d2s.jit.config.unroll_threshold = limit
