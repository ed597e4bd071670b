"""The error function family (runtime/d2s_runtime/ops/special.py, series fitted for d2s) against
libm's ``math.erf``/``math.erfc`` in ulps, ``erfinv`` inverting ``erf`` to the last bits (the
tails included), special values, float32 rounding, and the chunked numpy path equal to one
whole-array pass."""
import math

import numpy as np
import pytest

from d2s_runtime.ops import special

R = np.random.default_rng(2)


def _ulps(a, b):
    ia, ib = np.asarray(a, np.float64).view(np.int64), np.asarray(b, np.float64).view(np.int64)
    ia = np.where(ia < 0, -(2 ** 63) - ia, ia)
    ib = np.where(ib < 0, -(2 ** 63) - ib, ib)
    return np.abs(ia - ib)


def _points():
    return np.concatenate([R.uniform(-30, 30, 20000), R.uniform(-3, 3, 40000), R.standard_normal(5000) * 1e-3,
                           [0.0, -0.0, 1.0, -1.0, 5e-324, 1e-300, 0.999999, 1.000001, 4.0, 26.5, 27.3]])


@pytest.mark.parametrize("name,ref,max_ulp", [("erf", math.erf, 7), ("erfc", math.erfc, 26)])
def test_within_stated_ulps_of_libm(name, ref, max_ulp):
    x = _points()
    got = getattr(special, name)(np, x)
    want = np.array([ref(v) for v in x])
    assert _ulps(got, want).max() <= max_ulp


def test_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 40.0, -40.0])
    erf, erfc = special.erf(np, x), special.erfc(np, x)
    assert np.isnan(erf[0]) and np.isnan(erfc[0])
    np.testing.assert_array_equal(erf[1:], [1.0, -1.0, 0.0, -0.0, 1.0, -1.0])
    assert np.signbit(erf[4])
    np.testing.assert_array_equal(erfc[1:], [0.0, 2.0, 1.0, 1.0, 0.0, 2.0])
    y = special.erfinv(np, np.array([1.0, -1.0, 0.0, -0.0, 1.5, -2.0, np.nan, 1e-300]))
    np.testing.assert_array_equal(y[:4], [np.inf, -np.inf, 0.0, -0.0])
    assert np.signbit(y[3]) and np.isnan(y[4:7]).all()
    assert y[7] == pytest.approx(1e-300 * math.sqrt(math.pi) / 2, rel=1e-15)


def test_erfinv_inverts_erf_in_the_middle_and_the_tails():
    y = np.concatenate([R.uniform(-1, 1, 20000), 1 - 10.0 ** -R.uniform(1, 15.9, 3000), [1 - 2 ** -53, 0.5, -0.5]])
    x = special.erfinv(np, y)
    mid = np.abs(y) < 0.5
    np.testing.assert_allclose(special.erf(np, x[mid]), y[mid], rtol=0, atol=2.3e-16)
    tail = ~mid
    # in the tails 1 - |y| is what erfinv reads: erfc(|x|) gives it back within the rounding of x (1 ulp of
    # x moves erfc(x) by 2 x^2 ulps, up to ~70 at x = 6)
    np.testing.assert_allclose(special.erfc(np, np.abs(x[tail])), 1 - np.abs(y[tail]), rtol=1e-14)


def test_float32_is_rounded_once_from_float64():
    x = R.uniform(-5, 5, 3000).astype(np.float32)
    got = special.erf(np, x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, special.erf(np, x.astype(np.float64)).astype(np.float32))
    y = (x / 5.01).astype(np.float32)
    np.testing.assert_array_equal(special.erfinv(np, y), special.erfinv(np, y.astype(np.float64)).astype(np.float32))


def test_chunks_equal_one_pass_and_keep_the_shape():
    x = R.standard_normal((3, special._CHUNK + 7)) * 4
    for fn, arg in ((special._erf, x), (special._erfc, x), (special._erfinv, np.tanh(x))):
        public = getattr(special, fn.__name__.lstrip("_"))
        got = public(np, arg)
        assert got.shape == arg.shape
        np.testing.assert_array_equal(got, fn(np, arg))
    assert special.erf(np, np.array(0.5)).shape == ()
