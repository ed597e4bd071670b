"""The native backend's lowerings of the element-wise math ops (ops/pointwise.py, clamp, remainder,
floor division) against the Python backend, fused in one loop nest: rounding, remainder,
fmod, truncating and floor division, clamp with tensor bounds, fmax/fmin, predicates,
nan_to_num and sign bit-identical (NaN, inf and signed zeros included); transcendental
functions (numba's libm calls; float64 libm erf/erfc against d2s's series, float32 erf32/erfc32
against the same fits evaluated by numpy) within the stated tolerance. Integer division by zero raises PyTorch's ZeroDivisionError natively too."""
import numpy as np
import pytest

pytest.importorskip("numba")

import d2s  # noqa: E402
from d2s.static import InputSpec, build_program  # noqa: E402
from d2s_runtime import Executor  # noqa: E402
from d2s_runtime.native import lower_program  # noqa: E402

from .helpers import check, compile_native  # noqa: E402

RNG = np.random.default_rng(21)
SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, np.nan, np.inf, -np.inf, 0.5, -0.5, 2.5, 7.25, -3.0], "float32")
# transcendental: libm (numba) against numpy's SIMD loops and d2s's erf series, relative
RTOL = {"float32": 2e-6, "float64": 1e-13}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("native_pointwise_cache")


def _exact(x, y, lo, hi):
    return (d2s.floor(x), d2s.ceil(x), d2s.trunc(x), d2s.round(x), d2s.sign(x), x % y, d2s.fmod(x, y), x // y,
            d2s.div(x, y, rounding_mode="trunc"), d2s.clamp(x, lo, hi), d2s.clamp(x, min=lo), d2s.clamp(x, max=hi),
            d2s.fmax(x, y), d2s.fmin(x, y), d2s.isnan(x), d2s.isinf(x), d2s.isfinite(x), d2s.nan_to_num(x),
            d2s.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0), d2s.clamp(x, -1.0, 1.0) * 2.0 - d2s.round(x))


def _transcendental(x, u):
    a = abs(x)
    return (d2s.expm1(x), d2s.log1p(a), d2s.log2(a + 0.5), d2s.log10(a + 0.5), d2s.exp2(x), d2s.rsqrt(a + 0.5),
            d2s.tan(x), d2s.asin(u), d2s.acos(u), d2s.atan(x), d2s.sinh(x), d2s.cosh(x), d2s.asinh(x),
            d2s.acosh(a + 1.0), d2s.atanh(u), d2s.erf(x), d2s.erfc(x), d2s.atan2(x, u), d2s.hypot(x, u))


def _lowers_without_fallback(prog):
    lower_program(prog)  # raises NativeUnsupported naming the op that has no lowering


def _specs(*shapes):
    # one program for both float dtypes (one compile): its inputs twice, float32 then float64
    return [InputSpec(s, dt) for dt in ("float32", "float64") for s in shapes]


def _twice(fn, n):
    return lambda *args: fn(*args[:n]) + fn(*args[n:])


def test_rounding_division_clamp_and_predicates_are_bit_identical(cache):
    prog = build_program(_twice(_exact, 4), *_specs([None, 4], [4], [None, 1], [4]))
    _lowers_without_fallback(prog)
    fn = compile_native(prog, cache)
    sp = SPECIAL
    rows = RNG.standard_normal((5, 4)) * 4
    cases = [(sp.reshape(3, 4), sp[[3, 5, 9, 11]], sp[[0, 2, 8]].reshape(3, 1), sp[[7, 1, 10, 4]]),
             (rows, np.array([0.75, -1.5, 2.0, -0.25]), rows[:, :1] * 0.1, np.array([1.0, 2, -1, 0])),
             (np.zeros((0, 4)), np.ones(4), np.zeros((0, 1)), np.ones(4))]
    cases = [tuple(a.astype("float32") for a in c) + tuple(a.astype("float64") for a in c) for c in cases]
    with np.errstate(all="ignore"):
        check(prog, fn, cases)


