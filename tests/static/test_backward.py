"""Static backward: gradient programs (append_backward / gradients) equal eager d2s.grad and
central finite differences (float64), through cond (each branch), while (zero, one, many
iterations, data-dependent trip counts), scan, nesting and captured weights."""
import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.static import InputSpec, append_backward, build_program, gradients
from d2s_runtime import Executor

F64 = "float64"


def _eager_grads(fn, arrays):
    ts = [d2s.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*ts)
    grads = d2s.grad(y, ts, allow_unused=True)
    return y.numpy(), [np.zeros_like(a) if g is None else g.numpy() for g, a in zip(grads, arrays)]


def _finite_diff(run, arrays, eps=1e-6):
    out = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            hi = [x.copy() for x in arrays]
            lo = [x.copy() for x in arrays]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            g[idx] = (run(*hi) - run(*lo)) / (2 * eps)
        out.append(g)
    return out


def check_grads(fn, arrays, specs=None):
    """The gradient program of fn's program equals eager grads and finite differences."""
    specs = specs or [InputSpec(a.shape, F64) for a in arrays]
    program = build_program(fn, *specs).verify()
    grad_program = append_backward(program).verify()
    forward = Executor(program)
    backward = Executor(grad_program)
    value, *grads = backward.run(*arrays, np.array(1.0))
    ev, eg = _eager_grads(fn, arrays)
    np.testing.assert_allclose(value, ev, rtol=1e-10)
    np.testing.assert_allclose(forward.run(*arrays)[0], ev, rtol=1e-10)
    fd = _finite_diff(lambda *xs: float(forward.run(*xs)[0]), arrays)
    for g, e, f in zip(grads, eg, fd):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(g, f, rtol=1e-5, atol=1e-7)
    return program, grad_program


def _ops(block):
    out = []
    for op in block.ops:
        out.append(op.type)
        for sub in op.blocks.values():
            out.extend(_ops(sub))
    return out


# ------------------------------------------------------------------ plain programs
def test_plain_program_and_signature():
    fn = lambda x, w: (d2s.tanh(x @ w) ** 2).sum() + (x * 3.0).mean()  # noqa: E731
    rng = np.random.default_rng(0)
    program, grad_program = check_grads(fn, [rng.standard_normal((2, 3)), rng.standard_normal((3, 4))])
    assert grad_program.inputs[:2] == program.inputs  # same names, then one cotangent
    assert len(grad_program.inputs) == 3 and len(grad_program.outputs) == 3
    only = gradients(program, wrt=[program.inputs[1]]).verify()
    assert len(only.outputs) == 1
    x, w = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    (gw,) = Executor(only).run(x, w, np.array(2.0))  # the cotangent scales the gradient
    np.testing.assert_allclose(gw, 2 * _eager_grads(fn, [x, w])[1][1])


def test_unused_input_gets_zero_gradient_and_bad_wrt_is_rejected():
    program = build_program(lambda x, y: (x * 2.0).sum(), InputSpec([2], F64), InputSpec([2], F64))
    gx, gy = Executor(gradients(program)).run(np.ones(2), np.ones(2), np.array(1.0))
    np.testing.assert_allclose(gx, [2, 2])
    np.testing.assert_allclose(gy, [0, 0])
    with pytest.raises(ValueError, match="not an input or param"):
        gradients(program, wrt=["nope"])


def test_vector_output_cotangent_and_unknown_batch_dim():
    program = build_program(lambda x: d2s.sin(x) * x.sum(axis=1, keepdims=True), InputSpec([None, 3], F64))
    grad_program = gradients(program).verify()
    rng = np.random.default_rng(1)
    for n in (1, 4):
        x, ct = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
        xt = d2s.tensor(x, requires_grad=True)
        (e,) = d2s.grad(d2s.sin(xt) * xt.sum(axis=1, keepdims=True), [xt], grad_outputs=[d2s.tensor(ct)])
        np.testing.assert_allclose(Executor(grad_program).run(x, ct)[0], e.numpy())


def test_model_parameter_gradients_match_eager():
    d2s.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    from d2s.static import ProgramBuilder
    x = np.random.default_rng(2).standard_normal((5, 3))
    builder = ProgramBuilder()
    with builder:
        xs = builder.add_input((None, 3), "float32")
        builder.program.outputs = [builder.var_of((model(xs) ** 2).sum())]
    program = builder.program.verify()
    grad_program = gradients(program, wrt=program.params).verify()
    feed = {n: t.numpy() for n, t in builder.param_tensors.items()}
    grads = Executor(grad_program, params=feed).run(x.astype("float32"), np.array(1.0, "float32"))
    loss = (model(d2s.tensor(x.astype("float32"))) ** 2).sum()
    eager = d2s.grad(loss, [builder.param_tensors[n] for n in program.params])
    for g, e in zip(grads, eager):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------ cond
def cond_fn(x, w):
    y = d2s.cond(x.sum() > 0, lambda a: d2s.sin(a) * w, lambda a: a * a + w * 2.0, x)
    return (y * y).sum()


@pytest.mark.parametrize("sign", [1.0, -1.0])  # each branch
def test_cond_gradient(sign):
    rng = np.random.default_rng(3)
    x = sign * np.abs(rng.standard_normal(3)) - 0.0
    _, grad_program = check_grads(cond_fn, [x, rng.standard_normal(3)])
    assert "cond" in _ops(grad_program.block)


