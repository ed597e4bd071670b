"""DataLoader with worker processes: PyTorch's batch order (identical to ``num_workers=0``; an
iterable dataset's streams interleaved per worker, checked against PyTorch), per-worker seeding,
``get_worker_info``, ``worker_init_fn``, persistent workers, prefetching while the caller is
busy, ``timeout``, errors from workers (named by worker and dataset indices), datasets that
cannot be sent to a spawned worker, and no processes left behind: after an epoch, a ``break``,
an exception or Ctrl-C in the training loop, an error or death of a worker, or the death of the
parent (child scripts in their own process group, killed at the end whatever happens)."""
import gc
import multiprocessing
import os
import pickle
import random
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import d2s
import torch_parity
from d2s.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info
from d2s.data import worker as worker_mod
from d2s_runtime import blas
from torch_parity import Case

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ datasets (module level: picklable)
class Numbers(Dataset):
    """Sample i: (i as a float32 vector, i, the id of the worker that loaded it)."""

    def __init__(self, n, fail_at=None, sleep=0.0, counter=None):
        self.n, self.fail_at, self.sleep, self.counter = n, fail_at, sleep, counter

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.counter is not None:
            with self.counter.get_lock():
                self.counter.value += 1
        if self.sleep:
            time.sleep(self.sleep)
        if i == self.fail_at:
            raise KeyError(f"sample {i} is corrupt")
        info = get_worker_info()
        return np.full(2, i, dtype=np.float32), i, -1 if info is None else info.id


