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

from _ulp import ulp_distance

from d2s_runtime.native._lib import tanh32


@numba.njit(cache=True)
def _chunk(xs):
    """(max ulp distance, the x where it occurs, NaN inputs not giving NaN) over ``xs``."""
    worst = 0
    worst_x = np.float32(0)
    nan_bad = 0
    out = np.empty(xs.size, np.float32)
    ref = np.empty(xs.size, np.float32)
    for k in range(xs.size):
        out[k] = tanh32(xs[k])
        ref[k] = np.float32(math.tanh(np.float64(xs[k])))
    ob = out.view(np.int32)
    rb = ref.view(np.int32)
    for k in range(xs.size):
        x = xs[k]
        if x != x:
            if out[k] == out[k]:
                nan_bad += 1
            continue
        d = ulp_distance(ob[k], rb[k])
        if d > worst:
            worst = d
            worst_x = x
    return worst, worst_x, nan_bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=int, default=1)
    step = ap.parse_args().step
    t = time.time()
    worst, where, nan_bad = 0, 0.0, 0
    n = 1 << 32
    chunk = 1 << 24
    for s in range(0, n, chunk):
        xs = np.arange(s, min(n, s + chunk), step, dtype=np.uint64).astype(np.uint32).view(np.float32)
        w, x, bad = _chunk(xs)
        nan_bad += bad
        if w > worst:
            worst, where = int(w), float(x)
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
