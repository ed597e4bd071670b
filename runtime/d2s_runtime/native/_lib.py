"""Scalar helpers that generated native code calls (compiled with numba; imported only when a
program is compiled natively, never by ``import d2s_runtime``).

Each helper takes and returns machine scalars; numba inlines them into the fused loops, where
LLVM vectorizes what has no libm call. ``tanh32`` is this module's own rational approximation
(see ``TANH_MAX_ULP``), so float32 ``tanh`` runs on SIMD lanes instead of a scalar ``tanhf`` call
(~14 ns each here); float32 ``erf`` and ``erfc`` are the Python backend's float32 fits
(``erf32``, ``erfc32``); every other transcendental is numba's (libm).
"""
import math

import numba
import numpy as np

from . import mkl

_JIT = dict(cache=True, error_model="numpy", inline="always")
njit = numba.njit

# tanh(x) / x = P(x*x) / Q(x*x) on |x| <= 9, evaluated in float64 and rounded once to float32.
# Fitted here (weighted linear least squares, iterated on the relative error): max relative
# error 3.8e-11 on [0, 9], far below float32's half ulp (3e-8). tanh(x) rounds to +-1.0f for
# |x| >= 9.01, so inputs are clamped to +-9.5. Measured over all 2^32 float32 values against
# float64 tanh rounded to float32 (benchmarks/native_tanh_ulp.py): max 1 ulp, NaN stays NaN;
# numpy's float32 tanh differs from it by at most 1 ulp on 200k random floats
# (tests/runtime/native/test_native_math.py checks a sample of every binade):
TANH_MAX_ULP = 1
_P0, _P1, _P2, _P3, _P4, _P5 = (0.9999999999618483, 0.1409896258170045, 0.004425622953711625,
                                4.226561268924628e-05, 1.111328488790695e-07, 3.672084918457459e-11)
_Q1, _Q2, _Q3, _Q4, _Q5 = (0.474322958734039, 0.02919994328598163, 0.0005007722420758228,
                           2.603123217915551e-06, 2.9496677179857478e-09)


@njit(**_JIT)
def tanh32(x):
    # NaN fails both comparisons and stays NaN; +-inf clamp to +-9.5, whose tanh rounds to +-1
    d = np.float64(x)
    if d > 9.5:
        d = 9.5
    elif d < -9.5:
        d = -9.5
    # Estrin's scheme: a loop carrying x through tanh waits on this latency, not on throughput
    z = d * d
    z2 = z * z
    z4 = z2 * z2
    p = (_P0 + _P1 * z) + (_P2 + _P3 * z) * z2 + (_P4 + _P5 * z) * z4
    q = (1.0 + _Q1 * z) + (_Q2 + _Q3 * z) * z2 + (_Q4 + _Q5 * z) * z4
    return np.float32(d * (p / q))


@njit(**_JIT)
def maximum(a, b):
    # numpy's (and PyTorch's) maximum: NaN wins, and b is taken on ties (max(0.0, -0.0) is -0.0)
    return a if (a > b or a != a) else b


@njit(**_JIT)
def minimum(a, b):
    return a if (a < b or a != a) else b


@njit(**_JIT)
def clip_lo(x, lo):
    # numpy's clip (and PyTorch's clamp to a number): NaN wins, x is kept on ties
    return x if (x >= lo or x != x) else lo


@njit(**_JIT)
def clip_hi(x, hi):
    return x if (x <= hi or x != x) else hi


@njit(**_JIT)
def fmax(a, b):
    # PyTorch's fmax: a NaN loses to a number, a is kept on ties
    return a if (a >= b or b != b) else b


@njit(**_JIT)
def fmin(a, b):
    return a if (a <= b or b != b) else b


@njit(**_JIT)
def relu(x, zero):
    return x if (x >= zero or x != x) else zero


