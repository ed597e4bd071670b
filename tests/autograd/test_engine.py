"""The backward engine: ordering, accumulation, hooks, retain/create graph, d2s.grad, grad modes."""
import numpy as np
import pytest

import d2s
from d2s.autograd.node import Node


def _leaf(values, dtype="float64"):
    return d2s.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# ------------------------------------------------------------------ order and accumulation
def test_long_chain_backprops_without_recursion():
    x = _leaf(1.0)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_gradients_from_several_paths_are_summed():
    x = _leaf([1.0, 2.0, 3.0])
    a = x * 2
    b = d2s.exp(x)
    c = a * b + a + x  # x reaches c along four paths
    c.sum().backward()
    xv = x.numpy()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(xv) + 2 * xv * np.exp(xv) + 2 + 1)


def test_diamond_runs_each_node_once():
    calls = []
    x = _leaf(2.0)
    shared = x * 3
    shared.register_hook(lambda g: calls.append(g.item()))
    out = shared * shared + shared
    out.backward()
    assert calls == [2 * 6.0 + 1]
    assert x.grad.item() == (2 * 6.0 + 1) * 3


def test_grads_accumulate_across_backward_calls():
    x = _leaf([1.0, -2.0])
    for _ in range(3):
        (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * 2 * x.numpy())


def test_a_second_backward_adds_into_the_existing_grad_in_place():
    # as PyTorch's AccumulateGrad: a reference taken to .grad before sees the sum
    w = _leaf([1.0, 2.0])
    (w * 3).sum().backward()
    kept = w.grad
    (w * w).sum().backward()
    assert kept is w.grad
    np.testing.assert_allclose(kept.numpy(), [5.0, 7.0])
    w.grad.zero_()  # zeroed (set_to_none=False) and refilled: the same tensor again
    (w * 2).sum().backward()
    np.testing.assert_allclose(kept.numpy(), [2.0, 2.0])
    # with create_graph the sum is a new tensor with history
    (w * w).sum().backward(create_graph=True)
    assert w.grad is not kept and w.grad.requires_grad


def test_unused_output_of_multi_output_op_gets_zero_gradient():
    x = _leaf([1.0, 2.0, 3.0, 4.0])
    a, b = d2s.split(x, 2)
    (a * 5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5, 5, 0, 0])


# ------------------------------------------------------------------ hooks and retain_grad
def test_hook_on_leaf_sees_and_replaces_gradient():
    x = _leaf([1.0, 2.0])
    seen = []

    def hook(g):
        seen.append(g.numpy().copy())
        return g * 10

    x.register_hook(hook)
    (x * 3).sum().backward()
    np.testing.assert_allclose(seen[0], [3, 3])
    np.testing.assert_allclose(x.grad.numpy(), [30, 30])


def test_hook_on_non_leaf_replaces_gradient_flowing_upstream():
    x = _leaf([1.0, 2.0])
    y = x * 2
    y.register_hook(lambda g: g + 1)
    (y * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [(3 + 1) * 2] * 2)


def test_hook_returning_none_keeps_gradient_and_remove_works():
    x = _leaf(1.0)
    seen = []
    h = x.register_hook(lambda g: seen.append(g.item()))
    (x * 4).backward()
    h.remove()
    (x * 4).backward()
    assert seen == [4.0]
    assert x.grad.item() == 8.0


def test_hook_on_tensor_without_grad_is_an_error():
    with pytest.raises(RuntimeError, match="does not require grad"):
        d2s.tensor(1.0).register_hook(lambda g: g)


def test_retain_grad_on_non_leaf_and_leaf_is_noop():
    x = _leaf([1.0, 2.0])
    y = x * x
    z = y * 3
    y.retain_grad()
    x.retain_grad()
    z.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [3, 3])
    assert z.grad is None
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.numpy())


# ------------------------------------------------------------------ retain_graph / create_graph
def test_second_backward_through_freed_graph_raises():
    x = _leaf(2.0)
    y = x * x
    y.backward()
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = _leaf(2.0)
    y = x * x
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == 8.0


