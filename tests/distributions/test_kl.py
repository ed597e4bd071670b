"""kl_divergence against PyTorch for every registered pair (and Independent), with float64
gradients; an unregistered pair raises as PyTorch."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s import distributions as D
from torch_parity import Case

R = np.random.default_rng(8)
M1, M2 = R.standard_normal((2, 3)), R.standard_normal((2, 3))
S1, S2 = R.uniform(0.5, 2, (2, 3)), R.uniform(0.5, 2, (2, 3))
P1, P2 = R.uniform(0.1, 0.9, 4), np.array([0.3, 0.0, 1.0, 0.5])
C1, C2 = R.dirichlet(np.ones(4), 2), np.array([[0.2, 0.3, 0.5, 0.0], [0.25, 0.25, 0.25, 0.25]])

TORCH_CASES = [
    Case("kl_normal", lambda t, a, b, c, d: t.distributions.kl_divergence(
        t.distributions.Normal(a, b), t.distributions.Normal(c, d)), M1, S1, M2, S2),
    Case("kl_bernoulli_edges", lambda t, p, q: t.distributions.kl_divergence(
        t.distributions.Bernoulli(probs=p), t.distributions.Bernoulli(probs=q)), P1, P2, grad=False),
    Case("kl_bernoulli", lambda t, p, q: t.distributions.kl_divergence(
        t.distributions.Bernoulli(logits=p), t.distributions.Bernoulli(logits=q)), M1, M2),
    Case("kl_categorical", lambda t, p, q: t.distributions.kl_divergence(
        t.distributions.Categorical(probs=p), t.distributions.Categorical(probs=q)), C1, C2, grad=False),
    Case("kl_categorical_logits", lambda t, p, q: t.distributions.kl_divergence(
        t.distributions.Categorical(logits=p), t.distributions.Categorical(logits=q)), M1, M2),
    Case("kl_uniform", lambda t, a, b: t.distributions.kl_divergence(
        t.distributions.Uniform(a, a + 1.0), t.distributions.Uniform(b, b + 3.0)), M1[0], M1[0] - 0.5),
    Case("kl_independent_normal", lambda t, a, b, c, d: t.distributions.kl_divergence(
        t.distributions.Independent(t.distributions.Normal(a, b), 1),
        t.distributions.Independent(t.distributions.Normal(c, d), 1)), M1, S1, M2, S2),
    Case("independent_log_prob_entropy", lambda t, a, b, v: (
        t.distributions.Independent(t.distributions.Normal(a, b), 2).log_prob(v),
        t.distributions.Independent(t.distributions.Normal(a, b), 1).entropy()), M1, S1, M2),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_unregistered_pairs_raise_and_register_kl_adds_one():
    n, u = D.Normal(0.0, 1.0), D.Uniform(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(n, u)

    @D.register_kl(D.Normal, D.Uniform)
    def _kl(p, q):
        return d2s.tensor(7.0)

    try:
        assert float(D.kl_divergence(n, u)) == 7.0
    finally:
        from d2s.distributions import kl
        del kl._KL[(D.Normal, D.Uniform)]


def test_independent_shapes():
    d = D.Independent(D.Normal(d2s.zeros(2, 3), d2s.ones(2, 3)), 1)
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    assert tuple(d.log_prob(d2s.zeros(2, 3)).shape) == (2,) and d.has_rsample
