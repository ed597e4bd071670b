"""What runs inside a ``DataLoader`` worker process, and what the loader and the worker share:
``get_worker_info()``, fetching a batch, seeding, and exceptions sent back to the parent.

A worker seeds Python's ``random`` and d2s's generator with ``base_seed + worker_id`` and
numpy's global generator with PyTorch's ``_generate_state(base_seed, worker_id)`` (four 32-bit
words mixing both), so each worker draws differently and a run repeats after
``d2s.manual_seed``. It ignores SIGINT (Ctrl-C reaches the whole process group; the parent
decides, and shuts the workers down), and exits when its parent is gone.

Batches travel back pickled; a d2s tensor pickles as its array (numpy's buffer, not Python
lists) and its ``requires_grad`` flag, never its autograd graph.
"""
import os
import queue
import random
import signal
import sys
import traceback
from dataclasses import dataclass
from multiprocessing import queues as mp_queues
from multiprocessing.reduction import ForkingPickler

import numpy as np

from d2s_runtime import blas
from d2s_runtime.ops.creation import manual_seed

from .. import _state
from ..tensor import Tensor
from .collate import default_collate
from .dataset import Subset

# how often an idle worker checks that its parent is alive, and the parent that its workers are
STATUS_CHECK_INTERVAL = 0.5

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """Inside a worker: ``id`` (0 .. ``num_workers - 1``), ``num_workers``, ``seed`` (this
    worker's: ``base_seed + id``) and ``dataset`` (this worker's copy)."""

    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info():
    """The :class:`WorkerInfo` of the current ``DataLoader`` worker process, or None in the main
    process (an ``IterableDataset`` uses it to give each worker its own shard)."""
    return _worker_info


# ------------------------------------------------------------------ fetching
class _MapFetcher:
    """Batches of a map-style dataset: ``dataset[i]`` per index (or ``__getitems__``), collated."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        self.fast = _fast_batch(dataset) if collate_fn is default_collate else None

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.fast is not None:
            return self.fast(index)
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        return self.collate_fn(data)


def _fast_batch(dataset):
    """One gather per tensor instead of rows stacked: a ``TensorDataset`` (or a plain ``Subset``
    of one) with the default collation gives the same batch either way."""
    if callable(getattr(dataset, "get_batch", None)):
        return dataset.get_batch
    if type(dataset) is Subset and callable(getattr(dataset.dataset, "get_batch", None)):
        inner, indices = dataset.dataset.get_batch, dataset.indices
        return lambda index: inner([indices[i] for i in index])
    return None


class _IterableFetcher:
    """Batches of an iterable dataset: the next ``len(index)`` items of its iterator."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableFetcher if iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


