"""d2s on a GPU (cupy) against torch and JAX, on the workloads of ``benchmarks/bench_native.py``
(the 200-step control loop, the MLP training step, the Elman RNN forward+backward, the seed
``(x @ x.T).sum()`` with its gradient), all columns from one process:

* d2s Python: ``to_static`` on cupy (generated Python launching each op);
* d2s graph: ``to_static(backend="graph")`` (the program replayed as a CUDA graph,
  ``d2s_runtime/gpu``); ``backend_report()`` is printed where it did not capture;
* torch eager (CUDA), ``torch.compile(mode="reduce-overhead")`` (CUDA graphs where it
  captures; skipped with ``--no-compile``), and ``jax.jit`` where JAX has a GPU.

    python benchmarks/bench_gpu.py [--quick] [--no-compile] [--json FILE]

Each time is the median of 30 calls (``--quick``: 10), each followed by a device synchronize,
after 5 untimed calls. Ratios are from this one run; nothing is asserted. Without cupy and a
CUDA GPU it says so and exits with status 2.
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import bench_native as B  # noqa: E402


def median_ms(f, sync, n=30):
    for _ in range(5):
        f()
        sync()
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        sync()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e3


def inputs_of(name):
    if name == "control":
        return {"x": np.linspace(-1, 1, 16).astype("float32"), "n": np.array(200, "int64")}
    return {"mlp": B.mlp_inputs, "rnn": B.rnn_inputs, "seed": B.seed_inputs}[name]()


def _peers():
    try:
        import torch
        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    try:
        import jax
        jax = jax if any(d.platform == "gpu" for d in jax.devices()) else None
    except Exception:  # noqa: BLE001 - no JAX, or no GPU backend for it
        jax = None
    return torch, jax


def _cell(ms):
    return "-" if ms is None else f"{ms:.3f} ms"


def _try(label, fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - a column that cannot run says why and the rest go on
        print(f"  ({label}: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''})", flush=True)
        return None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    n = 10 if "--quick" in argv else 30
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise RuntimeError("no CUDA GPU")
    except Exception as e:  # no cupy, no driver, no GPU
        print(f"bench_gpu: needs cupy and a CUDA GPU ({type(e).__name__}: {e})")
        return 2
    import d2s
    torch, jax = _peers()
    d2s.set_default_device("gpu")
    sync = cupy.cuda.Device().synchronize
    name_of_gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{name_of_gpu}; cupy {cupy.__version__}; torch {torch.__version__ if torch else '(no CUDA torch)'}; "
          f"jax {jax.__version__ if jax else '(no GPU jax)'}")
    cols = ["d2s python", "d2s graph", "torch eager", "torch.compile r-o", "jax.jit"]
    print("| case | " + " | ".join(cols) + " | graph / torch eager |")
    print("|---" * (len(cols) + 2) + "|")
    rows = {}
    functions = B.d2s_functions()
    for name in ("control", "mlp", "rnn", "seed"):
        inp = inputs_of(name)
        args = B._d2s_args(name, inp)
        times = {}
        with d2s.no_grad():
            for col, backend in (("d2s python", None), ("d2s graph", "graph")):
                static = d2s.jit.to_static(functions[name], backend=backend)

                def run(static=static):
                    return static(*args)
                times[col] = _try(col, lambda: median_ms(run, sync, n))
                if backend == "graph" and static.backend_report() != "graph":
                    print(f"  ({name}: {static.backend_report()})", flush=True)
        if torch is not None:
            eager = B.torch_runner(name, inp, device="cuda")
            times["torch eager"] = _try("torch eager", lambda: median_ms(eager, torch.cuda.synchronize, n))
            if "--no-compile" not in argv:
                compiled = _try("torch.compile", lambda: torch.compile(B.torch_runner(name, inp, device="cuda"),
                                                                     mode="reduce-overhead"))
                if compiled is not None:
                    times["torch.compile r-o"] = _try("torch.compile", lambda: median_ms(
                        compiled, torch.cuda.synchronize, n))
        if jax is not None:
            jr = _try("jax.jit", lambda: B.jax_runner(name, inp))
            if jr is not None:
                times["jax.jit"] = _try("jax.jit", lambda: median_ms(jr, lambda: None, n))
        rows[name] = times
        g, te = times.get("d2s graph"), times.get("torch eager")
        ratio = f"{g / te:.2f}x" if g and te else "-"
        print(f"| {name} | " + " | ".join(_cell(times.get(c)) for c in cols) + f" | {ratio} |", flush=True)
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump({"gpu": name_of_gpu, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