def test_backward_of_non_scalar_needs_gradient():
    x = _leaf([1.0, 2.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="scalar outputs"):
        y.backward()
    y.backward(gradient=d2s.tensor([1.0, 10.0], dtype="float64"))
    np.testing.assert_allclose(x.grad.numpy(), [2, 20])


@pytest.mark.parametrize("x0", [0.5, 1.3, -2.0])
def test_third_order_derivatives(x0):
    x = _leaf(x0)
    y = d2s.sin(x) * x ** 3
    (g1,) = d2s.grad(y, x, create_graph=True)
    (g2,) = d2s.grad(g1, x, create_graph=True)
    (g3,) = d2s.grad(g2, x)
    s, c = np.sin(x0), np.cos(x0)
    np.testing.assert_allclose(g1.item(), c * x0 ** 3 + 3 * s * x0 ** 2)
    np.testing.assert_allclose(g2.item(), -s * x0 ** 3 + 6 * c * x0 ** 2 + 6 * s * x0)
    np.testing.assert_allclose(g3.item(), -c * x0 ** 3 - 9 * s * x0 ** 2 + 18 * c * x0 + 6 * s)


def test_create_graph_backward_leaves_differentiable_grad():
    x = _leaf(3.0)
    (x ** 3).backward(create_graph=True)
    assert x.grad.requires_grad
    (g2,) = d2s.grad(x.grad, x)
    assert g2.item() == 18.0


def test_backward_inputs_restricts_accumulation():
    x, w = _leaf(2.0), _leaf(5.0)
    (x * w).backward(inputs=[x])
    assert x.grad.item() == 5.0
    assert w.grad is None


# ------------------------------------------------------------------ d2s.grad
def test_grad_returns_tuple_and_leaves_dot_grad_alone():
    x, w = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    gx, gw = d2s.grad((x * w).sum(), [x, w])
    np.testing.assert_allclose(gx.numpy(), [3, 4])
    np.testing.assert_allclose(gw.numpy(), [1, 2])
    assert x.grad is None and w.grad is None


def test_grad_runs_only_the_needed_part_of_the_graph():
    x, w = _leaf(2.0), _leaf(3.0)
    fired = []
    unrelated = w * 7
    unrelated.register_hook(lambda g: fired.append("w-branch"))
    w.register_hook(lambda g: fired.append("w-leaf"))
    related = x * 2
    related.register_hook(lambda g: fired.append("x-branch"))
    out = related + unrelated
    (gx,) = d2s.grad(out, x)
    assert gx.item() == 2.0
    assert fired == ["x-branch"]


def test_grad_with_respect_to_a_non_leaf():
    x = _leaf([1.0, 2.0])
    y = x * 3
    z = (y * y).sum()
    (gy,) = d2s.grad(z, y)
    np.testing.assert_allclose(gy.numpy(), 2 * y.numpy())


def test_grad_allow_unused():
    x, w = _leaf(1.0), _leaf(2.0)
    out = x * 4
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        d2s.grad(out, [x, w], retain_graph=True)
    gx, gw = d2s.grad(out, [x, w], allow_unused=True)
    assert gx.item() == 4.0 and gw is None


def test_grad_takes_pytorchs_keywords():
    # the WGAN-GP reference code passes only_inputs=True (deprecated in PyTorch, and ignored)
    x, w = _leaf([1.0, 2.0]), _leaf(3.0)
    (g,) = d2s.autograd.grad((x * x).sum(), x, retain_graph=True, only_inputs=True)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    with pytest.warns(FutureWarning, match="only_inputs"):
        d2s.autograd.grad((x * x).sum(), x, only_inputs=False)
    # materialize_grads: zeros of the input's shape and dtype, not None, for an unused input
    gx, gw = d2s.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)
    np.testing.assert_allclose(gx.numpy(), [2.0, 2.0])
    assert gw.shape == w.shape and gw.dtype == w.dtype and gw.item() == 0.0
    with pytest.raises(ValueError, match="allow_unused"):
        d2s.autograd.grad((x * 2).sum(), [x, w], allow_unused=False, materialize_grads=True)
    with pytest.raises(NotImplementedError, match="is_grads_batched"):
        d2s.autograd.grad(x * 2, x, grad_outputs=d2s.eye(2, dtype=d2s.float64), is_grads_batched=True)


