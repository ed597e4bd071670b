"""The log-gamma function and its derivatives (``lgamma``, ``digamma``, ``polygamma``), the
integer ``gcd``/``lcm`` and ``signbit``, with PyTorch's values at the poles.

``lgamma`` is C's ``lgamma`` on numpy (as PyTorch's CPU kernel), in float64 (float32 inputs
rounded once at the end); on other array namespaces ``xp``, Lanczos' series (g = 7, 9 terms; about 1e-15 relative in Gamma) for ``x >= 1/2``,
Euler's reflection ``log(pi / |sin(pi x)|) - lgamma(1 - x)`` below, Stirling's series above
``x = 1e6`` (where Lanczos' ``(x + g + 1/2) log(...)`` term would be rounded twice); +inf at
0 and the negative integers, as PyTorch's.

``polygamma(n, x)`` runs PyTorch's own algorithms (ATen's Math.h, from Cephes) in the input's
dtype, so its values are PyTorch's within a few ulps, at and near the poles too: digamma
(``n = 0``: the recurrence to 10, an asymptotic series, the reflection with ``tan(pi r)``; -inf
at +0, +inf at -0, NaN at the negative integers), trigamma (``n = 1``: the reflection with
``sin(pi x)`` of the rounded product ``pi * x``, so +inf at 0 but huge finite values at the
other negative integers, then six recurrence steps and a short series: about 1e-9 relative near
0, PyTorch's accuracy) and ``(-1)^(n+1) n! zeta(n + 1, x)`` for ``n >= 2`` (Hurwitz zeta in
float64; +inf at the poles, so ``(-1)^(n+1) inf`` there). Far below 0 zeta sums |x| terms
that cancel: d2s's sums agree with PyTorch's only to about 1e-3 relative past x = -1000 (its
``pow`` rounds a few terms differently), and it refuses x below -100000.
tests/runtime/ops/test_gamma.py measures them against ``math.lgamma`` and torch.
"""
import math

import numpy as np

from ..dtypes import float_of, result_type
from .registry import ShapeError, TensorType, defop
from .elementwise import integer_elementwise
from .rules import broadcast_shapes

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _as_float64(x):
    return x.astype(np.float64) if x.dtype != np.float64 else x


def _lgamma_pos(xp, x):
    """lgamma of ``x >= 1/2`` (float64)."""
    z = x - 1.0
    s = xp.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], 1):
        s += c / (z + i)
    t = z + 7.5
    small = _HALF_LOG_2PI + (z + 0.5) * xp.log(t) - t + xp.log(s)
    # Stirling for large x: (x - 1/2) log x - x + log(2 pi)/2 + 1/(12x) - 1/(360x^3)
    big = (x - 0.5) * xp.log(x) - x + _HALF_LOG_2PI + 1.0 / (12.0 * x) - 1.0 / (360.0 * x ** 3)
    return xp.where(x > 1e6, big, small)


def _libm_lgamma(v):
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):  # a pole, or beyond the float range: PyTorch's +inf
        return math.inf


_LIBM_LGAMMA = np.frompyfunc(_libm_lgamma, 1, 1)


def lgamma(xp, x):
    """``log|Gamma(x)|``, +inf at the poles."""
    if xp is np:
        # C's lgamma, which PyTorch's CPU kernel calls: the series below is 1e-15 off in absolute
        # terms, so lgamma(1) and lgamma(2) were -8.9e-16 instead of 0, and its argument
        # reduction sent x = -1e-30 to the pole (+inf instead of 69.08)
        return np.asarray(_LIBM_LGAMMA(_as_float64(x)), dtype=np.float64).astype(x.dtype, copy=False)
    dt = x.dtype
    x = _as_float64(x)
    with np.errstate(all="ignore"):
        low = x < 0.5
        pos = _lgamma_pos(xp, xp.where(low, 1.0 - x, x))
        s = xp.abs(_sinpi(xp, x))
        refl = math.log(math.pi) - xp.log(s) - pos
        out = xp.where(low, refl, pos)
        out = xp.where(low & (s == 0), np.inf, out)
        out = xp.where(xp.isinf(x), np.inf, out)
    return out.astype(dt, copy=False)


def _sinpi(xp, x):
    """``sin(pi x)``, exactly 0 at the integers (x reduced mod 2 first)."""
    r = x - 2.0 * xp.floor(x / 2.0)
    return xp.where(r == xp.floor(r), 0.0, xp.sin(math.pi * r))


