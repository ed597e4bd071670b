"""Gamma functions, integer divisors and sign functions (d2s/ops/special.py) against PyTorch:
lgamma, digamma, polygamma, mvlgamma (poles, negative arguments, integer inputs), gcd/lcm,
signbit, copysign (-0.0), sgn, positive, is_signed, heaviside, xlogy (zeros, NaN, Python
numbers), logit (eps), logaddexp2, deg2rad/rad2deg, isposinf/isneginf, sinc (at 0), and the
in-place forms: values, dtypes, float64 gradients, then converted, dynamic, saved and ONNX
where ONNX has the op (tests/torch_parity.py)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(21)
X = R.standard_normal((3, 5))
POS = R.uniform(0.2, 4.0, (3, 5))
# poles, negative non-integers, large, tiny, inf and NaN (no gradient: some are infinite)
EDGE = np.array([0.0, -1.0, -2.0, 1.0, 2.0, -0.5, -2.5, 1e-6, 30.5, 1e7, np.inf, -np.inf, np.nan])
NO_GAMMA = "ONNX has no gamma functions"
NO_GCD = "ONNX has no greatest common divisor"
NO_SIGNBIT = "ONNX cannot read a float's sign bit (-0.0)"
INTS_A = np.array([12, -18, 0, 7, 0, 100], np.int64)
INTS_B = np.array([8, 12, 5, 0, 0, -75], np.int64)
SIGNED = np.array([-2.0, -0.0, 0.0, 3.0, -np.inf, np.inf])

TORCH_CASES = [
    Case("lgamma_digamma", lambda t, x: (t.lgamma(x), x.digamma(), t.polygamma(1, x), x.polygamma(2),
                                         t.lgamma(x * 3)), X, onnx=NO_GAMMA,
         rtol=1e-5, atol=1e-6),
    Case("gamma_positive", lambda t, x: (t.lgamma(x), t.digamma(x), t.polygamma(3, x), t.mvlgamma(x + 2, 3),
                                         x.mvlgamma(p=1)), POS, onnx=NO_GAMMA, rtol=1e-5, atol=1e-6),
    Case("gamma_edges", lambda t, x: (t.lgamma(x), t.digamma(x)), EDGE, grad=False, onnx=NO_GAMMA,
         rtol=1e-5),
    Case("gamma_ints", lambda t, i: (t.lgamma(i), t.digamma(i), t.polygamma(1, i)), np.array([1, 2, 5, 10]),
         onnx=NO_GAMMA, rtol=1e-5),
    Case("gcd_lcm", lambda t, a, b: (t.gcd(a, b), a.lcm(b), t.gcd(a, b[:1])),
         INTS_A, INTS_B, onnx=NO_GCD),
    Case("gcd_int32", lambda t, a, b: (t.gcd(a, b), t.lcm(a, b)), INTS_A.astype(np.int32),
         INTS_B.astype(np.int32), onnx=NO_GCD),
    Case("signs", lambda t, x: (t.signbit(x), t.copysign(t.ones_like(x), x), x.sgn(), t.positive(x)), SIGNED, grad=False, onnx=NO_SIGNBIT),
    Case("copysign_grad", lambda t, a, b: (t.copysign(a, b), a.copysign(2.0), t.copysign(a, -1.0)), X,
         R.standard_normal(5), onnx=NO_SIGNBIT),
    Case("copysign_ints", lambda t, i, x: (t.copysign(i, x), t.signbit(i)),
         np.array([3, -2, 0, 5, 1]), np.array([-1.0, 1.0, -0.0, 2.0, -3.0]), grad=False, onnx=NO_SIGNBIT),
    Case("heaviside", lambda t, x, v: (t.heaviside(x, v), x.heaviside(t.tensor(0.5, dtype=x.dtype))),
         np.array([-1.5, 0.0, 2.0, 0.0, np.nan]), np.array([0.25, 0.5, 0.75, 1.0, 2.0]), grad=False),
    Case("heaviside_ints", lambda t, i, v: t.heaviside(i, v), np.array([-3, 0, 4]), np.array([7, 8, 9])),
    Case("xlogy", lambda t, x, y: (t.xlogy(x, y), x.xlogy(y), t.xlogy(x, 2.0), t.xlogy(3.0, y)),
         np.array([0.0, 1.5, 2.0, 0.0, 0.5]), R.uniform(0.5, 3.0, 5)),
    Case("xlogy_zeros_nan", lambda t, x, y: t.xlogy(x, y), np.array([0.0, 0.0, 1.0, 0.0]),
         np.array([0.0, np.nan, 0.0, np.inf]), grad=False),
    # xlogy(0, y < 0) is 0 (log(y) is NaN there, but only a NaN y makes a NaN), gradient to x 0
    Case("xlogy_zero_negative", lambda t, x, y: (t.xlogy(x, y), x.xlogy(-2.0)), np.array([0.0, 0.0, 2.0, 0.0]),
         np.array([-1.0, -0.0, 3.0, 2.0])),
    Case("logit", lambda t, p: (t.logit(p), p.logit(), t.logit(p, eps=0.2), p.logit(1e-6)), R.uniform(0.05, 0.95, (2, 4))),
    Case("logaddexp2_angles", lambda t, a, b: (t.logaddexp2(a, b), a.logaddexp2(b), t.deg2rad(a), a.rad2deg(),
                                               t.sinc(a)), X, R.standard_normal((3, 5)), rtol=1e-5),
    Case("angles_ints", lambda t, i: (t.deg2rad(i), t.rad2deg(i), t.sinc(i), t.logit(i)), np.array([0, 90, 180, -45])),
    Case("sinc_at_zero", lambda t, x: (t.sinc(x), x.sinc()), np.array([0.0, 0.5, -1.0, 2.25])),
    # small arguments in float32: PyTorch's gradient expression (the composite's was 3.5% off at 1e-3)
    Case("sinc_small_float32", lambda t, x: t.sinc(x), np.array([1e-3, -2e-3, 1e-30, 0.0, 0.25, 3e-2], np.float32),
         rtol=1e-5, atol=0),
    Case("isposinf_isneginf", lambda t, x, i: (t.isposinf(x), x.isneginf(), t.isposinf(i), t.isneginf(i)),
         np.array([np.inf, -np.inf, 0.0, np.nan, 1e38]), np.array([1, -1, 0]), grad=False),
    Case("inplace_forms", lambda t, x: (x.clone().sgn_(), x.clone().copysign_(-1.0), x.clone().deg2rad_(),
                                        x.clone().rad2deg_(), x.abs().add(0.1).lgamma_(), x.abs().add(0.1).digamma_(),
                                        (x.sigmoid() + 0).logit_(), x.clone().sinc_(), x.abs().xlogy_(2.0)), X,
         rtol=1e-5, onnx=NO_GAMMA),
    Case("rsub_ldexp_fix", lambda t, x, y, i: (t.rsub(x, y), t.rsub(x, 2.0, alpha=3), t.rsub(x, 1), t.ldexp(x, i),
                                               x.ldexp(t.tensor(2.0, dtype=x.dtype)), t.ldexp(i, i), x.fix(), i.fix()),
         X, R.standard_normal((3, 5)), np.array([1, -2, 0, 3, 5])),
    Case("inplace_ints", lambda t, a, b: (a.clone().gcd_(b), a.clone().lcm_(b)), INTS_A, INTS_B, onnx=NO_GCD),
]

# polygamma at the poles (0, -0.0, the negative integers) and near them: PyTorch's values, which
# are +-inf by n's parity (zeta's +inf), NaN (digamma at -k), or huge finite numbers (trigamma's
# sin(pi x) is not exactly 0 at -k); float32 computed in float32, as PyTorch does
POLES = np.array([0.0, -0.0, -1.0, -2.0, -3.0, -7.0, 1e-7, -1e-7, -1 + 1e-6, -1 - 1e-6, -2 + 1e-5, -3 - 1e-4,
                  -4.5, 0.5])
NEAR = np.array([1e-3, -1e-3, -1 + 1e-3, -2 - 1e-3, -5 + 1e-2, -0.5, 0.25])
BITS = np.array([0.0, -0.0, 1.5, -3.0, 1e-300, 7.25e10, -0.3, np.inf, -np.inf, np.nan])
NO_BITS = "ONNX cannot take a float apart into its bits"


def _ldexp_nextafter_inplace(t, x, y):
    a, b = x.clone(), x.clone()
    a.ldexp_(t.tensor([2, -1, 0, 3, 1]))
    b.nextafter_(y)
    return a, b


TORCH_CASES += [
    Case("frexp", lambda t, x, f: (t.frexp(x), x.frexp(), t.frexp(f)), BITS, BITS.astype(np.float32) * 1e-10,
         grad=False, onnx=NO_BITS),
    Case("frexp_grad", lambda t, x: t.frexp(x * 3).mantissa, X, onnx=NO_BITS),
    Case("nextafter", lambda t, x, y, f: (t.nextafter(x, y), x.nextafter(t.zeros_like(x)), t.nextafter(f, -f),
                                          t.nextafter(x, t.tensor(0.0, dtype=t.float32))),
         BITS, BITS[::-1].copy(), BITS.astype(np.float32), grad=False, onnx=NO_BITS),
    Case("ldexp_nextafter_inplace", _ldexp_nextafter_inplace, X[0], X[1], grad=False, onnx=NO_BITS),
    # an integer operand takes the float one's dtype: float32 steps, not float64 ones rounded back
    Case("nextafter_int_operand", lambda t, f, i: (t.nextafter(f, i), f.clone().nextafter_(i), t.nextafter(i.double(), i)),
         np.array([1.5, -1.0, 0.0], np.float32), np.array([3, -5, 2]), grad=False, onnx=NO_BITS),
]
TORCH_CASES += [
    Case(f"polygamma_poles_{dtype.__name__}", lambda t, x: tuple(t.polygamma(n, x) for n in range(5))
         + (t.special.polygamma(1, x), x.polygamma(2), t.digamma(x), t.special.digamma(x), t.special.psi(x)),
         POLES.astype(dtype), grad=False, onnx=NO_GAMMA, rtol=rtol, atol=0)
    for dtype, rtol in ((np.float64, 1e-14), (np.float32, 2e-6))
] + [
    Case("polygamma_near_poles", lambda t, x: tuple(t.polygamma(n, x) for n in range(5)), NEAR, onnx=NO_GAMMA,
         rtol=1e-13, atol=0),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


@pytest.mark.parametrize("call, msg", [
    (lambda: d2s.gcd(d2s.tensor([1.5]), d2s.tensor([2.0])), "integer"),
    (lambda: d2s.polygamma(-1, d2s.ones(2)), "non-negative"),
    (lambda: d2s.positive(d2s.tensor([True])), "bool"),
    (lambda: d2s.heaviside(d2s.tensor([1.0]), d2s.tensor([1.0], dtype=d2s.float64)), "different dtypes"),
    (lambda: d2s.mvlgamma(d2s.tensor([0.5]), 3), "greater than"),
])
def test_errors_name_the_op_and_the_problem(call, msg):
    with pytest.raises(Exception, match=msg):
        call()


def test_heaviside_carries_no_gradient():
    # PyTorch has no heaviside derivative; d2s's result is cut from autograd rather than giving a zero one
    x = d2s.tensor([1.0, -1.0], requires_grad=True)
    assert not d2s.heaviside(x, d2s.tensor([0.5])).requires_grad


@pytest.mark.parametrize("dtype, signed", [("float32", True), ("int64", True), ("int8", True), ("uint8", False),
                                           ("bool", False)])
def test_is_signed(dtype, signed):
    t = d2s.zeros(2, dtype=dtype)
    assert t.is_signed() is signed and d2s.is_signed(t) is signed
