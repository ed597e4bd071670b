"""Microbenchmarks that calibrate the graph backend's design on a GPU (issue 31; run by
``benchmarks/gpu_check.sh``):

* ``node_us``: microseconds per node of a graph of N tiny kernels (launch cost per op replayed);
* ``while_iter_us``: microseconds per iteration of a 200-step WHILE node with a one-kernel body
  and the set-condition kernel;
* ``setc_cubin``: whether the set-condition kernel (``cudaGraphSetConditional``) loads as a
  cubin through the driver (the backend loads it as PTX, as NeMo does);
* ``gemm_in_while``: the cuBLAS shim inside a WHILE body (20 steps of ``h = tanh(h @ W)``),
  its error against cupy's own product, and its time.

    python benchmarks/gpu_calibrate.py [--versions] [--out FILE]

Each check is timed and reported on its own; one that fails records its error and the next
ones still run. Without cupy and a GPU it says so and exits with status 2.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runtime"))


def versions():
    out = {"python": sys.version.split()[0]}
    for name in ("numpy", "cupy", "torch", "jax", "numba"):
        try:
            out[name] = __import__(name).__version__
        except Exception as e:  # noqa: BLE001
            out[name] = f"missing ({type(e).__name__})"
    try:
        from cuda.bindings import runtime as rt
        out["cuda_driver"] = rt.cudaDriverGetVersion()[1]
        out["cuda_runtime"] = rt.cudaRuntimeGetVersion()[1]
    except Exception as e:  # noqa: BLE001
        out["cuda_bindings"] = f"missing ({e})"
    try:
        from d2s_runtime.gpu.nvrtc import version
        out["nvrtc"] = ".".join(map(str, version()))
    except Exception as e:  # noqa: BLE001
        out["nvrtc"] = f"missing ({e})"
    try:
        import cupy
        p = cupy.cuda.runtime.getDeviceProperties(0)
        out["gpu"] = p["name"].decode()
        out["compute_capability"] = cupy.cuda.Device().compute_capability
    except Exception as e:  # noqa: BLE001
        out["gpu"] = f"none ({e})"
    return out


def _timed(backend, graph, n=50):
    import cupy
    for _ in range(3):
        backend.launch(graph)
    cupy.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(n):
        backend.launch(graph)
    cupy.cuda.Device().synchronize()
    return (time.perf_counter() - t) / n


def node_us(backend, n_nodes=200):
    xp = backend.xp
    x = xp.zeros(16, dtype="float32")

    def record(rec):
        for _ in range(n_nodes):
            rec.op(lambda a: xp.add(a, 1.0, out=a), x)

    graph, _ = backend.capture(record)
    return _timed(backend, graph) / n_nodes * 1e6


def while_iter_us(backend, steps=200):
    xp = backend.xp
    i = xp.zeros((), dtype="int64")
    s = xp.zeros(16, dtype="float32")

    def record(rec):
        rec.op(lambda c: xp.multiply(c, 0, out=c), i)
        rec.while_loop(lambda: rec.op(lambda c: c < steps, i),
                       lambda: (rec.op(lambda a: xp.add(a, 1.0, out=a), s), rec.op(lambda c: xp.add(c, 1, out=c), i)))

    graph, _ = backend.capture(record)
    t = _timed(backend, graph)
    backend.launch(graph)
    assert int(i.get()) == steps, int(i.get())
    return t / steps * 1e6


def setc_cubin():
    import cupy
    from cuda.bindings import driver
    from d2s_runtime.gpu.kernels import SET_CONDITION
    from d2s_runtime.gpu.nvrtc import compile_source
    cubin = compile_source(SET_CONDITION, arch=f"sm_{cupy.cuda.Device().compute_capability}", target="cubin")
    err, module = driver.cuModuleLoadData(cubin)
    return {"loads": int(err) == 0, "error": str(err)}


def gemm_in_while(backend, steps=20, n=256):
    xp = backend.xp
    rng = xp.random.default_rng(0) if hasattr(xp.random, "default_rng") else xp.random
    W = (rng.standard_normal((n, n), dtype="float32") / n ** 0.5).astype("float32")
    h0 = rng.standard_normal((32, n), dtype="float32").astype("float32")
    h = h0.copy()
    i = xp.zeros((), dtype="int64")

    def record(rec):
        rec.op(lambda c: xp.multiply(c, 0, out=c), i)
        rec.copy(h, h0)

        def body():
            new = rec.op(lambda a: xp.tanh(rec.gemm(a, W)), h)
            rec.copy(h, new)
            rec.op(lambda c: xp.add(c, 1, out=c), i)

        rec.while_loop(lambda: rec.op(lambda c: c < steps, i), body)

    graph, _ = backend.capture(record)
    t = _timed(backend, graph, n=20)
    backend.launch(graph)
    want = h0.copy()
    for _ in range(steps):
        want = xp.tanh(want @ W)
    err = float(xp.abs(h - want).max().get())
    return {"ms": t * 1e3, "max_abs_err": err}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--versions" in argv:
        print(json.dumps(versions(), indent=1))
        return 0
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise RuntimeError("no CUDA GPU")
    except Exception as e:  # noqa: BLE001
        print(f"gpu_calibrate: needs cupy and a CUDA GPU ({type(e).__name__}: {e})")
        return 2
    from d2s_runtime.gpu.cuda import cuda_backend
    backend = cuda_backend()
    results = {}
    for name, fn in (("node_us", lambda: node_us(backend)), ("while_iter_us", lambda: while_iter_us(backend)),
                     ("setc_cubin", setc_cubin), ("gemm_in_while", lambda: gemm_in_while(backend))):
        t = time.perf_counter()
        try:
            results[name] = fn()
        except Exception as e:  # noqa: BLE001 - each check on its own
            results[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        print(f"{name}: {results[name]} ({time.perf_counter() - t:.1f} s)", flush=True)
    if "--out" in argv:
        with open(argv[argv.index("--out") + 1], "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