@njit(**_JIT)
def sign(x, zero, one):
    # PyTorch's sign: 0 for NaN (and for both zeros)
    if x > zero:
        return one
    if x < zero:
        return -one
    return zero


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """What the kernels raise (d2s_runtime.errors); numba raises a class of this module, so the
    generated code imports nothing else."""


@njit(**_JIT)
def floordiv_int(a, b):
    # numba's integer // floors as Python's; error_model="numpy" would give 0 for b == 0
    if b == 0:
        raise IntegerDivisionByZero("ZeroDivisionError: integer division by zero")
    return a // b


@njit(**_JIT)
def mod_int(a, b):
    if b == 0:
        raise IntegerDivisionByZero("ZeroDivisionError: integer modulo by zero")
    return a % b


@njit(**_JIT)
def fmod_int(a, b):
    # C's remainder: the sign of a
    if b == 0:
        raise IntegerDivisionByZero("ZeroDivisionError: integer fmod by zero")
    r = a % b
    return r - b if (r != 0 and (r < 0) != (a < 0)) else r


@njit(**_JIT)
def truncdiv_int(a, b):
    if b == 0:
        raise IntegerDivisionByZero("ZeroDivisionError: integer division by zero")
    q = a // b
    return q + 1 if (q < 0 and q * b != a) else q


@njit(**_JIT)
def remainder(a, b, zero):
    # PyTorch's float remainder (ops/elementwise.py): fmod, plus b where the signs differ
    r = np.fmod(a, b)
    return r + b if (r != zero and (r < zero) != (b < zero)) else r


@njit(**_JIT)
def nan_to_num(x, nan, posinf, neginf):
    if x != x:
        return nan
    if x == np.inf:
        return posinf
    if x == -np.inf:
        return neginf
    return x


@njit(**_JIT)
def erf(x):
    return math.erf(x)


@njit(**_JIT)
def erfc(x):
    return math.erfc(x)


# Float32 erf and erfc: the Python backend's float32 fits (ops/special.py: _ERF32, _ERFC32, where
# they are described), evaluated here by Horner's rule in float64 and rounded once to float32:
# erf(x) = x P(x^2) / Q(x^2) with |x| clipped to 4 (relative error 2.1e-9), erfc(x) =
# exp(-x^2) P(|x|) / Q(|x|) with |x| clipped to 10.2 (6.2e-9), 2 minus that for x < 0. erf32 calls
# no libm function, so LLVM vectorizes it; erfc32 calls exp. Measured over all 2^32 float32 values
# against float64 erf/erfc rounded to float32 (benchmarks/erf32_ulp.py): max 1 ulp, NaN stays NaN
# (tests/runtime/native/test_native_math.py checks a sample of every binade).
ERF_MAX_ULP = 1
# (copied, not imported: numba's cache follows this file only; test_native_math.py checks they are
# special.py's)
_EP0, _EP1, _EP2, _EP3, _EP4, _EP5, _EP6 = (1.1283791670955126, 0.1853119115012762, 0.05431239010952956,
                                            0.0038516784528687628, 0.0003788801267861768, 4.662445580464829e-06,
                                            -1.3093802513112169e-08)
_EQ1, _EQ2, _EQ3, _EQ4, _EQ5 = (0.497561793454422, 0.11398660208259877, 0.01546353182247868, 0.0013070258773132935,
                                6.290053599338929e-05)
_CP1, _CP2, _CP3, _CP4 = (1.2372751201967753, 0.7303103274982363, 0.2285590629856418, 0.032639928133676735)
_CQ1, _CQ2, _CQ3, _CQ4, _CQ5 = (2.3656546855314065, 2.399658010646761, 1.3229341563346357, 0.4051369180805382,
                                0.057852065799408735)
_ERF_CLIP, _ERFC_CLIP = 4.0, 10.2


