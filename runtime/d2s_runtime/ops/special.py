"""The error function family on any array namespace ``xp`` (numpy has none; the kernels of
``erf``, ``erfc`` and ``erfinv`` in ``pointwise.py`` call these).

Computed in float64 (float16 and float32 inputs of ``erf``/``erfc``: see below; of ``erfinv``:
rounded once at the end). Each function is a
Chebyshev series on a few intervals, fitted for d2s against 40-digit references (mpmath,
Chebyshev nodes; the fits' largest relative error on 5001 points of each interval is given
beside it): ``erf(x) = x A(x^2)`` for ``|x| <= 1`` and ``erfc(x) = exp(-x^2) B(1/x^2) / x`` for
``x >= 1``, with ``exp(-x^2)`` taken in two factors so that its rounding does not grow with
``x^2``. Measured against ``math.erf``/``math.erfc`` (libm) on 7 * 10^5 points of [-30, 30]:
erf within 7 ulp, erfc within 26 ulp (6e-15 relative; its worst is just below 1, where it is
``1 - erf``) (tests/runtime/ops/test_special.py). ``erfinv`` starts from a series fitted the same way
(4.4e-7 relative) and takes one Halley step on ``erf(x) - y``, written as ``(1 - y) - erfc(x)``
above 1/2 so that the tails keep their relative precision.

Float32 and float16 inputs take a cheaper path (``_erf32``, ``_erfc32``), accurate to float32
rather than float64: one rational function on the whole range, its powers multiplied out once and
its numerator and denominator taken together by one matrix product, with no gather and scatter
by interval. It is within 1 ulp of float64 erf/erfc rounded to float32 over every float32
(benchmarks/erf32_ulp.py), at ~4.5 ns an element instead of ~20 (CPU time, one thread).
"""
import math

import numpy as np

# (lo, hi, Chebyshev coefficients on [lo, hi])
_A = (0.0, 1.0, (0.9754769393826537, -0.14226120510371373, 0.010035582187599758, -0.0005768764699767667,
                 2.741993125216644e-05, -1.1043175507572228e-06, 3.848875539580255e-08, -1.180858270436318e-09,
                 3.2334210093182193e-11, -7.991137223892332e-13, 1.7980635471622785e-14, -3.9099092626255995e-16))
# max relative error 9.2e-16
_B1 = (0.25, 1.0, (0.46519932669884523, -0.0411013393626209, 0.003914495866689638, -0.0004906395650549039,
                   7.157479001376287e-05, -1.1530716341314203e-05, 1.994670590202127e-06, -3.64266647165778e-07,
                   6.944372609450365e-08, -1.3712209015242986e-08, 2.7883896636390755e-09, -5.814164719496565e-10,
                   1.238920460088427e-10, -2.690638966731439e-11, 5.9426110326289366e-12, -1.3323842571230678e-12,
                   3.028083326391096e-13, -6.967166814387535e-14, 1.621179659625349e-14, -3.818701818612943e-15,
                   9.06560322969683e-16, -2.1705441736001105e-16, 5.1494628225122754e-17))
# 2.6e-16 (1 <= x <= 2)
_B2 = (0.0625, 0.25, (0.528567595688482, -0.018549933459427553, 0.0008227203139679666, -5.290745479282169e-05,
                      4.23419349101406e-06, -3.9334206907663286e-07, 4.079646889883441e-08, -4.610316132250078e-09,
                      5.583702883124453e-10, -7.162623549512443e-11, 9.646411566589837e-12, -1.3547888504534207e-12,
                      1.9737384221639368e-13, -2.9698737961829775e-14, 4.6033940300699555e-15, -7.263739364150049e-16,
                      1.2136033896788905e-16, -1.9066721576458856e-17, 8.56430212548798e-18))
