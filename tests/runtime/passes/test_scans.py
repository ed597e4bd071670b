"""The scan passes (d2s_runtime/passes/merge_scans.py, scan_residuals.py, scan_matmul_sums.py,
scan_transposes.py) on the program of an LSTM-style loss and its gradients (a ``scan``, the
gradient's forward copy and the backward scan): after each pass the program has the structure the
pass promises, and its outputs equal the unoptimized program's (exactly where the pass promises it,
else up to rounding) for 0, 1, 2 and 5 steps; the whole default pipeline's gradients equal eager
autograd's; scans the passes must not touch are left alone."""
import numpy as np

import d2s
from d2s_runtime import Executor
from d2s_runtime.passes import (DEFAULT_PIPELINE, REASSOCIATING_PIPELINE, dce, merge_scans, optimize, scan_matmul_sums, scan_residuals,
                                scan_transposes)

from _pass_helpers import check_pure

STEPS = [0, 1, 2, 5]
B, D, H = 2, 3, 4


def lstm_loss(params, xs, h0, c0):
    W, U, b = params
    xw = xs @ W + b  # every step's input projection, as nn.LSTM computes it

    def step(carry, x):
        h, c = carry
        i, f, g, o = d2s.split(x + h @ U.T, [H] * 4, -1)
        c = d2s.sigmoid(f) * c + d2s.sigmoid(i) * d2s.tanh(g)
        h = d2s.sigmoid(o) * d2s.tanh(c)
        return (h, c), h

    (h, c), ys = d2s.scan(step, (h0, c0), xw)
    return (ys * ys).sum() + (c * h).sum()


lstm_value_and_grad = d2s.func.value_and_grad(lstm_loss)


def _arrays(seed, steps, batch=B):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((D, 4 * H)) * 0.6, rng.standard_normal((4 * H, H)) * 0.4,
            rng.standard_normal(4 * H) * 0.3, rng.standard_normal((steps, batch, D)) * 0.7,
            rng.standard_normal((batch, H)) * 0.5, rng.standard_normal((batch, H)) * 0.5]


def _static_program():
    """The program for 3 steps."""
    W, U, b, xs, h0, c0 = (d2s.tensor(a) for a in _arrays(0, 3))
    return d2s.jit.to_static(lstm_value_and_grad).get_program([W, U, b], xs, h0, c0)


def _program(batch=B):
    """The program for a number of steps known only when it runs."""
    static = d2s.jit.to_static(lstm_value_and_grad)
    spec = d2s.jit.InputSpec
    return static.get_program([spec([D, 4 * H], "float64"), spec([4 * H, H], "float64"), spec([4 * H], "float64")],
                              spec([None, batch, D], "float64"), spec([batch, H], "float64"),
                              spec([batch, H], "float64"))


def _run(program, seed, steps, batch=B):
    W, U, b, xs, h0, c0 = _arrays(seed, steps, batch)
    return Executor(program).run(W, U, b, xs, h0, c0)


def _assert_same(before, after, exact, steps=STEPS, batch=B):
    for seed, n in enumerate(steps):
        for x, y in zip(_run(before, seed, n, batch), _run(after, seed, n, batch)):
            assert x.shape == y.shape and x.dtype == y.dtype
            if exact:
                np.testing.assert_array_equal(y, x)
            else:
                np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-13)


def _scans(program):
    return [op for op in program.block.ops if op.type == "scan"]


def _count(block, op_type):
    return sum(op.type == op_type for op in block.ops)


def _backward(program):
    return next(op for op in _scans(program) if op.attrs["reverse"])


def test_the_gradient_program_has_the_scan_and_two_gradient_scans():
    assert len(_scans(_program())) == 3


def test_merge_scans_reads_the_scan_from_the_gradient_forward_copy():
    p = _program()
    q = check_pure(merge_scans, p)
    assert len(_scans(q)) == 2
    forward = next(op for op in _scans(q) if not op.attrs["reverse"])
    assert _count(forward.blocks["body"], "matmul") == 1
    _assert_same(p, q, exact=True)


def test_scan_residuals_leaves_the_backward_step_no_forward_to_replay():
    p = check_pure(dce, check_pure(merge_scans, _program()))
    body = _backward(p).blocks["body"]
    assert _count(body, "sigmoid") == 3 and _count(body, "tanh") == 2 and _count(body, "matmul") == 3
    q = check_pure(scan_residuals, p)
    body = _backward(q).blocks["body"]
    # the forward's matmul, sigmoids and tanhs are read from the forward scan's ys; left: the
    # step's input gradient and its weight gradient
    assert _count(body, "sigmoid") == 0 and _count(body, "tanh") == 0 and _count(body, "matmul") == 2
    _assert_same(p, q, exact=True)


def test_scan_matmul_sums_makes_the_weight_gradient_one_product_after_the_scan():
    p = check_pure(scan_residuals, check_pure(dce, check_pure(merge_scans, _program())))
    before = sum(_count(op.blocks["body"], "matmul") for op in _scans(p))
    q = check_pure(dce, check_pure(scan_matmul_sums, p))
    bwd = _backward(q)
    assert _count(bwd.blocks["body"], "matmul") == 1  # only the input gradient h @ U's product is left
    assert sum(_count(op.blocks["body"], "matmul") for op in _scans(q)) == before - 1
    assert bwd.attrs["n_carry"] == 2  # the weight gradient carry went away (it started from zeros)
    _assert_same(p, q, exact=False)