@njit(**_JIT)
def erf32(x):
    # NaN fails both comparisons and stays NaN; +-inf clamp to +-4, whose erf rounds to +-1
    d = np.float64(x)
    if d > _ERF_CLIP:
        d = _ERF_CLIP
    elif d < -_ERF_CLIP:
        d = -_ERF_CLIP
    t = d * d
    p = _EP0 + t * (_EP1 + t * (_EP2 + t * (_EP3 + t * (_EP4 + t * (_EP5 + t * _EP6)))))
    q = 1.0 + t * (_EQ1 + t * (_EQ2 + t * (_EQ3 + t * (_EQ4 + t * _EQ5))))
    return np.float32(d * (p / q))  # odd: erf(-0.0) is -0.0


@njit(**_JIT)
def erfc32(x):
    d = np.float64(x)
    a = abs(d)
    if a > _ERFC_CLIP:  # NaN stays NaN; erfc(10.2) rounds to 0
        a = _ERFC_CLIP
    p = 1.0 + a * (_CP1 + a * (_CP2 + a * (_CP3 + a * _CP4)))
    q = 1.0 + a * (_CQ1 + a * (_CQ2 + a * (_CQ3 + a * (_CQ4 + a * _CQ5))))
    r = math.exp(-(a * a)) * (p / q)  # a^2 is exact for a float32 a
    if d < 0:
        r = 2.0 - r
    return np.float32(r)


@njit(**_JIT)
def sigmoid(x, one):
    # the kernel's formula (ops/elementwise.py): exp of a non-positive number only
    e = np.exp(-abs(x))
    return one / (one + e) if x >= 0 else e / (one + e)


@njit(**_JIT)
def logaddexp(a, b):
    return np.logaddexp(a, b)


@njit(**_JIT)
def clip(x, lo, hi, use_lo, use_hi):
    # np.clip(x, lo, hi), with NaN propagated and x kept on ties
    if use_lo:
        x = clip_lo(x, lo)
    if use_hi:
        x = clip_hi(x, hi)
    return x


@njit(**_JIT)
def bdim(a, b):
    """The broadcast of two runtime dims (raises where numpy would)."""
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    raise ValueError("native program: operands could not be broadcast together")


@njit(**_JIT)
def check_dim(actual, expected):
    if actual != expected:
        raise ValueError("native program: an input does not have the shape the program was built for")


# ------------------------------------------------------------------ ragged stacks
# The native format of a stack (see ``Lowerer.stack_new`` in lower.py): ``buf`` with room after
# its fill mark, ``shp`` of shape (room + 1, rank + 3) whose row 0 is ``[count, fill, site]``
# and whose row i (1 <= i <= count) holds element i's dims in its first ``rank`` columns.
# ``copy``: the caller may still read the stack pushed to or popped from, so work on a copy (a fork).
#
# Pooled memory. ``site`` numbers the ``stack_new`` ops of the program's top block (each runs
# once per call; -1: a stack made in a loop or branch, or from outside), per element dtype.
# Each dtype's stacks start in one ``arena`` the caller keeps from call to call (one per call
# in flight, see ``compile_lowered``): ``slots[site]`` is ``[offset, capacity, needed]``, the
# site's part of the arena and the most room its stack needed. A stack that outgrows its part
# grows into fresh memory (its ``needed`` says by how much) and the caller makes a bigger
# arena for the next call. Fresh buffers cost page faults on every call (freed big blocks go
# back to the system), which on the benchmark machine were most of a 64-step RNN's time.
_BIG = dict(cache=True, error_model="numpy")
_MIN_ROOM = 8


@njit(**_BIG)
def stack_new(arena, slots, site, rank):
    """An empty stack of ``site`` (-1: not pooled) whose elements have rank ``rank``."""
    if site >= 0:
        buf = arena[slots[site, 0]:slots[site, 0] + slots[site, 1]]
    else:
        buf = arena[:0]
    shp = np.zeros((_MIN_ROOM + 1, rank + 3), np.int64)
    shp[0, 2] = site
    return buf, shp


