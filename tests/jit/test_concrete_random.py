"""Random draws in converted functions: every op that draws (its ``random`` trait), including
``randint`` with tensor bounds (``randint_dyn``), makes the backward replay the forward's own
draws, so gradients equal eager ones for the same seed."""
import numpy as np
import pytest

import d2s


def _indexed_square_sum(x, n):
    i = d2s.randint(0, n, (5,))  # bounds a tensor: the program draws with randint_dyn
    return (x[i] * x[i]).sum()


def _under_tensor_if(x, n):
    if x.sum() > 0:
        i = d2s.randint(0, n, (5,))
        y = (x[i] * x[i]).sum()
    else:
        y = x.sum()
    return y


def _run(fn, x0, seed, create_graph):
    x = d2s.tensor(x0, requires_grad=True)
    d2s.manual_seed(seed)
    y = fn(x, d2s.tensor(len(x0)))
    (g,) = d2s.autograd.grad(y, x, create_graph=create_graph)
    return y.numpy(), g.numpy()


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("fn", [_indexed_square_sum, _under_tensor_if])
def test_randint_with_tensor_bounds_gradients_equal_eager(fn, create_graph):
    static = d2s.jit.to_static(fn)
    for seed, x0 in ((3, np.arange(1.0, 9.0)), (4, np.linspace(0.5, 2.0, 7)), (5, -np.arange(1.0, 6.0))):
        x0 = x0.astype("float32")
        want_y, want_g = _run(fn, x0, seed, create_graph)
        for _ in range(2):  # the first call runs the built program, the next the optimized one
            got_y, got_g = _run(static, x0, seed, create_graph)
            np.testing.assert_allclose(got_y, want_y, rtol=1e-6)
            np.testing.assert_allclose(got_g, want_g, rtol=1e-6)
