"""``DataLoader``: batches prepared by a background thread while the model trains.

The pipeline is a producer thread and a bounded queue: the worker fetches and collates
batch k+1, k+2, ... (at most ``prefetch`` ready batches plus the one in hand) while the
consumer trains on batch k. Iteration that stops early (``break``, an exception, ``close()``)
stops the worker and joins it; an exception raised in the worker is re-raised in the
consumer, at the batch where it happened.
"""
import queue
import threading

import numpy as np

from d2s_runtime.device import xp_of
from d2s_runtime.ops.creation import RNG

from ..tensor import Tensor, tensor

_BATCH, _END, _ERROR = "batch", "end", "error"


def default_collate(samples):
    """Stack a list of samples into a batch: tensors and arrays are stacked on a new first
    dim, numbers become a 1-d tensor, and tuples, lists and dicts are collated field by field.

    Works on the arrays directly (no d2s ops), so it is safe in the worker thread.
    """
    first = samples[0]
    if isinstance(first, Tensor):
        if any(s.is_symbolic for s in samples):
            raise TypeError("DataLoader: a sample holds a symbolic tensor; datasets must return concrete data")
        xp = xp_of(first._data)
        return Tensor._make(xp.stack([s._data for s in samples]))
    if isinstance(first, np.ndarray):
        return tensor(np.stack(samples))
    if isinstance(first, (bool, int, float, np.generic)):
        return tensor(np.asarray(samples) if isinstance(first, np.generic) else list(samples))
    if isinstance(first, dict):
        return {k: default_collate([s[k] for s in samples]) for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("DataLoader: samples in one batch have different numbers of fields")
        fields = [default_collate(list(f)) for f in zip(*samples)]
        return tuple(fields) if isinstance(first, tuple) else fields
    if isinstance(first, str):
        return list(samples)
    raise TypeError(f"DataLoader cannot collate samples of type {type(first).__name__}; "
                    "pass collate_fn= to build batches yourself")


class DataLoader:
    """Iterate over ``dataset`` in batches, prepared in the background.

    Args:
        dataset: a :class:`Dataset` (``len`` and ``[i]``).
        batch_size: samples per batch; the last batch may be smaller unless ``drop_last``.
        shuffle: a new random order every epoch, drawn from d2s's generator
            (``d2s.manual_seed`` makes it repeatable).
        prefetch: how many ready batches the worker may keep ahead of the consumer; 0 loads
            synchronously in the calling thread.
        drop_last: drop a last batch smaller than ``batch_size``.
        collate_fn: turns a list of samples into a batch (default: :func:`default_collate`).
        sampler: an iterable of dataset indices to draw from, in order, instead of
            ``range(len(dataset))`` (e.g. ``d2s.distributed.DistributedSampler``, which gives
            each rank its shard); it cannot be combined with ``shuffle``.

    The worker runs the dataset's ``__getitem__`` and ``collate_fn`` in a thread: they should
    work on arrays (as :class:`TensorDataset` does) rather than call d2s ops, which are seen
    by any program being built in the main thread.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, prefetch=2, drop_last=False, collate_fn=None,
                 sampler=None):
        if int(batch_size) < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size}")
        if int(prefetch) < 0:
            raise ValueError(f"DataLoader: prefetch must be >= 0, got {prefetch}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.prefetch = int(prefetch)
        self.drop_last = bool(drop_last)
        self.collate_fn = collate_fn
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: give either shuffle=True or a sampler (which decides the order), not both")
        self.sampler = sampler

    def __len__(self):
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _batch_indices(self):
        if self.sampler is not None:
            order = np.asarray(list(self.sampler), dtype=np.int64)
            n = len(order)
        else:
            n = len(self.dataset)
            order = RNG.get(np).permutation(n) if self.shuffle else np.arange(n)
        batches = [order[i:i + self.batch_size].tolist() for i in range(0, n, self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        return batches

    def _fetch(self, indices):
        if self.collate_fn is None and hasattr(self.dataset, "get_batch"):
            return self.dataset.get_batch(indices)
        samples = [self.dataset[i] for i in indices]
        return (self.collate_fn or default_collate)(samples)

    def __iter__(self):
        batches = self._batch_indices()  # drawn here, in the caller's thread, so seeding is repeatable
        if self.prefetch == 0:
            return _SyncIterator(self._fetch, batches)
        return _PrefetchIterator(self._fetch, batches, self.prefetch)


class _SyncIterator:
    def __init__(self, fetch, batches):
        self._fetch, self._batches, self._i = fetch, batches, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self._i >= len(self._batches):
            raise StopIteration
        self._i += 1
        return self._fetch(self._batches[self._i - 1])

    def close(self):
        self._i = len(self._batches)


def _worker(fetch, batches, q, stop):
    """Producer loop. It holds no reference to the iterator, so dropping the iterator (a
    ``break`` out of a for loop) lets it be collected, which stops this thread."""
    for k, indices in enumerate(batches):
        if stop.is_set():
            return
        try:
            item = (_BATCH, fetch(indices))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, which re-raises it
            e.add_note(f"(raised in the DataLoader worker thread while loading batch {k})")
            q.put((_ERROR, e))
            return
        q.put(item)
    q.put((_END, None))


class _PrefetchIterator:
    """Consumer side of the pipeline; ``close()`` (also on garbage collection and ``with``
    exit) stops and joins the worker."""

    def __init__(self, fetch, batches, prefetch):
        self._queue = queue.Queue(maxsize=prefetch)
        self._stop = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=_worker, args=(fetch, batches, self._queue, self._stop),
                                        name="d2s-DataLoader", daemon=True)
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == _BATCH:
            return value
        self.close()
        if kind == _ERROR:
            raise value
        raise StopIteration

    def close(self):
        """Stop the worker and wait for it; remaining prepared batches are dropped."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        # Draining frees queue space, so a worker blocked in put() finishes that put, sees
        # the stop flag and returns; at most one more item can arrive, so drain after joining too.
        while self._thread.is_alive():
            self._drain()
            self._thread.join(timeout=0.01)
        self._drain()

    def _drain(self):
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        if getattr(self, "_thread", None) is not None:
            self.close()
