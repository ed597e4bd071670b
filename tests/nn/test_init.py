"""``nn.init`` against PyTorch's rules: gains, fans, the bounds and standard deviations of each
distribution (checked on large draws), the deterministic initializers exactly, and the
default initialization of each layer (its distributions against PyTorch's, where it imports)."""
import math
import warnings

import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.nn import init


def w(*shape, dtype="float64"):
    return nn.Parameter(d2s.zeros(*shape, dtype=dtype))


GAINS = [("linear", None, 1), ("conv2d", None, 1), ("conv_transpose1d", None, 1), ("sigmoid", None, 1),
         ("tanh", None, 5 / 3), ("relu", None, math.sqrt(2)), ("leaky_relu", None, math.sqrt(2 / (1 + 0.01 ** 2))),
         ("leaky_relu", 0.2, math.sqrt(2 / 1.04)), ("leaky_relu", 1, 1.0), ("selu", None, 0.75)]


@pytest.mark.parametrize("name,param,want", GAINS)
def test_calculate_gain(name, param, want):
    assert init.calculate_gain(name, param) == pytest.approx(want, rel=1e-12)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity softsign"):
        init.calculate_gain("softsign")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", True)


def test_fans():
    assert init._calculate_fan_in_and_fan_out(w(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(w(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(w(5))


def _uniform_bound(t):
    a = t.numpy()
    return np.abs(a).max(), a.std()


@pytest.mark.parametrize("fn,shape,bound", [
    (lambda t: init.kaiming_uniform_(t), (200, 300), math.sqrt(2) * math.sqrt(3 / 300)),
    (lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)), (200, 300), 1 / math.sqrt(300)),
    (lambda t: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"), (200, 300, 2),
     math.sqrt(2) * math.sqrt(3 / 400)),
    (lambda t: init.xavier_uniform_(t, gain=2.0), (200, 300), 2 * math.sqrt(6 / 500)),
    (lambda t: init.uniform_(t, -0.3, 0.7), (300, 300), None),
])
def test_uniform_rules(fn, shape, bound):
    d2s.manual_seed(0)
    t = fn(w(*shape))
    a = t.numpy()
    if bound is None:
        assert a.min() >= -0.3 and a.max() <= 0.7 and abs(a.mean() - 0.2) < 0.01
        return
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.99 * bound
    assert abs(a.std() - bound / math.sqrt(3)) < 0.01 * bound


@pytest.mark.parametrize("fn,shape,std", [
    (lambda t: init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"), (300, 200), math.sqrt(2 / 300)),
    (lambda t: init.kaiming_normal_(t, a=0.1), (300, 200), math.sqrt(2 / 1.01) / math.sqrt(200)),
    (lambda t: init.xavier_normal_(t), (300, 200), math.sqrt(2 / 500)),
    (lambda t: init.normal_(t, 1.0, 0.5), (300, 200), 0.5),
])
def test_normal_rules(fn, shape, std):
    d2s.manual_seed(0)
    a = fn(w(*shape)).numpy()
    assert abs(a.std() - std) < 0.02 * std


def test_trunc_normal_stays_in_bounds_with_the_truncated_moments():
    d2s.manual_seed(0)
    a = init.trunc_normal_(w(400, 250), mean=0.5, std=1.0, a=-0.5, b=1.0).numpy()
    assert a.min() >= -0.5 and a.max() <= 1.0
    # the mean of N(0.5, 1) truncated to [-0.5, 1] (alpha = -1, beta = 0.5)
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    want = 0.5 + (phi(-1) - phi(0.5)) / (cdf(0.5) - cdf(-1))
    assert abs(a.mean() - want) < 0.01


def test_orthogonal_gives_orthonormal_rows_or_columns():
    d2s.manual_seed(0)
    for shape in [(4, 6), (6, 4), (3, 2, 2)]:
        q = init.orthogonal_(w(*shape), gain=2.0).numpy().reshape(shape[0], -1)
        small = q @ q.T if q.shape[0] <= q.shape[1] else q.T @ q
        np.testing.assert_allclose(small, 4.0 * np.eye(small.shape[0]), atol=1e-12)


def test_deterministic_initializers_equal_pytorchs():
    np.testing.assert_array_equal(init.eye_(w(3, 5)).numpy(), np.eye(3, 5))
    np.testing.assert_array_equal(init.constant_(w(2, 2), 0.3).numpy(), np.full((2, 2), 0.3))
    assert init.ones_(w(3)).numpy().tolist() == [1, 1, 1] and not init.zeros_(w(3)).numpy().any()
    d = init.dirac_(w(4, 2, 3, 3), groups=2).numpy()
    want = np.zeros((4, 2, 3, 3))
    for g in range(2):
        for k in range(2):
            want[g * 2 + k, k, 1, 1] = 1
    np.testing.assert_array_equal(d, want)
    torch = pytest.importorskip("torch")
    for shape, groups in [((4, 2, 3, 3), 2), ((3, 5, 3), 1), ((6, 2, 1, 3, 3), 3)]:
        ref = torch.nn.init.dirac_(torch.empty(shape, dtype=torch.float64), groups).numpy()
        np.testing.assert_array_equal(init.dirac_(w(*shape), groups).numpy(), ref)


def test_sparse_zeroes_a_fraction_of_each_column():
    d2s.manual_seed(0)
    a = init.sparse_(w(10, 6), 0.3).numpy()
    assert ((a == 0).sum(axis=0) >= 3).all()


def test_zero_element_tensors_warn_and_stay():
    with pytest.warns(UserWarning, match="no-op"):
        init.kaiming_uniform_(w(0, 3))


def test_init_is_repeatable_and_not_recorded():
    d2s.manual_seed(3)
    a = nn.Linear(4, 5).weight.numpy().copy()
    d2s.manual_seed(3)
    lin = nn.Linear(4, 5)
    np.testing.assert_array_equal(lin.weight.numpy(), a)
    assert lin.weight.grad_fn is None and lin.weight.is_leaf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.xavier_uniform_(lin.weight)  # a parameter that requires grad: filled in place, no error


# ------------------------------------------------------------------ layers' defaults vs PyTorch
LAYERS = [("Linear", (300, 200), {}), ("Bilinear", (40, 30, 50), {}), ("Embedding", (300, 50), {}),
          ("LSTM", (40, 60), {"num_layers": 2}), ("GRUCell", (40, 60), {}), ("RNN", (40, 60), {}),
          ("PReLU", (5,), {"init": 0.1}), ("MultiheadAttention", (64, 4), {"kdim": 32, "add_bias_kv": True}),
          ("TransformerEncoderLayer", (32, 4, 64), {}), ("Transformer", (32, 4, 1, 1, 64), {}),
          ("EmbeddingBag", (100, 20), {})]


@pytest.mark.parametrize("kind,args,kw", LAYERS, ids=[x[0] for x in LAYERS])
def test_default_initialization_matches_pytorchs_distribution(kind, args, kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    d2s.manual_seed(0)
    ref = getattr(torch.nn, kind)(*args, **kw)
    m = getattr(nn, kind)(*args, **kw)
    want = {k: v.detach().numpy() for k, v in ref.named_parameters()}
    got = {k: v.numpy() for k, v in m.named_parameters()}
    assert list(got) == list(want)
    for k in want:
        a, b = got[k], want[k]
        assert a.shape == b.shape and a.dtype == b.dtype, k
        if np.ptp(b) == 0:  # a constant (zeros, ones, PReLU's init): equal
            np.testing.assert_array_equal(a, b, err_msg=k)
            continue
        # the same distribution: spread (and, for a large draw, range) within sampling error
        big = a.size >= 1000
        assert abs(a.std() - b.std()) < (0.1 if big else 0.5) * b.std(), k
        if big:
            assert np.abs(a).max() <= np.abs(b).max() * 1.35 and np.abs(b).max() <= np.abs(a).max() * 1.35, k
    for (k, a), (_, b) in zip(m.named_buffers(), ref.named_buffers()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
