"""Random functions: PyTorch's signatures, dtypes and shapes (against PyTorch, with the values
zeroed: d2s does not reproduce PyTorch's stream), their distributions (moments, support,
uniqueness without replacement), reproducibility from a seed or a Generator, and the same
numbers in eager and converted code (also with dims known only when the program runs, and in a
backward that replays the forward's draws)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(0)
X = R.standard_normal((3, 4))
P = np.array([[0.1, 0.2, 0.7, 0.0], [1.0, 1.0, 2.0, 4.0]])
N = 20000

# Each case's values are multiplied by 0: PyTorch's numbers differ from d2s's (another
# generator), but the result's dtype, shape and structure must be PyTorch's.
TORCH_CASES = [
    Case("rand", lambda t: (t.rand(2, 3) * 0, t.rand((2,)) * 0, t.rand(size=(1, 2), dtype=t.float64) * 0),
         saved="no tensor argument", onnx="no tensor argument", dynamic="no tensor argument"),
    Case("randn", lambda t: (t.randn(2, 3) * 0, t.randn([4], dtype=t.float64) * 0),
         saved="no tensor argument", onnx="no tensor argument", dynamic="no tensor argument"),
    Case("randint", lambda t: (t.randint(5, (2, 3)) * 0, t.randint(2, 9, (3,)) * 0,
                               t.randint(0, 3, (2,), dtype=t.int32) * 0, t.randint(3, size=(2,)) * 0,
                               t.randint(0, 4, (2,), dtype=t.float32) * 0),
         saved="no tensor argument", onnx="no tensor argument", dynamic="no tensor argument"),
    Case("randperm", lambda t: (t.randperm(5) * 0, t.randperm(3, dtype=t.float32) * 0),
         saved="no tensor argument", onnx="no tensor argument", dynamic="no tensor argument"),
    Case("like", lambda t, x: (t.rand_like(x) * 0, t.randn_like(x) * 0, t.randint_like(x, 5) * 0,
                               t.randint_like(x, 2, 6, dtype=t.int64) * 0, t.rand_like(x, dtype=t.float32) * 0), X,
         onnx="random draws are not exported"),
    Case("batch_sized", lambda t, x: (t.rand(x.size(0), 2) * 0, t.randn(x.shape[0]) * 0,
                                      t.randint(0, 3, (x.size(0),)) * 0, t.randperm(x.size(0)) * 0), X,
         onnx="random draws are not exported"),
    Case("multinomial", lambda t, p: (t.multinomial(p, 2) * 0, p.multinomial(5, replacement=True) * 0,
                                      t.multinomial(p[0], 1) * 0), P, onnx="random draws are not exported"),
    Case("bernoulli", lambda t, p: (t.bernoulli(p) * 0, p.bernoulli() * 0, t.bernoulli(p, 0.5) * 0),
         np.full((2, 3), 0.5), onnx="random draws are not exported", grad=False),
    Case("normal_forms", lambda t, m, s: (t.normal(m, s) * 0, t.normal(m, 2.0) * 0, t.normal(0.5, s) * 0,
                                          t.normal(1.0, 2.0, size=(3,)) * 0), X, np.abs(X) + 0.1,
         onnx="random draws are not exported"),
    Case("inplace_fills", lambda t, x: (x.clone().uniform_() * 0, x.clone().normal_(2.0, 0.5) * 0,
                                        x.clone().exponential_() * 0, x.clone().bernoulli_(0.3) * 0,
                                        x.clone().random_(0, 5) * 0, x.clone().geometric_(0.5) * 0,
                                        x.clone().cauchy_() * 0, x.clone().log_normal_() * 0), X,
         onnx="random draws are not exported", grad=False),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


# ------------------------------------------------------------------ distributions
def _draw(fn, seed=0):
    d2s.manual_seed(seed)
    return fn().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rand_and_randn_moments(dtype):
    u = _draw(lambda: d2s.rand(N, dtype=dtype))
    assert u.dtype == dtype and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    z = _draw(lambda: d2s.randn(N, dtype=dtype))
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03


def test_randint_support_and_uniformity():
    v = _draw(lambda: d2s.randint(-2, 3, (N,)))
    assert set(np.unique(v)) == {-2, -1, 0, 1, 2}
    counts = np.bincount(v + 2) / N
    assert np.all(np.abs(counts - 0.2) < 0.015)


def test_randperm_is_a_permutation():
    for n in (0, 1, 7, 100):
        p = _draw(lambda: d2s.randperm(n))
        assert p.dtype == np.int64 and sorted(p.tolist()) == list(range(n))
    firsts = [int(d2s.randperm(4)[0]) for _ in range(2000)]
    assert np.all(np.abs(np.bincount(firsts, minlength=4) / 2000 - 0.25) < 0.05)


def test_multinomial_with_replacement_follows_the_weights():
    w = np.array([1.0, 0.0, 3.0, 4.0])  # unnormalized, with a zero
    s = _draw(lambda: d2s.multinomial(d2s.tensor(w), N, replacement=True))
    freq = np.bincount(s, minlength=4) / N
    np.testing.assert_allclose(freq, w / w.sum(), atol=0.015)
    assert freq[1] == 0


def test_multinomial_2d_rows_are_independent_distributions():
    s = _draw(lambda: d2s.multinomial(d2s.tensor([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]]), 1000, True))
    assert (s[0] == 1).all() and set(np.unique(s[1])) == {0, 2}


def test_multinomial_without_replacement():
    w = np.array([0.5, 0.2, 0.2, 0.1, 0.0])
    draws = _draw(lambda: d2s.multinomial(d2s.tensor(np.tile(w, (N // 4, 1))), 4))
    assert all(len(set(row)) == 4 for row in draws[:200])  # no repeats in a row
    assert not (draws == 4).any()  # a zero weight is never drawn while others remain
    # the first draw follows the weights; the second, the weights of what is left
    np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=5) / len(draws), w, atol=0.02)
    p_second_is_1 = sum(w[i] * w[1] / (1 - w[i]) for i in (0, 2, 3))
    assert abs(np.mean(draws[:, 1] == 1) - p_second_is_1) < 0.02


@pytest.mark.parametrize("bad, err", [([1.0, -1.0], "element < 0"), ([0.0, 0.0], "sum"),
                                      ([1.0, float("nan")], "nan")])
def test_multinomial_refuses_bad_weights(bad, err):
    with pytest.raises(ValueError, match=err):
        d2s.multinomial(d2s.tensor(bad), 1)


def test_multinomial_without_replacement_needs_enough_categories():
    with pytest.raises(ValueError, match="without replacement"):
        d2s.multinomial(d2s.tensor([0.5, 0.5]), 3)


def test_bernoulli_normal_and_inplace_moments():
    p = np.array([0.1, 0.5, 0.9])
    b = _draw(lambda: d2s.bernoulli(d2s.tensor(np.tile(p, (N, 1)))))
    assert set(np.unique(b)) <= {0.0, 1.0}
    np.testing.assert_allclose(b.mean(0), p, atol=0.015)
    z = _draw(lambda: d2s.normal(d2s.tensor([[2.0, -1.0]] * N), d2s.tensor([0.5, 3.0])))
    np.testing.assert_allclose(z.mean(0), [2.0, -1.0], atol=0.06)
    np.testing.assert_allclose(z.std(0), [0.5, 3.0], rtol=0.03)
    x = d2s.zeros(N)
    assert abs(x.uniform_(2, 5).numpy().mean() - 3.5) < 0.03 and x.numpy().min() >= 2 and x.numpy().max() < 5
    assert abs(x.normal_(1.0, 2.0).numpy().std() - 2.0) < 0.05
    assert abs(x.exponential_(4.0).numpy().mean() - 0.25) < 0.01 and x.numpy().min() >= 0
    g = x.geometric_(0.25).numpy()
    assert g.min() >= 1 and abs(g.mean() - 4.0) < 0.1 and np.all(g == np.round(g))
    assert abs(x.bernoulli_(0.2).numpy().mean() - 0.2) < 0.01
    r = x.random_(3, 7).numpy()
    assert set(np.unique(r)) == {3.0, 4.0, 5.0, 6.0}
    assert abs(np.median(x.cauchy_(1.0, 2.0).numpy()) - 1.0) < 0.1
    assert abs(np.log(x.log_normal_(0.5, 0.25).numpy()).mean() - 0.5) < 0.01
    ints = d2s.zeros(1000, dtype=d2s.int64).random_()
    assert ints.numpy().min() >= 0 and ints.numpy().max() > 2 ** 60


def test_normal_and_bernoulli_have_zero_gradients_as_torch():
    m = d2s.tensor([0.0, 1.0], requires_grad=True)
    s = d2s.tensor([1.0, 2.0], requires_grad=True)
    p = d2s.tensor([0.2, 0.7], requires_grad=True)
    (d2s.normal(m, s).sum() + d2s.bernoulli(p).sum()).backward()
    for t in (m, s, p):
        assert t.grad is not None and (t.grad.numpy() == 0).all()


# ------------------------------------------------------------------ seeds and generators
def test_manual_seed_repeats_and_returns_the_default_generator():
    assert d2s.manual_seed(3) is d2s.default_generator
    a = [d2s.rand(3).numpy(), d2s.randperm(5).numpy(), d2s.multinomial(d2s.ones(4), 2).numpy()]
    d2s.manual_seed(3)
    b = [d2s.rand(3).numpy(), d2s.randperm(5).numpy(), d2s.multinomial(d2s.ones(4), 2).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert d2s.initial_seed() == 3


def test_a_generator_is_its_own_stream():
    g = d2s.Generator()
    assert g.initial_seed() == 67280421310721  # PyTorch's default seed
    assert g.manual_seed(7) is g and g.initial_seed() == 7
    d2s.manual_seed(0)
    expected_global = d2s.rand(4).numpy()
    d2s.manual_seed(0)
    a = d2s.rand(4, generator=g).numpy()  # draws from g leave the shared generator where it was
    np.testing.assert_array_equal(d2s.rand(4).numpy(), expected_global)
    g.manual_seed(7)
    np.testing.assert_array_equal(d2s.rand(4, generator=g).numpy(), a)
    state = g.get_state()
    assert state.dtype == d2s.uint8 and state.ndim == 1
    first = [f(generator=g).numpy() for f in (lambda **k: d2s.randn(3, **k), lambda **k: d2s.randperm(6, **k),
                                               lambda **k: d2s.multinomial(d2s.ones(5), 3, **k),
                                               lambda **k: d2s.bernoulli(d2s.full((4,), 0.5), **k),
                                               lambda **k: d2s.normal(d2s.zeros(2), 1.0, **k),
                                               lambda **k: d2s.zeros(3).uniform_(**k))]
    g.set_state(state)
    again = [f(generator=g).numpy() for f in (lambda **k: d2s.randn(3, **k), lambda **k: d2s.randperm(6, **k),
                                               lambda **k: d2s.multinomial(d2s.ones(5), 3, **k),
                                               lambda **k: d2s.bernoulli(d2s.full((4,), 0.5), **k),
                                               lambda **k: d2s.normal(d2s.zeros(2), 1.0, **k),
                                               lambda **k: d2s.zeros(3).uniform_(**k))]
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)
    seed = g.seed()
    assert g.initial_seed() == seed


def test_rng_state_round_trips_and_refuses_other_bytes():
    state = d2s.get_rng_state()
    a = d2s.randn(5).numpy()
    d2s.set_rng_state(state)
    np.testing.assert_array_equal(d2s.randn(5).numpy(), a)
    for bad in (d2s.tensor(np.frombuffer(b"not json", np.uint8)), d2s.zeros(3), d2s.tensor([1, 2])):
        with pytest.raises(ValueError):
            d2s.set_rng_state(bad)
        with pytest.raises(ValueError):
            d2s.Generator().set_state(bad)


def test_generator_must_be_a_generator():
    with pytest.raises(TypeError, match="Generator"):
        d2s.rand(2, generator=3)


# ------------------------------------------------------------------ eager == converted
_G = d2s.Generator()


def _all_draws(x, n):
    return (d2s.rand(x.shape[0], 3) + x[:, :1], d2s.randn(x.size(0)), d2s.randint(0, 9, (x.size(0), 2)),
            d2s.randperm(x.shape[0]), d2s.multinomial(x.abs() + 0.1, 2), d2s.bernoulli(d2s.sigmoid(x)),
            d2s.normal(x, 2.0), d2s.rand_like(x), d2s.randn_like(x), d2s.randint_like(x, 3, 7),
            x.clone().uniform_(-1, 1), x.clone().normal_(), x.clone().exponential_(), x.clone().random_(0, 10),
            d2s.randint(0, n, (4,)), d2s.rand(2, generator=_G), d2s.randperm(4, generator=_G),
            d2s.multinomial(d2s.ones(6), 3, generator=_G), x.clone().bernoulli_(0.5, generator=_G))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static_dims", "dynamic_dims"])
def test_converted_code_draws_the_numbers_eager_code_draws(dynamic):
    x = d2s.tensor(X)
    n = d2s.tensor(7)
    spec = [d2s.jit.InputSpec([None, 4], "float64"), d2s.jit.InputSpec([], "int64")] if dynamic else None
    converted = d2s.jit.to_static(_all_draws, input_spec=spec)
    for seed in (0, 1):
        d2s.manual_seed(seed)
        _G.manual_seed(seed + 10)
        want = _all_draws(x, n)
        for _ in range(2):  # the program built on the first call, then the cached one
            d2s.manual_seed(seed)
            _G.manual_seed(seed + 10)
            got = converted(x, n)
            assert len(got) == len(want)
            for k, (g, w) in enumerate(zip(got, want)):
                assert g.dtype == w.dtype and g.shape == w.shape, k
                np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=f"output {k}")
    assert converted.programs  # it ran as a program, not eagerly


def _noisy(x, g):
    keep = d2s.rand(x.shape, generator=g) > 0.3
    if x.sum() > 0:  # a tensor if: its backward replays the branch, which must draw the same mask
        y = (x * keep * x).sum()
    else:
        y = (x * keep).sum()
    return y


def test_backward_replays_a_generators_draws():
    g = d2s.Generator()
    converted = d2s.jit.to_static(_noisy)
    for x0 in (np.arange(1.0, 7.0), -np.arange(1.0, 5.0)):
        grads = []
        for fn in (_noisy, converted, converted):
            x = d2s.tensor(x0, requires_grad=True)
            g.manual_seed(4)
            y = fn(x, g)
            (gx,) = d2s.autograd.grad(y, x, create_graph=True)
            grads.append((y.item(), gx.numpy()))
        for y, gx in grads[1:]:
            assert y == pytest.approx(grads[0][0])
            np.testing.assert_allclose(gx, grads[0][1])


# ------------------------------------------------------------------ seeding every source (torch.manual_seed)
def _draws():
    return (d2s.randn(3).numpy(), d2s.rand(2).numpy(), d2s.randint(0, 9, (4,)).numpy(),
            d2s.nn.Linear(2, 2).weight.detach().numpy(), d2s.nn.functional.dropout(d2s.ones(8), 0.5).numpy(),
            d2s.jit.to_static(lambda x: x + d2s.randn(2))(d2s.zeros(2)).numpy())


def test_manual_seed_repeats_every_source_and_returns_a_generator():
    g = d2s.manual_seed(7)
    first = _draws()
    assert g is d2s.default_generator and g.initial_seed() == 7 == d2s.initial_seed()
    d2s.manual_seed(7)
    for a, b in zip(first, _draws()):
        np.testing.assert_array_equal(a, b)
    d2s.cuda.manual_seed_all(7)
    np.testing.assert_array_equal(d2s.randn(3).numpy(), first[0])


def test_seed_initial_seed_and_state():
    s = d2s.seed()
    assert d2s.initial_seed() == s
    state = d2s.get_rng_state()
    a = d2s.randn(4).numpy()
    d2s.set_rng_state(state)
    np.testing.assert_array_equal(d2s.randn(4).numpy(), a)
    d2s.manual_seed(-1)  # wraps as in PyTorch
    assert d2s.initial_seed() == 2 ** 64 - 1
