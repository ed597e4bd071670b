"""The loop passes (d2s_runtime/passes/loops.py) on the program of an RNN's loss and gradients
(a ``while`` and the two loops of its gradient): after each pass the program has the structure
the pass promises, and its outputs equal the unoptimized program's at trip counts 0, 1, 2 and
more; gradients through the whole default pipeline equal float64 finite differences; loops the
passes must not touch (different updates, effects, accumulators read elsewhere) are left alone."""
import numpy as np
import pytest

import d2s
from d2s_runtime import Executor
from d2s_runtime.passes import (DEFAULT_PIPELINE, REASSOCIATING_PIPELINE, algebraic_simplify, cse, dce, loop_invariants, loop_matmul_sums, loop_residuals,
                                loop_transposes, merge_loops, optimize)

from _pass_helpers import check_pure

TRIPS = [0, 1, 2, 5]
T_MAX, B, D, H = 5, 2, 3, 4


def rnn_loss(params, xs, h0, n):
    W, U, b = params
    h = h0
    loss = (h0 * 0).sum()
    t = d2s.zeros([], dtype="int64")
    while t < n:
        h = d2s.tanh(xs[t] @ W + h @ U + b)
        loss = loss + (h * h).sum()
        t = t + 1
    return loss


rnn_value_and_grad = d2s.func.value_and_grad(rnn_loss)


def _arrays(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((D, H)) * 0.6, rng.standard_normal((H, H)) * 0.4, rng.standard_normal(H) * 0.3,
            rng.standard_normal((T_MAX, B, D)) * 0.7, rng.standard_normal((B, H)) * 0.5]


def _program():
    W, U, b, xs, h0 = (d2s.tensor(a) for a in _arrays(0))
    static = d2s.jit.to_static(rnn_value_and_grad)
    return static.get_program([W, U, b], xs, h0, d2s.tensor(np.array(3)))


def _feeds(seed, n):
    return _arrays(seed) + [np.array(n)]


def _assert_same(before, after, rtol=1e-12):
    ex_b, ex_a = Executor(before), Executor(after)
    for seed, n in enumerate(TRIPS):
        for x, y in zip(ex_b.run(*_feeds(seed, n)), ex_a.run(*_feeds(seed, n))):
            assert x.shape == y.shape and x.dtype == y.dtype
            np.testing.assert_allclose(y, x, rtol=rtol, atol=1e-13)


def _whiles(program):
    return [op for op in program.block.ops if op.type == "while"]


def _count(block, op_type):
    return sum(op.type == op_type for op in block.ops)


def _loops_after(*passes):
    p = _program()
    for ps in passes:
        p = check_pure(ps, p)
    return p


def test_the_gradient_program_has_the_loop_and_two_gradient_loops():
    assert len(_whiles(_program())) == 3


def test_merge_loops_reads_the_loop_from_the_gradient_forward_copy():
    p = _program()
    q = check_pure(merge_loops, p)
    whiles = _whiles(q)
    assert len(whiles) == 2
    # the one forward loop left is the copy that pushes onto stacks
    assert _count(whiles[0].blocks["body"], "stack_push") >= 1
    _assert_same(p, q)


def test_loop_residuals_stacks_the_forward_values_instead_of_recomputing_them():
    p = _loops_after(merge_loops)
    q = check_pure(loop_residuals, p)
    fwd, bwd = _whiles(q)
    # the backward body no longer recomputes the step (its matmuls and tanh)
    assert _count(_whiles(p)[1].blocks["body"], "tanh") == 1
    assert _count(bwd.blocks["body"], "tanh") == 0
    assert _count(fwd.blocks["body"], "tanh") == 1
    assert _count(bwd.blocks["body"], "matmul") == 3  # the three products of the step's VJP
    _assert_same(p, q)
    _assert_same(_program(), q)


def test_loop_residuals_removes_stacks_the_backward_loop_no_longer_reads():
    p = _loops_after(merge_loops)
    q = check_pure(loop_residuals, p)
    fwd_before, fwd_after = _whiles(p)[0], _whiles(q)[0]
    # the loss carry's stack (its popped value fed only the recomputed loss) is gone
    pushed_before = [op.inputs[2] for op in fwd_before.blocks["body"].ops if op.type == "stack_push"]
    carries_before = fwd_before.blocks["body"].inputs[:len(fwd_before.outputs)]
    assert carries_before[1] in pushed_before
    pushed_after = [op.inputs[2] for op in fwd_after.blocks["body"].ops if op.type == "stack_push"]
    assert fwd_after.blocks["body"].inputs[1] not in pushed_after


def test_loop_matmul_sums_makes_one_product_after_the_loop():
    p = _loops_after(merge_loops, loop_residuals, cse)
    q = check_pure(loop_matmul_sums, p)
    bwd_before, bwd_after = _whiles(p)[1], _whiles(q)[1]
    # dW and dU (x.T @ dz and h.T @ dz) leave the loop; dh = dz @ U.T stays
    assert _count(bwd_before.blocks["body"], "matmul") == 3
    assert _count(bwd_after.blocks["body"], "matmul") == 1
    assert _count(q.block, "matmul") == _count(p.block, "matmul") + 2
    _assert_same(p, q, rtol=1e-10)


