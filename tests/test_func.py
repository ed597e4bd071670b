"""d2s.func: JAX-style transforms over pytrees, checked against analytic derivatives."""
import numpy as np
import pytest

import d2s
from d2s import func


def _t(a):
    return d2s.tensor(np.asarray(a, dtype=np.float64))


def _loss(x):
    return d2s.sum(d2s.sin(x) * x)


@pytest.mark.parametrize("xv", [[0.1, 0.2], [1.0, -2.0, 3.0]])
def test_grad_and_value_and_grad(xv):
    x = np.asarray(xv)
    g = func.grad(_loss)(_t(x))
    np.testing.assert_allclose(g.numpy(), np.cos(x) * x + np.sin(x))
    v, g2 = func.value_and_grad(_loss)(_t(x))
    np.testing.assert_allclose(v.item(), np.sum(np.sin(x) * x))
    np.testing.assert_allclose(g2.numpy(), g.numpy())
    assert not g.requires_grad


def test_grad_over_pytrees_and_argnums():
    params = {"w": _t([[1.0, 2.0], [3.0, 4.0]]), "b": (_t([0.5, -0.5]), 2.0)}
    x = _t([1.0, -1.0])

    def f(p, x, scale):
        return ((x @ p["w"] + p["b"][0]) * p["b"][1]).sum() * scale

    g = func.grad(f)(params, x, 3.0)
    assert set(g) == {"w", "b"} and isinstance(g["b"], tuple)
    np.testing.assert_allclose(g["w"].numpy(), 6 * np.array([[1, 1], [-1, -1]]))
    np.testing.assert_allclose(g["b"][0].numpy(), [6, 6])
    np.testing.assert_allclose(g["b"][1].item(), 3 * ((np.array([1, -1]) @ params["w"].numpy() + [0.5, -0.5]).sum()))
    gp, gx = func.grad(f, argnums=(0, 1))(params, x, 3.0)
    np.testing.assert_allclose(gx.numpy(), 6 * params["w"].numpy().sum(axis=1))
    gx_only = func.grad(f, argnums=-2)(params, x, 3.0)
    np.testing.assert_allclose(gx_only.numpy(), gx.numpy())


def test_grad_has_aux():
    def f(x):
        y = x * x
        return y.sum(), {"y": y}

    g, aux = func.grad(f, has_aux=True)(_t([1.0, 2.0]))
    np.testing.assert_allclose(g.numpy(), [2, 4])
    np.testing.assert_allclose(aux["y"].numpy(), [1, 4])
    (v, aux2), g2 = func.value_and_grad(f, has_aux=True)(_t([1.0, 2.0]))
    assert v.item() == 5.0


def test_grad_errors():
    with pytest.raises(TypeError, match="scalar"):
        func.grad(lambda x: x * 2)(_t([1.0, 2.0]))
    with pytest.raises(TypeError, match="floating point"):
        func.grad(lambda x: (x * 2).sum())(d2s.tensor([1, 2]))
    with pytest.raises(ValueError, match="argnums"):
        func.grad(lambda x: x.sum(), argnums=3)(_t([1.0]))


@pytest.mark.parametrize("x0", [0.7, -1.5])
def test_nested_grad_gives_higher_derivatives(x0):
    f = lambda x: d2s.sin(x) * x ** 2  # noqa: E731
    d1, d2, d3 = func.grad(f), func.grad(func.grad(f)), func.grad(func.grad(func.grad(f)))
    s, c = np.sin(x0), np.cos(x0)
    np.testing.assert_allclose(d1(_t(x0)).item(), c * x0 ** 2 + 2 * s * x0)
    np.testing.assert_allclose(d2(_t(x0)).item(), -s * x0 ** 2 + 4 * c * x0 + 2 * s)
    np.testing.assert_allclose(d3(_t(x0)).item(), -c * x0 ** 2 - 6 * s * x0 + 6 * c)


def _vec(x):
    return d2s.stack([x[0] * x[1], d2s.exp(x[1]), x[0] ** 3])


def _vec_jac(x):
    return np.array([[x[1], x[0]], [0, np.exp(x[1])], [3 * x[0] ** 2, 0]])


@pytest.mark.parametrize("xv", [[1.0, 2.0], [-0.3, 0.4]])
def test_jacrev_and_jacfwd_agree_with_analytic(xv):
    x = np.asarray(xv)
    np.testing.assert_allclose(func.jacrev(_vec)(_t(x)).numpy(), _vec_jac(x))
    np.testing.assert_allclose(func.jacfwd(_vec)(_t(x)).numpy(), _vec_jac(x))


def test_jacobian_layout_for_matrix_input_and_pytree_output():
    x = _t(np.arange(6.0).reshape(2, 3))

    def f(x):
        return {"row": x.sum(axis=1), "all": (x * x).sum()}

    for transform in (func.jacrev, func.jacfwd):
        j = transform(f)(x)
        assert j["row"].shape == (2, 2, 3) and j["all"].shape == (2, 3)
        np.testing.assert_allclose(j["row"].numpy(), np.repeat(np.eye(2)[:, :, None], 3, axis=2))
        np.testing.assert_allclose(j["all"].numpy(), 2 * x.numpy())


def test_jacfwd_tuple_argnums():
    a, b = _t([1.0, 2.0]), _t([3.0])
    ja, jb = func.jacfwd(lambda a, b: a * b, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ja.numpy(), 3 * np.eye(2))
    np.testing.assert_allclose(jb.numpy(), [[1.0], [2.0]])


@pytest.mark.parametrize("xv", [[1.0, 2.0, 3.0], [0.5, -1.0, 0.25]])
def test_hessian(xv):
    x = np.asarray(xv)

    def f(t):
        return (t ** 3).sum() + t[0] * t[2]

    h = func.hessian(f)(_t(x))
    expected = np.diag(6 * x)
    expected[0, 2] = expected[2, 0] = 1
    np.testing.assert_allclose(h.numpy(), expected)


def test_output_not_depending_on_input_gives_zeros():
    x = _t([1.0, 2.0])
    np.testing.assert_allclose(func.jacrev(lambda x: d2s.ones(3, dtype="float64"))(x).numpy(), np.zeros((3, 2)))
    np.testing.assert_allclose(func.jacfwd(lambda x: d2s.ones(3, dtype="float64"))(x).numpy(), np.zeros((3, 2)))


def test_tree_flatten_roundtrip():
    tree = {"b": [1, (2, 3)], "a": 4}
    leaves, treedef = func.tree_flatten(tree)
    assert leaves == [4, 1, 2, 3]
    assert func.tree_unflatten(treedef, leaves) == tree


def test_caller_tensors_untouched():
    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    func.grad(lambda t: (t * t).sum())(x)
    assert x.grad is None