def test_scan_transposes_gives_the_step_products_contiguous_weights():
    p = optimize(_program(), passes=[p for p in REASSOCIATING_PIPELINE if p is not scan_transposes])
    q = check_pure(scan_transposes, p)
    for op in _scans(q):
        body = op.blocks["body"]
        assert _count(body, "transpose") == 0
    assert _count(q.block, "identity") >= 1
    _assert_same(p, q, exact=True)


def test_scan_transposes_leaves_the_view_of_a_batch_of_one():
    """With one row, ``h @ U.T`` is a matrix-vector product, which numpy's BLAS sums in another
    order for a contiguous copy of ``U.T`` than for the transposed view eager code reads: the
    copy would change the step's last bits."""
    p = optimize(_program(batch=1), passes=[p for p in DEFAULT_PIPELINE if p is not scan_transposes])
    q = check_pure(scan_transposes, p)
    assert [_count(op.blocks["body"], "transpose") for op in _scans(q)] == \
        [_count(op.blocks["body"], "transpose") for op in _scans(p)]
    assert sum(_count(op.blocks["body"], "transpose") for op in _scans(q)) >= 1
    _assert_same(p, q, exact=True, batch=1)


def test_the_default_pipeline_keeps_the_values_and_gradients_of_eager_autograd():
    p = optimize(_program())
    assert len(_scans(p)) == 2
    for seed, n in enumerate(STEPS):
        arrays = _arrays(seed, n)
        got = Executor(p).run(*arrays)
        W, U, b, xs, h0, c0 = (d2s.tensor(a) for a in arrays)
        params = [W.requires_grad_(), U.requires_grad_(), b.requires_grad_()]
        loss = lstm_loss(params, xs, h0, c0)
        if n:
            loss.backward()
        # (no step: the loss does not depend on the weights, whose gradients are zeros)
        want = [loss.numpy()] + [t.grad.numpy() if n else np.zeros(t.shape) for t in params]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_a_static_number_of_steps_is_one_scan_each_way_and_keeps_its_values():
    p = _static_program()
    q = optimize(p)
    assert len(_scans(q)) == 2
    assert _count(_backward(q).blocks["body"], "matmul") == 2  # the weight gradient stays per step
    _assert_same(p, q, exact=True, steps=[3])
    r = optimize(p, passes=REASSOCIATING_PIPELINE)
    assert _count(_backward(r).blocks["body"], "matmul") == 1
    _assert_same(p, r, exact=False, steps=[3])


def _two_scans(second_step):
    def f(x, h0):
        def step(h, xt):
            h = d2s.tanh(xt + h)
            return h, h

        h1, ys1 = d2s.scan(step, h0, x)
        h2, ys2 = d2s.scan(second_step, h0, x)
        return ys1.sum() + ys2.sum() + h1.sum() + h2.sum()

    return d2s.jit.to_static(f).get_program(d2s.ones([3, 2]), d2s.zeros([2]))


def test_two_scans_of_the_same_step_on_the_same_inputs_become_one():
    def same(h, xt):
        h = d2s.tanh(xt + h)
        return h, h * 2

    p = _two_scans(same)
    assert len(_scans(p)) == 2
    q = check_pure(merge_scans, p)
    assert len(_scans(q)) == 1 and len(_scans(q)[0].outputs) == 3  # the carry and both ys
    x = np.random.default_rng(0).standard_normal((3, 2)).astype("float32")
    np.testing.assert_array_equal(Executor(q).run(x, np.zeros(2, "float32"))[0],
                                  Executor(p).run(x, np.zeros(2, "float32"))[0])


def test_scans_computing_other_carries_are_not_merged():
    def other(h, xt):
        h = d2s.tanh(xt - h)  # not the first scan's update
        return h, h

    p = _two_scans(other)
    q = check_pure(merge_scans, p)
    assert len(_scans(q)) == 2


def test_scans_with_random_draws_are_not_merged():
    def noisy(h, xt):
        h = d2s.tanh(xt + h) + d2s.rand([2]) * 0
        return h, h

    p = _two_scans(noisy)
    assert len(_scans(check_pure(merge_scans, p))) == 2


def test_a_weight_gradient_read_elsewhere_in_the_step_stays_in_the_scan():
    def loss(W, xs, h0):
        def step(carry, x):
            h, acc = carry
            h = d2s.tanh(x + h @ W)
            acc = acc + h.T @ h
            return (h, acc), acc.sum()  # the accumulator is also read by the step

        (h, acc), ys = d2s.scan(step, (h0, d2s.zeros([H, H], dtype="float64")), xs)
        return ys.sum() + acc.sum()

    static = d2s.jit.to_static(loss)
    p = static.get_program(d2s.ones([H, H], dtype="float64"), d2s.ones([3, B, H], dtype="float64"),
                           d2s.zeros([B, H], dtype="float64"))
    q = check_pure(scan_matmul_sums, p)
    assert str(q) == str(p)
