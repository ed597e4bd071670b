"""Which way round the native backend computes a matrix product (runtime/d2s_runtime/native/lower.py,
``_short_wide``): numba's ``np.dot(a, b)`` against ``np.ascontiguousarray(np.dot(bt, a.T).T)``
(``bt``: ``b.T`` copied once, as the lowering does before a loop where ``b`` is invariant), both
calling scipy's OpenBLAS, on the shapes of the benchmark workloads and around the rule's edges;
MKL's gemm (``_lib.smatmul``, what the lowering calls where ``d2s[mkl]`` is installed,
``native/mkl.py``) beside them; and the transposed product left as its ``.T`` view (an F-layout result). The lowering copies it
instead: a fused C-order loop reading the view strided costs more than the copy (an RNN step
took 11.5 ms that way, 9.3 ms with the copy), and keeping whole chains in F order (an MLP
step's epilogues and reductions) measured no faster end to end.

    python benchmarks/bench_native_matmul.py [--threads N]

Prints, per (m, k, n), the time of each form and their ratio (< 1: the transposed form is
faster), and whether the lowering's rule picks the transposed form. No timing is asserted
anywhere; ratios are from this one run.
"""
import os
import sys


def _threads_arg(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
    return 2


THREADS = _threads_arg(sys.argv)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(THREADS)

import time  # noqa: E402

import numpy as np  # noqa: E402

SHAPES = [(32, 256, 256), (16, 256, 256), (32, 512, 512), (32, 256, 1024),  # an RNN step and wider
          (32, 64, 256), (8, 128, 128), (64, 256, 256), (128, 784, 512), (128, 512, 512), (128, 512, 10),
          (784, 128, 512), (512, 128, 512), (512, 128, 10), (128, 10, 512), (256, 256, 256), (64, 64, 64)]


def main():
    try:
        import numba
    except ImportError:
        print("numba is not installed (pip install 'd2s[native]')")
        return None
    from d2s_runtime.native import _lib, mkl
    from d2s_runtime.native.builders import _short_wide

    use_mkl = mkl.library() is not None

    def timed(product):
        """A compiled loop calling ``product(a, b)`` ``n`` times (what one form costs, in machine code)."""
        product = numba.njit(cache=False)(product)

        @numba.njit(cache=False)
        def loop(a, b, n):
            s = 0.0
            for _ in range(n):
                s += product(a, b)[0, 0]
            return s
        return loop

    plain = timed(lambda a, b: np.dot(a, b))
    transposed = timed(lambda a, bt: np.ascontiguousarray(np.dot(bt, a.T).T))
    left_transposed = timed(lambda a, bt: np.dot(bt, a.T).T)
    with_mkl = timed(lambda a, b: _lib.smatmul(a, b))

    def per_call(f, a, b):
        f(a, b, 1)
        n = max(3, int(2e8 / (2 * a.size * b.shape[1] * 8)))
        samples = []
        for _ in range(7):
            t = time.perf_counter()
            f(a, b, n)
            samples.append((time.perf_counter() - t) / n)
        return sorted(samples)[len(samples) // 2]

    rng = np.random.default_rng(0)
    print(f"numba np.dot (scipy's OpenBLAS) and MKL ({mkl.blas_name()}) on {THREADS} thread(s); "
          f"median of 7 samples; ratios against np.dot(a, b)")
    print("| m, k, n | np.dot(a, b) | (bt @ a.T).T copied | ratio | left as a view | ratio | rule picks transposed "
          "| MKL gemm | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k)).astype("float32")
        b = rng.standard_normal((k, n)).astype("float32")
        bt = np.ascontiguousarray(b.T)
        t0, t1, t2 = per_call(plain, a, b), per_call(transposed, a, bt), per_call(left_transposed, a, bt)
        t3 = per_call(with_mkl, a, b) if use_mkl else None
        rows.append(((m, k, n), t0, t1, t2, t3))
        mkl_cells = f"{t3 * 1e6:.1f} us | {t3 / t0:.2f}" if use_mkl else "- | -"
        print(f"| {m}, {k}, {n} | {t0 * 1e6:.1f} us | {t1 * 1e6:.1f} us | {t1 / t0:.2f} | {t2 * 1e6:.1f} us | "
              f"{t2 / t0:.2f} | {'yes' if _short_wide(m, k, n) else 'no'} | {mkl_cells} |")
    return rows


if __name__ == "__main__":
    main()