@njit(**_BIG)
def _grow(buf, shp, size, copy, slots):
    n, fill = shp[0, 0], shp[0, 1]
    if copy or fill + size > buf.shape[0]:
        nb = np.empty(max(2 * (fill + size), _MIN_ROOM), buf.dtype)
        nb[:fill] = buf[:fill]
        buf = nb
        site = shp[0, 2]
        if site >= 0 and not copy and fill + size > slots[site, 2]:
            slots[site, 2] = fill + size
    if copy or n + 2 > shp.shape[0]:
        ns = np.zeros((max(2 * (n + 2), _MIN_ROOM + 1), shp.shape[1]), np.int64)
        ns[:n + 1] = shp[:n + 1]
        shp = ns
    return buf, shp


@njit(**_BIG)
def stack_push(buf, shp, x, copy, slots):
    """``x`` (an array) pushed; returns the stack's new (buf, shp)."""
    buf, shp = _grow(buf, shp, x.size, copy, slots)
    n, fill = shp[0, 0], shp[0, 1]
    k = fill + x.size
    # a slice copy (memcpy) where x is contiguous; ravel copies other layouts in C order first
    buf[fill:k] = x.ravel()
    for j in range(x.ndim):
        shp[n + 1, j] = x.shape[j]
    shp[0, 0] = n + 1
    shp[0, 1] = k
    return buf, shp


@njit(**_BIG)
def stack_push0(buf, shp, x, copy, slots):
    """A 0-d element ``x`` (a machine scalar) pushed."""
    buf, shp = _grow(buf, shp, 1, copy, slots)
    n, fill = shp[0, 0], shp[0, 1]
    buf[fill] = x
    shp[0, 0] = n + 1
    shp[0, 1] = fill + 1
    return buf, shp


@njit(**_BIG)
def stack_pop(buf, shp, rank, copy):
    """The last element popped: (buf, shp, its elements flattened (a copy), its dims)."""
    n, fill = shp[0, 0], shp[0, 1]
    if n == 0:
        raise IndexError("stack_pop: pop from an empty stack")
    row = shp[n, :rank].copy()
    size = 1
    for j in range(rank):
        size *= row[j]
    cut = fill - size
    flat = buf[cut:fill].copy()
    if copy:
        buf, shp = buf.copy(), shp.copy()
    shp[0, 0] = n - 1
    shp[0, 1] = cut
    return buf, shp, flat, row


@njit(**_BIG)
def stack_from_py(buf, shapes):
    """A stack in the Python backend's format (``buf`` exactly its elements, ``shapes`` one row
    per element) copied into the native format."""
    n, rank = shapes.shape[0], shapes.shape[1]
    fill = buf.shape[0]
    nb = np.empty(max(2 * fill, _MIN_ROOM), buf.dtype)
    nb[:fill] = buf
    ns = np.zeros((max(2 * (n + 1), _MIN_ROOM + 1), rank + 3), np.int64)
    ns[1:n + 1, :rank] = shapes
    ns[0, 0] = n
    ns[0, 1] = fill
    ns[0, 2] = -1
    return nb, ns


@njit(**_BIG)
def stack_buf_out(buf, shp):
    return buf[:shp[0, 1]].copy()


@njit(**_BIG)
def stack_buf_view(buf, shp):
    """The stack's elements without a copy (see ``Lowerer.stack_rows``: only where nothing
    writes the buffer later)."""
    return buf[:shp[0, 1]]


@njit(**_BIG)
def stack_shapes_out(shp):
    return shp[1:shp[0, 0] + 1, :shp.shape[1] - 3].copy()


# ------------------------------------------------------------------ matrix products (mkl.py)
# ``smatmul``/``dmatmul``: ``a @ b`` of 2-d float32/float64 arrays through MKL's cblas gemm, which
# the lowering calls only where ``mkl.library()`` found MKL. An operand whose rows or columns are
# contiguous is passed as it is (a transposed view as a transposed operand), any other copied.
mkl.register()
_I32, _IP = numba.types.int32, numba.types.intp