# ------------------------------------------------------------------ digamma, trigamma, polygamma
# PyTorch's own algorithms (ATen's Math.h: Cephes' psi and zeta), step by step in the input's
# dtype, so that d2s's values are PyTorch's to the last bits, at and near the poles too: there
# PyTorch's sin(pi x) of a float that is not exactly a multiple of pi gives large finite values
# at the negative integers (trigamma), and zeta's +inf gives (-1)^(n+1) inf (n >= 2).
_PSI_10 = 2.25175258906672110764
_DIGAMMA_A = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
              -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
              8.33333333333333333333E-2)
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042E-16
_MAX_ZETA_STEPS = 100000


def _digamma_positive(xp, x):
    """Cephes' psi for ``x > 0`` in ``x``'s dtype: the recurrence up to 10, then the series."""
    dt = x.dtype.type
    result = xp.zeros_like(x)
    for _ in range(10):  # (any x > 0 reaches 10 in 10 steps)
        below = x < 10
        result = xp.where(below, result - 1 / x, result)
        x = xp.where(below, x + 1, x)
    z = 1 / (x * x)
    poly = xp.full_like(x, _DIGAMMA_A[0])
    for c in _DIGAMMA_A[1:]:
        poly = poly * z + dt(c)
    y = xp.where(x < 1e17, z * poly, 0)
    out = result + xp.log(x) - dt(0.5) / x - y
    return xp.where(x == 10, result + dt(_PSI_10), out)


def _digamma(xp, x):
    """PyTorch's digamma: -inf at +0 and +inf at -0, NaN at the negative integers, the reflection
    ``psi(1 - x) - pi / tan(pi r)`` (r: x's fractional part; the quotient in float64) below 0."""
    neg = x < 0
    out = _digamma_positive(xp, xp.where(neg, 1 - x, x))
    r = _as_float64(x - xp.trunc(x))
    cot = (math.pi / xp.tan(math.pi * r)).astype(x.dtype, copy=False)
    out = xp.where(neg, out - cot, out)
    out = xp.where(neg & (x == xp.trunc(x)), np.nan, out)
    inf = x.dtype.type(np.inf)
    return xp.where(x == 0, xp.where(xp.signbit(x), inf, -inf), out)


def _trigamma(xp, x):
    """PyTorch's trigamma: below 1/2 the reflection ``pi^2 / sin^2(pi x) - psi1(1 - x)`` with
    ``sin(pi x)`` of the rounded product (exactly 0 only at 0: +inf there, large finite values
    at the other negative integers), then six steps of the recurrence and the series."""
    dt = x.dtype.type
    pi = dt(math.pi)
    low = x < 0.5
    sin_pi_x = xp.sin(pi * x)
    result = xp.where(low, -(pi * pi) / (sin_pi_x * sin_pi_x), 0)
    x = xp.where(low, 1 - x, x)
    for _ in range(6):
        result = result + 1 / (x * x)
        x = x + 1
    ixx = 1 / (x * x)
    result = result + (1 + 1 / (2 * x) + ixx * (dt(1 / 6) - ixx * (dt(1 / 30) - ixx * dt(1 / 42)))) / x
    return xp.where(low, -result, result)


def _zeta(xp, s, q):
    """Cephes' Hurwitz zeta ``sum_k (q + k)^-s`` for an integer ``s >= 2`` and float64 ``q``, as
    PyTorch's (+inf at q = 0, -1, -2, ...; ``first``: ``q^-s``, in the input's precision)."""
    first = xp.power(q, -q.dtype.type(s))
    q = _as_float64(q)
    pole = (q <= 0) & (q == xp.floor(q))
    total = _as_float64(first)
    a = q.copy()
    b = xp.zeros_like(q)
    done = pole | xp.zeros_like(pole)
    lowest = float(xp.min(xp.where(done | xp.isnan(q), 9.0, q))) if q.size else 9.0
    steps = max(9, int(math.floor(9.0 - lowest)) + 1)
    if steps > _MAX_ZETA_STEPS:
        raise ValueError(f"polygamma: an argument of {lowest} is too far below 0 for the series PyTorch sums "
                         f"({steps} terms; n >= 2); PyTorch's values there are dominated by the nearest pole")
    for i in range(steps):
        step = ~done & ((i < 9) | (a <= 9.0))
        a = xp.where(step, a + 1.0, a)
        b = xp.where(step, xp.power(a, -float(s)), b)
        total = xp.where(step, total + b, total)
        done = done | (step & (-_MACHEP * total < b) & (b < _MACHEP * total))
    # Euler-Maclaurin for the rest
    w = a
    em = ~done
    total = xp.where(em, total + b * w / (s - 1.0) - 0.5 * b, total)
    a = xp.ones_like(q)
    k = 0.0
    for coef in _ZETA_A:
        a = a * (s + k)
        b = b / w
        t = a * b / coef
        total = xp.where(em, total + t, total)
        em = em & ~(xp.abs(t / total) < _MACHEP)
        k += 1.0
        a = a * (s + k)
        b = b / w
        k += 1.0
    return xp.where(pole, np.inf, total)


