"""The seed autograd examples of the issue, reproduced exactly (values, leaf flags, node names)."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import d2s
from d2s import func


def _scalar(v):
    return d2s.tensor(v, requires_grad=True)


def test_add_mul_graph_grads_and_flags():
    x, w = _scalar(2.0), _scalar(1.0)
    a = x + w
    b = w + 1
    y = a * b
    a.retain_grad()
    y.backward()
    assert w.grad.item() == 5.0
    assert x.grad.item() == 2.0
    assert a.grad.item() == 2.0
    assert b.grad is None
    assert [t.is_leaf for t in (x, w, a, b, y)] == [True, True, False, False, False]
    assert [t.grad_fn.name() for t in (a, b, y)] == ["AddBackward0", "AddBackward0", "MulBackward0"]
    assert x.grad_fn is None and w.grad_fn is None


def test_retained_b_gets_its_gradient():
    x, w = _scalar(2.0), _scalar(1.0)
    a = x + w
    b = w + 1
    b.retain_grad()
    (a * b).backward()
    assert b.grad.item() == 3.0
    assert a.grad is None


def test_square_plus_cube():
    x = _scalar(1.0)
    out = x ** 2 + x ** 3
    out.backward()
    assert x.grad.item() == 5.0


def test_cube_first_and_second_derivative():
    x = d2s.tensor([2.0, 3.0], requires_grad=True)
    y = x ** 3
    (g,) = d2s.grad(y.sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.numpy(), [12.0, 27.0])
    (g2,) = d2s.grad(g.sum(), x)
    np.testing.assert_array_equal(g2.numpy(), [12.0, 18.0])


def test_mul_plus_sum_broadcast():
    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    y = d2s.tensor([3.0, 4.0], requires_grad=True)
    z = x * y + x.sum()
    np.testing.assert_array_equal(z.numpy(), [6.0, 11.0])
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 6.0])
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 2.0])


def test_sum_of_squares_value_grad_jacfwd_hessian():
    def f(x):
        return d2s.sum(x ** 2)

    x = d2s.tensor([1.0, 2.0, 3.0])
    value, grad = func.value_and_grad(f)(x)
    assert value.item() == 14.0
    np.testing.assert_array_equal(grad.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(func.jacfwd(f)(x).numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(func.hessian(f)(x).numpy(), 2 * np.eye(3))


def test_detach_cuts_the_graph():
    x = d2s.tensor(3.0, requires_grad=True)
    y = x ** 2
    z = y.detach()
    w = z ** 2
    assert not z.requires_grad and not w.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        w.backward()
    assert x.grad is None


def test_autograd_tour_example_passes():
    script = Path(__file__).resolve().parents[2] / "examples" / "autograd_tour.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAIL" not in proc.stdout
    assert proc.stdout.count("ok") >= 10
