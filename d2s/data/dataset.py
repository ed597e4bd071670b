"""Datasets, as PyTorch's: the ``Dataset`` and ``IterableDataset`` protocols, ``TensorDataset``,
``StackDataset``, ``ConcatDataset``, ``ChainDataset``, ``Subset`` and ``random_split``."""
import bisect
import itertools
import math
import warnings

import numpy as np

from d2s_runtime.device import xp_of

from ..tensor import Tensor, tensor
from .sampler import as_numpy_generator

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split"]


class Dataset:
    """A map-style dataset: ``len(ds)`` samples, ``ds[i]`` the i-th (any nesting of tuples,
    lists and dicts of tensors, arrays and numbers). ``ds1 + ds2`` concatenates."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: subclasses define ``__iter__``. With ``num_workers > 0``
    every worker iterates its own copy of the whole stream unless ``__iter__`` shards it with
    ``d2s.data.get_worker_info()`` (as in PyTorch). ``ds1 + ds2`` chains."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the i-th rows of tensors (or arrays) sharing their first dimension:
    ``TensorDataset(x, y)[i] == (x[i], y[i])``."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        ts = [t if isinstance(t, Tensor) else tensor(t) for t in tensors]
        for t in ts:
            if t.is_symbolic:
                raise TypeError("TensorDataset needs concrete tensors, not symbolic ones")
            if t.ndim == 0:
                raise ValueError("TensorDataset: every tensor needs a first (sample) dimension")
        n = {t.shape[0] for t in ts}
        if len(n) != 1:
            raise ValueError(f"TensorDataset: tensors differ in their first dimension (size mismatch between "
                             f"tensors): {[tuple(t.shape) for t in ts]}")
        self.tensors = tuple(ts)

    def __len__(self):
        return self.tensors[0].shape[0]

    # Rows are cut from the arrays directly, not through d2s ops: a loader's background
    # thread calls this, where an op would be recorded by nothing but costs dispatch. A tensor
    # that requires grad is indexed by the op (as in PyTorch, its rows keep its history).
    def __getitem__(self, index):
        return tuple(t[index] if t.requires_grad else Tensor._make(t.array[index]) for t in self.tensors)

    def get_batch(self, indices):
        """The samples at ``indices`` already collated (one gather per tensor), as
        ``default_collate`` of the rows would give them: a list of batched tensors."""
        out = []
        idx = np.asarray(indices, dtype=np.int64)
        for t in self.tensors:
            xp = xp_of(t.array)
            if t.requires_grad:
                out.append(t[Tensor._make(idx if xp is np else xp.asarray(idx))])
                continue
            out.append(Tensor._make(t.array[idx if xp is np else xp.asarray(idx)]))
        return out


class StackDataset(Dataset):
    """Samples of several datasets of one length side by side: ``StackDataset(a, b)[i] ==
    (a[i], b[i])``, or ``StackDataset(x=a, y=b)[i] == {'x': a[i], 'y': b[i]}``."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or ``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        datasets = args or kwargs
        values = list(datasets.values()) if kwargs else list(args)
        self._length = len(values[0])
        if any(self._length != len(d) for d in values):
            raise ValueError("Size mismatch between datasets")
        self.datasets = datasets

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        k = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[k][idx if k == 0 else idx - self.cumulative_sizes[k - 1]]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after the other (chained lazily)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        inner = getattr(self.dataset, "__getitems__", None)
        if callable(inner):
            return inner([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping random subsets of the given lengths, or of the
    given fractions (summing to 1; the remainder spread one by one over the first subsets,
    as PyTorch does).

    Args:
        dataset: a map-style dataset.
        lengths: sizes, or fractions summing to 1.
        generator: a ``d2s.Generator`` or ``numpy.random.Generator``, or None for d2s's generator
            (``d2s.manual_seed`` makes the split repeatable).

    Returns:
        A list of :class:`Subset`.
    """
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(len(dataset) * frac))
        for i in range(len(dataset) - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
        for i, n in enumerate(lengths):
            if n == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = as_numpy_generator(generator).permutation(sum(lengths)).tolist()
    return [Subset(dataset, indices[end - n:end]) for end, n in zip(itertools.accumulate(lengths), lengths)]
