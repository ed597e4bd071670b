"""The native compiler (d2s_runtime.native) on the control loop of issue 12, against jax.jit and
d2s's Python backend, in one run: per-call time at 200 steps and the per-iteration slope over
50/200/1000/5000 steps (least squares). Also the MLP 784-512-512-10 training program
(forward + backward, batch 128) and an Elman RNN (T=64, B=32, D=64, H=256) forward + backward.

    python benchmarks/bench_native_compiler.py [--no-jax] [--repeat N]

Prints microseconds (best of N rounds) and ratios; needs numba (and jax for its column).
"""
import argparse
import os
import tempfile
import time

import numpy as np

import d2s
from d2s.static import InputSpec, build_program, gradients
from d2s_runtime import Executor, native


def best_us(fn, repeat, inner):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t) / inner * 1e6)
    return best


def control_loop(x, s, n):
    i = 0
    while i < n:
        if x.sum() > 0:
            s = s + x * 0.5
        else:
            s = s - x
        x = d2s.tanh(x) - 0.1
        i = i + 1
    return s


def jax_loop():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def loop(x, s, n):
        def body(c):
            i, x, s = c
            s = lax.cond(x.sum() > 0, lambda: s + x * 0.5, lambda: s - x)
            return i + 1, jnp.tanh(x) - 0.1, s
        return lax.while_loop(lambda c: c[0] < n, body, (0, x, s))[2]
    return jax.jit(loop)


def slope(ns, ts):
    a = np.polyfit(np.asarray(ns, float), np.asarray(ts, float), 1)
    return a[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    cache = os.environ.get("D2S_BENCH_CACHE") or tempfile.mkdtemp(prefix="d2s-native-bench-")
    x = np.linspace(-1, 1, 16).astype("float32")
    s = np.zeros(16, "float32")
    f = d2s.jit.to_static(control_loop)
    prog = f.get_program(d2s.tensor(x), d2s.tensor(s), d2s.tensor(200))
    t = time.perf_counter()
    low = native.lower_program(prog)
    t_lower = time.perf_counter() - t
    t = time.perf_counter()
    fn = native.compile_lowered(low, cache_dir=cache)
    t_compile = time.perf_counter() - t
    ref = Executor(prog)
    jf = None
    if not args.no_jax:
        try:
            import jax
            jax.config.update("jax_platforms", "cpu")
            jf = jax_loop()
        except ImportError:
            pass
    steps = (50, 200, 1000, 5000)
    rows = {"native": [], "python backend": [], "jax.jit": []}
    for n in steps:
        nn = np.array(n)
        inner = max(3, 20000 // n)
        got, want = fn(x, s, nn)[0], ref.run(x, s, nn)[0]
        assert got.dtype == want.dtype and np.allclose(got, want, rtol=1e-4, atol=1e-4)
        rows["native"].append(best_us(lambda: fn(x, s, nn), args.repeat, inner))
        rows["python backend"].append(best_us(lambda: ref.run(x, s, nn), args.repeat, max(1, inner // 10)))
        if jf is not None:
            rows["jax.jit"].append(best_us(lambda: jf(x, s, n).block_until_ready(), args.repeat, inner))
    print(f"control loop (16 float32, tanh + data-dependent if): lower {t_lower * 1e3:.1f} ms, "
          f"compile {t_compile:.2f} s; load average {os.getloadavg()[0]:.1f}")
    print(f"{'steps':>16}" + "".join(f"{n:>10}" for n in steps) + f"{'ns/iter':>10}")
    for name, ts in rows.items():
        if ts:
            print(f"{name:>16}" + "".join(f"{v:>10.1f}" for v in ts) + f"{slope(steps, ts) * 1e3:>10.1f}")
    if rows["jax.jit"]:
        print(f"native / jax at 200 steps: {rows['native'][1] / rows['jax.jit'][1]:.2f}x; "
              f"slope ratio {slope(steps, rows['native']) / slope(steps, rows['jax.jit']):.2f}x")

    rng = np.random.default_rng(0)

    def mlp_loss(x, w1, b1, w2, b2, w3, b3):
        h = d2s.relu(x @ w1 + b1)
        h = d2s.relu(h @ w2 + b2)
        return (((h @ w3 + b3) - 1.0) ** 2).mean()

    dims = [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)]
    mlp = gradients(build_program(mlp_loss, InputSpec([128, 784]), *[InputSpec(list(d)) for d in dims]))
    feeds = [rng.standard_normal((128, 784)).astype("float32")]
    feeds += [(rng.standard_normal(d) * 0.05).astype("float32") for d in dims] + [np.array(1.0, "float32")]

    def rnn_loss(xs, wx, wh, h0):
        def step(h, x):
            h = d2s.tanh(x @ wx + h @ wh)
            return h, h
        h, hs = d2s.scan(step, h0, xs)
        return (hs * hs).mean()

    rnn = gradients(build_program(rnn_loss, InputSpec([64, 32, 64]), InputSpec([64, 256]), InputSpec([256, 256]),
                                  InputSpec([32, 256])))
    rfeeds = [rng.standard_normal((64, 32, 64)).astype("float32"), (rng.standard_normal((64, 256)) * 0.1).astype("float32"),
              (rng.standard_normal((256, 256)) * 0.05).astype("float32"), np.zeros((32, 256), "float32"),
              np.array(1.0, "float32")]
    for name, prog, fd in (("MLP 784-512-512-10 fwd+bwd, batch 128", mlp, feeds),
                           ("Elman RNN T=64 B=32 D=64 H=256 fwd+bwd", rnn, rfeeds)):
        try:
            t = time.perf_counter()
            nfn = native.compile_program(prog, cache_dir=cache)
            tc = time.perf_counter() - t
        except native.NativeUnsupported as e:
            print(f"{name}: not lowered: {e}")
            continue
        ex = Executor(prog)
        for g, w in zip(nfn(*fd), ex.run(*fd)):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=2e-3, atol=1e-4)
        tn = best_us(lambda: nfn(*fd), 3, 5)
        tp = best_us(lambda: ex.run(*fd), 3, 5)
        print(f"{name}: native {tn:.0f} us, python backend {tp:.0f} us ({tp / tn:.2f}x); compile {tc:.1f} s")


if __name__ == "__main__":
    main()
