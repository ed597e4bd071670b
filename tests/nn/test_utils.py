"""d2s.nn.utils.clip_grad_norm_ / clip_grad_value_ against a float64 numpy reference."""
import math

import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.nn.utils import clip_grad_norm_, clip_grad_value_


def _params_with_grads(seed, scale=1.0):
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (2, 2, 2), ()]
    params = []
    for s in shapes:
        p = nn.Parameter(d2s.tensor(rng.standard_normal(s).astype(np.float32)))
        p.grad = d2s.tensor((rng.standard_normal(s) * scale).astype(np.float32))
        params.append(p)
    return params


def _ref_norm(grads, p):
    flat = np.concatenate([np.asarray(g, np.float64).ravel() for g in grads])
    if p == math.inf:
        return np.abs(flat).max()
    return (np.abs(flat) ** p).sum() ** (1.0 / p)


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_scales_like_pytorch(norm_type, max_norm):
    params = _params_with_grads(1, scale=3.0)
    before = [p.grad.numpy().astype(np.float64) for p in params]
    p = math.inf if norm_type == "inf" else norm_type
    want_total = _ref_norm(before, p)
    total = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    assert isinstance(total, d2s.Tensor) and total.shape == () and total.dtype == d2s.float32
    np.testing.assert_allclose(total.item(), want_total, rtol=1e-5)
    coef = min(max_norm / (want_total + 1e-6), 1.0)
    for prm, b in zip(params, before):
        np.testing.assert_allclose(prm.grad.numpy(), b * coef, rtol=1e-5, atol=1e-7)
    if max_norm < want_total:  # after clipping the norm is max_norm
        np.testing.assert_allclose(_ref_norm([q.grad.numpy() for q in params], p), max_norm, rtol=1e-4)


def test_clip_grad_norm_changes_the_gradient_arrays_in_place_and_skips_missing_grads():
    params = _params_with_grads(2, scale=10.0)
    arrays = [p.grad._data for p in params]
    extra = nn.Parameter(d2s.ones(3))  # no .grad: skipped
    clip_grad_norm_(params + [extra], 1.0)
    assert extra.grad is None
    for p, a in zip(params, arrays):
        assert p.grad._data is a
    single = _params_with_grads(3, scale=10.0)[0]
    total = clip_grad_norm_(single, 1.0)  # a single tensor is accepted
    np.testing.assert_allclose(np.linalg.norm(single.grad.numpy()), 1.0, rtol=1e-4)
    assert total.item() > 1.0
    assert clip_grad_norm_([nn.Parameter(d2s.ones(2))], 1.0).item() == 0.0
    # with no gradient, torch.tensor(0.0): of the default dtype (d2s: float32 always)
    d2s.set_default_dtype(d2s.float64)
    try:
        assert str(clip_grad_norm_([nn.Parameter(d2s.ones(2))], 1.0).dtype) == "float64"
    finally:
        d2s.set_default_dtype(d2s.float32)


def test_clip_grad_norm_non_finite():
    params = _params_with_grads(4)
    params[1].grad._data[0] = np.nan
    with pytest.raises(RuntimeError, match="non-finite|nan"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(params, 1.0)
    assert math.isnan(total.item())
    assert np.isnan(params[0].grad.numpy()).all()  # as PyTorch: scaled by a NaN factor
    with pytest.raises(ValueError, match="norm_type"):
        clip_grad_norm_(params, 1.0, norm_type="fro")


def test_clip_grad_value():
    params = _params_with_grads(5, scale=2.0)
    before = [p.grad.numpy().copy() for p in params]
    assert clip_grad_value_(params, 0.7) is None
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(b, -0.7, 0.7))


def test_clipping_inside_a_training_step_matches_the_manual_computation():
    d2s.manual_seed(0)
    model = nn.Linear(4, 2)
    x = d2s.randn(8, 4)
    loss = (model(x) ** 2).sum() * 100.0
    loss.backward()
    grads = [p.grad.numpy().astype(np.float64) for p in model.parameters()]
    total = clip_grad_norm_(model.parameters(), 0.25)
    ref = _ref_norm(grads, 2.0)
    np.testing.assert_allclose(total.item(), ref, rtol=1e-5)
    opt = d2s.optim.SGD(model.parameters(), lr=1.0)
    w0 = model.weight.numpy().copy()
    opt.step()
    np.testing.assert_allclose(w0 - model.weight.numpy(), grads[0] * 0.25 / (ref + 1e-6), rtol=1e-4, atol=1e-6)


def test_parameters_to_vector_and_back():
    d2s.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    vec = nn.utils.parameters_to_vector(m.parameters())
    want = np.concatenate([p.numpy().ravel() for p in m.parameters()])
    np.testing.assert_array_equal(vec.numpy(), want)
    (vec * vec).sum().backward()  # differentiable, as PyTorch's (a concatenation of views)
    np.testing.assert_allclose(m[0].weight.grad.numpy(), 2 * m[0].weight.numpy(), rtol=1e-6)
    w0 = m[0].weight
    nn.utils.vector_to_parameters(d2s.arange(want.size) * 1.0, m.parameters())
    assert m[0].weight is w0
    np.testing.assert_array_equal(m[0].weight.numpy().ravel(), np.arange(12))
    np.testing.assert_array_equal(m[1].bias.numpy(), [24, 25])
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters(np.zeros(3), m.parameters())


def test_get_total_norm_and_clip_grads_with_norm():
    params = _params_with_grads(2)
    total = nn.utils.get_total_norm([p.grad for p in params], 3.0)
    want = sum((np.abs(p.grad.numpy()) ** 3).sum() for p in params) ** (1 / 3)
    np.testing.assert_allclose(float(total), want, rtol=1e-6)
    nn.utils.clip_grads_with_norm_(params, 0.5, total)
    np.testing.assert_allclose(float(nn.utils.get_total_norm([p.grad for p in params], 3.0)), 0.5, rtol=1e-5)


def test_functional_call_replaces_parameters_for_one_call():
    d2s.manual_seed(0)
    m = nn.Linear(3, 2)
    w = d2s.ones(2, 3, requires_grad=True)
    out = nn.utils.stateless.functional_call(m, {"weight": w}, (d2s.ones(1, 3),))
    np.testing.assert_allclose(out.numpy(), 3 + m.bias.numpy()[None], rtol=1e-6)
    out.sum().backward()
    assert w.grad is not None and m.weight.grad is None and m.weight is not w  # restored
    with pytest.raises(RuntimeError, match="missing keys"):
        d2s.func.functional_call(m, {"weight": w}, d2s.ones(1, 3), strict=True)
    # tied weights take the given value under every name
    tied = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False))
    tied[1].weight = tied[0].weight
    out = d2s.func.functional_call(tied, {"0.weight": d2s.eye(2) * 2.0}, (d2s.ones(1, 2),))
    np.testing.assert_allclose(out.numpy(), [[4.0, 4.0]])
