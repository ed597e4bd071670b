"""The native backend's float32 tanh (runtime/d2s_runtime/native/_lib.py: ``tanh32``, a rational
approximation evaluated in float64 so LLVM vectorizes it): within ``TANH_MAX_ULP`` of float64
tanh rounded to float32 and within 2 ulp of numpy's float32 tanh, on special values and a
sample of every binade; tanh(+-inf) = +-1, tanh(nan) = nan, signed zeros kept.
(benchmarks/native_tanh_ulp.py measures the whole float32 range.)"""
import numpy as np
import pytest

numba = pytest.importorskip("numba")

from d2s_runtime.native import _lib  # noqa: E402


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
