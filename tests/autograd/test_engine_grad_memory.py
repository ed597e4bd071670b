"""Each ``.grad`` owns its memory (d2s/autograd/engine.py ``_own``), as in PyTorch: an in-place
update of one ``.grad`` changes no other ``.grad`` and not the caller's ``gradient=``, and works
where the gradient arrived as a read-only broadcast (``x.sum()``). Compared with PyTorch's
answers written out (torch is not a dependency of the suite)."""
import numpy as np
import pytest

import d2s


def leaf(*values):
    return d2s.tensor(np.array(values, dtype=np.float64), requires_grad=True)


def test_one_gradient_sent_to_two_leaves_is_two_grads():
    a, b = leaf(1.0, 2.0), leaf(3.0, 4.0)
    (a + b).sum().backward()
    with d2s.no_grad():
        a.grad += 1
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0])


@pytest.mark.parametrize("through", ["leaf itself", "add", "reshape"])
def test_the_callers_gradient_is_never_written(through):
    a, b = leaf(1.0, 2.0), leaf(3.0, 4.0)
    g = d2s.tensor(np.array([5.0, 7.0]))
    out = {"leaf itself": lambda: a, "add": lambda: a + b, "reshape": lambda: a.reshape([2])}[through]()
    out.backward(g)
    a.grad.zero_()
    if b.grad is not None:
        b.grad.mul_(2.0)
        np.testing.assert_array_equal(b.grad.numpy(), [10.0, 14.0])
    np.testing.assert_array_equal(g.numpy(), [5.0, 7.0])
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0])


def test_a_broadcast_gradient_can_be_updated_in_place():
    v = leaf(1.0, 2.0, 3.0)
    v.sum().backward()
    v.grad.mul_(0.5)  # what clip_grad_norm_ does
    np.testing.assert_array_equal(v.grad.numpy(), [0.5, 0.5, 0.5])
    v.grad.zero_()
    (v * 2.0).sum().backward()  # accumulates into the zeroed grad
    np.testing.assert_array_equal(v.grad.numpy(), [2.0, 2.0, 2.0])


def test_retained_grad_and_leaf_grad_do_not_share():
    a = leaf(1.0, 2.0)
    y = a * 1.0
    z = y + 0.0
    z.retain_grad()
    z.sum().backward()
    z.grad.add_(10.0)
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 1.0])


def test_clip_grad_norm_on_sum_gradients_matches_the_formula():
    lin = d2s.nn.Linear(3, 2)
    x = d2s.tensor(np.ones((4, 3), np.float32))
    lin(x).sum().backward()
    before = [p.grad.numpy().copy() for p in lin.parameters()]
    total = float(np.sqrt(sum((b.astype(np.float64) ** 2).sum() for b in before)))
    d2s.nn.utils.clip_grad_norm_(lin.parameters(), 1.0)
    for p, b in zip(lin.parameters(), before):
        np.testing.assert_allclose(p.grad.numpy(), b * (1.0 / (total + 1e-6)), rtol=1e-5)
