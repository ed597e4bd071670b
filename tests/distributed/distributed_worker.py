"""The program ``tests/distributed/test_distributed.py`` runs under ``mpiexec -n 2`` (and in-process for
the single-process reference): 20 training steps of a small MLP on a fixed global batch."""
import sys
import time

import numpy as np

import d2s
import d2s.distributed as dist
import d2s.nn.functional as F
from d2s import nn, optim

STEPS, GLOBAL_BATCH = 20, 16


def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((STEPS, GLOBAL_BATCH, 8)), rng.integers(0, 3, (STEPS, GLOBAL_BATCH))


def train(rank=0, size=1, wrap=None, static=False):
    """Parameters (numpy) after STEPS steps on this rank's shard of every global batch."""
    d2s.manual_seed(rank)  # replicas start different; DistributedDataParallel broadcasts rank 0's
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3)).double()
    if static:
        model = d2s.jit.to_static(model)
    net = wrap(model) if wrap else model
    opt = optim.Adam(model.parameters(), lr=0.05)
    xs, ys = data()
    for s in range(STEPS):
        x = xs[s].reshape(size, -1, 8)[rank]
        y = ys[s].reshape(size, -1)[rank]
        opt.zero_grad()
        F.cross_entropy(net(d2s.tensor(x)), d2s.tensor(y)).backward()
        opt.step()
    return [p.numpy() for p in model.parameters()]


def main(mode, out):
    if mode in ("eager", "static"):
        dist.init()
        params = train(dist.rank(), dist.world_size(), dist.DistributedDataParallel, static=mode == "static")
        np.savez(f"{out}_{dist.rank()}.npz", *params)
    elif mode == "raise":
        dist.init()
        if dist.rank() == 1:
            raise RuntimeError("rank 1 fails on purpose")
        dist.all_reduce(d2s.ones([3]))
    elif mode == "mismatch":  # rank 1 builds a wider first layer
        dist.init()
        model = nn.Sequential(nn.Linear(8, 16 + dist.rank()), nn.Tanh())
        try:
            dist.DistributedDataParallel(model)
        except dist.DistributedError as e:
            sys.stdout.write(f"rank {dist.rank()}: {e}\n")  # one write: the ranks share a pipe
            sys.stdout.flush()
    elif mode == "stall":
        dist.init(timeout=1.0)
        if dist.rank() == 1:
            time.sleep(60)  # never joins the collective in time (the abort ends this rank too)
            return
        dist.all_reduce(d2s.ones([3]))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