def test_loop_transposes_hoists_the_transposed_weight():
    p = _loops_after(merge_loops, loop_residuals, cse)
    q = check_pure(loop_transposes, p)
    bwd_before, bwd_after = _whiles(p)[1], _whiles(q)[1]
    assert _count(bwd_before.blocks["body"], "transpose") > _count(bwd_after.blocks["body"], "transpose")
    assert _count(q.block, "identity") == 1
    _assert_same(p, q)


def test_default_pipeline_keeps_every_bit_and_runs_the_step_once_per_direction():
    p = _program()
    q = optimize(p)
    assert len(_whiles(q)) == 2
    assert sum(_count(w.blocks["body"], "tanh") for w in _whiles(q)) == 1
    assert sum(_count(w.blocks["body"], "matmul") for w in _whiles(q)) == 5  # the weight gradients stay per step
    _assert_same(p, q, rtol=0)


def test_the_reassociating_pipeline_moves_the_weight_gradients_after_the_loop():
    p = _program()
    q = optimize(p, passes=REASSOCIATING_PIPELINE)
    assert len(_whiles(q)) == 2
    assert sum(_count(w.blocks["body"], "matmul") for w in _whiles(q)) == 3
    _assert_same(p, q, rtol=1e-10)


@pytest.mark.parametrize("n", TRIPS)
def test_optimized_gradients_equal_float64_finite_differences(n):
    static = d2s.jit.to_static(rnn_value_and_grad)
    arrays = _arrays(n)

    def run(arrs):
        W, U, b, xs, h0 = (d2s.tensor(a) for a in arrs)
        value, grads = static([W, U, b], xs, h0, d2s.tensor(np.array(n)))
        return float(value.numpy()), [g.numpy() for g in grads]

    run(arrays)
    value, grads = run(arrays)  # the second call runs the optimized program
    assert len(_whiles(static._cache.entries[0].program)) == 2
    eps = 1e-6
    for k in range(3):
        fd = np.zeros_like(arrays[k])
        for idx in np.ndindex(arrays[k].shape):
            hi = [a.copy() for a in arrays]
            lo = [a.copy() for a in arrays]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            fd[idx] = (run(hi)[0] - run(lo)[0]) / (2 * eps)
        np.testing.assert_allclose(grads[k], fd, rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------ loops left alone
def _two_loops(x, n):
    a, i = x, d2s.zeros([], dtype="int64")
    while i < n:
        a, i = a * 2.0, i + 1
    b, j = x, d2s.zeros([], dtype="int64")
    while j < n:
        b, j = b * 3.0, j + 1
    return a + b


def _same_two_loops(x, n):
    a, i = x, d2s.zeros([], dtype="int64")
    while i < n:
        a, i = d2s.tanh(a) * 2.0, i + 1
    b, j = x, d2s.zeros([], dtype="int64")
    while j < n:
        b, j = d2s.tanh(b) * 2.0, j + 1
    return a + b


def _printing_loops(x, n):
    a, i = x, d2s.zeros([], dtype="int64")
    while i < n:
        d2s.print(i)
        a, i = a * 2.0, i + 1
    b, j = x, d2s.zeros([], dtype="int64")
    while j < n:
        d2s.print(j)
        b, j = b * 2.0, j + 1
    return a + b


def _build(fn):
    return d2s.jit.to_static(fn).get_program(d2s.tensor(np.ones(3)), d2s.tensor(np.array(2)))


def _run(program, n):
    return Executor(program).run(np.linspace(-1, 1, 3), np.array(n))


def test_merge_loops_merges_equal_loops_and_keeps_different_ones():
    same = cse(_build(_same_two_loops))  # one zero and one 2.0 for both loops
    merged = check_pure(merge_loops, same)
    assert len(_whiles(merged)) == 1
    different = cse(_build(_two_loops))
    assert len(_whiles(check_pure(merge_loops, different))) == 2
    for n in (0, 1, 3):
        np.testing.assert_array_equal(_run(merged, n)[0], _run(same, n)[0])


def test_merge_loops_keeps_loops_with_effects(capsys):
    p = cse(_build(_printing_loops))
    assert len(_whiles(check_pure(merge_loops, p))) == 2


def _acc_read_in_the_loop(xs, w, n):
    acc = d2s.zeros([3, 3], dtype="float64")
    s = d2s.zeros([], dtype="float64")
    t = d2s.zeros([], dtype="int64")
    while t < n:
        x = xs[t] * w
        s = s + acc.sum()  # the accumulator is read: its sum cannot wait for the loop's end
        acc = acc + d2s.transpose(x, [1, 0]) @ x
        t = t + 1
    return acc, s


def _acc_only_summed(xs, w, n):
    acc = d2s.zeros([3, 3], dtype="float64")
    t = d2s.zeros([], dtype="int64")
    while t < n:
        x = xs[t] * w
        acc = acc + d2s.transpose(x, [1, 0]) @ x
        t = t + 1
    return acc


def test_loop_matmul_sums_only_takes_accumulators_nothing_else_reads():
    xs = d2s.tensor(np.ones((4, 2, 3)))
    w = d2s.tensor(np.ones(3))
    n = d2s.tensor(np.array(2))
    read = d2s.jit.to_static(_acc_read_in_the_loop).get_program(xs, w, n)
    assert _count(_whiles(check_pure(loop_matmul_sums, read))[0].blocks["body"], "matmul") == 1
    only = d2s.jit.to_static(_acc_only_summed).get_program(xs, w, n)
    hoisted = check_pure(loop_matmul_sums, only)
    assert _count(_whiles(hoisted)[0].blocks["body"], "matmul") == 0
    rng = np.random.default_rng(3)
    for trips in (0, 1, 4):
        feeds = [rng.standard_normal((4, 2, 3)), rng.standard_normal(3), np.array(trips)]
        np.testing.assert_allclose(Executor(hoisted).run(*feeds)[0], Executor(only).run(*feeds)[0], rtol=1e-12)


def test_the_optimized_program_runs_natively_with_the_same_values(tmp_path):
    """The stacks ``loop_matmul_sums`` reads after the loop (``stack_rows``) lower natively."""
    pytest.importorskip("numba")
    from d2s_runtime import native
    q = optimize(_program(), passes=REASSOCIATING_PIPELINE)
    assert "stack_rows" in [op.type for op in q.block.ops]
    fn = native.compile_lowered(native.lower_program(q), cache_dir=str(tmp_path))
    ref = Executor(q)
    for seed, n in enumerate(TRIPS):
        feeds = _feeds(seed, n)
        for got, want in zip(fn(*feeds), ref.run(*feeds)):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ loop_invariants
def _types_in(block):
    return [op.type for op in block.ops]


def test_loop_invariants_makes_the_seed_gradient_a_capture_and_drops_its_broadcast():
    """The backward loop carries the loss's output gradient (1.0) unchanged: after the pass it is
    captured, seen as the constant inside the loop, and ``g * h`` with ``g`` a broadcast 1 is
    gone; values are unchanged at every trip count (0 included)."""
    pipeline = list(REASSOCIATING_PIPELINE)
    p = _loops_after(*pipeline[:pipeline.index(loop_invariants)])
    q = check_pure(loop_invariants, p)
    bwd_p, bwd_q = _whiles(p)[1], _whiles(q)[1]
    # the seed, and the two weight-gradient accumulators loop_matmul_sums emptied
    assert len(bwd_q.outputs) == len(bwd_p.outputs) - 3
    assert len(bwd_q.inputs) == len(bwd_p.inputs)  # each became a capture
    assert "constant" in _types_in(bwd_q.blocks["body"])
    _assert_same(p, q)
    r = check_pure(dce, check_pure(algebraic_simplify, q))
    body = _whiles(r)[1].blocks["body"]
    assert "broadcast_to" not in _types_in(body) and "expand_dims" not in _types_in(body)
    assert "cast" not in _types_in(body)
    assert _count(body, "mul") < _count(_whiles(check_pure(algebraic_simplify, p))[1].blocks["body"], "mul")
    _assert_same(p, r)


def _scaled_loop(x, k, n):
    s = x * 0
    kk = k
    t = d2s.zeros([], dtype="int64")
    while t < n:
        s = s + x * kk
        kk = kk.detach()  # carried, never changed
        t = t + 1
    return s, kk


def _swapping_loop(x, y, n):
    t = d2s.zeros([], dtype="int64")
    while t < n:
        x, y = y, x  # each carry becomes the other: neither is invariant
        t = t + 1
    return x, y


def test_loop_invariants_keeps_values_and_leaves_changing_carries():
    x, k = d2s.tensor(np.linspace(-1, 1, 3)), d2s.tensor(np.array(2.5))
    p = d2s.jit.to_static(_scaled_loop).get_program(x, k, d2s.tensor(np.array(2)))
    q = check_pure(loop_invariants, p)
    assert len(_whiles(q)[0].outputs) == len(_whiles(p)[0].outputs) - 1
    for n in (0, 1, 3):
        feeds = [np.linspace(-1, 1, 3), np.array(-0.5), np.array(n)]
        for a, b in zip(Executor(p).run(*feeds), Executor(q).run(*feeds)):
            np.testing.assert_array_equal(a, b)
    y = d2s.tensor(np.ones(3))
    p = d2s.jit.to_static(_swapping_loop).get_program(x, y, d2s.tensor(np.array(2)))
    q = check_pure(loop_invariants, p)
    loop = _whiles(q)[0]
    defs = {o: op for op in q.block.ops for o in op.outputs}

    def source(name):  # the program's outputs still come out of the loop
        while defs[name] is not loop:
            name = defs[name].inputs[0]
        return name
    assert all(source(o) in loop.outputs for o in q.outputs)
    for n in (0, 1, 2, 3):
        feeds = [np.linspace(-1, 1, 3), np.full(3, 7.0), np.array(n)]
        for a, b in zip(Executor(p).run(*feeds), Executor(q).run(*feeds)):
            np.testing.assert_array_equal(a, b)
