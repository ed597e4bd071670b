"""What the graph backend proves about its device stacks (d2s_runtime/gpu/counts.py): pops
that cannot find their stack empty, capacities that cannot be outgrown, ``stack_rows`` reading
a full stack. Checked on the programs a ``while`` gradient makes, and on the same programs
edited so that a proof would be wrong (the analysis must then not claim it). In graph mode the
strict device's fake capture verifies every proven fact at each replay (``Recorder.assume``),
so the replays below also check the proofs on new inputs."""
import numpy as np
import pytest

import d2s
import strict_device as sd
from d2s_runtime.device import to_host
from d2s_runtime.gpu.counts import Aff, StackFacts, Sym

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _on_strict():
    prev = d2s.set_default_device("strict")
    yield
    d2s.set_default_device(prev)


def _t(*shape, scale=1.0):
    return d2s.tensor((RNG.standard_normal(shape) * scale).astype("float32"))


def _rnn_to_the_end(params, xs, h0):
    W, U = params
    h, loss = h0, (h0 * 0.0).sum()
    t = d2s.zeros([], dtype="int64")
    while t < xs.shape[0]:  # a static bound: the trip count is the constant xs.shape[0]
        h = d2s.tanh(xs[t] @ W + h @ U)
        loss = loss + (h * h).sum()
        t = t + 1
    return loss


def _rnn_n_steps(params, xs, h0, n):
    W, U = params
    h, loss = h0, (h0 * 0.0).sum()
    t = d2s.zeros([], dtype="int64")
    while t < n:  # a trip count known only when the program runs
        h = d2s.tanh(xs[t] @ W + h @ U)
        loss = loss + (h * h).sum()
        t = t + 1
    return loss


def _rnn_early_exit(params, xs, h0):
    W, U = params
    h, loss = h0, (h0 * 0.0).sum()
    t = d2s.zeros([], dtype="int64")
    while t < xs.shape[0] and loss < 3.0:  # at most xs.shape[0] steps
        h = d2s.tanh(xs[t] @ W + h @ U)
        loss = loss + (h * h).sum()
        t = t + 1
    return loss


def _program(fn, *args):
    """The program the graph tier captures (after the executor's passes, with the reassociating
    ones: the loop's weight gradients read their stacks whole, ``stack_rows``, after the loop)."""
    seen = []
    import d2s_runtime.gpu.capture as capture
    orig = capture.Capture.__init__

    def spy(self, program, *a, **k):
        seen.append(program)
        orig(self, program, *a, **k)

    capture.Capture.__init__ = spy
    reassociate, d2s.jit.config.reassociate = d2s.jit.config.reassociate, True
    try:
        f = d2s.jit.to_static(d2s.func.value_and_grad(fn), backend="graph")
        for _ in range(2):
            f(*args)
    finally:
        capture.Capture.__init__ = orig
        d2s.jit.config.reassociate = reassociate
    return seen[-1].clone()  # (the tests below edit it; the cached one stays as it is)


def _params():
    return [_t(3, 5, scale=0.3), _t(5, 5, scale=0.3)]


def _ops(block, kind):
    for op in block.ops:
        if op.type == kind:
            yield op
        for b in op.blocks.values():
            yield from _ops(b, kind)


def test_a_static_trip_count_proves_every_pop_capacity_and_full_read():
    prog = _program(_rnn_to_the_end, _params(), _t(4, 2, 3), _t(2, 5))
    facts = StackFacts(prog)
    pops, rows = list(_ops(prog.block, "stack_pop")), list(_ops(prog.block, "stack_rows"))
    assert pops and rows
    assert {id(op) for op in pops} == facts.safe_pops
    news = [op.outputs[0] for op in _ops(prog.block, "stack_new")]
    assert facts.capacity == {k: 4 for k in news}  # one push per step, 4 steps
    assert facts.exact_rows == {id(op): 4 for op in rows}


def test_an_unknown_trip_count_still_proves_the_pops_but_not_the_capacity():
    prog = _program(_rnn_n_steps, _params(), _t(6, 2, 3), _t(2, 5), d2s.tensor(3))
    facts = StackFacts(prog)
    assert {id(op) for op in _ops(prog.block, "stack_pop")} == facts.safe_pops
    assert facts.capacity == {} and facts.exact_rows == {}


