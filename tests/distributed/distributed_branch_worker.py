"""Run by ``tests/distributed/test_training.py`` under ``mpiexec -n 2`` (and in-process for the
reference): a converted model whose ranks take different branches, so a parameter may get a
gradient on one rank only, or on none."""
import sys

import numpy as np

import d2s
import d2s.distributed as dist
from d2s import nn, optim

# per step, the sign of each rank's data: which branch each rank takes
SIGNS = [(1, -1), (1, 1), (-1, -1), (1, -1), (1, 1)]


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos, self.neg, self.head = nn.Linear(3, 4), nn.Linear(3, 4), nn.Linear(4, 1)

    def forward(self, x):
        if x.sum() > 0:
            h = self.pos(x)
        else:
            h = self.neg(x)
        return self.head(d2s.tanh(h))


def shard(step, rank):
    rng = np.random.default_rng(100 * step + rank)
    return SIGNS[step][rank] * np.abs(rng.standard_normal((2, 3))) + 0.1 * SIGNS[step][rank]


def model():
    d2s.manual_seed(0)
    return Branchy().double()


def run_ddp(static):
    """Each step's (params, grad-is-None flags) on this rank, trained under DDP."""
    dist.init()
    net = model()
    if static:
        net = d2s.jit.to_static(net)
    ddp = dist.DistributedDataParallel(net)
    opt = optim.Adam(net.parameters(), lr=0.1)
    hist = []
    for step in range(len(SIGNS)):
        opt.zero_grad()
        (ddp(d2s.tensor(shard(step, dist.rank()))) ** 2).mean().backward()
        hist.append([p.grad is None for p in net.parameters()])
        opt.step()
        hist[-1] = (hist[-1], [p.numpy().copy() for p in net.parameters()])
    return hist


def reference(size=2):
    """The same steps in one process, eager, averaging each rank's gradient by hand (a
    parameter no rank reached keeps .grad None)."""
    net = model()
    opt = optim.Adam(net.parameters(), lr=0.1)
    params = list(net.parameters())
    hist = []
    for step in range(len(SIGNS)):
        per_rank = []
        for r in range(size):
            for p in params:
                p.grad = None
            (net(d2s.tensor(shard(step, r))) ** 2).mean().backward()
            per_rank.append([None if p.grad is None else p.grad.numpy().copy() for p in params])
        for k, p in enumerate(params):
            gs = [g[k] for g in per_rank if g[k] is not None]
            p.grad = d2s.tensor(sum(gs) / size) if gs else None
        hist.append([p.grad is None for p in params])
        opt.step()
        hist[-1] = (hist[-1], [p.numpy().copy() for p in params])
    return hist


if __name__ == "__main__":
    hist = run_ddp(sys.argv[1] == "static")
    out = sys.argv[2]
    flat = {}
    for s, (nones, ps) in enumerate(hist):
        flat[f"none_{s}"] = np.array(nones)
        for k, p in enumerate(ps):
            flat[f"p_{s}_{k}"] = p
    np.savez(f"{out}_{dist.rank()}.npz", **flat)
