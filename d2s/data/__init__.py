"""Data loading (``d2s.data``, PyTorch's ``torch.utils.data``): datasets, samplers, collation and
``DataLoader`` with worker processes (``num_workers``), PyTorch's batch order and per-worker
seeding."""
from .collate import default_collate, default_convert
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .loader import DataLoader
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)
from .worker import WorkerInfo, get_worker_info

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split", "DataLoader", "default_collate", "default_convert", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "get_worker_info",
           "WorkerInfo"]
