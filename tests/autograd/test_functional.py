"""d2s.autograd.functional: jacobian, hessian, vjp, jvp against analytic and numeric references."""
import numpy as np
import pytest

import d2s
from d2s.autograd.functional import hessian, jacobian, jvp, vjp


def _t(a):
    return d2s.tensor(np.asarray(a, dtype=np.float64))


def _numeric_jacobian(f_np, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    y0 = np.asarray(f_np(x))
    jac = np.zeros(y0.shape + x.shape)
    for idx in np.ndindex(*x.shape):
        p, m = x.copy(), x.copy()
        p[idx] += eps
        m[idx] -= eps
        jac[(Ellipsis,) + idx] = (np.asarray(f_np(p)) - np.asarray(f_np(m))) / (2 * eps)
    return jac


def _f(x):
    return d2s.tanh(x) * x.sum() + d2s.exp(x[..., :1])


def _f_np(x):
    return np.tanh(x) * x.sum() + np.exp(x[..., :1])


@pytest.mark.parametrize("shape", [(3,), (2, 3), (1,)])
def test_jacobian_matches_finite_differences(shape):
    xv = np.random.default_rng(len(shape)).normal(size=shape)
    jac = jacobian(_f, _t(xv))
    assert jac.shape == shape + shape
    np.testing.assert_allclose(jac.numpy(), _numeric_jacobian(_f_np, xv), rtol=1e-6, atol=1e-8)
    assert not jac.requires_grad


def test_jacobian_tuple_inputs_and_outputs():
    a, b = _t([1.0, 2.0]), _t([3.0, 4.0, 5.0])
    (jaa, jab), (jba, jbb) = jacobian(lambda a, b: (a * 2, b.sum() * a), (a, b))
    np.testing.assert_allclose(jaa.numpy(), 2 * np.eye(2))
    np.testing.assert_allclose(jab.numpy(), np.zeros((2, 3)))
    np.testing.assert_allclose(jba.numpy(), np.eye(2) * 12)
    np.testing.assert_allclose(jbb.numpy(), np.array([[1, 1, 1], [2, 2, 2]]))


def test_jacobian_leaves_caller_tensors_untouched():
    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    jacobian(lambda x: x * x, x)
    assert x.grad is None


@pytest.mark.parametrize("xv", [[1.0, 2.0, 3.0], [-0.5, 0.3, 2.0]])
def test_hessian_matches_analytic(xv):
    x = np.asarray(xv)

    def f(t):
        return (t ** 3).sum() + t[0] * t[1]

    h = hessian(f, _t(x))
    expected = np.diag(6 * x)
    expected[0, 1] = expected[1, 0] = 1
    np.testing.assert_allclose(h.numpy(), expected)


def test_hessian_tuple_inputs():
    a, b = _t([1.0, 2.0]), _t([3.0])
    h = hessian(lambda a, b: (a * a * b).sum(), (a, b))
    np.testing.assert_allclose(h[0][0].numpy(), 2 * 3 * np.eye(2))
    np.testing.assert_allclose(h[0][1].numpy(), [[2.0], [4.0]])
    np.testing.assert_allclose(h[1][0].numpy(), [[2.0, 4.0]])
    np.testing.assert_allclose(h[1][1].numpy(), [[0.0]])


def test_hessian_needs_scalar_function():
    with pytest.raises(RuntimeError, match="one-element"):
        hessian(lambda x: x * 2, _t([1.0, 2.0]))


@pytest.mark.parametrize("seed", [0, 1])
def test_vjp_and_jvp_agree_with_jacobian(seed):
    rng = np.random.default_rng(seed)
    xv, v_out, v_in = rng.normal(size=(2, 3)), rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    jac = _numeric_jacobian(_f_np, xv).reshape(6, 6)
    out, g = vjp(_f, _t(xv), _t(v_out))
    np.testing.assert_allclose(out.numpy(), _f_np(xv))
    np.testing.assert_allclose(g.numpy().ravel(), v_out.ravel() @ jac, rtol=1e-6)
    out, t = jvp(_f, _t(xv), _t(v_in))
    np.testing.assert_allclose(t.numpy().ravel(), jac @ v_in.ravel(), rtol=1e-6)


def test_vjp_default_v_for_scalar_and_tuple_structure():
    a, b = _t([1.0, 2.0]), _t([3.0, 4.0])
    out, (ga, gb) = vjp(lambda a, b: (a * b).sum(), (a, b))
    assert out.item() == 11.0
    np.testing.assert_allclose(ga.numpy(), [3, 4])
    np.testing.assert_allclose(gb.numpy(), [1, 2])
    with pytest.raises(RuntimeError, match="v may be omitted"):
        vjp(lambda a: a * 2, a)


def test_jvp_tuple_outputs_and_unused_input():
    a, b = _t([1.0, 2.0]), _t([5.0])
    outs, tangents = jvp(lambda a, b: (a * a, a.sum() * 0 + 1), (a, b), (_t([1.0, 0.0]), _t([1.0])))
    np.testing.assert_allclose(tangents[0].numpy(), [2.0, 0.0])
    np.testing.assert_allclose(tangents[1].numpy(), 0.0)


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(RuntimeError, match=r"shape \(3,\).*\(2,\)"):
        vjp(lambda x: x * 2, _t([1.0, 2.0]), _t([1.0, 2.0, 3.0]))


def test_create_graph_keeps_results_differentiable():
    x = d2s.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
    _, g = vjp(lambda t: (t ** 3).sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.numpy())


def test_accessible_as_attribute():
    assert d2s.autograd.functional.jacobian is jacobian
