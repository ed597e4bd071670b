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


def test_the_c_rounds_equal_the_array_ones(tmp_path):
    """PHILOX_C (one cupy kernel per draw) built with the host compiler."""
    import ctypes
    import shutil
    import subprocess
    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        pytest.skip("no host C++ compiler")
    src = tmp_path / "philox.cpp"
    src.write_text("#define __device__\n" + philox.PHILOX_C + r"""
extern "C" void run(const unsigned long long* ctr, unsigned int k0, unsigned int k1, unsigned int* out, long n) {
    for (long i = 0; i < n; ++i) d2s_philox4x32(ctr[i], k0, k1, out + 4 * i);
}
""")
    so = tmp_path / "philox.so"
    subprocess.run([gxx, "-O1", "-shared", "-fPIC", "-o", str(so), str(src)], check=True, capture_output=True)
    lib = ctypes.CDLL(str(so))
    rng = np.random.default_rng(0)
    ctr = np.concatenate([rng.integers(0, 2 ** 63, 500, dtype=np.uint64),
                          np.array([0, 2 ** 32 - 1, 2 ** 32, 2 ** 64 - 1], dtype=np.uint64)])
    for k0, k1 in ((0, 0), (0xffffffff, 0xffffffff), philox.key_of(42)):
        out = np.empty((len(ctr), 4), dtype=np.uint32)
        lib.run(ctr.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint(k0), ctypes.c_uint(k1),
                out.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(len(ctr)))
        lo = (ctr & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        hi = (ctr >> np.uint64(32)).astype(np.uint32)
        want = philox.philox4x32(np, lo, hi, 0, 0, k0, k1)
        np.testing.assert_array_equal(out, np.stack(want, axis=1))
