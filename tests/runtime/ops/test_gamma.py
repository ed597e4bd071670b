"""The gamma-function kernels (d2s_runtime/ops/gamma.py): lgamma against libm's ``math.lgamma``
on 2 * 10^4 points of [-30, 30] and a wide logarithmic range; digamma and trigamma against their
recurrences and reflection identities; polygamma against PyTorch where it imports; the poles'
values; gcd/lcm and signbit against numpy."""
import math

import numpy as np
import pytest

from d2s_runtime.ops import gamma

X = np.concatenate([np.linspace(-30.3, 30.3, 20001), np.logspace(-8, 8, 2001), [1e7, 1e12]])
X = X[(X != np.round(X)) | (X > 0)]  # (the poles are checked on their own)


def test_lgamma_matches_libm():
    want = np.array([math.lgamma(v) for v in X])
    np.testing.assert_array_equal(gamma.lgamma(np, X), want)
    # the zeros of lgamma, and tiny arguments (the Lanczos series gave -8.9e-16 at 1 and 2, and
    # +inf at -1e-30)
    x = np.array([1.0, 2.0, -1e-30, 1e-30, -0.999999, 0.999999])
    np.testing.assert_array_equal(gamma.lgamma(np, x), [math.lgamma(v) for v in x])
    assert gamma.lgamma(np, x)[0] == 0.0 and gamma.lgamma(np, x)[1] == 0.0


def test_the_series_for_other_array_namespaces_stays_close():
    class NotNumpy:  # the Lanczos path, which cupy takes
        def __getattr__(self, name):
            return getattr(np, name)

    got = gamma.lgamma(NotNumpy(), X)
    want = np.array([math.lgamma(v) for v in X])
    assert np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))) < 1e-12


def test_digamma_and_trigamma_satisfy_their_identities():
    x = np.linspace(0.05, 40.0, 4001)
    psi, psi1 = gamma.polygamma(np, x, 0), gamma.polygamma(np, x, 1)
    # recurrences psi(x + 1) = psi(x) + 1/x, psi1(x + 1) = psi1(x) - 1/x^2
    np.testing.assert_allclose(gamma.polygamma(np, x + 1, 0), psi + 1 / x, rtol=1e-12, atol=1e-12)
    # (PyTorch's trigamma, which d2s computes as it does, stops its series after six steps of the
    # recurrence: about 1e-9 relative near 0)
    np.testing.assert_allclose(gamma.polygamma(np, x + 1, 1), psi1 - 1 / x ** 2, rtol=5e-9, atol=1e-13)
    # reflections at negative non-integers
    y = -x[(x % 1) > 0.01]
    np.testing.assert_allclose(gamma.polygamma(np, y, 0), gamma.polygamma(np, 1 - y, 0) - math.pi / np.tan(math.pi * y),
                               rtol=1e-10, atol=1e-10)
    assert abs(gamma.polygamma(np, np.array([1.0]), 0)[0] + 0.5772156649015329) < 1e-15  # -Euler's constant
    assert abs(gamma.polygamma(np, np.array([1.0]), 1)[0] - math.pi ** 2 / 6) < 1e-9


def test_poles_and_infinities_are_pytorchs():
    x = np.array([0.0, -1.0, -3.0, np.inf, np.nan, -0.0, -np.inf])
    got = gamma.lgamma(np, x[:5])
    assert np.isinf(got[:4]).all() and (got[:4] > 0).all() and np.isnan(got[4])
    psi = gamma.polygamma(np, x, 0)
    assert psi[0] == -np.inf and np.isnan(psi[1]) and np.isnan(psi[2]) and psi[3] == np.inf and np.isnan(psi[4])
    assert psi[5] == np.inf and np.isnan(psi[6])  # digamma(-0.0) = +inf, as C's and PyTorch's
    psi1 = gamma.polygamma(np, x, 1)
    # sin(pi x) of the rounded product pi * x is 0 only at 0: PyTorch's trigamma is finite (and
    # huge) at the other negative integers
    assert psi1[0] == np.inf and 1e30 < psi1[1] < 1e34 and 1e30 < psi1[2] < 1e34 and psi1[3] == 0.0
    for n in (2, 3, 4):  # (-1)^(n+1) n! zeta(n + 1, x), zeta = +inf at the poles
        got = gamma.polygamma(np, x, n)
        assert (got[[0, 1, 2, 5]] == (np.inf if n % 2 else -np.inf)).all() and np.isnan(got[[3, 4]]).all()


def test_float32_rounds_once():
    x = np.linspace(0.1, 20, 101).astype(np.float32)
    got = gamma.lgamma(np, x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, gamma.lgamma(np, x.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 2e-15), (np.float32, 2e-5)])
def test_polygamma_matches_torch(n, dtype, rtol):
    # PyTorch's algorithms in the input's dtype: a few ulps apart (float32 digamma: more near its
    # roots, where the reflection cancels), at and near the poles too
    torch = pytest.importorskip("torch")
    near = np.arange(-12.0, 1.0)
    x = np.concatenate([np.linspace(0.05, 30, 997), np.linspace(-9.9, -0.1, 499), near, near + 1e-6, near - 1e-3])
    x = x.astype(dtype)
    want = torch.polygamma(n, torch.tensor(x)).numpy()
    np.testing.assert_allclose(gamma.polygamma(np, x, n), want, rtol=rtol, atol=0)


def test_polygamma_far_below_zero_is_refused():
    # PyTorch sums |x| terms of zeta's series there; d2s stops with a clear error
    with pytest.raises(ValueError, match="too far below 0"):
        gamma.polygamma(np, np.array([-2e5 - 0.5]), 2)


def test_gcd_lcm_and_signbit():
    a = np.array([12, -18, 0, 7, 0], np.int64)
    b = np.array([8, 12, 5, 0, 0], np.int32)
    np.testing.assert_array_equal(gamma._int_kernel("gcd")(np, a, b), np.gcd(a, b))
    np.testing.assert_array_equal(gamma._int_kernel("lcm")(np, a, b), np.lcm(a, b))
    np.testing.assert_array_equal(gamma._signbit(np, np.array([-0.0, 0.0, -np.nan, 1.0])), [True, False, True, False])
