"""d2s.data without worker processes: batch order, shuffling, partial batches, collation, and
d2s's ``prefetch=`` thread (running ahead, bounded, stopping cleanly, re-raising errors)."""
import gc
import threading
import time

import numpy as np
import pytest

import d2s
import torch_parity
from d2s.data import DataLoader, Dataset, TensorDataset, default_collate
from torch_parity import Case


def _worker_threads():
    return [t for t in threading.enumerate() if t.name == "d2s-DataLoader" and t.is_alive()]


def _wait_until(pred, limit=10.0):
    """Poll ``pred`` until it holds (a generous limit, so a slow machine cannot fail the test)."""
    deadline = time.monotonic() + limit
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


class Recording(Dataset):
    """Samples (i as float32 features, i as label) that record the order they were read in."""

    def __init__(self, n, fail_at=None):
        self.n, self.fail_at = n, fail_at
        self.accessed = []
        self.lock = threading.Lock()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise KeyError(f"sample {i} is corrupt")
        with self.lock:
            self.accessed.append(i)
        return np.full(2, i, dtype=np.float32), int(i)


@pytest.mark.parametrize("prefetch", [0, 1, 3])
@pytest.mark.parametrize("n,batch", [(10, 4), (9, 3), (3, 5)])
def test_batches_come_in_order_with_a_partial_last_batch(prefetch, n, batch):
    ds = Recording(n)
    loader = DataLoader(ds, batch_size=batch, prefetch=prefetch)
    batches = list(loader)
    assert len(batches) == len(loader) == -(-n // batch)
    labels = [b[1].tolist() for b in batches]
    assert sum(labels, []) == list(range(n))
    assert [len(lab) for lab in labels[:-1]] == [batch] * (len(labels) - 1)
    x, y = batches[0]
    assert x.dtype == "float32" and y.dtype == "int64" and x.shape == (len(labels[0]), 2)
    np.testing.assert_array_equal(x.numpy()[:, 0], y.numpy())


def test_drop_last_drops_the_partial_batch():
    loader = DataLoader(Recording(10), batch_size=4, drop_last=True)
    assert len(loader) == 2
    assert [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_shuffle_is_a_permutation_repeatable_with_manual_seed():
    loader = DataLoader(Recording(20), batch_size=6, shuffle=True)

    def epoch():
        return sum((b[1].tolist() for b in loader), [])

    d2s.manual_seed(5)
    first, second = epoch(), epoch()
    assert sorted(first) == list(range(20)) and sorted(second) == list(range(20))
    assert first != list(range(20)) and first != second  # each epoch draws a new order
    d2s.manual_seed(5)
    assert epoch() == first and epoch() == second


def test_tensor_dataset_batches_rows_of_each_tensor():
    x = d2s.tensor(np.arange(12, dtype=np.float32).reshape(6, 2))
    y = np.arange(6) * 10
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    xi, yi = ds[4]
    assert xi.tolist() == [8.0, 9.0] and yi.item() == 40
    d2s.manual_seed(0)
    seen = []
    for xb, yb in DataLoader(ds, batch_size=4, shuffle=True):
        np.testing.assert_array_equal(xb.numpy()[:, 0] * 5, yb.numpy())
        seen += yb.tolist()
    assert sorted(seen) == [0, 10, 20, 30, 40, 50]
    with pytest.raises(ValueError, match="first dimension"):
        TensorDataset(np.zeros((3, 2)), np.zeros(4))


def test_default_collate_handles_nesting():
    batch = default_collate([{"x": np.ones(2), "y": (1, 2.5)}, {"x": np.zeros(2), "y": (3, 0.5)}])
    assert batch["x"].shape == (2, 2)
    assert batch["y"][0].tolist() == [1, 3] and batch["y"][0].dtype == "int64"
    assert batch["y"][1].dtype == "float64"  # Python floats collate to float64, as in PyTorch
    stacked = default_collate([d2s.ones(3), d2s.zeros(3)])
    assert stacked.shape == (2, 3)
    with pytest.raises(TypeError, match="collate_fn"):
        default_collate([object(), object()])


def test_custom_collate_fn():
    loader = DataLoader(Recording(5), batch_size=2, collate_fn=lambda samples: [s[1] for s in samples])
    assert list(loader) == [[0, 1], [2, 3], [4]]


def test_the_worker_runs_ahead_but_only_prefetch_batches():
    ds = Recording(40)
    it = iter(DataLoader(ds, batch_size=2, prefetch=3))
    first = next(it)
    assert first[1].tolist() == [0, 1]
    # without asking for more, the worker prepares the next batches in the background:
    # one consumed, three waiting in the queue, one fetched and blocked on the full queue
    assert _wait_until(lambda: len(ds.accessed) >= 2 * 5)
    time.sleep(0.05)  # would give an unbounded worker time to run further ahead
    assert len(ds.accessed) == 2 * 5
    assert ds.accessed == list(range(10))
    assert next(it)[1].tolist() == [2, 3]
    assert _wait_until(lambda: len(ds.accessed) >= 2 * 6)
    it.close()


def test_breaking_out_of_a_loop_stops_and_joins_the_worker():
    ds = Recording(100)
    before = len(_worker_threads())
    for i, _ in enumerate(DataLoader(ds, batch_size=2, prefetch=2)):
        if i == 1:
            break
    gc.collect()
    assert len(_worker_threads()) == before
    n = len(ds.accessed)
    assert n < 100
    time.sleep(0.02)
    assert len(ds.accessed) == n  # nothing is read after the loop ended


def test_close_and_context_manager_stop_the_worker():
    loader = DataLoader(Recording(100), batch_size=2, prefetch=1)
    it = iter(loader)
    next(it)
    thread = it._thread
    it.close()
    assert not thread.is_alive()
    with pytest.raises(StopIteration):
        next(it)
    with iter(loader) as it2:
        next(it2)
        thread = it2._thread
    assert not thread.is_alive()


def test_an_exception_in_the_worker_is_raised_in_the_consumer():
    loader = DataLoader(Recording(10, fail_at=5), batch_size=2, prefetch=2)
    got = []
    with pytest.raises(KeyError, match="sample 5 is corrupt") as info:
        for _, y in loader:
            got.append(y.tolist())
    assert got == [[0, 1], [2, 3]]  # the batches before the failing one still arrive
    assert any("prefetch thread" in note for note in getattr(info.value, "__notes__", []))
    gc.collect()
    assert not _worker_threads()
    # synchronous loading raises the same error
    with pytest.raises(KeyError, match="sample 5"):
        list(DataLoader(Recording(10, fail_at=5), batch_size=2, prefetch=0))


def test_bad_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(Recording(3), batch_size=0)
    with pytest.raises(ValueError, match="prefetch"):
        DataLoader(Recording(3), batch_size=1, prefetch=-1)


# ------------------------------------------------------------------ PyTorch's batches, and when a thread reads ahead

_ROWS = np.random.default_rng(6).standard_normal((7, 3)).astype(np.float32)


def _loader_batches(lib, **kwargs):
    data = lib.utils.data if lib.__name__ == "torch" else lib.data
    samples = [(_ROWS[i], i, 0.5 * i, {"even": i % 2 == 0}) for i in range(7)]
    return list(data.DataLoader(samples, **kwargs))


TORCH_CASES = [
    Case(f"loader-{name}", lambda lib, kw=kw: _loader_batches(lib, **kw), grad=False,
         static="data loading runs outside programs")
    for name, kw in [("batch-3", dict(batch_size=3)), ("drop-last", dict(batch_size=3, drop_last=True)),
                     ("no-batching", dict(batch_size=None)), ("batch-7", dict(batch_size=7))]
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_by_default_only_a_tensor_dataset_is_read_ahead_by_a_thread():
    ds = TensorDataset(np.arange(8.0).reshape(4, 2), np.arange(4))
    it = iter(DataLoader(ds, batch_size=2))
    assert len(_worker_threads()) == 1
    assert [b[1].tolist() for b in it] == [[0, 1], [2, 3]]
    gc.collect()
    assert not _worker_threads()
    rec = Recording(6)
    it = iter(DataLoader(rec, batch_size=2))
    assert not _worker_threads() and rec.accessed == []  # a user's dataset: read when asked, in this thread
    next(it)
    assert rec.accessed == [0, 1]
    assert not _worker_threads()
    it = iter(DataLoader(ds, batch_size=2, prefetch=0))
    assert not _worker_threads()


class _Noisy(Dataset):
    """Augmentation with d2s's generator, as user datasets do."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return d2s.rand(2).numpy() + i


def test_random_draws_in_a_dataset_repeat_without_workers():
    def run():
        d2s.manual_seed(3)
        out = []
        for b in DataLoader(_Noisy(), batch_size=2, shuffle=True):
            out.append(b.numpy().copy())
            out.append(d2s.rand(1).numpy())  # the training loop's draws, interleaved
        return np.concatenate([o.ravel() for o in out])

    np.testing.assert_array_equal(run(), run())
