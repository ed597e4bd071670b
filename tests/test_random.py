"""Seeding (d2s/random.py): torch.manual_seed-style, every random source at once."""
import numpy as np

import d2s
from d2s import nn


def _draws():
    return (d2s.randn(3).numpy(), d2s.rand(2).numpy(), d2s.randint(0, 9, (4,)).numpy(),
            nn.Linear(2, 2).weight.detach().numpy(), nn.functional.dropout(d2s.ones(8), 0.5).numpy(),
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
