"""Max ulp error of d2s's float32 erf and erfc over every float32 value, against float64 libm
erf/erfc (``math.erf``) rounded to float32: the Python backend's kernels
(d2s_runtime/ops/special.py: ``erf``/``erfc`` on float32 arrays) and the native backend's helpers
(d2s_runtime/native/_lib.py: ``erf32``/``erfc32``).

    python benchmarks/erf32_ulp.py [--step N]   (N > 1 checks every N-th bit pattern)

Needs numba. Prints the max ulp distances and where they occur, how often the result is not the
rounded float64 value, and the inputs that are not NaN but give NaN (or NaN giving a number).
"""
import argparse
import math
import time

import numba
import numpy as np

from _ulp import ulp_distance

from d2s_runtime.native._lib import erf32, erfc32
from d2s_runtime.ops import special


@numba.njit(cache=False)  # it inlines erf32 and erfc32: a cached copy would outlive a change to them
def _reference(xs):
    """float64 libm erf and erfc of ``xs``, rounded to float32, and the native helpers' values."""
    n = xs.size
    ref_erf, ref_erfc = np.empty(n, np.float32), np.empty(n, np.float32)
    nat_erf, nat_erfc = np.empty(n, np.float32), np.empty(n, np.float32)
    for k in range(n):
        d = np.float64(xs[k])
        ref_erf[k] = np.float32(math.erf(d))
        ref_erfc[k] = np.float32(math.erfc(d))
        nat_erf[k] = erf32(xs[k])
        nat_erfc[k] = erfc32(xs[k])
    return ref_erf, ref_erfc, nat_erf, nat_erfc


@numba.njit(cache=True)
def _compare(xs, got, ref):
    """(max ulp distance, the x where it occurs, results off by any ulp, NaN mismatches)."""
    worst = 0
    worst_x = np.float32(0)
    off = 0
    nan_bad = 0
    gb = got.view(np.int32)
    rb = ref.view(np.int32)
    for k in range(xs.size):
        if xs[k] != xs[k] or got[k] != got[k]:
            if (xs[k] != xs[k]) != (got[k] != got[k]):
                nan_bad += 1
            continue
        d = ulp_distance(gb[k], rb[k])
        if d:
            off += 1
        if d > worst:
            worst = d
            worst_x = xs[k]
    return worst, worst_x, off, nan_bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=int, default=1)
    step = ap.parse_args().step
    t = time.time()
    names = ("erf (Python backend)", "erfc (Python backend)", "erf32 (native)", "erfc32 (native)")
    stats = {name: [0, 0.0, 0, 0] for name in names}
    count = 0
    n = 1 << 32
    chunk = 1 << 24
    for s in range(0, n, chunk):
        xs = np.arange(s, min(n, s + chunk), step, dtype=np.uint64).astype(np.uint32).view(np.float32)
        count += xs.size
        ref_erf, ref_erfc, nat_erf, nat_erfc = _reference(xs)
        for name, got, ref in zip(names, (special.erf(np, xs), special.erfc(np, xs), nat_erf, nat_erfc),
                                  (ref_erf, ref_erfc, ref_erf, ref_erfc)):
            worst, where, off, nan_bad = _compare(xs, got, ref)
            st = stats[name]
            if worst > st[0]:
                st[0], st[1] = int(worst), float(where)
            st[2] += off
            st[3] += nan_bad
    print(f"every {step}-th float32 ({count} values) against float64 libm rounded to float32:")
    for name, (worst, where, off, nan_bad) in stats.items():
        print(f"  {name:22s} max {worst} ulp (at x={where!r}); {100 * off / count:.3f}% off by 1+ ulp; "
              f"NaN mismatches: {nan_bad}")
    print(f"({time.time() - t:.0f} s)")


if __name__ == "__main__":
    main()