# ------------------------------------------------------------------ while
def while_fn(x, w):
    def body(i, v):
        return i + 1, d2s.sin(v) * w + v

    _, v = d2s.while_loop(lambda i, v: (v.sum() < 3.0) & (i < 10), body, [d2s.tensor(0), x])
    return (v * v).sum() + v.sum()


@pytest.mark.parametrize("start", [5.0, 0.9, 0.3, -2.0])  # zero, one, a few, many iterations
def test_while_gradient_with_data_dependent_trip_count(start):
    x = np.array([start, 0.1 * start])
    w = np.array([0.5, 0.7])
    _, grad_program = check_grads(while_fn, [x, w])
    ops = _ops(grad_program.block)
    assert ops.count("while") >= 2 and "stack_push" in ops and "stack_pop" in ops


def nested_fn(x, w):
    def body(i, v):
        v = d2s.cond(v[0] > 0.5, lambda a: a * w - 0.3, lambda a: d2s.tanh(a) + w * a, v)
        return i + 1, v

    _, v = d2s.while_loop(lambda i, v: i < 4, body, [d2s.tensor(0), x])
    return (v ** 3).sum()


@pytest.mark.parametrize("x0", [0.2, 0.9, 2.0])
def test_nested_cond_in_while_gradient(x0):
    check_grads(nested_fn, [np.array([x0, -0.4]), np.array([0.8, 1.1])])


def test_while_gradient_with_tensor_trip_count_input():
    def fn(x, n):
        return d2s.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * x + 1.0), [0, x])[1].sum()

    program = build_program(fn, InputSpec([2], F64), InputSpec([], "int64")).verify()
    grad_program = gradients(program).verify()
    assert grad_program.inputs[:2] == program.inputs
    x = np.array([0.5, 1.5])
    for n in (0, 1, 3):
        xt = d2s.tensor(x, requires_grad=True)
        (e,) = d2s.grad(fn(xt, d2s.tensor(n)), [xt])
        np.testing.assert_allclose(Executor(grad_program).run(x, np.array(n), np.array(1.0))[0], e.numpy())


# ------------------------------------------------------------------ scan
def scan_fn(xs, w):
    c, ys = d2s.scan(lambda c, x: (d2s.tanh(c * w + x), c * x), d2s.zeros([2], dtype=F64), xs)
    return (ys ** 2).sum() + c.sum()


def test_scan_gradient():
    rng = np.random.default_rng(4)
    _, grad_program = check_grads(scan_fn, [rng.standard_normal((4, 2)), rng.standard_normal(2)])
    assert any(op.type == "scan" and op.attrs["reverse"] for op in grad_program.block.ops)


def test_reverse_scan_gradient_and_unknown_length():
    def fn(xs, w):
        c, ys = d2s.scan(lambda c, x: (c * x + w, d2s.sin(c)), d2s.ones([2], dtype=F64), xs, reverse=True)
        return (ys * ys).sum() + (c * c).sum() + (w * w).sum()

    rng = np.random.default_rng(5)
    for n in (0, 1, 3):
        xs, w = rng.standard_normal((n, 2)), rng.standard_normal(2)
        check_grads(fn, [xs, w], specs=[InputSpec([None, 2], F64), InputSpec([2], F64)])


def test_while_gradient_through_a_growing_carry_and_a_tensor_array():
    from d2s.static import TensorArray

    def fn(x, n):
        def body(i, acc, h, outs):
            h = d2s.tanh(h) * x + 0.5
            outs.append(h)
            return i + 1, d2s.concat([acc, h * i.cast(F64)]), h, outs

        _, acc, _, outs = d2s.while_loop(lambda i, acc, h, outs: i < n, body,
                                         [d2s.tensor(0), x, x, TensorArray.like(x)])
        return (acc ** 2).sum() + (outs.stack() * 3.0).sum()

    program = build_program(fn, InputSpec([2], F64), InputSpec([], "int64")).verify()
    grad_program = gradients(program).verify()
    x = np.array([0.3, -0.7])
    for n in (0, 1, 3):
        xt = d2s.tensor(x, requires_grad=True)
        (e,) = d2s.grad(fn(xt, d2s.tensor(n)), [xt])
        np.testing.assert_allclose(Executor(grad_program).run(x, np.array(n), np.array(1.0))[0], e.numpy())


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_gradient_through_a_growing_carry_and_a_tensor_array(reverse):
    # regression: the backward stacked each step's incoming carries, which fails for a carry
    # whose shape changes from step to step
    from d2s.static import TensorArray

    def fn(x, xs):
        def step(c, xr):
            acc, outs = c
            h = d2s.tanh(acc.sum() * xr) + 0.5
            outs.append(h)
            return (d2s.concat([acc * 1.5, h]), outs), acc.sum()

        (acc, outs), ys = d2s.scan(step, (x, TensorArray.like(xs[0])), xs, reverse=reverse)
        return (acc ** 2).sum() + (ys * ys).sum() + (outs.stack() * 3.0).sum()

    rng = np.random.default_rng(7)
    for n in (1, 3):
        check_grads(fn, [rng.standard_normal(2) * 0.5, rng.standard_normal((n, 1))])
