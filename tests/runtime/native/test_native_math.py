"""The native backend's float32 tanh, erf and erfc (runtime/d2s_runtime/native/_lib.py: ``tanh32``,
``erf32``, ``erfc32``, rational approximations evaluated in float64 so LLVM vectorizes them):
within ``TANH_MAX_ULP`` (``ERF_MAX_ULP``) of the float64 value rounded to float32 (tanh: and
within 2 ulp of numpy's float32 tanh), on special values and a sample of every binade; tanh(+-inf)
= +-1, erf(+-inf) = +-1, erfc(+-inf) = 0 and 2, NaN stays NaN, signed zeros kept.
(benchmarks/native_tanh_ulp.py and benchmarks/erf32_ulp.py measure the whole float32 range.)"""
import math

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from d2s_runtime.native import _lib  # noqa: E402
from d2s_runtime.ops import special  # noqa: E402


@numba.njit(cache=False)
def _tanh_all(xs):
    out = np.empty_like(xs)
    for i in range(xs.size):
        out[i] = _lib.tanh32(xs[i])
    return out


def _ulps(a, b):
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(2 ** 31) - ia, ia)
    ib = np.where(ib < 0, -(2 ** 31) - ib, ib)
    return np.abs(ia - ib)


def _sample():
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2 ** 32, 400000, dtype=np.uint64).astype(np.uint32)  # every binade, both signs
    xs = bits.view(np.float32)
    dense = rng.uniform(-10, 10, 200000).astype(np.float32)  # where tanh is not +-1 or x
    special = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-30, 1e-4, 0.5, 1.0, 8.9, 9.0, 9.02, 9.5, 20.0, 3.4e38,
                        -3.4e38, np.inf, -np.inf], np.float32)
    xs = np.concatenate([xs[np.isfinite(xs)], dense, special, -special])
    return xs


def test_tanh32_is_within_its_stated_ulps():
    xs = _sample()
    got = _tanh_all(xs)
    exact = np.tanh(xs.astype(np.float64)).astype(np.float32)
    assert _ulps(got, exact).max() <= _lib.TANH_MAX_ULP
    assert _ulps(got, np.tanh(xs)).max() <= 2  # numpy's float32 tanh is itself ~1 ulp off


def test_tanh32_special_values():
    xs = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, -1e-40], np.float32)
    got = _tanh_all(xs)
    assert got[0] == 1.0 and got[1] == -1.0 and np.isnan(got[2])
    assert got[3] == 0 and not np.signbit(got[3]) and got[4] == 0 and np.signbit(got[4])
    assert got[5] == xs[5] and got[6] == xs[6]  # tanh(x) = x for tiny x (subnormals too)


@numba.njit(cache=False)
def _erf_all(xs):
    out = np.empty_like(xs)
    out_c = np.empty_like(xs)
    for i in range(xs.size):
        out[i] = _lib.erf32(xs[i])
        out_c[i] = _lib.erfc32(xs[i])
    return out, out_c


def test_erf32_and_erfc32_are_within_their_stated_ulps():
    xs = _sample()
    xs = np.concatenate([xs, np.array([2.6e-8, 3.9192, 3.9193, 4.0, 4.01, 10.05, 10.06, 10.2, 10.3], np.float32)])
    erf, erfc = _erf_all(xs)
    d = xs.astype(np.float64)
    assert _ulps(erf, np.array([math.erf(v) for v in d], np.float32)).max() <= _lib.ERF_MAX_ULP
    assert _ulps(erfc, np.array([math.erfc(v) for v in d], np.float32)).max() <= _lib.ERF_MAX_ULP
    # the Python backend's float32 kernels evaluate the same fits (by a matrix product, not Horner)
    assert _ulps(erf, special.erf(np, xs)).max() <= 1 and _ulps(erfc, special.erfc(np, xs)).max() <= 1


def test_erf32_and_erfc32_special_values():
    xs = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45, 10.06, -10.06], np.float32)
    erf, erfc = _erf_all(xs)
    want = np.array([1, -1, 0, 0, 1e-45, -1e-45, 1, -1], np.float32)
    np.testing.assert_array_equal(erf[[0, 1, 3, 4, 5, 6, 7, 8]], want)
    assert not np.signbit(erf[3]) and np.signbit(erf[4]) and np.isnan(erf[2])
    np.testing.assert_array_equal(erfc[[0, 1, 3, 4, 5, 6, 7, 8]], [0, 2, 1, 1, 1, 1, 0, 2])
    assert np.isnan(erfc[2])


def test_erf32_coefficients_are_the_python_backends():
    # copied into _lib.py (numba's cache follows that file only): they must stay special.py's fits
    erf_p = [_lib._EP0, _lib._EP1, _lib._EP2, _lib._EP3, _lib._EP4, _lib._EP5, _lib._EP6]
    erf_q = [1.0, _lib._EQ1, _lib._EQ2, _lib._EQ3, _lib._EQ4, _lib._EQ5, 0.0]
    np.testing.assert_array_equal(special._ERF32, [erf_p, erf_q])
    erfc_p = [1.0, _lib._CP1, _lib._CP2, _lib._CP3, _lib._CP4, 0.0]
    erfc_q = [1.0, _lib._CQ1, _lib._CQ2, _lib._CQ3, _lib._CQ4, _lib._CQ5]
    np.testing.assert_array_equal(special._ERFC32, [erfc_p, erfc_q])
    assert (_lib._ERF_CLIP, _lib._ERFC_CLIP) == (special._ERF32_CLIP, special._ERFC32_CLIP)