def test_grad_keywords_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, d2s):
        x = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor(3.0, dtype=lib.float64, requires_grad=True)
        out = (x ** 3).sum()
        got = lib.autograd.grad(out, [x, w], create_graph=True, only_inputs=True, materialize_grads=True)
        (gg,) = lib.autograd.grad(got[0].sum(), x)
        if lib is torch:
            want = [got[0].detach().numpy(), got[1].detach().numpy(), gg.numpy()]
        else:
            for a, b in zip([got[0], got[1], gg], want):
                np.testing.assert_allclose(a.detach().numpy(), b)


def test_grad_with_grad_outputs():
    x = _leaf([1.0, 2.0, 3.0])
    (g,) = d2s.grad(x * x, x, grad_outputs=d2s.tensor([1.0, 0.0, 2.0], dtype="float64"))
    np.testing.assert_allclose(g.numpy(), [2, 0, 12])


def test_grad_of_input_that_does_not_require_grad_is_an_error():
    x = _leaf(1.0)
    c = d2s.tensor(1.0)
    with pytest.raises(RuntimeError, match="does not require grad"):
        d2s.grad(x * c, c)


# ------------------------------------------------------------------ grad modes, detach, graph introspection
def test_no_grad_context_and_decorator():
    x = _leaf(1.0)
    with d2s.no_grad():
        assert not d2s.is_grad_enabled()
        y = x * 2
        with d2s.enable_grad():
            assert d2s.is_grad_enabled()
            z = x * 2
    assert d2s.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad

    @d2s.no_grad()
    def f(t):
        return t * 2, d2s.is_grad_enabled()

    out, mode = f(x)
    assert not out.requires_grad and mode is False

    @d2s.enable_grad()
    def g(t):
        return t * 2

    with d2s.no_grad():
        assert g(x).requires_grad


def test_set_grad_enabled():
    x = _leaf(1.0)
    with d2s.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert d2s.is_grad_enabled()


def test_grad_mode_restored_after_exception_in_backward_hook():
    x = _leaf(1.0)

    def bad(g):
        raise ValueError("boom")

    x.register_hook(bad)
    with pytest.raises(ValueError):
        (x * 2).backward()
    assert d2s.is_grad_enabled()


def test_detach_shares_data_and_drops_history():
    x = _leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert d.grad_fn is None and not d.requires_grad and d.is_leaf
    assert np.shares_memory(d.numpy(), y.numpy())


def test_grad_fn_names_and_next_functions():
    x = _leaf([[1.0, 2.0]])
    w = _leaf([[3.0], [4.0]])
    y = x @ w
    assert y.grad_fn.name() == "MatmulBackward0"
    names = [fn.name() for fn, _ in y.grad_fn.next_functions]
    assert names == ["AccumulateGrad", "AccumulateGrad"]
    assert y.grad_fn.next_functions[0][0].variable is x
    z = d2s.exp(y) * 2
    (first, _), (second, _) = z.grad_fn.next_functions
    assert z.grad_fn.name() == "MulBackward0"
    assert first.name() == "ExpBackward0" and second is None
    assert isinstance(z.grad_fn, Node)


def test_int_tensors_carry_no_grad():
    x = _leaf([1.0, 2.0])
    i = d2s.argmax(x)
    assert not i.requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        d2s.tensor([1, 2]).requires_grad_()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_engine_matches_finite_differences_on_a_small_mlp(seed):
    rng = np.random.default_rng(seed)
    xv, w1v, w2v = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=(5, 1))

    def loss_np(w1):
        return np.sum(np.tanh(xv @ w1) @ w2v) ** 2

    w1 = _leaf(w1v)
    loss = (d2s.tanh(d2s.tensor(xv) @ w1) @ d2s.tensor(w2v)).sum() ** 2
    loss.backward()
    eps = 1e-6
    num = np.zeros_like(w1v)
    for idx in np.ndindex(*w1v.shape):
        p, m = w1v.copy(), w1v.copy()
        p[idx] += eps
        m[idx] -= eps
        num[idx] = (loss_np(p) - loss_np(m)) / (2 * eps)
    np.testing.assert_allclose(w1.grad.numpy(), num, rtol=1e-5, atol=1e-7)


def test_non_leaf_hook_handle_remove():
    x = _leaf(1.0)
    y = x * 2
    h = y.register_hook(lambda g: g * 100)
    h.remove()
    (y * 3).backward()
    assert x.grad.item() == 6.0


def test_retained_grad_sees_hooked_gradient():
    x = _leaf(1.0)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 10)
    (y * 3).backward()
    assert y.grad.item() == 30.0
    assert x.grad.item() == 60.0