# ------------------------------------------------------------------ messages between the processes
@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's copy of an iterable dataset is exhausted."""
    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Persistent workers: start a new epoch (an iterable dataset's iterator is made anew)."""


class ExceptionWrapper:
    """An exception raised in a worker, sent to the parent as its type and traceback text (an
    exception object itself may not survive pickling)."""

    def __init__(self, exc_type, text, worker_id):
        self.exc_type, self.text, self.worker_id = exc_type, text, worker_id

    @classmethod
    def current(cls, worker_id):
        exc_type = _sendable_type(sys.exc_info()[0])
        return cls(exc_type, traceback.format_exc(), worker_id)

    def reraise(self, batch, indices):
        """Raise it in the parent, naming the worker, the batch and its dataset indices."""
        shown = indices if not isinstance(indices, list) or len(indices) <= 16 else indices[:16] + ["..."]
        msg = (f"Caught {self.exc_type.__name__} in DataLoader worker process {self.worker_id} while loading "
               f"batch {batch} (dataset indices {shown}).\nOriginal {self.text}")
        if self.exc_type is KeyError:
            raise _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - an exception type that needs other arguments
            exc = RuntimeError(msg)
        raise exc


class _KeyErrorMessage(KeyError):
    """A KeyError whose message prints as it is (KeyError's ``str`` quotes it)."""

    def __str__(self):
        return self.args[0]


def _sendable_type(t):
    try:
        ForkingPickler.dumps(t)
        return t
    except Exception:  # noqa: BLE001 - a local exception class: sent as a RuntimeError
        return RuntimeError


class ResultQueue(mp_queues.Queue):
    """The queue workers send batches on. A batch that cannot be pickled fails in the queue's
    feeder thread, where Python would only print it and the parent would wait forever; here
    its failure is sent instead, as an exception of that batch."""

    def __init__(self, ctx):
        super().__init__(ctx=ctx)

    def _on_queue_feeder_error(self, e, obj):
        idx = obj[0] if isinstance(obj, tuple) and obj else None
        text = "".join(traceback.format_exception(e))
        info = get_worker_info()
        err = ExceptionWrapper(RuntimeError, f"the batch could not be sent to the main process (every part of a "
                                             f"batch must be picklable):\n{text}", info.id if info else -1)
        self.put((idx, err))


# ------------------------------------------------------------------ the worker process
def _reduce_tensor(t):
    # the array (numpy pickles its buffer) and the flag; never grad, grad_fn or views' bases
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries: return x.detach() from the dataset")
    return _rebuild_tensor, (t.array, bool(t.requires_grad))


def _rebuild_tensor(data, requires_grad):
    t = Tensor._make(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _generate_state(base_seed, worker_id):
    """PyTorch's seed for numpy's global generator in worker ``worker_id``: four 32-bit words
    hashed from the base seed and the worker id (a SeedSequence-like mix)."""
    INIT_A, MULT_A, INIT_B, MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    MIX_MULT_L, MIX_MULT_R, XSHIFT, MASK32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_a = INIT_A

    def hash_(value):
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & MASK32
        hash_const_a = hash_const_a * MULT_A & MASK32
        value = value * hash_const_a & MASK32
        return (value ^ value >> XSHIFT) & MASK32

    def mix(x, y):
        result = (MIX_MULT_L * x & MASK32) - (MIX_MULT_R * y & MASK32) & MASK32
        return (result ^ result >> XSHIFT) & MASK32

    for i in range(4):
        pool[i] = hash_(entropy[i])
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash_(pool[i_src]))
    hash_const_b = INIT_B
    state = []
    for i_dst in range(4):
        value = (pool[i_dst] ^ hash_const_b) & MASK32
        hash_const_b = hash_const_b * MULT_B & MASK32
        value = value * hash_const_b & MASK32
        state.append((value ^ value >> XSHIFT) & MASK32)
    return state


def _fresh_process_state():
    """A forked worker starts from a copy of the parent, threads excepted: d2s's per-thread mode
    (a program being built, a tracer) starts fresh (d2s's locks are renewed in every forked
    child, see ``d2s_runtime.forksafe``); programs converted inside the worker use the Python
    backend (a worker should not spend its time compiling)."""
    st = _state.STATE
    st.builder = st.tracer = None
    st.hooked = False
    _state.HOOKED_THREADS[0] = 0
    config = sys.modules.get("d2s.jit.config")  # not imported: its default is already "python"
    if config is not None:
        config.backend = "python"
    # numpy's BLAS on one thread, as PyTorch's workers run torch on one: N workers with a
    # thread per core each would take the cores the training process needs
    blas.enter()


def seed_worker(base_seed, worker_id):
    """Seed Python's, d2s's and numpy's generators for worker ``worker_id``; returns its seed."""
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_generate_state(base_seed, worker_id))
    return seed


def worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                base_seed, init_fn, worker_id, num_workers):
    """The body of worker ``worker_id``: fetch the batches whose indices arrive on
    ``index_queue`` and send ``(task, batch)`` on ``data_queue``, until told to stop (None) or
    the parent is gone."""
    global _worker_info
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    try:
        _fresh_process_state()
        ForkingPickler.register(Tensor, _reduce_tensor)
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_exception = fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:  # noqa: BLE001 - reported with the first batch asked for
            init_exception = ExceptionWrapper.current(worker_id)
        iteration_end = False
        while os.getppid() == parent:
            try:
                r = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                try:
                    fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                except Exception:  # noqa: BLE001
                    init_exception = ExceptionWrapper.current(worker_id)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not iterable:
                        data = ExceptionWrapper.current(worker_id)
                    else:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                except Exception:  # noqa: BLE001 - sent to the parent, which raises it
                    data = ExceptionWrapper.current(worker_id)
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass
    finally:
        if done_event.is_set() or os.getppid() != parent:
            # shutting down (or orphaned): what is still queued is not wanted, do not wait for it
            data_queue.cancel_join_thread()
        else:
            # an exhausted iterable's worker let go early: let the queue's feeder thread finish
            # its last send and release the queue's lock, which the other workers share
            data_queue.close()
            data_queue.join_thread()
