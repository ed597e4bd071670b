"""Data-parallel training over MPI (``pip install 'd2s[distributed]'``, run with ``mpiexec``).

One process per model replica, as Horovod and mpi4jax do: each rank trains on its own shard
of the data (``DistributedSampler``), and ``DistributedDataParallel`` averages the parameter
gradients of every backward pass across ranks, so all replicas take the same optimizer step::

    import d2s, d2s.distributed as dist
    dist.init()
    model = dist.DistributedDataParallel(Net())           # broadcasts rank 0's parameters
    loader = d2s.data.DataLoader(data, 32, sampler=dist.DistributedSampler(data))
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()                    # gradients averaged across ranks
        opt.step()

Run: ``mpiexec -n 2 python train.py``. ``mpi4py`` and an MPI library (the ``mpich`` wheel) come
with the ``distributed`` extra; without them, :func:`init` says what to install.
"""
from .comm import (DistributedError, DistributedTimeoutError, all_reduce, barrier, broadcast,
                   broadcast_parameters, destroy_process_group, get_rank, get_world_size, init, init_process_group,
                   is_available, is_initialized, rank, world_size)
from .ddp import DistributedDataParallel
from .sampler import DistributedSampler

__all__ = ["init", "is_available", "is_initialized", "rank", "world_size", "all_reduce", "broadcast",
           "broadcast_parameters", "barrier", "DistributedDataParallel", "DistributedSampler",
           "DistributedError", "DistributedTimeoutError", "init_process_group", "destroy_process_group", "get_rank",
           "get_world_size"]