class Draws(Dataset):
    """Random numbers from every generator a dataset may use, and the worker's seed."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        assert info.num_workers == 2 and info.dataset is self  # the worker's own copy of the dataset
        return (int(np.random.randint(0, 2 ** 30)), random.randint(0, 2 ** 30), int(d2s.randint(0, 2 ** 30, (1,))),
                info.seed, info.id)


class Stream(IterableDataset):
    """0 .. n-1, the whole stream in every worker unless ``shard``."""

    def __init__(self, n, shard=False):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if self.shard and info is not None:
            return iter(range(info.id, self.n, info.num_workers))
        return iter(range(self.n))


class Unpicklable(Dataset):
    def __init__(self):
        self.transform = lambda x: x  # a lambda cannot be pickled for a spawned worker

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i


def _workers_alive():
    """d2s worker processes of this process that are still running (also reaps finished ones)."""
    return [p for p in multiprocessing.active_children() if p.name.startswith("d2s-DataLoader-worker")]


def _flat(batches):
    out = []
    for b in batches:
        if isinstance(b, d2s.Tensor):
            out.append(("T", str(b.dtype), b.numpy().tolist()))
        elif isinstance(b, (list, tuple)):
            out.append((type(b).__name__, _flat(b)))
        elif isinstance(b, dict):
            out.append(("dict", sorted((k, _flat([v])) for k, v in b.items())))
        else:
            out.append(b)
    return out


# ------------------------------------------------------------------ order
@pytest.mark.parametrize("kwargs", [
    dict(batch_size=4), dict(batch_size=3, drop_last=True), dict(batch_size=None), dict(batch_size=5, shuffle=True),
    dict(batch_size=2, collate_fn=lambda s: [x[1] for x in s]), dict(batch_size=4, prefetch_factor=1),
    dict(batch_sampler=[[3, 1], [0], [5, 4, 2]]),
], ids=["plain", "drop_last", "no-batching", "shuffle", "collate_fn", "prefetch_factor-1", "batch_sampler"])
def test_batches_come_in_the_order_of_num_workers_0(kwargs):
    def run(workers):
        d2s.manual_seed(11)
        extra = {} if workers == 0 else dict(num_workers=workers)
        if workers == 0:
            kwargs0 = {k: v for k, v in kwargs.items() if k != "prefetch_factor"}
            return list(DataLoader(Numbers(13), **kwargs0))
        return list(DataLoader(Numbers(13), **kwargs, **extra))

    def strip(batches):  # the worker id (last field) differs by design
        if kwargs.get("collate_fn"):
            return batches
        return [b[:2] for b in batches]

    ref = run(0)
    got = run(2)
    assert _flat(strip(got)) == _flat(strip(ref))
    assert not _workers_alive()


def test_batch_k_is_loaded_by_worker_k_mod_n_and_len_matches():
    loader = DataLoader(Numbers(10), batch_size=2, num_workers=2)
    assert len(loader) == 5
    assert [b[2].tolist() for b in loader] == [[0, 0], [1, 1], [0, 0], [1, 1], [0, 0]]


def test_tensor_dataset_batches_and_tensors_cross_as_arrays():
    x = d2s.tensor(np.arange(24, dtype=np.float32).reshape(12, 2), requires_grad=True)
    ds = TensorDataset(x.detach(), np.arange(12))
    got = list(DataLoader(ds, batch_size=5, num_workers=2))
    want = list(DataLoader(ds, batch_size=5))
    assert _flat(got) == _flat(want) and isinstance(got[0], list)
    # rows of a tensor requiring grad keep its history, which cannot cross to a worker (as in PyTorch)
    with pytest.raises(RuntimeError, match="non-leaf"):
        list(DataLoader(TensorDataset(x), batch_size=5, num_workers=1))
    # a tensor pickles as its array and its flag (never Python lists, never a graph)
    reducer = worker_mod._reduce_tensor

    class P(pickle.Pickler):
        dispatch_table = {d2s.Tensor: reducer}

    import io
    buf = io.BytesIO()
    P(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(d2s.tensor(np.zeros((100, 100), np.float32)))
    assert 40000 <= len(buf.getvalue()) < 40600
    back = pickle.loads(buf.getvalue())
    assert isinstance(back, d2s.Tensor) and back.shape == (100, 100) and back.grad_fn is None
    with pytest.raises(RuntimeError, match="non-leaf"):
        reducer(x * 2)


# ------------------------------------------------------------------ iterable datasets, against PyTorch
def _iterable_case(lib, n, shard, batch_size, drop_last=False):
    data = lib.utils.data if lib.__name__ == "torch" else lib.data

    class S(data.IterableDataset):
        def __iter__(self):
            info = data.get_worker_info()
            if shard and info is not None:
                return iter(range(info.id, n, info.num_workers))
            return iter(range(n))

    loader = data.DataLoader(S(), batch_size=batch_size, num_workers=2, drop_last=drop_last)
    return [b.tolist() for b in loader]


TORCH_CASES = [
    Case("iterable-whole-stream-per-worker", lambda lib: _iterable_case(lib, 7, False, 3), grad=False,
         static="data loading runs outside programs"),
    Case("iterable-sharded", lambda lib: _iterable_case(lib, 11, True, 2), grad=False,
         static="data loading runs outside programs"),
    Case("iterable-sharded-drop-last", lambda lib: _iterable_case(lib, 11, True, 2, drop_last=True), grad=False,
         static="data loading runs outside programs"),
    Case("iterable-sharded-uneven", lambda lib: _iterable_case(lib, 9, True, 4), grad=False,
         static="data loading runs outside programs"),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_iterable_dataset_without_batching_and_with_prefetch_thread():
    assert [int(v) for v in DataLoader(Stream(5, shard=True), batch_size=None, num_workers=2)] == [0, 1, 2, 3, 4]
    assert [b.tolist() for b in DataLoader(Stream(5), batch_size=2, prefetch=2)] == [[0, 1], [2, 3], [4]]


# ------------------------------------------------------------------ seeding and worker state
def _draws(**kwargs):
    return [tuple(int(v) for v in row) for b in DataLoader(Draws(), batch_size=1, num_workers=2, **kwargs)
            for row in zip(*[t.tolist() for t in b])]


def test_workers_are_seeded_from_the_base_seed_repeatably():
    d2s.manual_seed(0)
    first = _draws()
    d2s.manual_seed(0)
    again = _draws()
    d2s.manual_seed(1)
    other = _draws()
    assert first == again and first != other
    seeds = {row[4]: row[3] for row in first}
    assert seeds[1] == seeds[0] + 1  # base_seed + worker_id
    w0 = [row[:3] for row in first if row[4] == 0]
    w1 = [row[:3] for row in first if row[4] == 1]
    for k in range(3):  # numpy's, Python's and d2s's generators all differ between workers
        assert [r[k] for r in w0] != [r[k] for r in w1]
    # numpy's global generator is seeded with PyTorch's mix of the base seed and the worker id
    base = seeds[0]
    np.random.seed(worker_mod._generate_state(base, 1))
    assert w1[0][0] == np.random.randint(0, 2 ** 30)
    # a generator given to the loader decides the base seed instead of the global one
    assert _draws(generator=np.random.default_rng(4)) == _draws(generator=np.random.default_rng(4))


def test_generate_state_is_pytorchs():
    got = [worker_mod._generate_state(s, w) for s, w in [(0, 0), (12345, 1), (2 ** 62 + 7, 3)]]
    # torch.utils.data._utils.worker._generate_state (2.13) on these arguments
    assert got == [[2968811710, 3677149159, 745650761, 2884920346], [530262504, 3509291438, 1156716502, 3400667355],
                   [3901771379, 2462785867, 1770425866, 1524518099]]
    torch = torch_parity.live_torch()
    if torch is not None:
        from torch.utils.data._utils.worker import _generate_state
        assert got == [_generate_state(s, w) for s, w in [(0, 0), (12345, 1), (2 ** 62 + 7, 3)]]


def _init_fn(worker_id):
    np.random.seed(1000 + worker_id)  # a common worker_init_fn: reseed numpy per worker


def test_worker_info_and_worker_init_fn():
    assert get_worker_info() is None
    rows = _draws(worker_init_fn=_init_fn)
    for wid in (0, 1):
        np.random.seed(1000 + wid)
        assert [r[0] for r in rows if r[4] == wid][0] == np.random.randint(0, 2 ** 30)


def _failing_init(worker_id):
    raise ValueError(f"init of worker {worker_id} failed")


def test_an_error_in_worker_init_fn_is_raised_with_the_first_batch():
    with pytest.raises(ValueError, match="init of worker 0 failed"):
        list(DataLoader(Numbers(4), batch_size=2, num_workers=2, worker_init_fn=_failing_init))
    assert not _workers_alive()


def test_persistent_workers_keep_their_processes_across_epochs():
    loader = DataLoader(Numbers(7), batch_size=3, num_workers=2, persistent_workers=True)
    epochs, pids = [], []
    for _ in range(3):
        it = iter(loader)
        epochs.append([b[1].tolist() for b in it])
        pids.append(tuple(it.worker_pids))
    assert epochs == [[[0, 1, 2], [3, 4, 5], [6]]] * 3 and len(set(pids)) == 1
    assert all(p.is_alive() for p in loader._iterator._workers)
    stream = DataLoader(Stream(4), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in stream] == [b.tolist() for b in stream] == [[0, 1], [0, 1], [2, 3], [2, 3]]
    loader._iterator.close()
    stream._iterator.close()
    assert not _workers_alive()


def test_workers_prepare_batches_while_the_caller_is_busy_bounded_by_prefetch_factor():
    counter = multiprocessing.get_context("fork").Value("i", 0)
    it = iter(DataLoader(Numbers(100, counter=counter), batch_size=1, num_workers=2, prefetch_factor=2))
    next(it)
    # without being asked, the workers fill the pipeline: 1 taken + 2 workers x 2 ahead
    deadline = time.monotonic() + 10
    while counter.value < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # time an unbounded loader would use to run further ahead
    assert counter.value == 5
    it.close()


# ------------------------------------------------------------------ errors
def test_an_exception_in_a_worker_names_the_worker_and_the_indices():
    got = []
    with pytest.raises(KeyError) as info:
        for b in DataLoader(Numbers(10, fail_at=5), batch_size=2, num_workers=2):
            got.append(b[1].tolist())
    assert got == [[0, 1], [2, 3]]  # the batches before the failing one still arrive, in order
    msg = str(info.value)
    assert "sample 5 is corrupt" in msg and "worker process 0" in msg and "dataset indices [4, 5]" in msg
    assert "Original Traceback" in msg and "__getitem__" in msg
    gc.collect()
    assert not _workers_alive()


class _Lambdas(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return lambda: i


def test_a_batch_that_cannot_be_sent_back_is_an_error_not_a_hang():
    with pytest.raises(RuntimeError, match="could not be sent to the main process"):
        list(DataLoader(_Lambdas(), batch_size=1, num_workers=1, collate_fn=lambda s: s, timeout=30))
    assert not _workers_alive()


def test_timeout_raises():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out after 0.3 seconds"):
        next(iter(DataLoader(Numbers(4, sleep=5), batch_size=1, num_workers=1, timeout=0.3)))
    assert time.monotonic() - t0 < 4.5  # the timeout, plus stopping the busy worker
    gc.collect()
    assert not _workers_alive()


class _Suicidal(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


def test_a_worker_that_dies_is_reported_not_waited_for():
    with pytest.raises(RuntimeError, match="exited unexpectedly.*killed by signal SIGKILL"):
        list(DataLoader(_Suicidal(), batch_size=1, num_workers=2, timeout=60))
    gc.collect()
    assert not _workers_alive()


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_dataset_that_cannot_be_sent_to_a_worker_gets_a_clear_error(method):
    with pytest.raises(TypeError, match=rf"cannot send the dataset \(Unpicklable\).*{method}.*module level"):
        iter(DataLoader(Unpicklable(), num_workers=2, multiprocessing_context=method))
    assert not _workers_alive()


def test_spawned_workers_give_the_same_batches():
    d2s.manual_seed(2)
    ref = list(DataLoader(Numbers(9), batch_size=4, shuffle=True))
    d2s.manual_seed(2)
    got = list(DataLoader(Numbers(9), batch_size=4, shuffle=True, num_workers=2, multiprocessing_context="spawn"))
    assert [b[1].tolist() for b in got] == [b[1].tolist() for b in ref]
    assert [b[2].tolist()[0] for b in got] == [0, 1, 0]


@pytest.mark.parametrize("kwargs, match", [
    (dict(num_workers=-1), "non-negative"), (dict(prefetch_factor=2), "prefetch_factor option could only"),
    (dict(persistent_workers=True), "needs num_workers > 0"), (dict(num_workers=1, prefetch=2), "prefetch_factor="),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(num_workers=1, multiprocessing_context="nope"), "valid start method"),
    (dict(multiprocessing_context="fork"), "num_workers > 0"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DataLoader(Numbers(3), **kwargs)


def test_pin_memory_is_accepted_and_attributes_are_frozen():
    loader = DataLoader(Numbers(3), batch_size=2, num_workers=1, pin_memory=True)
    assert [b[1].tolist() for b in loader] == [[0, 1], [2]]
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        loader.batch_size = 3


# ------------------------------------------------------------------ no processes left behind
def test_break_close_and_garbage_collection_stop_the_workers():
    for _ in DataLoader(Numbers(100), batch_size=2, num_workers=2):
        assert len(_workers_alive()) == 2
        break
    gc.collect()
    assert not _workers_alive()
    it = iter(DataLoader(Numbers(100), batch_size=2, num_workers=2))
    next(it)
    it.close()
    assert not _workers_alive()
    with pytest.raises(StopIteration):
        next(it)


_SCRIPT = textwrap.dedent("""
    import faulthandler, os, signal, sys, time
    import numpy as np
    faulthandler.enable()  # a SIGABRT from the test prints every thread's stack
    # Python's own Ctrl-C handler, as in a script started from a terminal: a test run launched in
    # the background by a shell without job control inherits SIGINT ignored, and so would this
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from d2s.data import DataLoader, Dataset

    class Slow(Dataset):
        def __len__(self):
            return 10 ** 6

        def __getitem__(self, i):
            time.sleep(0.01)
            return np.zeros(2, np.float32)

    mode = sys.argv[1]
    it = iter(DataLoader(Slow(), batch_size=2, num_workers=2))
    next(it)
    print("PIDS", *it.worker_pids, flush=True)
    if mode == "raise":
        raise RuntimeError("boom in the training loop")
    for batch in it:  # until a signal arrives
        time.sleep(0.01)