# 4.3e-16 (2 <= x <= 4)
_B3 = (0.0, 0.0625, (0.5559256934251761, -0.008090332092115717, 0.00016776836928684944, -5.531041633811314e-06,
                     2.443693640453425e-07, -1.3327004395636287e-08, 8.55027490555875e-10, -6.254007818898946e-11,
                     5.1017320704003195e-12, -4.566985939365825e-13, 4.4309775180248184e-14, -4.615508677052208e-15,
                     5.097989044648314e-16, -6.302235297097572e-17, 6.123112483725327e-18))
# 4.1e-16 (x >= 4)

# erfinv(y) / y as a series in w = -log(1 - y^2) (w < 6.25) or in sqrt(w) (up to sqrt(w) = 6.5,
# y = 1 - 2^-53 has sqrt(w) = 6.06): the starting point of erfinv's Halley step
_W = (0.0, 6.25, (1.630422098945931, 0.7315674456742258, -0.021235032142504617, -0.006580887542449526,
                  0.0019488711426906083, -0.0001415834338637018, -4.9292864636288126e-05, 1.4752887928963495e-05,
                  -6.111918603168241e-07, -5.106997335210223e-07))
# max relative error 1.2e-7
_S = (2.5, 6.5, (4.3468060790991405, 2.016370913426895, 0.002644436311278844, -0.0017243702496743882,
                 0.000688148710963967, -0.00027084611699753795, 0.0001121910363103332, -4.632659679799112e-05,
                 1.7508338632337383e-05, -5.492515292478955e-06))
# 4.4e-7

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _power_form(series):
    """A Chebyshev series as ``(scale, shift, power coefficients)`` in ``t = v * scale - shift``:
    Horner's rule then takes two in-place passes per coefficient (Clenshaw's recurrence takes
    three, with temporaries). The power coefficients of these series sum to about the function's
    value (no cancellation), so the power form loses nothing."""
    lo, hi, coef = series
    return 2.0 / (hi - lo), (lo + hi) / (hi - lo), tuple(np.polynomial.chebyshev.cheb2poly(coef)[::-1])


_A, _B1, _B2, _B3, _W, _S = (_power_form(s) for s in (_A, _B1, _B2, _B3, _W, _S))


def _cheb(xp, series, v):
    """The fitted series ``series`` (power form) at ``v`` (in its interval)."""
    scale, shift, coef = series
    t = v * scale
    t -= shift
    out = xp.full_like(t, coef[0])
    for c in coef[1:]:
        out *= t
        out += c
    return out


def _exp_neg_square(xp, a):
    """``exp(-a*a)`` for ``a >= 0`` without the error of rounding ``a*a``: ``a = h + l`` with
    ``h`` a multiple of 1/64, whose square is exact, then ``exp(-h*h) * exp(-(2h + l) l)``."""
    h = xp.floor(a * 64.0) / 64.0
    low = a - h
    return xp.exp(-h * h) * xp.exp(-(2.0 * h + low) * low)


def _erfc_tail(xp, a):
    """``erfc(a)`` for ``a >= 1`` (1-d float64 array, NaN-free), 0 where it underflows."""
    a = xp.minimum(a, 40.0)  # erfc(40) underflows to 0 already; inf would make exp's split NaN
    u = 1.0 / (a * a)
    out = xp.empty_like(a)
    for series, pick in ((_B1, u >= 0.25), (_B2, (u < 0.25) & (u >= 0.0625)), (_B3, u < 0.0625)):
        idx = xp.nonzero(pick)
        if idx[0].size:
            out[idx] = _cheb(xp, series, u[idx])
    with np.errstate(over="ignore", under="ignore"):
        return _exp_neg_square(xp, a) * out / a


def _split(xp, x):
    """``x`` as an array, and its values as a 1-d float64 array (``nonzero`` needs a dim)."""
    x = xp.asarray(x)
    return x, x.astype("float64", copy=False).reshape(-1)


