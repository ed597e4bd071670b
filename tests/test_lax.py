"""d2s.lax: jax.lax's control flow with its exact signatures and carry conventions, so JAX code
ports by changing its import. JAX-style programs are compared eager vs to_static vs a numpy
reference, with gradients against float64 finite differences (first and second order)."""
import inspect

import numpy as np
import pytest

import d2s
from d2s import lax
from d2s.autograd import gradcheck
from d2s.jit import InputSpec, to_static
from d2s.static.control_flow import ControlFlowError

RNG = np.random.default_rng(16)

# jax.lax's parameters (jax 0.4-0.10): names, kinds and defaults a port relies on
JAX_SIGNATURES = {
    "cond": ["pred", "true_fun", "false_fun", "*operands", "operand="],
    "while_loop": ["cond_fun", "body_fun", "init_val"],
    "fori_loop": ["lower", "upper", "body_fun", "init_val", "unroll=None"],
    "scan": ["f", "init", "xs=None", "length=None", "reverse=False", "unroll=1", "_split_transpose=False"],
    "switch": ["index", "branches", "*operands", "operand="],
    "map": ["f", "xs", "batch_size=None"],
}


def _params(fn):
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            out.append("*" + p.name)
        elif p.default is p.empty:
            out.append(p.name)
        elif p.name == "operand":  # a sentinel default, as in JAX
            out.append("operand=")
        else:
            out.append(f"{p.name}={p.default!r}")
    return out


@pytest.mark.parametrize("name", sorted(JAX_SIGNATURES))
def test_signatures_are_jax_lax_signatures(name):
    assert _params(getattr(lax, name)) == JAX_SIGNATURES[name]
    assert name in lax.__all__ and getattr(lax, name).__doc__


def _same(a, b):
    la, lb = d2s.func.tree_flatten(a)[0], d2s.func.tree_flatten(b)[0]
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert isinstance(x, d2s.Tensor) and isinstance(y, d2s.Tensor)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-6)


# ------------------------------------------------------------------ while_loop: the carry is one value
def newton_sqrt(a):
    """JAX style: a tuple carry passed to cond_fun and body_fun as ONE argument."""
    def cond_fun(state):
        x, k = state
        return (d2s.abs(x * x - a).max() > 1e-10) & (k < 50)

    def body_fun(state):
        x, k = state
        return (0.5 * (x + a / x), k + 1)

    return lax.while_loop(cond_fun, body_fun, (a, 0))


@pytest.mark.parametrize("v", [[1.0], [4.0, 9.0], [2.0, 0.25, 7.0]])
def test_while_loop_passes_the_tuple_carry_as_one_value(v):
    a = d2s.tensor(v, dtype="float64")
    eager = newton_sqrt(a)
    np.testing.assert_allclose(eager[0].numpy(), np.sqrt(v), rtol=1e-9)
    assert eager[1].dtype == "int64" and isinstance(eager, tuple)
    _same(to_static(newton_sqrt)(a), eager)
    # d2s.while_loop (Paddle's convention) spreads the same tuple over the arguments
    paddle = d2s.while_loop(lambda x, k: (d2s.abs(x * x - a).max() > 1e-10) & (k < 50),
                            lambda x, k: (0.5 * (x + a / x), k + 1), (a, 0))
    _same(paddle, eager)


def test_while_loop_zero_trips_single_and_dict_carries():
    def f(x):
        return lax.while_loop(lambda c: c["n"] < 0, lambda c: {"n": c["n"] + 1, "x": c["x"] * 2.0},
                              {"n": 0, "x": x})

    x = d2s.tensor([1.0, 2.0])
    eager = f(x)
    assert set(eager) == {"n", "x"} and eager["n"].dtype == "int64"
    _same(to_static(f)(x), eager)
    g = lax.while_loop(lambda t: t.sum() < 10.0, lambda t: t * 2.0, x)  # a tensor carry
    np.testing.assert_allclose(g.numpy(), [4.0, 8.0])


def test_while_loop_gradients_first_and_second_order():
    def f(x):
        return lax.while_loop(lambda c: c[1] < 3, lambda c: (d2s.sin(c[0]) * x + c[0], c[1] + 1), (x, 0))[0]

    sf = to_static(f)
    x = d2s.tensor(RNG.standard_normal(3))
    for fn in (f, sf):
        assert gradcheck(fn, (x,))
        assert gradcheck(_second_order(fn), (x,))


def _second_order(fn):
    def g(x):
        if not x.requires_grad:  # finite differences pass plain tensors, under no_grad
            x = x.detach().requires_grad_()
        with d2s.enable_grad():
            (gx,) = d2s.grad(fn(x).sum(), [x], create_graph=True)
            return (gx * gx).sum()
    return g


# ------------------------------------------------------------------ cond / switch: operand= and JAX's forms
def test_cond_and_switch_take_operand_keyword():
    x = d2s.tensor([1.0, -2.0])
    _same(lax.cond(True, lambda a: a + 1.0, lambda a: a - 1.0, operand=x), x + 1.0)
    _same(lax.cond(False, lambda a, b: a * b, lambda a, b: a - b, x, x), x - x)
    _same(lax.switch(5, [lambda a: a, lambda a: a * 3.0], operand=x), x * 3.0)
    with pytest.raises(TypeError, match="either positionally or as operand="):
        lax.cond(True, lambda a: a, lambda a: a, x, operand=x)
    with pytest.raises(TypeError, match="either positionally or as operand="):
        lax.switch(0, [lambda a: a], x, operand=x)


