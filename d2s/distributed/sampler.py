"""``DistributedSampler``: each rank iterates over its own shard of a dataset."""
import numpy as np

from . import comm


class DistributedSampler:
    """The indices of ``dataset`` that this rank trains on, for ``DataLoader(sampler=...)``.

    As PyTorch's: the (optionally shuffled) index list is padded by repeating its start so it
    divides evenly (or cut, with ``drop_last``), and rank ``r`` takes every ``num_replicas``-th
    index from ``r``. Every rank draws the same permutation from ``seed + epoch``: call
    :meth:`set_epoch` at the start of each epoch for a new order.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            comm.init()
        self.num_replicas = comm.world_size() if num_replicas is None else int(num_replicas)
        self.rank = comm.rank() if rank is None else int(rank)
        if not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"DistributedSampler: rank {self.rank} is not in [0, {self.num_replicas})")
        self.dataset, self.shuffle, self.seed, self.drop_last = dataset, bool(shuffle), int(seed), bool(drop_last)
        self.epoch = 0
        n = len(dataset)
        self.num_samples = n // self.num_replicas if drop_last else -(-n // self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __len__(self):
        return self.num_samples

    def __iter__(self):
        n = len(self.dataset)
        order = (np.random.default_rng(self.seed + self.epoch).permutation(n) if self.shuffle
                 else np.arange(n)).tolist()
        if self.total_size > n:
            order += (order * (-(-self.total_size // max(n, 1))))[:self.total_size - n]
        order = order[:self.total_size]
        return iter(order[self.rank:self.total_size:self.num_replicas])