def _gemm_fn(symbol, ft):
    # cblas_?gemm(layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    return numba.types.ExternalFunction(symbol, numba.types.void(_I32, _I32, _I32, _I32, _I32, _I32, ft, _IP, _I32,
                                                                 _IP, _I32, ft, _IP, _I32))


_SGEMM = _gemm_fn(mkl.SGEMM, numba.types.float32)
_DGEMM = _gemm_fn(mkl.DGEMM, numba.types.float64)
_NO_TRANS, _TRANS, _ROW_MAJOR = 111, 112, 101
_INT32_MAX = 2 ** 31 - 1


@njit(**_BIG)
def _lead(a):
    """``(_NO_TRANS, ld)`` for a 2-d array with contiguous rows, ``(_TRANS, ld)`` for one with
    contiguous columns (a transposed view), ``(0, 0)`` for one gemm cannot read as it is."""
    m, k = a.shape
    isz = a.itemsize
    s0, s1 = a.strides
    if (s1 == isz or k <= 1) and s0 % isz == 0:
        ld = max(s0 // isz, k, 1) if m <= 1 else s0 // isz  # a single row's stride is never read
        if ld >= max(k, 1):
            return _NO_TRANS, ld
    if (s0 == isz or m <= 1) and s1 % isz == 0:
        ld = max(s1 // isz, m, 1) if k <= 1 else s1 // isz
        if ld >= max(m, 1):
            return _TRANS, ld
    return 0, 0


@njit(**_BIG)
def _gemm_into(a, b, out, single):
    """``out = a @ b`` through MKL where gemm can read both operands as they are; False where
    it cannot (the caller passes copies). The arrays are arguments, so they outlive the call."""
    m, k = a.shape
    n = b.shape[1]
    ta, lda = _lead(a)
    tb, ldb = _lead(b)
    if ta == 0 or tb == 0 or max(lda, ldb) > _INT32_MAX:
        return False
    if single:
        _SGEMM(_ROW_MAJOR, ta, tb, m, n, k, 1.0, a.ctypes.data, lda, b.ctypes.data, ldb, 0.0, out.ctypes.data, max(n, 1))
    else:
        _DGEMM(_ROW_MAJOR, ta, tb, m, n, k, 1.0, a.ctypes.data, lda, b.ctypes.data, ldb, 0.0, out.ctypes.data, max(n, 1))
    return True


@njit(**_BIG)
def _matmul(a, b, out, single):
    m, k = a.shape
    n = b.shape[1]
    if b.shape[0] != k:
        raise ValueError("native program: matmul operands do not align (inner dims differ)")
    if a.itemsize != out.itemsize or b.itemsize != out.itemsize:  # the lowering casts them first
        raise TypeError("native program: matmul operands of another dtype than the product's")
    if m == 0 or n == 0:
        return out
    if k == 0:
        out[:] = 0
    elif max(m, n, k) > _INT32_MAX:  # beyond 32-bit dims: numba's np.dot (scipy's BLAS)
        out[:] = np.dot(np.ascontiguousarray(a), np.ascontiguousarray(b))
    elif not _gemm_into(a, b, out, single):
        _gemm_into(np.ascontiguousarray(a), np.ascontiguousarray(b), out, single)
    return out


@njit(**_BIG)
def smatmul(a, b):
    """``a @ b`` of 2-d float32 arrays, a new C-contiguous array."""
    return _matmul(a, b, np.empty((a.shape[0], b.shape[1]), np.float32), True)


@njit(**_BIG)
def dmatmul(a, b):
    """``a @ b`` of 2-d float64 arrays, a new C-contiguous array."""
    return _matmul(a, b, np.empty((a.shape[0], b.shape[1]), np.float64), False)


# ------------------------------------------------------------------ selection and sampling
# topk and multinomial as the Python kernels compute them (ops/sorting.py, ops/random.py), so a
# native program draws and selects the tokens eager code does: the same order on ties (the
# earlier element first), NaN as the largest value, and the uniform numbers drawn from the same
# generator, through Python (``draw_uniform``: an object-mode call of ~1.5 us).
@njit(**_JIT)
def _better(a, b, largest):
    """Whether ``a`` comes strictly before ``b`` in a stable sort (NaN the largest value)."""
    if largest:
        return (a != a and b == b) or a > b
    return (b != b and a == a) or a < b


@njit(**_BIG)
def topk_rows(x, k, largest, vals, idx):
    """The ``k`` best of each row of the 2-d ``x`` into ``vals``/``idx`` (``k`` rows wide), best
    first, equal values in their order in ``x`` (a stable sort's first ``k``)."""
    rows, n = x.shape
    if k == 0:
        return
    for r in range(rows):
        count = 0
        for j in range(n):
            v = x[r, j]
            if count == k and not _better(v, vals[r, k - 1], largest):
                continue
            p = count if count < k else k - 1
            while p > 0 and _better(v, vals[r, p - 1], largest):
                if p < k:
                    vals[r, p] = vals[r, p - 1]
                    idx[r, p] = idx[r, p - 1]
                p -= 1
            vals[r, p] = v
            idx[r, p] = j
            if count < k:
                count += 1


def _py_draw_uniform(rows, cols):
    from ..ops.random import RNG, uniform_draws
    with RNG.lock:
        return np.ascontiguousarray(uniform_draws(np, (rows, cols), None), dtype=np.float64)


@njit(cache=True)
def draw_uniform(rows, cols):
    """``rows x cols`` uniform numbers from the shared generator, as the Python kernels draw them."""
    with numba.objmode(u="float64[:, ::1]"):
        u = _py_draw_uniform(rows, cols)
    return u


@njit(**_BIG)
def multinomial_rows(w, n, replacement):
    """``ops/random.py``'s multinomial of the rows of the 2-d float64 weights ``w``: ``n``
    categories per row, by the inverse CDF with replacement, by the exponential race without."""
    rows, k = w.shape
    for r in range(rows):
        total = 0.0
        for j in range(k):
            v = w[r, j]
            if not (v == v and abs(v) != np.inf) or v < 0:
                raise ValueError("multinomial: probability tensor contains either inf, nan or element < 0")
            total += v
        if total <= 0:
            raise ValueError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    out = np.empty((rows, n), np.int64)
    if replacement:
        u = draw_uniform(rows, n)
        cdf = np.empty(k, np.float64)
        for r in range(rows):
            s = 0.0
            for j in range(k):
                s += w[r, j]
                cdf[j] = s
            last = k - 1
            while last > 0 and not w[r, last] > 0:
                last -= 1
            for j in range(k):  # the kernel's one sorted array: each row's CDF shifted by its row number
                cdf[j] = cdf[j] / s + r
            for q in range(n):
                t = u[r, q] + r
                c = 0
                while c < k and cdf[c] <= t:
                    c += 1
                out[r, q] = min(c, last)
        return out
    u = draw_uniform(rows, k)
    keys = np.empty((rows, k), np.float64)
    for r in range(rows):
        for j in range(k):
            keys[r, j] = -np.log1p(-u[r, j]) / w[r, j]  # Exp(1) / p; weight 0: inf, never before a positive one
    vals = np.empty((rows, n), np.float64)
    topk_rows(keys, n, False, vals, out)
    return out


@njit(**_BIG)
def smatmul_into(a, b, out):
    """``out[...] = a @ b`` of 2-d float32 arrays, ``out`` C-contiguous (a slice of a batched
    product's result); the operands may be strided views gemm reads in place."""
    _matmul(a, b, out, True)


@njit(**_BIG)
def dmatmul_into(a, b, out):
    """``out[...] = a @ b`` of 2-d float64 arrays (see ``smatmul_into``)."""
    _matmul(a, b, out, False)
