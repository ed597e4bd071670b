"""Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the
generator behind cuRAND's and PyTorch's CUDA draws), written with array operations so that it
runs on any array namespace: numpy, cupy, or inside a captured CUDA graph.

A counter-based generator has no state but a key and a counter: block ``c`` of the stream of
key ``k`` is ``philox(c, k)``, four 32-bit words, computed independently of every other block.
So a draw of ``n`` numbers is one element-wise kernel over counters ``offset .. offset+n-1``,
and the stream's whole state is ``(key, offset)``: a graph keeps the offset in a device buffer
that its own kernels advance, and replaying draws is setting the offset back.

The draws (one block per number): uniform doubles take 53 bits of words 0-1, standard normals
a Box-Muller pair of such uniforms (words 0-1, 2-3), integers words 0-1 as a 64-bit value.
"""
import numpy as np

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF


def philox4x32(xp, c0, c1, c2, c3, k0, k1, rounds=10):
    """The Philox4x32 blocks of counters ``(c0, c1, c2, c3)`` (uint32 arrays; ints for some) under
    key ``(k0, k1)`` (0-d uint32 arrays or ints): four uint32 arrays."""
    u32, u64 = "uint32", "uint64"
    like = next(c for c in (c0, c1, c2, c3) if not isinstance(c, int))
    # (an int counter word is a fill, not a host-to-device copy)
    c0, c1, c2, c3 = (xp.full(like.shape, c, dtype=u32) if isinstance(c, int) else c.astype(u32, copy=False)
                      for c in (c0, c1, c2, c3))
    k0 = k0.astype(u64) if hasattr(k0, "astype") else np.uint64(k0)
    k1 = k1.astype(u64) if hasattr(k1, "astype") else np.uint64(k1)
    m0, m1, mask, shift = np.uint64(_M0), np.uint64(_M1), np.uint64(_MASK), np.uint64(32)
    for r in range(rounds):
        if r:
            k0 = (k0 + np.uint64(_W0)) & mask
            k1 = (k1 + np.uint64(_W1)) & mask
        p0 = c0.astype(u64) * m0
        p1 = c2.astype(u64) * m1
        hi0, lo0 = (p0 >> shift), (p0 & mask)
        hi1, lo1 = (p1 >> shift), (p1 & mask)
        n0 = (hi1 ^ c1.astype(u64) ^ k0) & mask
        n2 = (hi0 ^ c3.astype(u64) ^ k1) & mask
        c0, c1, c2, c3 = n0.astype(u32), lo1.astype(u32), n2.astype(u32), lo0.astype(u32)
    return c0, c1, c2, c3


# The same rounds in C, for one kernel per draw on cupy (an ElementwiseKernel: capturable in a
# graph) instead of some sixty array operations; tests/runtime/test_philox.py builds it with
# the host compiler and compares it with philox4x32 above.
PHILOX_C = r"""
__device__ inline void d2s_philox4x32(unsigned long long ctr, unsigned int k0, unsigned int k1,
                                      unsigned int* w) {
    unsigned int c0 = (unsigned int)ctr, c1 = (unsigned int)(ctr >> 32), c2 = 0u, c3 = 0u;
    for (int r = 0; r < 10; ++r) {
        if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        unsigned long long p0 = (unsigned long long)c0 * 0xD2511F53ull;
        unsigned long long p1 = (unsigned long long)c2 * 0xCD9E8D57ull;
        unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
        unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
        c1 = (unsigned int)p1; c3 = (unsigned int)p0; c0 = n0; c2 = n2;
    }
    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;
}
"""

_KERNELS = {}


def _cupy_kernel(xp):
    """The C rounds as an ElementwiseKernel of ``xp`` (cupy), or None (another namespace)."""
    make = getattr(xp, "ElementwiseKernel", None)
    if make is None:
        return None
    k = _KERNELS.get(id(make))
    if k is None:
        k = _KERNELS[id(make)] = make(
            "uint64 off, uint32 k0, uint32 k1", "uint32 w0, uint32 w1, uint32 w2, uint32 w3",
            "unsigned int w[4]; d2s_philox4x32(off + (unsigned long long)i, k0, k1, w); "
            "w0 = w[0]; w1 = w[1]; w2 = w[2]; w3 = w[3];",
            "d2s_philox", preamble=PHILOX_C)
    return k


def key_of(seed):
    """The two 32-bit key words of an integer seed (mixed, so nearby seeds are unrelated)."""
    k = np.random.SeedSequence(int(seed) % 2 ** 128).generate_state(2, dtype=np.uint32)
    return int(k[0]), int(k[1])


def words(xp, key, offset, n):
    """The ``n`` blocks at counters ``offset .. offset+n-1`` of the stream ``key``: ``offset``
    an int or a 0-d uint64 device array (a graph's), ``key`` two ints or a (2,) uint32 array."""
    kernel = _cupy_kernel(xp)
    if isinstance(key, tuple):
        k0, k1 = key
    else:
        k0, k1 = key[0], key[1]
    if kernel is not None:
        w = tuple(xp.empty(n, dtype="uint32") for _ in range(4))
        kernel(np.uint64(offset) if isinstance(offset, int) else offset,
               np.uint32(k0) if isinstance(k0, int) else k0, np.uint32(k1) if isinstance(k1, int) else k1, *w)
        return w
    i = xp.arange(n, dtype="uint64")
    ctr = i + (offset if not isinstance(offset, int) else np.uint64(offset))
    lo = (ctr & np.uint64(_MASK)).astype("uint32")
    hi = (ctr >> np.uint64(32)).astype("uint32")
    return philox4x32(xp, lo, hi, 0, 0, k0, k1)


def uniform(xp, w0, w1):
    """Doubles in [0, 1) from two words (53 bits)."""
    a = (w0 >> np.uint32(5)).astype("float64")
    b = (w1 >> np.uint32(6)).astype("float64")
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


def normal(xp, w):
    """Standard normal doubles from four words (Box-Muller)."""
    u1 = 1.0 - uniform(xp, w[0], w[1])  # (0, 1]: log is finite
    u2 = uniform(xp, w[2], w[3])
    return xp.sqrt(-2.0 * xp.log(u1)) * xp.cos(2.0 * np.pi * u2)


def integers(xp, w0, w1, low, high):
    """int64 draws in ``[low, high)`` from two words (a 64-bit value modulo the range: its
    bias is below range / 2**64)."""
    v = (w0.astype("uint64") << np.uint64(32)) | w1.astype("uint64")
    r = np.uint64(int(high) - int(low))
    return (v % r).astype("int64") + np.int64(low)
