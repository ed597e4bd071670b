"""The log-gamma function and its derivatives (``lgamma``, ``digamma``, ``polygamma``), the
integer ``gcd``/``lcm`` and ``signbit``, with PyTorch's values at the poles.

Computed in float64 on any array namespace ``xp`` (float32 inputs rounded once at the end).
``lgamma``: Lanczos' series (g = 7, 9 terms; about 1e-15 relative in Gamma) for ``x >= 1/2``,
Euler's reflection ``log(pi / |sin(pi x)|) - lgamma(1 - x)`` below, Stirling's series above
``x = 1e6`` (where Lanczos' ``(x + g + 1/2) log(...)`` term would be rounded twice); +inf at
0 and the negative integers, as PyTorch's. ``polygamma(n, x)``: the recurrence
``psi_n(x) = psi_n(x + 1) + (-1)^(n+1) n! / x^(n+1)`` up to ``x >= 20 + n``, then the asymptotic
series with Bernoulli numbers to ``B_16`` (below 1e-17 there); ``digamma`` (``n = 0``) and
``trigamma`` (``n = 1``) use the reflection formulas for negative ``x``. digamma is -inf at 0
(PyTorch's) and NaN at the negative integers; ``polygamma(n >= 1)`` is +inf there (PyTorch's
``zeta``). tests/runtime/ops/test_gamma.py measures them against ``math.lgamma`` and torch.
"""
import math

import numpy as np

from ..dtypes import float_of
from .registry import ShapeError, TensorType, defop
from .elementwise import integer_elementwise

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# B_2k for k = 1..8
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


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


def lgamma(xp, x):
    """``log|Gamma(x)|``, +inf at the poles."""
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


def _tanpi(xp, x):
    r = x - xp.floor(x)
    return xp.tan(math.pi * r)


def _polygamma_shifted(xp, n, x):
    """``psi_n(x)`` for any x not a pole, by the recurrence then the asymptotic series."""
    target = 20.0 + n
    fact = math.factorial(n)
    sign = (-1.0) ** (n + 1)
    acc = xp.zeros_like(x)
    y = x.copy()
    steps = int(max(0.0, math.ceil(target - float(xp.min(x))))) if x.size else 0
    if steps > 100000:
        raise ValueError(f"polygamma: an argument of {float(xp.min(x))} is too far below 0 for the recurrence "
                         "used here (n >= 2); PyTorch's values there are dominated by the nearest pole")
    for _ in range(steps):
        below = y < target
        acc += xp.where(below, 1.0 / y ** (n + 1), 0.0)
        y = xp.where(below, y + 1.0, y)
    if n == 0:
        series = xp.log(y) - 0.5 / y
        y2 = y * y
        p = xp.ones_like(y)
        for k, b in enumerate(_BERNOULLI, 1):
            p = p / y2
            series -= b / (2 * k) * p
        return series - acc
    # (n-1)!/y^n + n!/(2 y^(n+1)) + sum B_2k (2k+n-1)!/(2k)! / y^(2k+n)
    series = math.factorial(n - 1) / y ** n + fact / (2.0 * y ** (n + 1))
    for k, b in enumerate(_BERNOULLI, 1):
        series += b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) / y ** (2 * k + n)
    return sign * series + sign * fact * acc


def polygamma(xp, x, n=0):
    """The ``n``-th derivative of digamma at ``x``."""
    dt = x.dtype
    x = _as_float64(x)
    with np.errstate(all="ignore"):
        pole = (x <= 0) & (x == xp.floor(x))
        finite = xp.where(pole | ~xp.isfinite(x), 0.5, x)
        if n in (0, 1):
            neg = finite < 0
            base = _polygamma_shifted(xp, n, xp.where(neg, 1.0 - finite, finite))
            if n == 0:  # psi(x) = psi(1 - x) - pi / tan(pi x)
                refl = base - math.pi / _tanpi(xp, finite)
            else:  # psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x)
                refl = (math.pi / _sinpi(xp, finite)) ** 2 - base
            out = xp.where(neg, refl, base)
        else:
            out = _polygamma_shifted(xp, n, finite)
        if n == 0:
            out = xp.where(x == 0, -np.inf, xp.where(pole, np.nan, out))
            out = xp.where(x == np.inf, np.inf, xp.where(x == -np.inf, np.nan, out))
        else:
            out = xp.where(pole, np.inf, out)
            out = xp.where(x == np.inf, 0.0, xp.where(x == -np.inf, np.nan, out))
        out = xp.where(xp.isnan(x), np.nan, out)
    return out.astype(dt, copy=False)


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


defop("polygamma", _polygamma_infer, doc="The ``n``-th derivative of the digamma function (``n = 0``: digamma, -inf "
      "at 0 and NaN at the negative integers; ``n >= 1``: +inf at 0 and the negative integers). Integer and bool "
      "inputs give float32.", elementwise=True, float_inputs=True, fresh=True)(_float_kernel(polygamma))


# ------------------------------------------------------------------ signbit, gcd, lcm
@defop("signbit", lambda x: TensorType(x.shape, "bool"), elementwise=True, fresh=True)
def _signbit(xp, x):
    """Whether each element's sign bit is set (True for -0.0 and negative NaNs; integers: ``x < 0``)."""
    return xp.signbit(x) if x.dtype.kind == "f" else x < 0



def _int_kernel(np_name):
    def kernel(xp, a, b):
        return getattr(xp, np_name)(a, b)
    return kernel


defop("gcd", integer_elementwise("gcd"), doc="The greatest common divisor of integers (``gcd(0, 0) = 0``), non-negative.",
      elementwise=True, commutative=True, fresh=True)(_int_kernel("gcd"))
defop("lcm", integer_elementwise("lcm"), doc="The least common multiple of integers (0 where either is 0), non-negative.",
      elementwise=True, commutative=True, fresh=True)(_int_kernel("lcm"))
