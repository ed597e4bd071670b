"""d2s.utils.checkpoint: same gradients as without it, far fewer saved activations."""
import numpy as np
import pytest

import d2s
from d2s.utils import checkpoint, checkpoint_sequential, saved_tensor_bytes


def _params(seed, width=16):
    rng = np.random.default_rng(seed)
    w = d2s.tensor(rng.normal(size=(width, width)) * 0.3, requires_grad=True)
    x = d2s.tensor(rng.normal(size=(8, width)), requires_grad=True)
    return w, x


def _block(w, depth=8):
    def run(h):
        for _ in range(depth):
            h = d2s.tanh(h @ w) + h * 0.5
        return h
    return run


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradients_match_plain_backward(seed):
    w, x = _params(seed)
    (_block(w)(x) ** 2).sum().backward()
    gx, gw = x.grad.numpy().copy(), w.grad.numpy().copy()
    x.grad = w.grad = None
    out = checkpoint(_block(w), x)
    assert out.grad_fn.name() == "CheckpointFunctionBackward"
    (out ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-12)


def test_graph_keeps_only_segment_inputs():
    w, x = _params(3, width=64)
    h_plain, h_ckpt = x, x
    for _ in range(4):
        h_plain = _block(w)(h_plain)
        h_ckpt = checkpoint(_block(w), h_ckpt)
    plain, ckpt = saved_tensor_bytes(h_plain.sum()), saved_tensor_bytes(h_ckpt.sum())
    # plain keeps every intermediate of 32 layers; checkpointed keeps 4 segment inputs (+ outputs)
    assert ckpt * 5 < plain, (plain, ckpt)


def test_multiple_outputs_and_non_tensor_args():
    w, x = _params(4)

    def fn(h, scale):
        return h * scale, d2s.exp(h @ w)

    a, b = checkpoint(fn, x, 3.0)
    (a.sum() + b.sum()).backward()
    gx, gw = x.grad.numpy().copy(), w.grad.numpy().copy()
    x.grad = w.grad = None
    a, b = fn(x, 3.0)
    (a.sum() + b.sum()).backward()
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw, w.grad.numpy(), rtol=1e-12)


def test_random_draws_are_replayed_in_recomputation():
    d2s.manual_seed(0)
    x = d2s.tensor(np.ones((50,)), requires_grad=True)

    def dropout(h):
        mask = d2s.cast(d2s.rand(50) > 0.5, "float64")
        return h * mask * 2

    out = checkpoint(dropout, x)
    kept = out.numpy() != 0
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy() != 0, kept)


def test_works_with_d2s_grad_and_frees_its_graph():
    w, x = _params(5)
    out = checkpoint(_block(w), x).sum()
    (gx,) = d2s.grad(out, x)
    x2 = x.detach().requires_grad_()
    (ref,) = d2s.grad(_block(w)(x2).sum(), x2)
    np.testing.assert_allclose(gx.numpy(), ref.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="second time"):
        out.backward()


def test_no_grad_inputs_need_no_graph():
    w, x = _params(6)
    with d2s.no_grad():
        out = checkpoint(_block(w), x)
    assert out.grad_fn is None and not out.requires_grad


def test_checkpoint_sequential():
    w, x = _params(7)
    layers = [(lambda h: d2s.tanh(h @ w)) for _ in range(6)]
    out = checkpoint_sequential(layers, 3, x)
    out.sum().backward()
    gx = x.grad.numpy().copy()
    x.grad = None
    h = x
    for f in layers:
        h = f(h)
    h.sum().backward()
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(layers, 0, x)


def test_not_callable_is_a_clear_error():
    with pytest.raises(TypeError, match="function"):
        checkpoint(3, d2s.tensor(1.0))
