"""d2s on a GPU (cupy): eager and ``to_static`` against torch CUDA eager where torch has CUDA,
on the workloads of ``benchmarks/bench_native.py`` (the 200-step control loop, the MLP training
step, the Elman RNN forward+backward, the seed ``(x @ x.T).sum()`` with its gradient).

    python benchmarks/bench_gpu.py

Each time is the median of 30 calls (10 for d2s eager's control loop and RNN), each followed by
a device synchronize, after 5 untimed calls. Ratios are from this one run; nothing is asserted.
Without cupy and a CUDA GPU it says so and exits.
"""
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


def main():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise RuntimeError("no CUDA GPU")
    except Exception as e:  # no cupy, no driver, no GPU
        print(f"bench_gpu: needs cupy and a CUDA GPU ({type(e).__name__}: {e})")
        return None
    import d2s
    try:
        import torch
        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    d2s.set_default_device("gpu")
    sync = cupy.cuda.Device().synchronize
    name_of_gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{name_of_gpu}; cupy {cupy.__version__}; torch {torch.__version__ if torch else '(no CUDA torch)'}")
    print("| case | d2s eager (cupy) | d2s to_static (cupy) | torch CUDA eager | to_static / torch |")
    print("|---|---|---|---|---|")
    rows = {}
    functions = B.d2s_functions()
    for name in ("control", "mlp", "rnn", "seed"):
        inp = inputs_of(name)
        args = B._d2s_args(name, inp)
        fn, static = functions[name], d2s.jit.to_static(functions[name])
        with d2s.no_grad():
            eager = median_ms(lambda: fn(*args), sync, n=10 if name in ("control", "rnn") else 30)
            static(*args)
            static(*args)  # the second call runs the optimized program
            converted = median_ms(lambda: static(*args), sync)
        peer = median_ms(B.torch_runner(name, inp, device="cuda"), torch.cuda.synchronize) if torch else None
        rows[name] = (eager, converted, peer)
        peer_cells = f"{peer:.2f} ms | {converted / peer:.2f}x" if peer else "- | -"
        print(f"| {name} | {eager:.2f} ms | {converted:.2f} ms | {peer_cells} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
