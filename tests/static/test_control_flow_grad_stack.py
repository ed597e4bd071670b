"""Loop gradients on growing stacks (d2s/static/control_flow_grad.py over the stack ops of
d2s_runtime/ops/tensor_list.py): values and gradients of ``while`` and ``scan`` programs (an
Elman RNN, a carry that grows every iteration) equal eager d2s and float64 central finite
differences at trip counts 0, 1, 2 and more, converted with ``to_static`` and run by both
executor modes (generated code and the step interpreter), split into forward and backward
programs with the stacks handed between them, and after a save/load round trip; a long loop's
gradient allocates O(log T) growing arrays, not one per iteration."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec, append_backward, build_program
from d2s.static.partial_eval import split_training
from d2s_runtime import Executor
from d2s_runtime.ops import tensor_list
from d2s_runtime.serialize import load_program, save_program

TRIPS = [0, 1, 2, 7]
B, D, H, T_MAX = 2, 3, 4, 7


def rnn_while(xs, h0, W, U, n):
    h = h0
    t = d2s.zeros([], dtype="int64")
    while t < n:
        h = d2s.tanh(xs[t] @ W + h @ U)
        t = t + 1
    return (h * h).sum()


def rnn_scan(xs, h0, W, U):
    def step(h, x):
        h = d2s.tanh(x @ W + h @ U)
        return h, h

    h, hs = d2s.scan(step, h0, xs)
    return (hs * hs).sum() + h.sum()


def rnn_scan_counting(xs, h0, W, U):
    # an int carry the float step reads (saved for the backward) beside the float one
    def step(c, x):
        h, t = c
        h = d2s.tanh(x @ W + (h @ U) * (d2s.cast(t, "float64") * 0.25 + 0.5))
        return (h, t + 1), h

    (h, _), hs = d2s.scan(step, (h0, d2s.zeros([], dtype="int64")), xs)
    return (hs * hs).sum() + h.sum()


def growing(x, w, n):
    i = d2s.zeros([], dtype="int64")
    while i < n:
        x = d2s.concat([x, d2s.tanh(x[-1:] * w + x[:1])])  # one element longer each iteration
        i = i + 1
    return (x * x).sum()


def _rnn_arrays(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((T_MAX, B, D)) * 0.7, rng.standard_normal((B, H)) * 0.5,
            rng.standard_normal((D, H)) * 0.6, rng.standard_normal((H, H)) * 0.4]


def _eager(fn, arrays, extra=()):
    ts = [d2s.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*ts, *[d2s.tensor(e) for e in extra])  # the plain function: eager d2s
    grads = d2s.grad(y, ts, allow_unused=True)
    return float(y.numpy()), [np.zeros_like(a) if g is None else g.numpy() for g, a in zip(grads, arrays)]


def _finite_diff(f, arrays, eps=1e-6):
    out = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            hi = [x.copy() for x in arrays]
            lo = [x.copy() for x in arrays]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            g[idx] = (f(*hi) - f(*lo)) / (2 * eps)
        out.append(g)
    return out


def _converted(static, arrays, extra=()):
    ts = [d2s.tensor(a, requires_grad=True) for a in arrays]
    y = static(*ts, *[d2s.tensor(e) for e in extra])
    grads = d2s.grad(y, ts, allow_unused=True)
    return float(y.numpy()), [np.zeros_like(a) if g is None else g.numpy() for g, a in zip(grads, arrays)]


def _check(fn, arrays, extra=()):
    static = d2s.jit.to_static(fn)
    value, grads = _converted(static, arrays, extra)
    ev, egrads = _eager(fn, arrays, extra)
    np.testing.assert_allclose(value, ev, rtol=1e-12)
    fd = _finite_diff(lambda *xs: float(static(*[d2s.tensor(x) for x in xs], *[d2s.tensor(e) for e in extra])),
                      arrays)
    for g, e, f in zip(grads, egrads, fd):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(g, f, rtol=1e-5, atol=1e-7)
    return static


@pytest.mark.parametrize("n", TRIPS)
def test_rnn_while_to_static_values_and_gradients(n):
    static = _check(rnn_while, _rnn_arrays(n), extra=(np.array(n),))
    # the program's loop is a tensor while (its gradient pushes onto stacks), not unrolled
    assert any(op.type == "while" for op in static.programs[0].block.ops)


@pytest.mark.parametrize("n", TRIPS)
def test_rnn_scan_to_static_values_and_gradients(n):
    xs, h0, W, U = _rnn_arrays(n)
    _check(rnn_scan, [xs[:n], h0, W, U])


@pytest.mark.parametrize("n", TRIPS)
def test_scan_reading_a_counter_to_static_values_and_gradients(n):
    xs, h0, W, U = _rnn_arrays(n)
    _check(rnn_scan_counting, [xs[:n], h0, W, U])


@pytest.mark.parametrize("n", TRIPS)
def test_growing_carry_to_static_values_and_gradients(n):
    rng = np.random.default_rng(10 + n)
    static = _check(growing, [rng.standard_normal(3) * 0.8, rng.standard_normal(1) * 0.9], extra=(np.array(n),))
    assert any(op.type == "while" for op in static.programs[0].block.ops)


def _grad_program(fn, specs, wrt):
    program = build_program(fn, *specs).verify()
    return program, append_backward(program, [program.inputs[i] for i in wrt]).verify()


RNN_SPECS = [InputSpec([None, B, D], "float64"), InputSpec([B, H], "float64"), InputSpec([D, H], "float64"),
             InputSpec([H, H], "float64"), InputSpec([], "int64")]


def _rnn_while_functional(xs, h0, W, U, n):
    def body(t, h):
        return t + 1, d2s.tanh(xs[t] @ W + h @ U)

    _, h = d2s.while_loop(lambda t, h: t < n, body, [d2s.zeros([], dtype="int64"), h0])
    return (h * h).sum()


@pytest.mark.parametrize("mode", ["codegen", "interp"])
def test_both_executor_modes_and_save_load_run_the_gradient_program(mode, tmp_path):
    _, gp = _grad_program(_rnn_while_functional, RNN_SPECS, [0, 1, 2, 3])
    ops = {op.type for b in gp.blocks for op in b.ops}
    assert {"stack_new", "stack_push", "stack_pop"} <= ops
    save_program(gp, str(tmp_path / "g"))
    loaded, params, _ = load_program(str(tmp_path / "g"))
    runners = [Executor(gp, mode=mode), Executor(loaded, params=params or None, mode=mode)]
    assert all(r.mode == mode for r in runners)
    for n in TRIPS:
        arrays = _rnn_arrays(n)
        ev, egrads = _eager(_rnn_while_functional, arrays, extra=(np.array(n),))
        for r in runners:
            value, *grads = r.run(*arrays, np.array(n), np.array(1.0))
            np.testing.assert_allclose(value, ev, rtol=1e-12)
            for g, e in zip(grads, egrads):
                np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n", TRIPS)
def test_stacks_handed_from_the_forward_program_to_the_backward_program(n):
    static = d2s.jit.to_static(rnn_while)
    arrays = _rnn_arrays(n)
    p = static.get_program(*[d2s.tensor(a) for a in arrays], d2s.tensor(np.array(n)))
    split = split_training(p, list(p.inputs[:4]))
    assert "stack_push" in {op.type for b in split.forward.blocks for op in b.ops}
    feeds = arrays + [np.array(n)]
    outs = Executor(split.forward.verify()).run(*feeds)
    grads = Executor(split.backward.verify()).run(*split.gather(feeds, [], outs), np.float64(1.0))
    ev, egrads = _eager(rnn_while, arrays, extra=(np.array(n),))
    np.testing.assert_allclose(outs[0], ev, rtol=1e-12)
    for g, e in zip(grads, egrads):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mode", ["codegen", "interp"])
def test_a_long_loop_gradient_grows_its_stacks_in_place(mode, monkeypatch):
    """Each new growing array registers one finalizer: T iterations of the gradient's forward
    loop must create O(log T) of them (the executor hands each push's result to the next push
    unchanged), where copying pushes would create one per iteration."""
    _, gp = _grad_program(_rnn_while_functional, RNN_SPECS, [2, 3])
    created = []
    real = tensor_list.weakref.finalize

    def counting(obj, *a):
        if isinstance(obj, np.ndarray):
            created.append(obj.shape)
        return real(obj, *a)

    monkeypatch.setattr(tensor_list.weakref, "finalize", counting)
    ex = Executor(gp, mode=mode)
    T = 300
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((T, B, D)) * 0.3
    _, h0, W, U = _rnn_arrays(0)
    value, gW, gU = ex.run(xs, h0, W, U, np.array(T), np.array(1.0))
    # two stacks (the step counter's and h's), two growing arrays each, doubling from 8 rows
    assert 0 < len(created) <= 4 * (int(np.log2(T * B * H)) + 1), len(created)
    assert len(created) < T
    eager_value, (_, _, eW, eU) = _eager(_rnn_while_functional, [xs, h0, W, U], extra=(np.array(T),))
    np.testing.assert_allclose(value, eager_value, rtol=1e-10)
    np.testing.assert_allclose(gW, eW, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(gU, eU, rtol=1e-8, atol=1e-12)


def _two_carries_from_one_value(x, w, n):
    def body(i, a, b):
        return i + 1, d2s.tanh(a * w), b * 0.5 + a

    _, a, b = d2s.while_loop(lambda i, a, b: i < n, body, [d2s.zeros([], dtype="int64"), x, x])
    return (a * b).sum()


@pytest.mark.parametrize("mode", ["codegen", "interp"])
def test_optimized_gradient_programs_merge_and_fold_stack_ops_safely(mode):
    """The passes (constant folding, CSE, DCE, memory plan) treat the stack ops as the pure
    ops they are: CSE merges the two ``stack_new`` of carries that start from one value, and
    each stack still grows on its own (a push onto a shared version copies first)."""
    from d2s_runtime.passes import optimize

    specs = [InputSpec([3], "float64"), InputSpec([3], "float64"), InputSpec([], "int64")]
    _, gp = _grad_program(_two_carries_from_one_value, specs, [0, 1])
    opt = optimize(gp).verify()
    def stacks_of_x(p):
        return [op for op in p.block.ops if op.type == "stack_new" and op.inputs == [p.inputs[0]]]
    assert len(stacks_of_x(gp)) == 2 and len(stacks_of_x(opt)) == 1
    rng = np.random.default_rng(5)
    for n in TRIPS:
        x, w = rng.standard_normal(3), rng.standard_normal(3)
        ev, eg = _eager(_two_carries_from_one_value, [x, w], extra=(np.array(n),))
        for prog in (gp, opt):
            value, gx, gw = Executor(prog, mode=mode).run(x, w, np.array(n), np.array(1.0))
            np.testing.assert_allclose(value, ev, rtol=1e-12)
            np.testing.assert_allclose(gx, eg[0], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(gw, eg[1], rtol=1e-9, atol=1e-12)