""")


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"  # a zombie waiting for init to reap it
    except FileNotFoundError:
        return True


def _run_script(mode, send=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "runtime"), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)  # its own process group, killed below
    pids = []
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "the child script did not start its loader"
        line = proc.stdout.readline()
        assert line.startswith("PIDS"), line + proc.stderr.read()
        pids = [int(p) for p in line.split()[1:]]
        assert len(pids) == 2
        if send is not None:  # the script loops until then: its workers are running
            assert not any(_gone(p) for p in pids)
            send(proc.pid)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # say where the script hangs (its faulthandler dump)
            os.killpg(proc.pid, signal.SIGABRT)
            proc.wait(timeout=10)
            raise AssertionError("the script did not exit within 30 s:\n" + proc.stderr.read()[-6000:]) from None
        deadline = time.monotonic() + 10
        while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [p for p in pids if not _gone(p)]
        return proc.returncode, proc.stderr.read(), left
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for p in pids:
            if not _gone(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def test_no_orphans_after_an_exception_in_the_training_loop():
    code, err, left = _run_script("raise")
    assert code == 1 and "boom in the training loop" in err and left == []


@pytest.mark.parametrize("to_group", [False, True], ids=["to-the-script", "to-the-process-group"])
def test_no_orphans_after_ctrl_c(to_group):
    send = (lambda pid: os.killpg(pid, signal.SIGINT)) if to_group else (lambda pid: os.kill(pid, signal.SIGINT))
    code, err, left = _run_script("loop", send)
    assert code in (-signal.SIGINT, 130) and "KeyboardInterrupt" in err and left == []
    assert "Traceback" not in err.split("KeyboardInterrupt")[-1]  # the workers printed nothing


def test_workers_exit_when_their_parent_is_killed():
    code, _, left = _run_script("loop", lambda pid: os.kill(pid, signal.SIGKILL))
    assert code == -signal.SIGKILL and left == []


class _BlasThreads(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return -1 if blas.threads() is None else blas.threads()


def test_workers_run_numpys_blas_on_one_thread():
    before = blas.threads()
    got = [int(b) for b in DataLoader(_BlasThreads(), batch_size=None, num_workers=2)]
    assert got == ([-1, -1] if before is None else [1, 1])
    assert blas.threads() == before  # the parent's count is untouched
