"""Calls per second of one to_static function called from 1, 2, 4 and 16 threads.

    python benchmarks/bench_threads.py [--calls N]

Two loads, each printed as calls/s per thread count and the ratio to one thread:

1. cached: every call hits a program built beforehand (the serving case);
2. new shapes: a new input shape every 25 calls per thread, so builds keep happening while
   other threads run cached programs (``d2s.jit.config.cache_size_limit`` raised so the
   programs stay cached).

Every result is compared with eager execution once at the end of each run (a wrong answer
makes the script fail). Python runs one thread at a time (the GIL), so more threads do not
add throughput for small tensors; the point is that throughput holds up and nothing mixes.
"""
import argparse
import threading
import time

import numpy as np

import d2s


def gated(x, y):
    h = x * 2.0 + y.sum()
    if h.mean() > 0:
        h = d2s.tanh(h) + 1.0
    else:
        h = h - 1.0
    s = d2s.zeros([])
    while s < x.abs().sum():
        s = s + 1.5
    return h * s, s


def _arrays(n, k=None):
    """x of shape (n, 3) and y of shape (k,): a new k is a new signature, at the same cost
    per call (the loop's trip count follows x only)."""
    rng = np.random.default_rng(n)
    return (rng.standard_normal((n, 3)).astype(np.float32),
            rng.standard_normal(n if k is None else k).astype(np.float32))


def run(n_threads, total_calls, new_shapes):
    f = d2s.jit.to_static(gated)
    fixed = [tuple(d2s.tensor(a) for a in _arrays(n)) for n in (2, 3, 4)]
    for x, y in fixed:  # built and optimized before timing
        f(x, y), f(x, y)
    per_thread = total_calls // n_threads
    last = [None] * n_threads
    errors = []

    def worker(t):
        try:
            for i in range(per_thread):
                if new_shapes and i % 25 == 0:
                    x, y = (d2s.tensor(a) for a in _arrays(3, 10 + t + n_threads * (i // 25)))
                else:
                    x, y = fixed[i % 3]
                last[t] = ((x, y), f(x, y))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    start = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    for (x, y), (got, s) in last:
        want, ws = gated(x, y)
        assert np.allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5) and s.item() == ws.item()
    return per_thread * n_threads / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=16000, help="calls per measurement (all threads together)")
    args = parser.parse_args()
    d2s.jit.config.cache_size_limit = None
    for label, new_shapes in (("cached programs", False), ("new shapes arriving", True)):
        print(label)
        base = None
        for n in (1, 2, 4, 16):
            rate = run(n, args.calls, new_shapes)
            base = base or rate
            print(f"  {n:2d} threads  {rate:9.0f} calls/s  ({rate / base:.2f}x one thread)")


if __name__ == "__main__":
    main()
