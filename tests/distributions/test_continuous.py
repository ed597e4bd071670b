"""Normal and Uniform against PyTorch: log_prob, cdf, entropy and moments with float64
gradients of the parameters; rsample's reparameterization gradient; sampling statistics."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s import distributions as D
from torch_parity import Case

R = np.random.default_rng(6)
LOC = R.standard_normal((3, 1))
SCALE = R.uniform(0.5, 2.0, (1, 4))
VALUE = R.standard_normal((2, 3, 4))
LOW = R.uniform(-2.0, 0.0, 4)
HIGH = LOW + R.uniform(0.5, 2.0, 4)
UV = np.array([-3.0, 0.5, -0.5, 5.0])


def _normal(t, loc, scale, what):
    d = t.distributions.Normal(loc, scale)
    return getattr(d, what) if what in ("mean", "stddev", "variance", "mode") else getattr(d, what)()


TORCH_CASES = [
    Case("normal_log_prob", lambda t, m, s, v: t.distributions.Normal(m, s).log_prob(v), LOC, SCALE, VALUE),
    Case("normal_cdf", lambda t, m, s, v: t.distributions.Normal(m, s).cdf(v), LOC, SCALE, VALUE,
         onnx="onnxruntime has no float64 Erf kernel", rtol=1e-6, atol=2e-7),
    Case("normal_entropy", lambda t, m, s: _normal(t, m, s, "entropy"), LOC, SCALE),
    Case("normal_moments", lambda t, m, s: (_normal(t, m, s, "mean"), _normal(t, m, s, "stddev"),
                                            _normal(t, m, s, "variance")), LOC, SCALE),
    Case("normal_scalar_params", lambda t, v: t.distributions.Normal(0.5, 2.0).log_prob(v), VALUE),
    Case("uniform_log_prob_entropy", lambda t, lo, hi, v: (t.distributions.Uniform(lo, hi, False).log_prob(v),
                                                           t.distributions.Uniform(lo, hi).entropy()),
         LOW, HIGH, UV, grad=[0, 1]),
    Case("uniform_moments_cdf", lambda t, lo, hi, v: (t.distributions.Uniform(lo, hi).mean,
                                                      t.distributions.Uniform(lo, hi).stddev,
                                                      t.distributions.Uniform(lo, hi, False).cdf(v)), LOW, HIGH, UV),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_rsample_is_differentiable_through_the_reparameterization():
    d2s.manual_seed(0)
    loc = d2s.tensor([0.5, -1.0], dtype="float64", requires_grad=True)
    scale = d2s.tensor([2.0, 0.5], dtype="float64", requires_grad=True)
    z = D.Normal(loc, scale).rsample((1000,))
    assert tuple(z.shape) == (1000, 2)
    gl, gs = d2s.autograd.grad(z.sum(), [loc, scale])
    np.testing.assert_allclose(gl.numpy(), [1000, 1000])
    eps = (z.detach().numpy() - loc.detach().numpy()) / scale.detach().numpy()
    np.testing.assert_allclose(gs.numpy(), eps.sum(0), rtol=1e-10)
    s = D.Normal(loc, scale).sample((3,))
    assert not s.requires_grad and tuple(s.shape) == (3, 2)
    lo = d2s.tensor([0.0], requires_grad=True)
    u = D.Uniform(lo, 3.0).rsample((5,))
    assert u.requires_grad and ((u.numpy() >= 0) & (u.numpy() < 3)).all()


def test_sampling_statistics():
    d2s.manual_seed(0)
    z = D.Normal(d2s.tensor([1.0, -2.0]), d2s.tensor([0.5, 3.0])).sample((20000,)).numpy()
    np.testing.assert_allclose(z.mean(0), [1.0, -2.0], atol=0.06)
    np.testing.assert_allclose(z.std(0), [0.5, 3.0], rtol=0.03)
    u = D.Uniform(-1.0, 2.0).sample((20000,)).numpy()
    assert u.min() >= -1 and u.max() < 2 and abs(u.mean() - 0.5) < 0.03


def test_validation_and_shapes():
    with pytest.raises(ValueError, match="to be within the support"):
        D.Uniform(0.0, 1.0).log_prob(d2s.tensor(1.5))
    with pytest.raises(ValueError, match="scale .* to satisfy the constraint GreaterThan"):
        D.Normal(0.0, d2s.tensor([-1.0]))
    d = D.Normal(d2s.zeros(3, 1), d2s.ones(4))
    assert d.batch_shape == (3, 4) and d.event_shape == ()
    assert tuple(d.sample((2,)).shape) == (2, 3, 4)
    with pytest.raises(ValueError, match="expected low < high"):
        D.Uniform(1.0, 0.0)


def test_inside_a_converted_function():
    @d2s.jit.to_static
    def elbo(mu, log_sigma, x):
        q = D.Normal(mu, log_sigma.exp())
        z = q.rsample()
        return D.Normal(z, 1.0).log_prob(x).sum() - D.kl_divergence(q, D.Normal(0.0, 1.0)).sum()

    mu = d2s.zeros(4, requires_grad=True)
    ls = d2s.zeros(4, requires_grad=True)
    out = elbo(mu, ls, d2s.ones(4))
    out.backward()
    assert mu.grad is not None and ls.grad is not None and np.isfinite(out.numpy())
