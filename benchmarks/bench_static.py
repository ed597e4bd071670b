"""Static programs (optimized, run by the d2s_runtime executor) against hand-written numpy.

    python benchmarks/bench_static.py [--quick]

(a) The seed benchmark as a static program: value and gradient of ``(x @ x.T).sum()`` for
    ``x = randn(1000, 1000)``, against the same computation written in numpy with three
    matmuls (target: static <= 0.5x numpy), optimized twice: by the default pipeline, which
    keeps every value's bits (and so the three matmuls), and by ``REASSOCIATING_PIPELINE``
    (opt-in), whose ``algebraic_reassociate`` rewrites the sum of a matmul and the matmuls of
    the broadcast seed gradient into reductions, so no large matmul remains (the last bits of
    the results then differ).
(b) One MLP training step (784-512-512-10, batch 128, softmax cross-entropy, SGD update) as
    a static forward+backward program, against the same step written by hand in numpy
    (target <= 1.05x); and peak traced memory (tracemalloc) of the static step vs the eager
    d2s step, next to the memory plan's planned peak.
(c) Two independent large matmuls: the parallel executor (2 threads) vs the serial one,
    measured in a subprocess with single-threaded BLAS so the two cores are the executor's.
(d) A small-tensor control-flow loop (shape (16,), 200 iterations of a tensor-predicate
    ``cond`` inside a ``while_loop``), static vs eager (target >= 3x) and vs the same loop in
    plain numpy (target <= 1.5x), per iteration; the static program runs both compiled into
    one Python function (the executor's default, ``codegen.py``) and on the step interpreter.

Every ratio is measured in this one run; timings are best of repeats, reference and
candidate interleaved so that machine noise hits both alike.
"""
import argparse
import gc
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np

import d2s
from d2s.static.builder import ProgramBuilder
from d2s_runtime import Executor
from d2s_runtime.passes import REASSOCIATING_PIPELINE, optimize


