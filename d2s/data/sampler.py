"""Samplers: the order in which a ``DataLoader`` visits a map-style dataset, as PyTorch's.

Random samplers draw with numpy's generators: given no ``generator``, each pass draws a fresh
seed from d2s's global generator (so
``d2s.manual_seed`` makes the order repeatable, as ``torch.manual_seed`` does for PyTorch's);
a ``numpy.random.Generator`` passed as ``generator`` is used as it is, a ``d2s.Generator``
through its own numpy draws. The orders are
PyTorch's in structure (a permutation per pass, batches of 32 draws with replacement, ...),
not its numbers: the two libraries' generators differ.

Samplers are generators (their ``__iter__`` draws on the first ``next``), as PyTorch's are, so
a loader that makes an iterator draws its worker seed first and the order second.
"""
import itertools

import numpy as np

from d2s_runtime.ops.creation import RNG
from d2s_runtime.ops.random import Generator as _Generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


def draw_seed(generator=None):
    """A 63-bit seed from ``generator`` (or d2s's global generator), as PyTorch's samplers and
    loaders draw ``torch.empty((), dtype=torch.int64).random_()``."""
    if generator is not None:
        return int(as_numpy_generator(generator).integers(0, 2 ** 63 - 1))
    with RNG.lock:
        return int(RNG.get(np).integers(0, 2 ** 63 - 1))


def as_numpy_generator(generator):
    """The numpy generator behind ``generator=`` (None: a fresh one seeded from d2s's generator)."""
    if generator is None:
        return np.random.default_rng(draw_seed())
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, _Generator):  # a d2s.Generator (torch.Generator's counterpart): its own draws
        return generator.draws(np)
    raise TypeError(f"generator= must be a d2s.Generator, a numpy.random.Generator (e.g. np.random.default_rng(42)) "
                    f"or None (d2s's global generator, seeded by d2s.manual_seed), got {type(generator).__name__}")


class Sampler:
    """Base class: an iterable of dataset indices (or of lists of indices, for batch samplers)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation each pass; with ``replacement``, ``num_samples`` independent draws.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw with replacement.
        num_samples: how many indices per pass (default ``len(data_source)``); without
            replacement, more than that repeats whole permutations.
        generator: a ``d2s.Generator`` or ``numpy.random.Generator``, or None for a seed from d2s's generator
            drawn at each pass.
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")
        if generator is not None:
            as_numpy_generator(generator)  # refuse a wrong type now, not at the first pass

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        gen = as_numpy_generator(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from gen.integers(0, n, size=32).tolist()
            yield from gen.integers(0, n, size=self.num_samples % 32).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from gen.permutation(n).tolist()
            yield from gen.permutation(n).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a new one each pass)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        gen = as_numpy_generator(self.generator)
        for i in gen.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (with
    replacement by default; without, each index at most once).

    Args:
        weights: one non-negative weight per index (need not sum to 1).
        num_samples: how many indices per pass.
        replacement: draw with replacement.
        generator: a ``d2s.Generator`` or ``numpy.random.Generator``, or None (d2s's generator).
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise RuntimeError("WeightedRandomSampler: weights must be finite, non-negative and not all zero")
        if not replacement and num_samples > np.count_nonzero(w):
            raise RuntimeError("WeightedRandomSampler: cannot sample n_sample > prob_dist.size(-1) samples "
                               "without replacement")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        gen = as_numpy_generator(self.generator)
        p = self.weights / self.weights.sum()
        yield from gen.choice(len(p), size=self.num_samples, replace=self.replacement, p=p).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter
    unless ``drop_last``)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*[it] * self.batch_size):
                yield [*batch]
        else:
            batch = [*itertools.islice(it, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(it, self.batch_size)]

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class _InfiniteConstantSampler(Sampler):
    """None forever: an iterable dataset's "indices" (each asks for the next item)."""

    def __iter__(self):
        while True:
            yield None