def test_reduction_node_names_follow_pytorch():
    x = _leaf([1.0, 2.0])
    assert x.sum().grad_fn.name() == "SumBackward0"
    assert x.mean().grad_fn.name() == "MeanBackward0"
    assert x.max().grad_fn.name() == "MaxBackward0"


def test_backward_from_a_leaf_itself():
    x = _leaf([1.0, 2.0])
    x.backward(gradient=d2s.tensor([3.0, 4.0], dtype="float64"))
    np.testing.assert_allclose(x.grad.numpy(), [3, 4])


def test_grad_of_output_with_respect_to_itself():
    x = _leaf([1.0, 2.0])
    y = x * 2
    (gy,) = d2s.grad(y.sum(), y)
    np.testing.assert_allclose(gy.numpy(), [1, 1])


def test_backward_inside_a_converted_function_says_what_to_do_instead():
    lin = d2s.nn.Linear(3, 1)

    def step(x):
        loss = lin(x).pow(2).mean()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match=r"backward\(\) inside a function being converted by to_static.*"
                                           r"value_and_grad"):
        d2s.jit.to_static(step)(d2s.ones(2, 3))


def test_gradients_sum_in_pytorchs_order_latest_recorded_first():
    # PyTorch runs the latest recorded of its ready nodes first, so a tensor's gradients sum in
    # that order: here 1e8 + 1 - 1e8 in float32 depends on it (PyTorch 2.13 gives 0.0 and 1.0)
    for make, want in ((lambda x: (x * 1e8 + x * 1.0) + x * -1e8, 0.0), (lambda x: (x * 1.0 + x * 1e8) + x * -1e8, 1.0)):
        x = d2s.tensor(1.0, requires_grad=True)
        make(x).backward()
        assert x.grad.item() == want


def test_an_unrolled_recurrence_sums_a_weights_steps_from_the_last_one_back():
    # as a converted loop's backward does (its reverse loop adds each step's gradient in turn):
    # eagerly the steps' gradients of W were summed from the first step on, and converted
    # tensor-length loops differed from eager in the last bits
    rng = np.random.default_rng(3)
    w = d2s.tensor(rng.standard_normal((3, 3)).astype("float32"), requires_grad=True)
    xs = rng.standard_normal((4, 2, 3)).astype("float32")
    h = d2s.zeros(2, 3)
    for t in range(4):
        h = d2s.tanh(d2s.tensor(xs[t]) @ w + h)
    h.sum().backward()
    hs, g, steps = [np.zeros((2, 3), "float32")], np.ones((2, 3), "float32"), []
    for t in range(4):
        hs.append(np.tanh(xs[t] @ w.detach().numpy() + hs[-1]))
    for t in reversed(range(4)):
        da = g * (1 - hs[t + 1] * hs[t + 1])
        steps.append(xs[t].T @ da)
        g = da
    want = steps[0]
    for s in steps[1:]:
        want = want + s
    np.testing.assert_array_equal(w.grad.numpy(), want)


# ------------------------------------------------------------------ dtypes along the graph
def test_a_float32_tensor_used_with_float64_values_gets_float32_gradients_along_the_way():
    # PyTorch casts each gradient to its input's dtype before passing it on: the ops before a
    # float32 tensor added to a float64 one differentiate in float32 (t.grad and a.grad are
    # float32), not in float64 cast only at the leaf, which gives other bits for y.grad
    rng = np.random.default_rng(0)
    x = d2s.tensor(rng.normal(size=(4, 3)), requires_grad=True)
    y = d2s.tensor(rng.normal(size=3).astype(np.float32), requires_grad=True)
    a = y * 1.5
    a.retain_grad()
    t = a.tanh()
    t.retain_grad()
    ((x + t) * 1.25).sum().backward()
    assert t.grad.dtype == d2s.float32 and a.grad.dtype == d2s.float32 and y.grad.dtype == d2s.float32
    tn = t.detach().numpy()
    want = np.float32(5.0) * (np.float32(1) - tn * tn) * np.float32(1.5)
    assert y.grad.numpy().tobytes() == want.tobytes()
    (gx,) = d2s.grad((x + a.tanh()).sum(), [a])
    assert gx.dtype == d2s.float32