def test_an_early_exit_bounds_the_capacity_but_not_the_full_read():
    prog = _program(_rnn_early_exit, _params(), _t(4, 2, 3), _t(2, 5))
    facts = StackFacts(prog)
    assert {id(op) for op in _ops(prog.block, "stack_pop")} == facts.safe_pops
    assert facts.capacity and set(facts.capacity.values()) == {4}
    assert facts.exact_rows == {}  # the count is at most 4, not known to be 4
    # the stacks read whole (stack_rows) hold as many rows as steps ran: their capacity follows
    # the calls (tier.py), the others have the bound
    assert 0 < len(facts.capacity) < len(list(_ops(prog.block, "stack_new")))


def _backward_loop(prog):
    (op,) = [op for op in prog.block.ops if op.type == "while" and any(
        o.type == "stack_pop" for o in op.blocks["body"].ops)]
    return op


def _set_constant(block, value):
    (c,) = [op for op in block.ops if op.type == "constant"]
    c.attrs = dict(c.attrs, value=value)


def test_a_backward_loop_running_once_too_often_keeps_its_pop_checks():
    prog = _program(_rnn_to_the_end, _params(), _t(4, 2, 3), _t(2, 5))
    _set_constant(_backward_loop(prog).blocks["cond"], -1)  # k > -1: one pop more than pushed
    assert StackFacts(prog).safe_pops == set()


def test_a_forward_loop_bound_moves_the_capacity_with_it():
    prog = _program(_rnn_to_the_end, _params(), _t(4, 2, 3), _t(2, 5))
    (fwd,) = [op for op in prog.block.ops if op.type == "while" and op is not _backward_loop(prog)]
    _set_constant(fwd.blocks["cond"], 6)
    facts = StackFacts(prog)
    assert set(facts.capacity.values()) == {6}
    assert len(facts.safe_pops) == len(list(_ops(prog.block, "stack_pop")))  # still matched
    _set_constant(fwd.blocks["cond"], -2)  # never runs
    assert set(StackFacts(prog).capacity.values()) == {0}


def test_affine_bounds_use_only_what_is_known():
    t = Sym(ub=5)
    u = Sym()  # a trip count with no bound
    v = Sym(nonneg=False)  # an integer carry's entry value: any sign
    assert (Aff(2) + Aff(0, {t: 1})).ub() == 7
    assert Aff(1, {u: 1}).ub() is None and Aff(1, {u: 1}).nonneg()
    assert not Aff(0, {v: 1}).nonneg() and Aff(3, {t: -1}).ub() == 3
    assert (Aff(0, {u: 1}) - Aff(0, {u: 1})).is_const()


@pytest.mark.parametrize("reassociate", [False, True])
@pytest.mark.parametrize("fn", [_rnn_to_the_end, _rnn_early_exit])
def test_a_proven_while_gradient_replays_with_no_check_and_matches_python(fn, reassociate, monkeypatch):
    monkeypatch.setattr(d2s.jit.config, "reassociate", reassociate)
    g = d2s.jit.to_static(d2s.func.value_and_grad(fn), backend="graph")
    p = d2s.jit.to_static(d2s.func.value_and_grad(fn))
    params = _params()
    for _ in range(3):
        g(params, _t(4, 2, 3), _t(2, 5))
    assert g.backend_report() == "graph"
    for scale in (0.3, 1.0, 3.0):  # early exits after different step counts
        args = (params, _t(4, 2, 3, scale=scale), _t(2, 5))
        with sd.counting() as c:
            value, grads = g(*args)
        kinds = list(c.sync_kinds)
        want_value, want_grads = p(*args)
        np.testing.assert_allclose(to_host(value._data), to_host(want_value._data), rtol=1e-5)
        for a, b in zip(grads, want_grads):
            np.testing.assert_allclose(to_host(a._data), to_host(b._data), rtol=1e-5, atol=1e-6)
        if fn is _rnn_to_the_end or not reassociate:  # (by default no stack is read whole)
            assert kinds == []
        else:  # the stacks read whole hold as many rows as steps ran: checked on the device
            assert "int" in kinds