def _erf64(xp, x):
    """The error function of float array ``x`` to float64's precision, in its dtype."""
    x, d = _split(xp, x)
    a = xp.abs(d)
    out = xp.array(d, copy=True)  # NaN stays NaN
    small = a <= 1.0
    idx = xp.nonzero(small)
    if idx[0].size:
        out[idx] = d[idx] * _cheb(xp, _A, d[idx] * d[idx])
    idx = xp.nonzero(a > 1.0)
    if idx[0].size:
        big = a[idx]
        out[idx] = xp.copysign(1.0 - _erfc_tail(xp, big), d[idx])
    return out.astype(x.dtype, copy=False).reshape(x.shape)


def _erfc64(xp, x):
    """``1 - erf(x)`` of float array ``x``, accurate in the tail, to float64's precision, in its dtype."""
    x, d = _split(xp, x)
    a = xp.abs(d)
    out = xp.array(d, copy=True)
    idx = xp.nonzero(a < 1.0)
    if idx[0].size:
        v = d[idx]
        out[idx] = 1.0 - v * _cheb(xp, _A, v * v)
    idx = xp.nonzero(a >= 1.0)
    if idx[0].size:
        v = d[idx]
        tail = _erfc_tail(xp, xp.abs(v))
        out[idx] = xp.where(v > 0, tail, 2.0 - tail)
    return out.astype(x.dtype, copy=False).reshape(x.shape)


# Float32 (and float16) inputs: float32's half ulp is 3e-8 relative, so a fit within ~1e-8 rounds to
# within 1 ulp of the exact value; computed in float64 (a float32 squared is exact there) and rounded
# once. Fitted for d2s as the series above (rational functions P / Q with Q(0) = 1, linearized
# least squares reweighted toward the largest relative error, against mpmath on 4000 Chebyshev
# nodes; the error is measured on 40001 points of each interval):
#   erf(x) = x P(t) / Q(t), t = x^2, P of degree 6, Q of degree 5, |x| clipped to 4 (erf(x) rounds to
#   +-1.0f from |x| = 3.9192 on): max relative error 2.1e-9 on [0, 4]; P(0) is 2/sqrt(pi) itself, so
#   the tiny x (most float32 bit patterns) get 2x/sqrt(pi) rounded once;
#   erfc(a) = exp(-a^2) P(a) / Q(a) for a = |x|, P of degree 4, Q of degree 5 (erfc(-a) = 2 - erfc(a)),
#   a clipped to 10.2 (erfc rounds to 0.0f from 10.054 on): max relative error 6.2e-9 on [0, 10.2];
#   P(0) = Q(0) = 1, so erfc of tiny x is 1 - 2x/sqrt(pi) to float64's precision.
# Measured over all 2^32 float32 values against float64 math.erf/math.erfc rounded to float32
# (benchmarks/erf32_ulp.py): within 1 ulp, NaN stays NaN.
_ERF32 = np.array([(1.1283791670955126, 0.1853119115012762, 0.05431239010952956, 0.0038516784528687628,
                    0.0003788801267861768, 4.662445580464829e-06, -1.3093802513112169e-08),
                   (1.0, 0.497561793454422, 0.11398660208259877, 0.01546353182247868, 0.0013070258773132935,
                    6.290053599338929e-05, 0.0)])
_ERF32_CLIP = 4.0
_ERFC32 = np.array([(1.0, 1.2372751201967753, 0.7303103274982363, 0.2285590629856418, 0.032639928133676735, 0.0),
                    (1.0, 2.3656546855314065, 2.399658010646761, 1.3229341563346357, 0.4051369180805382,
                     0.057852065799408735)])
_ERFC32_CLIP = 10.2


def _low_precision(x):
    """Whether ``x``'s dtype takes the float32 path (float64 keeps the float64 series)."""
    return x.dtype == np.float32 or x.dtype == np.float16


