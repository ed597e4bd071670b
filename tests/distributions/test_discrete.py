"""Bernoulli and Categorical against PyTorch (by probs and by logits): log_prob, entropy,
moments, with float64 gradients; sampling frequencies; validation."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s import distributions as D
from torch_parity import Case

R = np.random.default_rng(7)
P = R.uniform(0.05, 0.95, (3, 4))
LOGITS = R.standard_normal((3, 4))
Y = (R.uniform(size=(2, 3, 4)) > 0.5).astype(np.float64)
CAT_P = R.dirichlet(np.ones(5), 3) * 3.0  # unnormalized: Categorical normalizes
CAT_L = R.standard_normal((3, 5))
IDS = np.array([[0, 4, 2], [1, 1, 3]])

TORCH_CASES = [
    Case("bernoulli_probs", lambda t, p, y: (t.distributions.Bernoulli(probs=p).log_prob(y),
                                             t.distributions.Bernoulli(probs=p).entropy(),
                                             t.distributions.Bernoulli(probs=p).logits), P, Y, grad=[0]),
    Case("bernoulli_logits", lambda t, lg, y: (t.distributions.Bernoulli(logits=lg).log_prob(y),
                                               t.distributions.Bernoulli(logits=lg).entropy(),
                                               t.distributions.Bernoulli(logits=lg).mean,
                                               t.distributions.Bernoulli(logits=lg).variance), LOGITS, Y, grad=[0]),
    Case("categorical_probs", lambda t, p: (t.distributions.Categorical(probs=p).log_prob(t.tensor(IDS)),
                                            t.distributions.Categorical(probs=p).entropy(),
                                            t.distributions.Categorical(probs=p).probs), CAT_P),
    Case("categorical_logits", lambda t, lg: (t.distributions.Categorical(logits=lg).log_prob(t.tensor(IDS)),
                                              t.distributions.Categorical(logits=lg).entropy(),
                                              t.distributions.Categorical(logits=lg).logits,
                                              t.distributions.Categorical(logits=lg).mode), CAT_L),
    Case("categorical_zero_prob_entropy", lambda t, p: t.distributions.Categorical(probs=p).entropy(),
         np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]), grad=False),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_sampling_frequencies_and_shapes():
    d2s.manual_seed(0)
    probs = np.array([0.1, 0.6, 0.3])
    s = D.Categorical(probs=d2s.tensor(probs)).sample((30000,))
    assert s.dtype == "int64" and tuple(s.shape) == (30000,)
    np.testing.assert_allclose(np.bincount(s.numpy(), minlength=3) / 30000, probs, atol=0.01)
    batch = D.Categorical(logits=d2s.zeros(4, 7)).sample((2,))
    assert tuple(batch.shape) == (2, 4) and batch.numpy().max() < 7
    b = D.Bernoulli(probs=d2s.tensor([0.2, 0.9])).sample((20000,)).numpy()
    assert b.dtype == np.float32 and set(np.unique(b)) <= {0.0, 1.0}
    np.testing.assert_allclose(b.mean(0), [0.2, 0.9], atol=0.01)


def test_validation():
    with pytest.raises(ValueError, match="either `probs` or `logits` must be specified, but not both"):
        D.Categorical(probs=d2s.ones(3), logits=d2s.ones(3))
    with pytest.raises(ValueError, match="to satisfy the constraint Interval"):
        D.Bernoulli(probs=d2s.tensor([1.5]))
    with pytest.raises(ValueError, match="within the support"):
        D.Categorical(logits=d2s.zeros(3)).log_prob(d2s.tensor(3))
    c = D.Categorical(logits=d2s.zeros(2, 3))
    assert c.batch_shape == (2,) and c.param_shape == (2, 3)


@pytest.mark.parametrize("kw", [dict(probs=[[0.0], [1.0]]), dict(probs=[0.0, 0.0]), dict(probs=[-1.0, 2.0]),
                                dict(logits=[[-np.inf]]), dict(logits=[-np.inf, -np.inf])])
def test_categorical_parameters_that_normalize_to_nan_are_refused(kw):
    # PyTorch checks them once normalized: a row of zero probabilities or of -inf logits is NaN then
    (name, value), = kw.items()
    with pytest.raises(ValueError, match=f"Expected parameter {name} .* to satisfy the constraint"):
        D.Categorical(**{name: d2s.tensor(value)})
    with np.errstate(invalid="ignore"):
        assert np.isnan(D.Categorical(**{name: d2s.tensor(value)}, validate_args=False).probs.numpy()).any() \
            or name == "probs" and min(np.ravel(value)) < 0
    good = D.Categorical(**{name: d2s.tensor([[1.0, 3.0]] if name == "probs" else [[-np.inf, 0.0]])})
    np.testing.assert_allclose(good.probs.numpy(), [[0.25, 0.75]] if name == "probs" else [[0.0, 1.0]])


def test_actor_critic_style_use():
    # the REINFORCE idiom: sample an action, then the gradient of its log-probability
    d2s.manual_seed(0)
    logits = d2s.zeros(2, 4, requires_grad=True)
    dist = D.Categorical(logits=logits)
    action = dist.sample()
    loss = -(dist.log_prob(action) * d2s.tensor([1.0, -1.0])).sum() - 0.01 * dist.entropy().sum()
    loss.backward()
    g = logits.grad.numpy()
    onehot = np.eye(4)[action.numpy()]
    np.testing.assert_allclose(g, -(onehot - 0.25) * np.array([[1.0], [-1.0]]), atol=1e-6)
