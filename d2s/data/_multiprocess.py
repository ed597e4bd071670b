"""The parent side of ``DataLoader(num_workers=N)``: worker processes, task queues, batch order.

As PyTorch's multi-process iterator: the sampler runs here; batch k's indices go to worker
``k mod N`` (skipping workers whose iterable dataset ran out), at most ``prefetch_factor * N``
tasks are outstanding, and results that arrive early wait until their turn, so batches come
in the order of ``num_workers=0``. Workers are daemonic processes, shut down (told to stop,
joined, then terminated) when an epoch ends, when the iterator is closed or collected (a
``break``, an exception or Ctrl-C in the training loop), and at interpreter exit; a worker
whose parent dies exits by itself. A worker that dies is reported within
``STATUS_CHECK_INTERVAL`` seconds instead of a hang.

The start method is ``multiprocessing_context`` if given, else multiprocessing's default, as
in PyTorch ("fork" on Linux up to Python 3.13). A forked worker resets the d2s state that
does not survive a fork (worker.py's ``_fresh_process_state``); "spawn" and "forkserver"
start clean but pickle the dataset, ``collate_fn`` and ``worker_init_fn`` to each worker.
"""
import atexit
import itertools
import multiprocessing
import pickle
import queue
import signal
import time
import traceback
import weakref

from . import worker as _w

_LIVE = weakref.WeakSet()  # iterators with workers, shut down at interpreter exit
_EXITING = [False]


def _shutdown_all():
    _EXITING[0] = True
    for it in list(_LIVE):
        it._shutdown_workers()


atexit.register(_shutdown_all)  # runs before multiprocessing's own exit handler (registered earlier)


def _context(loader):
    ctx = loader.multiprocessing_context
    if ctx is None:
        return multiprocessing.get_context()
    if isinstance(ctx, str):
        return multiprocessing.get_context(ctx)
    return ctx


def _unpicklable(loader, ctx, err):
    method = ctx.get_start_method()
    what = [f"dataset ({type(loader.dataset).__name__})"]
    if loader.collate_fn is not None:
        what.append("collate_fn")
    if loader.worker_init_fn is not None:
        what.append("worker_init_fn")
    return TypeError(
        f"DataLoader(num_workers={loader.num_workers}) cannot send the {', '.join(what)} to its worker processes: "
        f"the {method!r} start method pickles them, and pickling failed ({type(err).__name__}: {err}). Define "
        "the dataset class and functions at module level (not lambdas, local functions or classes), keep "
        "unpicklable members (open files, locks) out of the dataset until the worker opens them "
        "(worker_init_fn), or use multiprocessing_context='fork' where it is available.")


class MultiProcessIter:
    """Iterator of a loader with workers (made by ``DataLoader.__iter__``)."""

    def __init__(self, loader, base):
        self._base = base  # the shared parts: sampler iterator, base seed, counters
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._shutdown = False
        self._workers, self._index_queues = [], []
        ctx = _context(loader)
        self._result_queue = _w.ResultQueue(ctx)
        self._done_event = ctx.Event()
        _LIVE.add(self)
        try:
            for i in range(self._num_workers):
                q = ctx.Queue()
                q.cancel_join_thread()
                proc = ctx.Process(
                    target=_w.worker_loop, name=f"d2s-DataLoader-worker-{i}", daemon=True,
                    args=(base.iterable, loader.dataset, q, self._result_queue, self._done_event,
                          base.auto_collation, base.collate_fn, loader.drop_last, base.base_seed,
                          loader.worker_init_fn, i, self._num_workers))
                try:
                    proc.start()
                except (TypeError, AttributeError, pickle.PicklingError) as e:
                    raise _unpicklable(loader, ctx, e) from e
                self._index_queues.append(q)
                self._workers.append(proc)
            self._reset(first=True)
        except BaseException:
            self._shutdown_workers()
            raise

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._base.index_sampler)

    @property
    def worker_pids(self):
        """The worker processes' ids."""
        return [w.pid for w in self._workers]

    # ------------------------------------------------------------ epochs
    def _reset(self, first=False):
        self._send_idx = 0  # the next task number to send
        self._rcvd_idx = 0  # the next task number to return
        self._task_info = {}  # task -> (worker, indices) or (worker, indices, result)
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first:  # persistent workers: a new epoch
            for q in self._index_queues:
                q.put(_w._ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _w._ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def restart(self):
        """Begin a new epoch with the same workers (``persistent_workers=True``)."""
        self._base.restart()
        self._reset()

    # ------------------------------------------------------------ tasks
    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._base.next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_status[wid] and (
                    self._in_order or self._workers_num_tasks[wid] < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid, index)
        self._workers_num_tasks[wid] += 1
        self._send_idx += 1

    def _get_data(self):
        """The next ``(task, result)`` from any worker, watching for dead workers and ``timeout``."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _w.STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            try:
                return self._result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            dead = [(i, w) for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
            if dead:
                for i, _ in dead:
                    self._workers_status[i] = False
                how = ", ".join(f"pid {w.pid} ({_exit_reason(w.exitcode)})" for _, w in dead)
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker(s) exited unexpectedly: {how}")
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def __next__(self):
        try:
            if self._shutdown:
                raise StopIteration
            data = self._next_data()
            self._base.count_yielded()
            return data
        except BaseException as e:
            # the traceback's frames below this one hold the iterator; cleared, the iterator
            # (and its workers) go as soon as the caller's loop lets go of it, even while the
            # exception is still held (pytest.raises, sys.last_traceback, a saved exception)
            if e.__traceback__ is not None:
                traceback.clear_frames(e.__traceback__.tb_next)
            del self
            raise

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 3 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)  # its worker's iterable ran out
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 3:  # arrived earlier, waited for its turn
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[2], info[0], self._rcvd_idx - 1, info[1])
            idx, data = self._get_data()
            if isinstance(data, _w._IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                if not self._persistent:  # its work is done: let it exit now
                    self._index_queues[data.worker_id].put(None)
                self._try_put_index()
                continue
            wid, index = self._task_info[idx][:2]
            if idx != self._rcvd_idx and self._in_order:
                self._task_info[idx] = (wid, index, data)
                continue
            del self._task_info[idx]
            if idx == self._rcvd_idx:
                self._rcvd_idx += 1
            return self._process(data, wid, idx, index)

    def _process(self, data, wid, idx, index):
        self._workers_num_tasks[wid] -= 1
        self._try_put_index()
        if isinstance(data, _w.ExceptionWrapper):
            data.reraise(idx, index)
        return data

    # ------------------------------------------------------------ shutdown
    def close(self):
        """Stop the workers now (an epoch left early); later ``next`` calls end the iteration."""
        self._shutdown_workers()

    def _shutdown_workers(self):
        if getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        _LIVE.discard(self)
        try:
            self._done_event.set()
            for q in self._index_queues:
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
            deadline = time.monotonic() + 2 * _w.STATUS_CHECK_INTERVAL
            for w in self._workers:
                w.join(timeout=max(0.0, deadline - time.monotonic()))
            for q in [*self._index_queues, self._result_queue]:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():  # busy in a long __getitem__, or stuck: stop it
                    w.terminate()
                    w.join(timeout=2 * _w.STATUS_CHECK_INTERVAL)
                if w.is_alive():
                    w.kill()
                    w.join()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:  # noqa: BLE001 - at interpreter exit modules may be gone; the exit handler ran
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._shutdown_workers()
        return False

    def __getstate__(self):
        raise TypeError("a DataLoader iterator cannot be pickled")


def _exit_reason(code):
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
