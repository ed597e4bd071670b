"""Data-parallel training of an MLP on MPI.

    mpiexec -n 2 python examples/train_data_parallel.py [--static] [--steps N]

Each rank trains a replica of the same model on its own shard of every global batch
(``DistributedSampler``); ``DistributedDataParallel`` averages the gradients across ranks
during backward, so every replica takes the same step and the parameters stay identical.
With ``--static`` the model's forward is converted with ``d2s.jit.to_static`` first.
Run with one process (``python examples/train_data_parallel.py``) it trains alone.
"""
import argparse

import numpy as np

import d2s
import d2s.distributed as dist
import d2s.nn.functional as F
from d2s import nn, optim
from d2s.data import DataLoader, TensorDataset


def make_data(n=512, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 16)).astype(np.float32)
    w = rng.standard_normal((16, 4)).astype(np.float32)
    y = (x @ w).argmax(axis=1)
    return TensorDataset(d2s.tensor(x), d2s.tensor(y))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--static", action="store_true", help="convert the model's forward with to_static")
    ap.add_argument("--steps", type=int, default=60, help="optimizer steps")
    ap.add_argument("--batch", type=int, default=64, help="global batch size (split across ranks)")
    a = ap.parse_args(argv)

    dist.init()
    rank, size = dist.rank(), dist.world_size()
    d2s.manual_seed(rank)  # different initial weights per rank: the broadcast makes them equal
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    if a.static:
        model = d2s.jit.to_static(model)
    ddp = dist.DistributedDataParallel(model)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = make_data()
    sampler = dist.DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=a.batch // size, sampler=sampler, drop_last=True)
    step, epoch = 0, 0
    while step < a.steps:
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()
            opt.step()
            step += 1
            if rank == 0 and step % 20 == 0:
                print(f"step {step:3d}  loss {float(loss):.4f}  (rank 0 of {size})")
            if step == a.steps:
                break
        epoch += 1
    checksum = d2s.tensor(sum(float(p.sum()) for p in model.parameters()))
    total = float(dist.all_reduce(d2s.tensor(checksum.numpy().copy()), op="sum"))
    if rank == 0:
        same = abs(total - size * float(checksum)) < 1e-3 * max(1.0, abs(total))
        print(f"parameters identical on all {size} ranks: {same}")


if __name__ == "__main__":
    main()
