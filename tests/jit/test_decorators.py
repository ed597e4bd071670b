"""Decorated functions and d2s's function transforms under to_static: converted equals eager.

A ``functools.wraps`` wrapper is converted from its own source (not unwrapped to the inner
function); d2s's transforms (``d2s.func.*``, ``d2s.autograd.functional.*``) are applied
inside the program around the converted function; ``d2s.grad`` inside a converted function
differentiates the caller's inputs and the module's parameters.
"""
import functools

import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.autograd import functional as AF

from jit_helpers import check

INPUTS = [[1.0, 2.0, 3.0], [-1.0, -2.0, 0.5], [0.0, 0.0, 0.0]]  # both branches of `branchy`


def _x(v, requires_grad=False):
    return d2s.tensor(v, requires_grad=requires_grad)


def times_ten(fn):
    @functools.wraps(fn)
    def wrapper(*a):
        return fn(*a) * 10
    return wrapper


def clamp_positive(fn):
    """A wrapper with tensor control flow of its own, around a function with its own."""
    @functools.wraps(fn)
    def wrapper(x):
        y = fn(x)
        if y.sum() < 0:
            y = -y
        return y
    return wrapper


@times_ten
def plus_one(x):
    return x + 1


@clamp_positive
def signed(x):
    if x.mean() > 0:
        return x * 2
    return x - 1


def branchy(x):
    if x.sum() > 0:
        return (x * x).sum()
    return (x * x * x).sum() + x.sum()


def test_wraps_wrapper_code_is_kept():
    for v in INPUTS:
        check(plus_one, _x(v))
    sf = d2s.jit.to_static(plus_one)
    assert "* 10" in sf.code


def test_wrapper_and_inner_control_flow_both_converted():
    sf = d2s.jit.to_static(signed)
    for v in INPUTS:
        check(signed, _x(v), static=sf)
    prog = str(sf.get_program(d2s.jit.InputSpec([3])))
    assert prog.count("cond") >= 2  # the wrapper's if and the inner function's if


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacrev", "jacfwd", "hessian"])
def test_func_transforms_run_inside_the_program(transform):
    t = getattr(d2s.func, transform)(branchy)
    sf = d2s.jit.to_static(t)
    for v in INPUTS:
        eager, static = t(_x(v)), sf(_x(v))
        e_leaves, _ = d2s.func.tree_flatten(eager)
        s_leaves, _ = d2s.func.tree_flatten(static)
        assert len(e_leaves) == len(s_leaves)
        for e, s in zip(e_leaves, s_leaves):
            assert e.shape == s.shape and e.dtype == s.dtype
            np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-5, atol=1e-5)
    assert sf.is_static and sf.programs


def test_grad_transform_matches_finite_differences():
    sf = d2s.jit.to_static(d2s.func.grad(branchy))
    for v in INPUTS[:2]:
        x = np.array(v, np.float64)
        num = np.zeros_like(x)
        for i in range(x.size):
            e = np.zeros_like(x)
            e[i] = 1e-6
            num[i] = (branchy(d2s.tensor(x + e)).item() - branchy(d2s.tensor(x - e)).item()) / 2e-6
        np.testing.assert_allclose(sf(_x(v)).numpy(), num, rtol=1e-4, atol=1e-4)


def grad_inside(x):
    g = d2s.func.grad(branchy)(x)
    return g * 2 + x


def jacobian_inside(x):
    return AF.jacobian(lambda_free_square, x) + 1


def lambda_free_square(x):
    if x.sum() > 0:
        return x * x
    return x * 3


def vjp_inside(x):
    out, g = AF.vjp(lambda_free_square, x, d2s.ones_like(x))
    return out + g


def test_transforms_called_inside_converted_code():
    for fn in (grad_inside, jacobian_inside, vjp_inside):
        sf = d2s.jit.to_static(fn)
        for v in INPUTS:
            check(fn, _x(v), grad=False, static=sf)


def grad_of_input(x):
    y = (x * x).sum()
    if y > 1:
        y = y * x.sum()
    return d2s.grad(y, x)[0]


def test_d2s_grad_of_caller_input():
    sf = d2s.jit.to_static(grad_of_input)
    for v in INPUTS:
        e = grad_of_input(_x(v, True))
        s = sf(_x(v, True))
        np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-5)