def best_time(fns, repeat, number=1):
    """Best per-call seconds of each fn, timed interleaved."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            for _ in range(number):
                f()
            best[i] = min(best[i], (time.perf_counter() - t) / number)
    return best


# ---------------------------------------------------------------- (a) seed benchmark
def seed_program(n):
    b = ProgramBuilder()
    with b:
        x = b.add_input((n, n), "float32", requires_grad=True)
        y = (x @ x.T).sum()
        (g,) = d2s.grad(y, x)
        b.program.outputs = [b.var_of(y), b.var_of(g)]
    b.program.block.outputs = list(b.program.outputs)
    return b.program


def seed_numpy(x):
    y = x @ x.T
    value = y.sum()
    gy = np.ones_like(y)
    grad = gy @ x + (x.T @ gy).T  # d/dx of sum(x @ x.T): gy @ (x.T).T + (x.T @ gy).T
    return value, grad


def bench_seed(repeat):
    n = 1000
    x = np.random.default_rng(0).standard_normal((n, n)).astype("float32")
    rv, rg = seed_numpy(x)
    for label, passes in (("default", None), ("reassociating", REASSOCIATING_PIPELINE)):
        prog = optimize(seed_program(n), passes=passes)
        ex = Executor(prog)
        v, g = ex.run(x)
        assert np.allclose(v, rv, rtol=1e-3) and np.allclose(g, rg, rtol=1e-3, atol=1e-2)
        t_np, t_static = best_time([lambda: seed_numpy(x), lambda: ex.run(x)], repeat)
        n_matmul = sum(op.type == "matmul" for op in prog.block.ops)
        print(f"(a) seed value+grad of (x @ x.T).sum(), x 1000x1000, {label} passes: numpy {t_np * 1e3:.2f} ms, "
              f"static {t_static * 1e3:.2f} ms, ratio {t_static / t_np:.3f}x (target <= 0.5x); "
              f"matmuls left in the program: {n_matmul}")


# ---------------------------------------------------------------- (b) MLP training step
SIZES = (784, 512, 512, 10)
BATCH = 128
LR = 0.01


def mlp_params(rng):
    ps = []
    for i, o in zip(SIZES[:-1], SIZES[1:]):
        ps.append((rng.standard_normal((i, o)) / np.sqrt(i)).astype("float32"))
        ps.append(np.zeros((o,), "float32"))
    return ps


def mlp_loss(x, y, params):
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = d2s.relu(h)
    logp = d2s.log_softmax(h, axis=-1)
    return -(logp * y).sum() / BATCH


def mlp_program(param_arrays):
    b = ProgramBuilder()
    with b:
        x = b.add_input((BATCH, SIZES[0]), "float32")
        y = b.add_input((BATCH, SIZES[-1]), "float32")
        sym = [b.param(d2s.tensor(p, requires_grad=True)) for p in param_arrays]
        loss = mlp_loss(x, y, sym)
        grads = d2s.grad(loss, sym)
        with d2s.no_grad():
            new = [p - LR * g for p, g in zip(sym, grads)]
        b.program.outputs = [b.var_of(loss)] + [b.var_of(t) for t in new]
    b.program.block.outputs = list(b.program.outputs)
    return b.program


def mlp_numpy_step(x, y, params):
    W1, b1, W2, b2, W3, b3 = params
    z1 = x @ W1 + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ W2 + b2
    h2 = np.maximum(z2, 0)
    z3 = h2 @ W3 + b3
    m = z3.max(axis=1, keepdims=True)
    e = np.exp(z3 - m)
    s = e.sum(axis=1, keepdims=True)
    logp = z3 - m - np.log(s)
    loss = -(logp * y).sum() / BATCH
    dz3 = (e / s * y.sum(axis=1, keepdims=True) - y) / BATCH
    dW3 = h2.T @ dz3
    db3 = dz3.sum(0)
    dz2 = (dz3 @ W3.T) * (z2 > 0)
    dW2 = h1.T @ dz2
    db2 = dz2.sum(0)
    dz1 = (dz2 @ W2.T) * (z1 > 0)
    dW1 = x.T @ dz1
    db1 = dz1.sum(0)
    return [loss] + [p - LR * g for p, g in zip(params, (dW1, db1, dW2, db2, dW3, db3))]


def eager_step(x, y, params):
    ts = [d2s.tensor(p, requires_grad=True) for p in params]
    loss = mlp_loss(d2s.tensor(x), d2s.tensor(y), ts)
    loss.backward()
    return [loss.numpy()] + [(t - LR * t.grad).numpy() for t in ts]


def traced_peak(fn):
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def bench_mlp(repeat):
    rng = np.random.default_rng(1)
    params = mlp_params(rng)
    x = rng.standard_normal((BATCH, SIZES[0])).astype("float32")
    y = np.eye(SIZES[-1], dtype="float32")[rng.integers(0, SIZES[-1], BATCH)]
    prog = optimize(mlp_program(params))
    feed = dict(zip(prog.params, params))
    ex = Executor(prog, params=feed)
    out, ref = ex.run(x, y), mlp_numpy_step(x, y, params)
    for a, b in zip(out, ref):
        assert np.allclose(a, b, rtol=1e-3, atol=1e-5), np.abs(a - b).max()
    interp = Executor(prog, params=feed, mode="interp")
    t_np, t_static, t_interp = best_time([lambda: mlp_numpy_step(x, y, params), lambda: ex.run(x, y),
                                          lambda: interp.run(x, y)], repeat, number=5)
    print(f"(b) MLP 784-512-512-10 training step, batch 128: numpy {t_np * 1e3:.3f} ms, static "
          f"({ex.mode}) {t_static * 1e3:.3f} ms, ratio {t_static / t_np:.3f}x (target <= 1.05x); "
          f"interpreter {t_interp * 1e3:.3f} ms ({t_interp / t_np:.3f}x); {len(prog.block.ops)} ops")
    plan = prog.annotations["memory_plan"]
    eager_peak = traced_peak(lambda: eager_step(x, y, params))
    static_peak = traced_peak(lambda: ex.run(x, y))
    numpy_peak = traced_peak(lambda: mlp_numpy_step(x, y, params))
    mb = 1 / 2 ** 20
    print(f"    peak traced memory: eager d2s {eager_peak * mb:.2f} MiB, static {static_peak * mb:.2f} MiB "
          f"({static_peak / eager_peak:.2f}x eager), hand-written numpy {numpy_peak * mb:.2f} MiB; "
          f"memory plan (intermediates): planned {plan['planned_peak_bytes'] * mb:.2f} MiB, "
          f"freed-without-reuse {plan['freed_peak_bytes'] * mb:.2f} MiB, "
          f"no-reuse {plan['no_reuse_peak_bytes'] * mb:.2f} MiB, {len(plan['reuse'])} buffers reused")
    return t_static / t_np, static_peak / eager_peak


# ---------------------------------------------------------------- (c) parallel executor
def two_matmuls_program(n):
    z = d2s.tensor(np.zeros((n, n), "float32"))
    return d2s.static.build_program(lambda a, b, c, d: (a @ b, c @ d), z, z, z, z)


def bench_parallel(repeat):
    n = 1500
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((n, n)).astype("float32") for _ in range(4)]
    prog = two_matmuls_program(n)
    serial = Executor(prog)
    par = Executor(prog, parallel=True, num_threads=2)
    for a, b in zip(serial.run(*xs), par.run(*xs)):
        assert np.allclose(a, b, rtol=1e-4, atol=1e-3)
    t_serial, t_par = best_time([lambda: serial.run(*xs), lambda: par.run(*xs)], repeat)
    par.close()
    print(f"(c) two independent {n}x{n} matmuls, single-threaded BLAS: serial {t_serial * 1e3:.1f} ms, "
          f"parallel (2 threads) {t_par * 1e3:.1f} ms, speedup {t_serial / t_par:.2f}x "
          f"on {os.cpu_count()} cores")
    return t_serial / t_par


def run_parallel_in_subprocess(repeat):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    r = subprocess.run([sys.executable, __file__, "--part-c", "--repeat", str(repeat)], env=env,
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    if r.returncode:
        sys.stdout.write(r.stderr)


# ---------------------------------------------------------------- (d) control flow
N_ITER = 200


def loop_numpy(x):
    """The loop of (d) written in plain numpy (the floor static code is measured against)."""
    i = 0
    half, one, zero = np.float32(0.5), np.float32(1.0), np.float32(0.0)
    while i < N_ITER:
        x = x * half - one if x.sum() > zero else x * half + one
        i += 1
    return x


def bench_control_flow(repeat):
    try:
        from d2s.static import control_flow  # noqa: F401
        cond, while_loop = d2s.cond, d2s.while_loop
    except (ImportError, AttributeError) as e:
        print(f"(d) control-flow loop: skipped (d2s.cond / d2s.while_loop not available yet: {e})")
        return None

    def loop(x):
        def body(i, v):
            v = cond(v.sum() > 0, lambda v: v * 0.5 - 1.0, lambda v: v * 0.5 + 1.0, v)
            return i + 1, v

        return while_loop(lambda i, v: i < N_ITER, body, (d2s.tensor(0), x))[1]

    x = np.random.default_rng(3).standard_normal(16).astype("float32")
    prog = optimize(d2s.static.build_program(loop, d2s.tensor(x)))
    ex = Executor(prog)  # codegen: the program compiled into one Python function
    interp = Executor(prog, mode="interp")
    ref = loop(d2s.tensor(x)).numpy()
    for got in (ex.run(x)[0], interp.run(x)[0], loop_numpy(x)):
        assert np.allclose(got, ref, rtol=1e-5)
    t_eager, t_static, t_interp, t_np = best_time(
        [lambda: loop(d2s.tensor(x)), lambda: ex.run(x), lambda: interp.run(x), lambda: loop_numpy(x)],
        repeat, number=3)
    us = 1e6 / N_ITER
    print(f"(d) while_loop of {N_ITER} tensor-predicate conds on (16,), per iteration: static ({ex.mode}) "
          f"{t_static * us:.2f} us, interpreter {t_interp * us:.2f} us, eager {t_eager * us:.2f} us, "
          f"plain numpy {t_np * us:.2f} us")
    print(f"    static vs eager: {t_eager / t_static:.2f}x faster (target >= 3x); static / numpy "
          f"{t_static / t_np:.2f}x (target <= 1.5x); interpreter vs eager {t_eager / t_interp:.2f}x; "
          f"codegen vs interpreter {t_interp / t_static:.2f}x faster")
    return t_eager / t_static


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--part-c", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    repeat = args.repeat or (3 if args.quick else 10)
    if args.part_c:
        bench_parallel(repeat)
        return
    bench_seed(repeat)
    bench_mlp(repeat)
    run_parallel_in_subprocess(max(3, repeat // 2))
    bench_control_flow(repeat)


if __name__ == "__main__":
    main()
