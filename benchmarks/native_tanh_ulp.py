"""Max ulp error of the native backend's float32 tanh (d2s_runtime/native/_lib.py: tanh32) over
every float32 value, against float64 tanh rounded to float32 and against numpy's float32 tanh.

    python benchmarks/native_tanh_ulp.py [--step N]   (N > 1 checks every N-th bit pattern)

Needs numba. Prints the max ulp distances and where they occur; NaN inputs must give NaN.
"""
import argparse
import math
import time

import numba
import numpy as np

from d2s_runtime.native._lib import tanh32


@numba.njit(cache=True)
def _ordered(b):
    # float32 bit patterns as integers ordered like the floats (distance = ulps)
    return np.where(b < 0, np.int64(-2147483648) - b, b)


@numba.njit(cache=True)
def _chunk(start, stop, step, out_exact, out_numpy_x):
    worst = 0
    worst_x = np.float32(0)
    nan_bad = 0
    for k in range(start, stop, step):
        x = np.array([k], np.int64).astype(np.uint32).view(np.float32)[0]
        y = tanh32(x)
        if x != x:
            if y == y:
                nan_bad += 1
            continue
        ref = np.float32(math.tanh(np.float64(x)))
        yb = np.array([y], np.float32).view(np.int32)[0]
        rb = np.array([ref], np.float32).view(np.int32)[0]
        ya = np.int64(yb) if yb >= 0 else np.int64(-2147483648) - np.int64(yb)
        ra = np.int64(rb) if rb >= 0 else np.int64(-2147483648) - np.int64(rb)
        d = abs(ya - ra)
        if d > worst:
            worst = d
            worst_x = x
    out_exact[0] = worst
    out_numpy_x[0] = worst_x
    return nan_bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=int, default=1)
    step = ap.parse_args().step
    t = time.time()
    worst, where, nan_bad = 0, 0.0, 0
    n = 1 << 32
    chunk = 1 << 26
    for s in range(0, n, chunk):
        w = np.zeros(1, np.int64)
        x = np.zeros(1, np.float32)
        nan_bad += _chunk(s, min(n, s + chunk), step, w, x)
        if w[0] > worst:
            worst, where = int(w[0]), float(x[0])
    # numpy's float32 tanh against the same reference, on a sample (numpy is the Python backend)
    xs = np.random.default_rng(0).integers(0, 1 << 32, 1 << 24, dtype=np.uint64).astype(np.uint32).view(np.float32)
    xs = xs[np.isfinite(xs)]
    ref = np.tanh(xs.astype(np.float64)).astype(np.float32)
    mine = np.array([tanh32(v) for v in xs[:200000]], np.float32)

    def ulps(a, b):
        ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
        ia = np.where(ia < 0, -2147483648 - ia, ia)
        ib = np.where(ib < 0, -2147483648 - ib, ib)
        return np.abs(ia - ib)

    print(f"tanh32 vs float64 tanh rounded, every {step}-th float32: max {worst} ulp (at x={where!r}); "
          f"NaN inputs not giving NaN: {nan_bad}")
    print(f"numpy float32 tanh vs the same reference, 2^24 random floats: max {ulps(np.tanh(xs), ref).max()} ulp")
    print(f"tanh32 vs numpy float32 tanh, 200k random floats: max {ulps(mine, np.tanh(xs[:200000])).max()} ulp")
    print(f"({time.time() - t:.0f} s)")


if __name__ == "__main__":
    main()