def relu_or_square(x):
    return lax.cond(x.sum() > 0, lambda v: d2s.relu(v) * v, lambda v: v * v * 0.5, x)


def three_way(i, x):
    return lax.switch(i, [lambda v: d2s.tanh(v), lambda v: v * v, lambda v: -v], x)


def test_cond_and_switch_in_programs_with_gradients():
    sf_cond = to_static(relu_or_square)
    sf_switch = to_static(three_way, input_spec=[InputSpec([], "int64"), InputSpec([3], "float64")])
    for v in ([0.5, -0.2, 1.0], [-0.5, -0.2, 0.1]):
        x = d2s.tensor(v, dtype="float64")
        _same(sf_cond(x), relu_or_square(x))
        for fn in (relu_or_square, sf_cond):
            assert gradcheck(fn, (x,)) and gradcheck(_second_order(fn), (x,))
        for i in (-1, 1, 4):
            _same(sf_switch(d2s.tensor(i), x), three_way(i, x))
            fi = (lambda x, i=i: sf_switch(d2s.tensor(i), x))
            assert gradcheck(fi, (x,)) and gradcheck(_second_order(fi), (x,))


# ------------------------------------------------------------------ scan / fori_loop / map
def cumulative(xs, reverse):
    return lax.scan(lambda c, x: (c + x, c * x), 0.0, xs, reverse=reverse, unroll=2)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("n", [0, 1, 5])
def test_scan_matches_numpy_reference(n, reverse):
    xs = RNG.standard_normal(n)
    carry, ys = cumulative(d2s.tensor(xs), reverse)
    c, want = 0.0, np.zeros(n)
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        c, want[t] = c + xs[t], c * xs[t]
    np.testing.assert_allclose(carry.numpy(), c, rtol=1e-12)
    np.testing.assert_allclose(ys.numpy(), want, rtol=1e-12)
    assert carry.dtype == ys.dtype == "float64"
    _same(to_static(cumulative)(d2s.tensor(xs), reverse), (carry, ys))
    _same(cumulative(xs, reverse), (carry, ys))  # a numpy array as xs


def test_scan_without_xs_uses_length():
    def f(x):
        return lax.scan(lambda c, _: (c * 2.0, c), x, None, length=3)

    x = d2s.tensor([1.0, 3.0])
    carry, ys = f(x)
    np.testing.assert_allclose(carry.numpy(), [8.0, 24.0])
    np.testing.assert_allclose(ys.numpy(), [[1.0, 3.0], [2.0, 6.0], [4.0, 12.0]])
    _same(to_static(f)(x), (carry, ys))


def polynomial(x):
    # sum_i x**i / (i + 1) for i < 4, the JAX way
    return lax.fori_loop(0, 4, lambda i, acc: acc + x ** i / (i + 1.0), d2s.zeros_like(x), unroll=True)


def test_fori_loop_and_map():
    x = d2s.tensor(RNG.standard_normal(3))
    want = sum(x.numpy() ** i / (i + 1.0) for i in range(4))
    np.testing.assert_allclose(polynomial(x).numpy(), want, rtol=1e-12)
    _same(to_static(polynomial)(x), polynomial(x))
    for fn in (polynomial, to_static(polynomial)):
        assert gradcheck(fn, (x,)) and gradcheck(_second_order(fn), (x,))
    rows = d2s.tensor(RNG.standard_normal((4, 3)))
    mapped = lax.map(lambda r: (r.sum(), r * 2.0), rows, batch_size=2)  # batch_size: same result
    np.testing.assert_allclose(mapped[0].numpy(), rows.numpy().sum(1))
    _same(to_static(lambda r: lax.map(lambda v: (v.sum(), v * 2.0), r))(rows), mapped)


def test_jax_only_arguments_are_checked():
    with pytest.raises(TypeError, match="unroll must be an int or a bool"):
        lax.scan(lambda c, x: (c, x), 0.0, d2s.ones(2), unroll=1.5)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        lax.map(lambda r: r, d2s.ones(2), batch_size=0)
    with pytest.raises(ControlFlowError, match="bounds and indices must be integers"):
        lax.fori_loop(0.0, 3, lambda i, c: c, 0.0)


def test_ported_jax_code_exports_to_onnx(tmp_path):
    ort = pytest.importorskip("onnxruntime")

    def step(x, n):  # JAX code, only the import changed
        def body(i, c):
            h, acc = c
            h = lax.switch(i % 3, [lambda v: d2s.tanh(v), lambda v: v * 0.5, lambda v: v + 1.0], h)
            return h, acc + lax.map(lambda r: (r * r).sum(), h[None, :] * d2s.ones([2, 1]))
        return lax.fori_loop(0, n, body, (x, d2s.zeros([2])))

    sf = to_static(step, input_spec=[InputSpec([None]), InputSpec([], "int64")])
    path = str(tmp_path / "step.onnx")
    d2s.onnx.export(sf, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    for n in (0, 1, 5):
        x = RNG.standard_normal(4).astype("float32")
        want = step(d2s.tensor(x), d2s.tensor(n))
        _same(sf(d2s.tensor(x), d2s.tensor(n)), want)
        got = sess.run(None, dict(zip(names, [x, np.array(n, "int64")])))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)