def polygamma(xp, x, n=0):
    """The ``n``-th derivative of digamma at ``x``, computed as PyTorch computes it in ``x``'s
    dtype: ``n = 0`` digamma, ``n = 1`` trigamma, else ``(-1)^(n+1) n! zeta(n + 1, x)`` (the
    zeta in float64, as PyTorch's accumulation type on CPU)."""
    with np.errstate(all="ignore"):
        if n == 0:
            return _digamma(xp, x)
        if n == 1:
            return _trigamma(xp, x)
        fact = x.dtype.type(math.exp(math.lgamma(n + 1.0)))
        sign = x.dtype.type(1.0 if n % 2 else -1.0)
        return sign * fact * _zeta(xp, n + 1, x).astype(x.dtype, copy=False)


def _float_infer(x, **attrs):
    return TensorType(x.shape, float_of(x.dtype))


def _float_kernel(fn):
    def kernel(xp, x, **attrs):
        return fn(xp, x if x.dtype.kind == "f" else x.astype("float32"), **attrs)
    return kernel


defop("lgamma", _float_infer, doc="``log|Gamma(x)|`` (+inf at 0 and the negative integers). Integer and bool "
      "inputs give float32.", elementwise=True, float_inputs=True, fresh=True)(_float_kernel(lgamma))


def _polygamma_infer(x, n=0):
    if int(n) < 0:
        raise ShapeError(f"polygamma: n must be a non-negative integer, got {n}")
    return _float_infer(x)


defop("polygamma", _polygamma_infer, doc="The ``n``-th derivative of the digamma function, computed as PyTorch "
      "computes it (``n = 0``: digamma, -inf at +0, +inf at -0, NaN at the negative integers; ``n = 1``: +inf at 0, "
      "huge finite values at the negative integers; ``n >= 2``: ``(-1)^(n+1) inf`` at the poles). Integer and bool "
      "inputs give float32.", elementwise=True, float_inputs=True, fresh=True)(_float_kernel(polygamma))


# ------------------------------------------------------------------ signbit, gcd, lcm
@defop("signbit", lambda x: TensorType(x.shape, "bool"), elementwise=True, fresh=True)
def _signbit(xp, x):
    """Whether each element's sign bit is set (True for -0.0 and negative NaNs; integers: ``x < 0``)."""
    return xp.signbit(x) if x.dtype.kind == "f" else x < 0



def _float_pair_infer(a, b):
    if a.dtype not in ("float32", "float64") or b.dtype not in ("float32", "float64"):
        raise ShapeError(f"nextafter: needs float tensors, got {a.dtype} and {b.dtype}; cast them first")
    return TensorType(broadcast_shapes("nextafter", a.shape, b.shape), result_type(a.dtype, b.dtype))


@defop("nextafter", _float_pair_infer, elementwise=True, fresh=True)
def _nextafter(xp, a, b):
    """The float after ``a`` towards ``b`` (``b`` where they are equal), in their promoted dtype."""
    dt = np.result_type(a.dtype, b.dtype)
    return xp.nextafter(a.astype(dt, copy=False), b.astype(dt, copy=False))


def _frexp_infer(x):
    if x.dtype not in ("float32", "float64"):
        raise ShapeError(f"frexp: only supports floating-point dtypes, got {x.dtype}")
    return TensorType(x.shape, x.dtype), TensorType(x.shape, "int32")


@defop("frexp", _frexp_infer, n_out=2, fresh=True)
def _frexp(xp, x):
    """``(mantissa, exponent)`` with ``x = mantissa * 2 ** exponent`` and ``0.5 <= |mantissa| < 1``
    (0, inf and NaN: themselves with exponent 0); the exponent int32."""
    m, e = xp.frexp(x)
    return m, e.astype(np.int32, copy=False)


def _int_kernel(np_name):
    def kernel(xp, a, b):
        return getattr(xp, np_name)(a, b)
    return kernel


defop("gcd", integer_elementwise("gcd"), doc="The greatest common divisor of integers (``gcd(0, 0) = 0``), non-negative.",
      elementwise=True, commutative=True, fresh=True)(_int_kernel("gcd"))
defop("lcm", integer_elementwise("lcm"), doc="The least common multiple of integers (0 where either is 0), non-negative.",
      elementwise=True, commutative=True, fresh=True)(_int_kernel("lcm"))