def _rational(xp, work, coef):
    """``P(v) / Q(v)`` for the rows ``(P, Q)`` of ``coef`` (power coefficients, lowest first), ``v``
    in ``work[1]``, written to ``work[n]`` (n = the number of coefficients; ``work[0]`` holds
    ones). The powers of ``v`` are taken once and both polynomials by one matrix product, which
    reads each power once: Horner's rule would take two numpy passes per coefficient of each (1.7
    times the time). The terms of these fits hardly cancel (all their coefficients are positive
    but erf's last, whose term is under 1% of the sum), so the power form loses nothing at
    float32's precision."""
    n = coef.shape[1]
    for j in range(2, n):
        xp.multiply(work[j - 1], work[1], out=work[j])
    xp.matmul(xp.asarray(coef), work[:n], out=work[n:n + 2])
    return xp.divide(work[n], work[n + 1], out=work[n])


def _erf32(xp, x, work, out):
    """erf of 1-d float32 or float16 ``x`` into ``out`` (its dtype), with ``work`` a (10, x.size)
    float64 scratch whose row 0 is ones."""
    d = xp.clip(x, -_ERF32_CLIP, _ERF32_CLIP, out=work[9])  # NaN stays NaN, +-inf give +-1
    xp.multiply(d, d, out=work[1])
    r = _rational(xp, work, _ERF32)
    out[...] = xp.multiply(r, d, out=r)  # odd: erf(-0.0) is -0.0; rounded once (a float32 out= casts slower)


def _erfc32(xp, x, work, out):
    """erfc of 1-d float32 or float16 ``x`` into ``out`` (its dtype), with ``work`` a (10, x.size)
    float64 scratch whose row 0 is ones."""
    d = work[9]
    d[...] = x
    a = xp.clip(xp.abs(d, out=work[1]), 0.0, _ERFC32_CLIP, out=work[1])  # NaN stays NaN
    r = _rational(xp, work, _ERFC32)
    e = xp.negative(work[2], out=work[2])  # a^2 (from the powers) is exact for a float32 a: no split as in
    r *= xp.exp(e, out=e)                 # _exp_neg_square
    # erfc(-a) = 2 - erfc(a), as r + 2 (1 - r) where the sign bit is set (-0.0 gives 1): arithmetic,
    # not where(), whose branches on a random mask cost 4.6 ns an element instead of 1.5
    negative = work[3]
    negative[...] = xp.signbit(d)
    fix = xp.subtract(1.0, r, out=work[4])
    fix *= negative
    fix *= 2.0
    r += fix
    out[...] = r


def _chunked32(kernel):
    """The float32 kernel ``kernel`` over any array, a chunk at a time on numpy (one scratch for
    all chunks: a fresh one per chunk would cost page faults), the whole array at once on cupy."""
    def run(xp, x):
        flat = x.reshape(-1)
        out = xp.empty(flat.shape, x.dtype)
        size = min(flat.size, _CHUNK32) if xp is np else flat.size
        work = xp.empty((10, size))
        work[0] = 1.0
        with np.errstate(invalid="ignore", under="ignore"):  # NaN inputs (clip and cast warn of them) give NaN
            for start in range(0, flat.size, max(size, 1)):
                stop = min(start + size, flat.size)
                kernel(xp, flat[start:stop], work[:, :stop - start], out[start:stop])
        return out.reshape(x.shape)

    return run


_erf32_all, _erfc32_all = _chunked32(_erf32), _chunked32(_erfc32)


def _erf(xp, x):
    """The error function of float array ``x``, in its dtype."""
    x = xp.asarray(x)
    return _erf32_all(xp, x) if _low_precision(x) else _erf64(xp, x)


def _erfc(xp, x):
    """``1 - erf(x)`` of float array ``x``, accurate in the tail, in its dtype."""
    x = xp.asarray(x)
    return _erfc32_all(xp, x) if _low_precision(x) else _erfc64(xp, x)