def test_transcendental_functions_within_tolerance(cache):
    prog = build_program(_twice(_transcendental, 2), *_specs([None, 4], [None, 4]))
    _lowers_without_fallback(prog)
    fn = compile_native(prog, cache)
    # u inside (-1, 1): asin, acos, atanh (an input: a computed u would carry its own ulps into them)
    u = RNG.uniform(-0.95, 0.95, (6, 4))
    cases = [(SPECIAL.reshape(3, 4), u[:3]), (RNG.standard_normal((6, 4)) * 3, u)]
    n = len(_transcendental(d2s.ones(1), d2s.ones(1)))
    with np.errstate(all="ignore"):
        for x, v in cases:
            feeds = (x.astype("float32"), v.astype("float32"), x, v)
            got, want = fn(*feeds), Executor(prog).run(*feeds)
            for k, (g, w) in enumerate(zip(got, want)):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_allclose(g, w, rtol=RTOL[str(w.dtype)], atol=1e-30, equal_nan=True,
                                           err_msg=f"output {k % n} ({w.dtype})")


def _ints(i, j, lo):
    return (i // j, i % j, d2s.fmod(i, j), d2s.div(i, j, rounding_mode="trunc"), d2s.clamp(i, lo, 3),
            d2s.clamp(i, min=lo), d2s.fmax(i, j), d2s.fmin(i, j), d2s.sign(i), d2s.floor(i), d2s.round(i),
            d2s.nan_to_num(i), d2s.isnan(i), d2s.isfinite(j))


def test_integer_math_is_exact_and_division_by_zero_raises(cache):
    prog = build_program(_twice(_ints, 3), *[InputSpec([6], dt) for dt in ("int32", "int64") for _ in range(3)])
    _lowers_without_fallback(prog)
    fn = compile_native(prog, cache)
    a = np.array([7, -7, 0, 13, -13, 2 ** 31 - 1])
    b = np.array([2, 2, -3, -4, 5, -1])
    lo = np.array([-5, 0, 1, -20, 3, 0])

    def feeds(*arrays):
        return tuple(x.astype("int32") for x in arrays) + tuple(x.astype("int64") for x in arrays)

    check(prog, fn, [feeds(a, b, lo), feeds(b, np.where(a == 0, 1, a), lo)])
    zero = b.copy()
    zero[3] = 0
    with pytest.raises(ZeroDivisionError, match="ZeroDivisionError"):
        fn(*feeds(a, zero, lo))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        Executor(prog).run(*feeds(a, zero, lo))


def test_scalar_math_on_0d_values(cache):
    def f(x, i, j):
        return (d2s.round(x), d2s.erf(x), x % -1.5, d2s.fmod(x, 1.5), i // j, d2s.clamp(x, -1.0, 0.25),
                d2s.nan_to_num(x / 0.0), d2s.isfinite(x))

    prog = build_program(f, InputSpec([]), InputSpec([], "int64"), InputSpec([], "int64"))
    fn = compile_native(prog, cache)
    with np.errstate(all="ignore"):
        check(prog, fn, [(np.array(v, "float32"), np.array(7), np.array(-2)) for v in (2.5, -0.75, 3.25)],
              rtol=2e-6, atol=0, exact=(0, 2, 3, 4, 5, 6, 7))


def test_erfinv_and_round_with_decimals_fall_back_with_a_reason():
    from d2s_runtime.native.lower import NativeUnsupported
    for fn, what in ((lambda x: d2s.erfinv(x * 0.5), "erfinv"), (lambda x: d2s.round(x, decimals=2), "decimals")):
        with pytest.raises(NativeUnsupported, match=what):
            lower_program(build_program(fn, InputSpec([4])))


def test_gelu_and_its_gradient_lower_natively(cache):
    from d2s.dispatch import apply

    def f(x, g):
        return d2s.nn.functional.gelu(x), apply("gelu_from_erf_grad", x, d2s.erf(x * 0.5 ** 0.5), g)

    prog = build_program(_twice(f, 2), *_specs([None, 8], [None, 8]))
    _lowers_without_fallback(prog)
    fn = compile_native(prog, cache)
    xs = [RNG.standard_normal((n, 8)) * 3 for n in (0, 5)]
    inputs = [(x.astype("float32"), -x.astype("float32"), x, -x) for x in xs]
    inputs[1][0][0, :len(SPECIAL) - 4] = SPECIAL[:len(SPECIAL) - 4]
    check(prog, fn, inputs, rtol=RTOL["float32"], atol=1e-6)
