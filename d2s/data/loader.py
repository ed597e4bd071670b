"""``DataLoader``: PyTorch's arguments and batch order, with worker processes for
``num_workers > 0`` (``_multiprocess.py``) and, as a d2s extension, a background thread for
``num_workers=0`` (``prefetch=N``).

With workers, batches are prepared in the background while the model trains, each worker
seeded from the loader's base seed. Without workers, a user's dataset is read in the calling
thread when a batch is asked for, as in PyTorch, so its random draws come from d2s's global
generator in a repeatable order; a ``TensorDataset`` (where no user code runs) is gathered
ahead by a background thread unless ``prefetch=0``.
"""
import queue
import threading
import warnings

from ._multiprocess import MultiProcessIter
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _InfiniteConstantSampler, draw_seed
from .worker import _fast_batch, make_fetcher

_BATCH, _END, _ERROR = "batch", "end", "error"
_AUTO_PREFETCH = 2
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class DataLoader:
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader``.

    Args:
        dataset: a map-style dataset (``len`` and ``[i]``) or an :class:`IterableDataset`.
        batch_size: samples per batch; None disables batching (each sample is converted, not
            stacked).
        shuffle: a new random order every epoch (a :class:`RandomSampler`; ``d2s.manual_seed``
            makes it repeatable).
        sampler: the order of indices (instead of ``shuffle``).
        batch_sampler: yields whole lists of indices (instead of ``batch_size``, ``shuffle``,
            ``sampler`` and ``drop_last``).
        num_workers: worker processes loading batches in the background (0: the calling
            thread loads them).
        collate_fn: turns a list of samples into a batch (default :func:`default_collate`).
        pin_memory: accepted; no effect (there is no pinned host memory on d2s's devices).
        drop_last: drop a last batch smaller than ``batch_size``.
        timeout: seconds to wait for a batch from the workers before raising (0: no limit).
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker, after seeding.
        multiprocessing_context: the start method (``"fork"``, ``"spawn"``, ``"forkserver"``
            or a context); default multiprocessing's default, as in PyTorch.
        generator: a ``d2s.Generator`` or ``numpy.random.Generator`` for the shuffle order and the workers' base
            seed (default d2s's global generator).
        prefetch_factor: batches each worker prepares ahead (default 2 with workers).
        persistent_workers: keep the workers between epochs.
        pin_memory_device: accepted; no effect.
        in_order: batches in sampler order (False: as workers finish them).
        prefetch: d2s's extension for ``num_workers=0``: a background thread keeps up to this
            many batches ready (0: none). The dataset then runs in that thread, so its random
            draws interleave with the training loop's: prefer workers where runs must repeat.
            The default (None) uses a thread of 2 only where no user code runs in it (a
            :class:`TensorDataset`, or a ``Subset`` of one, with the default collation), and
            loads in the calling thread otherwise, as PyTorch does.
    """

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True, prefetch=None):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing: let "
                             "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None "
                             "(d2s's prefetch= prepares batches in a thread without workers).")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor <= 0:
            raise ValueError("prefetch_factor option should be positive")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if prefetch is not None and int(prefetch) < 0:
            raise ValueError(f"DataLoader: prefetch must be >= 0, got {prefetch}")
        if prefetch and num_workers:
            raise ValueError("DataLoader: prefetch= (a background thread) is for num_workers=0; with workers "
                             "use prefetch_factor=")
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("multiprocessing_context can only be used with multi-process loading "
                             f"(num_workers > 0), but got num_workers={num_workers}")
        if isinstance(multiprocessing_context, str):
            import multiprocessing
            if multiprocessing_context not in multiprocessing.get_all_start_methods():
                raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                 f"{multiprocessing.get_all_start_methods()!r}, but got "
                                 f"multiprocessing_context={multiprocessing_context!r}")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle: give either shuffle=True or a "
                             "sampler (which decides the order), not both")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.prefetch = None if prefetch is None else int(prefetch)
        self._iterable = iterable
        self._iterator = None
        self._len_reported = None
        self._initialized = True

    def __setattr__(self, name, value):
        if self._initialized and name in _FROZEN:
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if self._iterable:
            n = self._len_reported = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    def __iter__(self):
        if self.num_workers == 0:
            state = _IterState(self)
            prefetch = self.prefetch
            if prefetch is None:  # only where no user code runs: gathers from a TensorDataset
                pure = not self._iterable and self._auto_collation and self.collate_fn is None
                prefetch = _AUTO_PREFETCH if pure and _fast_batch(self.dataset) is not None else 0
            if prefetch:
                return _PrefetchIterator(state, prefetch)
            return _SyncIterator(state)
        if self.persistent_workers:
            it = self._iterator
            if it is not None and not it._shutdown:
                it.restart()
                return it
            self._iterator = MultiProcessIter(self, _IterState(self))
            return self._iterator
        return MultiProcessIter(self, _IterState(self))


class _IterState:
    """What every kind of iterator shares: the index sampler's iterator, the base seed of the
    workers (drawn first, as PyTorch draws it, so the shuffle order does not depend on
    ``num_workers``), the collation and the count of batches given."""

    def __init__(self, loader):
        self.loader = loader
        self.iterable = loader._iterable
        self.auto_collation = loader._auto_collation
        self.index_sampler = loader._index_sampler
        self.collate_fn = loader.collate_fn or (default_collate if self.auto_collation else default_convert)
        self.base_seed = draw_seed(loader.generator)
        self.restart()

    def restart(self):
        self.sampler_iter = iter(self.index_sampler)
        self.yielded = 0

    def next_index(self):
        return next(self.sampler_iter)

    def count_yielded(self):
        self.yielded += 1
        reported = self.loader._len_reported
        if self.iterable and reported is not None and self.yielded > reported:
            warnings.warn(f"Length of IterableDataset {self.loader.dataset} was reported to be {reported} (when "
                          f"accessing len(dataloader)), but {self.yielded} samples have been fetched.", stacklevel=3)

    def fetcher(self):
        ld = self.loader
        return make_fetcher(self.iterable, ld.dataset, self.auto_collation, self.collate_fn, ld.drop_last)


class _SyncIterator:
    """Batches loaded when asked for, in the calling thread (PyTorch's ``num_workers=0``)."""

    def __init__(self, state):
        self._state = state
        self._fetcher = state.fetcher()
        self._done = False

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._state.index_sampler)

    def __next__(self):
        if self._done:
            raise StopIteration
        try:
            data = self._fetcher.fetch(self._state.next_index())
        except StopIteration:
            self._done = True
            raise
        self._state.count_yielded()
        return data

    def close(self):
        self._done = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _thread_worker(fetcher, indices, q, stop):
    """Producer loop of ``prefetch=``. It holds no reference to the iterator, so dropping the
    iterator (a ``break`` out of a for loop) lets it be collected, which stops this thread."""
    for k, index in enumerate(indices):
        if stop.is_set():
            return
        try:
            item = (_BATCH, fetcher.fetch(index))
        except StopIteration:
            break
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, which re-raises it
            e.add_note(f"(raised in the DataLoader prefetch thread while loading batch {k})")
            q.put((_ERROR, e))
            return
        q.put(item)
    q.put((_END, None))


class _PrefetchIterator:
    """``prefetch=N`` without workers: a daemon thread keeps up to N batches ready. The indices
    of a map-style dataset are drawn in the calling thread when the iterator is made, so the
    order does not depend on the thread; ``close()`` (also on garbage collection and ``with``
    exit) stops and joins the thread."""

    def __init__(self, state, prefetch):
        self._state = state
        if state.iterable:
            indices = iter(state.index_sampler)  # Nones: the thread reads the dataset's iterator
        else:
            indices = list(state.index_sampler)
        self._queue = queue.Queue(maxsize=prefetch)
        self._stop = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=_thread_worker, args=(state.fetcher(), indices, self._queue, self._stop),
                                        name="d2s-DataLoader", daemon=True)
        self._thread.start()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._state.index_sampler)

    def __next__(self):
        if self._closed:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == _BATCH:
            self._state.count_yielded()
            return value
        self.close()
        if kind == _ERROR:
            raise value
        raise StopIteration

    def close(self):
        """Stop the thread and wait for it; prepared batches are dropped."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        # Draining frees queue space, so a thread blocked in put() finishes that put, sees the
        # stop flag and returns; at most one more item can arrive, so drain after joining too.
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