def test_d2s_grad_of_input_not_requiring_grad_raises_like_eager():
    with pytest.raises(RuntimeError, match="does not require grad"):
        grad_of_input(_x(INPUTS[0]))
    with pytest.raises(RuntimeError, match="does not require grad"):
        d2s.jit.to_static(grad_of_input)(_x(INPUTS[0]))


class GradPenalty(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        loss = self.fc(x).pow(2).sum()
        gw, = d2s.grad(loss, self.fc.weight, create_graph=True)
        return loss + (gw * gw).sum()


def test_d2s_grad_of_parameters_inside_module():
    d2s.manual_seed(0)
    m = GradPenalty()
    x = d2s.randn(4, 3)
    eager = m(x)
    eager.backward()
    g_eager = m.fc.weight.grad.numpy().copy()
    m.fc.weight.grad = m.fc.bias.grad = None
    d2s.jit.to_static(m)
    static = m(x)
    np.testing.assert_allclose(static.numpy(), eager.numpy(), rtol=1e-5)
    static.backward()
    np.testing.assert_allclose(m.fc.weight.grad.numpy(), g_eager, rtol=1e-4)


def test_d2s_grad_program_follows_the_callers_requires_grad():
    sf = d2s.jit.to_static(grad_of_input)
    x = INPUTS[0]
    np.testing.assert_allclose(sf(_x(x, True)).numpy(), grad_of_input(_x(x, True)).numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="does not require grad"):
        sf(_x(x))  # eager raises here too; the cached program must not answer instead
    np.testing.assert_allclose(sf(_x(x, True)).numpy(), grad_of_input(_x(x, True)).numpy(), rtol=1e-5)


# ------------------------------------------------------------------ TorchScript's names as hints
class Scripted(nn.Module):
    scale: d2s.jit.Final[float]

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.scale = d2s.jit.Attribute(2.0, float)
        self.eager_calls = 0

    def forward(self, x):
        if not d2s.jit.is_scripting():
            self.eager_calls += 1  # Python-only bookkeeping, skipped in the program as in TorchScript
        h = self.lin(x)
        if h.sum() > 0:
            h = h * self.scale
        return self.helper(h)

    @d2s.jit.ignore
    def helper(self, h):
        return h + 1

    @d2s.jit.unused
    def debug(self, x):
        return x.numpy()

    @d2s.jit.export
    def encode(self, x):
        if x.mean() > 0:
            return self.lin(x) * 3
        return x


def test_torchscript_decorators_keep_functions_plain_and_export_methods(tmp_path):
    import d2s_runtime
    d2s.manual_seed(0)
    m = Scripted()
    xs = [d2s.randn(2, 3) + 1, d2s.randn(2, 3) - 1]
    want = [(m(x).numpy(), m.encode(x).numpy()) for x in xs]
    assert m.eager_calls == 2
    assert d2s.jit.script(m) is m
    assert isinstance(m.encode, d2s.jit.StaticFunction) and m.helper.__d2s_not_to_static__
    for x, (f, e) in zip(xs, want):
        np.testing.assert_allclose(m(x).numpy(), f, rtol=1e-6)
        np.testing.assert_allclose(m.encode(x).numpy(), e, rtol=1e-6)
    assert m.eager_calls == 2
    spec = [d2s.jit.InputSpec([None, 3])]
    d2s.jit.save(m, str(tmp_path / "m"), input_spec={"forward": spec, "encode": spec})
    assert (tmp_path / "m" / "methods" / "encode").is_dir()
    loaded = d2s_runtime.load(str(tmp_path / "m"))
    np.testing.assert_allclose(loaded(xs[0].numpy()), want[0][0], rtol=1e-5)


def test_is_scripting_and_is_tracing():
    assert not d2s.jit.is_scripting() and not d2s.jit.is_tracing()

    def f(x):
        return x * 2 if d2s.jit.is_tracing() else x

    x = d2s.ones(2)
    np.testing.assert_allclose(d2s.jit.trace(f, (x,))(x).numpy(), [2.0, 2.0])

    def g(x):
        if d2s.jit.is_scripting():
            return x * 3
        return x

    np.testing.assert_allclose(d2s.jit.script(g)(x).numpy(), [3.0, 3.0])
    np.testing.assert_allclose(g(x).numpy(), [1.0, 1.0])
    assert d2s.jit.annotate(list, [1]) == [1] and d2s.jit.ignore(drop=True)(g) is g
