"""Philox4x32-10 (d2s_runtime/philox.py), the counter-based generator of device draws: the
known-answer vectors of Random123 (the reference implementation), and the draws it makes."""
import numpy as np
import pytest

from d2s_runtime import philox

# Random123's kat_vectors: philox4x32 10 <counter words> <key words> -> <output words>
KAT = [
    ([0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
    ([0xffffffff] * 4, [0xffffffff] * 2, [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
    ([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
     [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]),
]


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_known_answers(ctr, key, want):
    out = philox.philox4x32(np, *[np.array([c], dtype="uint32") for c in ctr], *key)
    assert [int(o[0]) for o in out] == want


def test_blocks_are_independent_of_how_a_stream_is_cut():
    key = philox.key_of(123)
    whole = philox.words(np, key, 5, 100)
    parts = [philox.words(np, key, 5 + a, b - a) for a, b in ((0, 30), (30, 31), (31, 100))]
    for k in range(4):
        np.testing.assert_array_equal(whole[k], np.concatenate([p[k] for p in parts]))
    # a counter past 2**32 carries into the second word
    hi = philox.words(np, key, 2 ** 32 - 2, 4)
    assert hi[0].dtype == np.uint32 and len(set(hi[0].tolist())) == 4


def test_draws_have_their_distributions():
    w = philox.words(np, philox.key_of(7), 0, 200_000)
    u = philox.uniform(np, w[0], w[1])
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    z = philox.normal(np, w)
    assert np.isfinite(z).all() and abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    i = philox.integers(np, w[0], w[1], -3, 4)
    assert i.dtype == np.int64 and set(np.unique(i).tolist()) == set(range(-3, 4))
    counts = np.bincount(i + 3)
    assert counts.min() > 0.9 * len(i) / 7
    assert philox.key_of(1) != philox.key_of(2)
