"""Data-parallel training throughput on MPI: 1 process vs 2 processes.

    python benchmarks/bench_distributed.py [--steps N] [--static]

Trains the MLP of ``bench_static.py`` (784-512-512-10, softmax cross-entropy, SGD) with
``d2s.distributed.DistributedDataParallel`` at a global batch of 128 split across the ranks,
launched with ``mpiexec -n 1`` and ``mpiexec -n 2`` (one BLAS thread per process, so the two
runs use one and two cores). It prints samples/s for each, the speed-up, and the fraction of
the step time rank 0 spent waiting for the gradient all-reduce to finish.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def worker(steps, static):
    import d2s
    import d2s.distributed as dist
    import d2s.nn.functional as F
    from d2s import nn, optim

    dist.init()
    rank, size = dist.rank(), dist.world_size()
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    if static:
        model = d2s.jit.to_static(model)
    ddp = dist.DistributedDataParallel(model)
    opt = optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(rank)
    local = 128 // size
    x = d2s.tensor(rng.standard_normal((local, 784)).astype(np.float32))
    y = d2s.tensor(rng.integers(0, 10, local))

    def step():
        opt.zero_grad()
        F.cross_entropy(ddp(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    dist.barrier()
    ddp.comm_seconds = 0.0
    t = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    elapsed = time.perf_counter() - t
    if rank == 0:
        print(json.dumps({"size": size, "samples_per_s": steps * 128 / elapsed,
                          "comm_fraction": ddp.comm_seconds / elapsed}))


def launch(n, steps, static):
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(root / "runtime"), env.get("PYTHONPATH", "")])
    mpiexec = Path(sys.executable).parent / "mpiexec"
    cmd = [str(mpiexec) if mpiexec.exists() else "mpiexec", "-n", str(n), sys.executable, __file__,
           "--worker", "--steps", str(steps)] + (["--static"] if static else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"mpiexec -n {n} failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40, help="timed steps per run")
    ap.add_argument("--static", action="store_true", help="convert the model with to_static")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.steps, a.static)
    one, two = launch(1, a.steps, a.static), launch(2, a.steps, a.static)
    form = "to_static" if a.static else "eager"
    print(f"MLP 784-512-512-10, global batch 128, {form}, {a.steps} steps, one BLAS thread per process")
    for r in (one, two):
        print(f"  {r['size']} process(es): {r['samples_per_s']:8.0f} samples/s, "
              f"waiting on all-reduce {100 * r['comm_fraction']:4.1f}% of the step time")
    print(f"  speed-up 2 vs 1: {two['samples_per_s'] / one['samples_per_s']:.2f}x")


if __name__ == "__main__":
    main()