def _erfinv(xp, y):
    """The inverse error function of float array ``y`` in [-1, 1] (+-inf at +-1, NaN outside),
    in its dtype."""
    y, d = _split(xp, y)
    a = xp.abs(d)
    inside = a < 1.0
    if bool(inside.all()):  # the usual case: no gather and scatter of the values inside
        return xp.copysign(_erfinv_inside(xp, a), d).astype(y.dtype, copy=False).reshape(y.shape)
    out = xp.full_like(d, np.nan)
    ones = a == 1.0
    out[ones] = xp.copysign(np.inf, d[ones])
    idx = xp.nonzero(inside)
    if idx[0].size:
        out[idx] = xp.copysign(_erfinv_inside(xp, a[idx]), d[idx])  # erfinv(-0.0) is -0.0
    return out.astype(y.dtype, copy=False).reshape(y.shape)


def _erfinv_inside(xp, v):
    """erfinv of 1-d float64 ``v`` in [0, 1)."""
    upper = v >= 0.5
    rest = 1.0 - v  # exact for v >= 1/2 (Sterbenz)
    # w = -log(1 - v^2), from (1 - v)(1 + v) near 1, where v*v would round away the tail
    with np.errstate(divide="ignore"):
        w = xp.where(upper, -xp.log(rest * (1.0 + v)), -xp.log1p(-v * v))
    x = xp.empty_like(v)
    for series, pick, arg in ((_W, w < 6.25, lambda s: s), (_S, w >= 6.25, xp.sqrt)):
        part = xp.nonzero(pick)
        if part[0].size:
            x[part] = v[part] * _cheb(xp, series, arg(w[part]))
    # one Halley step (it triples the digits: 4e-7 to 1e-19) on f(x) = erf(x) - v, as
    # (1 - v) - erfc(x) above 1/2 so that the tail keeps its relative precision
    f = xp.empty_like(x)
    up, low = xp.nonzero(upper), xp.nonzero(~upper)
    if up[0].size:
        f[up] = rest[up] - _erfc64(xp, x[up])
    if low[0].size:
        f[low] = _erf64(xp, x[low]) - v[low]
    with np.errstate(over="ignore", invalid="ignore"):
        step = f / (_TWO_OVER_SQRT_PI * _exp_neg_square(xp, x))
        return x - step / (1.0 + x * step)


# numpy computes big arrays a chunk at a time: the dozens of temporaries of a series then stay
# in cache instead of being fresh memory (page faults) each, which halves the time (1M
# float64: erf 59 -> 27 ms, erfinv 112 -> 48 ms of CPU); cupy takes the whole array at once
_CHUNK = 16384
# the float32 kernels' chunk: their scratch is 10 float64 rows, in the shared cache at this size;
# fewer chunks spend less on numpy's per-call work (erf of 2^20 float32: 4.7 -> 4.0 ms, the same bits)
_CHUNK32 = 65536


def _by_chunks(fn):
    def run(xp, x):
        x = xp.asarray(x)
        if xp is not np or x.size <= _CHUNK:
            return fn(xp, x)
        flat = x.reshape(-1)
        out = np.empty(flat.shape, x.dtype)
        for start in range(0, flat.size, _CHUNK):
            out[start:start + _CHUNK] = fn(np, flat[start:start + _CHUNK])
        return out.reshape(x.shape)

    run.__doc__ = fn.__doc__
    run.__name__ = fn.__name__.lstrip("_")
    return run


def _by_dtype(fn64, fn32, doc_from):
    """Float32 and float16 arrays to ``fn32`` (which chunks itself), others to ``fn64`` by chunks."""
    chunked = _by_chunks(fn64)

    def run(xp, x):
        x = xp.asarray(x)
        return fn32(xp, x) if _low_precision(x) else chunked(xp, x)

    run.__doc__ = doc_from.__doc__
    run.__name__ = doc_from.__name__.lstrip("_")
    return run


erf, erfc = _by_dtype(_erf64, _erf32_all, _erf), _by_dtype(_erfc64, _erfc32_all, _erfc)
erfinv = _by_chunks(_erfinv)
