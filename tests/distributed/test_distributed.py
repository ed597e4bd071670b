"""``d2s.distributed``: collectives, DistributedSampler, and DistributedDataParallel under
``mpiexec -n 2`` compared with single-process training on the whole global batch."""
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import d2s
import d2s.distributed as dist
from d2s.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
WORKER = HERE / "distributed_worker.py"


def _mpiexec():
    local = Path(sys.executable).parent / "mpiexec"
    return str(local) if local.exists() else shutil.which("mpiexec")


needs_mpi = pytest.mark.skipif(not dist.is_available() or _mpiexec() is None,
                               reason="MPI is not installed: pip install -e '.[distributed]' (mpi4py + mpich)")


def _launch(mode, out="", n=2, timeout=120):
    env = dict(os.environ)
    root = HERE.parent.parent
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(root / "runtime"), env.get("PYTHONPATH", "")])
    return subprocess.run([_mpiexec(), "-n", str(n), sys.executable, str(WORKER), mode, out],
                          capture_output=True, text=True, timeout=timeout, env=env)


# ------------------------------------------------------------------ one process
@needs_mpi
def test_torch_distributed_names_join_the_mpi_job_or_say_how_to_launch(monkeypatch):
    from d2s.nn.parallel import DistributedDataParallel
    assert DistributedDataParallel is dist.DistributedDataParallel
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    dist.init_process_group(backend="nccl")
    assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    dist.destroy_process_group()
    # launched by torchrun: each process would train alone as rank 0 of 1
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(dist.DistributedError, match="rank 1 of 2.*MPI rank 0 of 1.*mpiexec -n 2"):
        dist.init_process_group(backend="gloo")
    with pytest.raises(dist.DistributedError, match="rank 0 of 3"):
        dist.init_process_group(world_size=3, rank=0)


@needs_mpi
def test_single_process_collectives_are_identities():
    dist.init()
    assert (dist.rank(), dist.world_size()) == (0, 1)
    t = d2s.tensor([1.0, 2.0, 3.0])
    assert dist.all_reduce(t, op="sum") is t
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(dist.all_reduce(t, op="mean").numpy(), [1.0, 2.0, 3.0])
    with pytest.raises(dist.DistributedError, match="op must be one of"):
        dist.all_reduce(t, op="max")
    dist.barrier()


@pytest.mark.parametrize("n,size,drop_last", [(10, 2, False), (11, 2, False), (11, 2, True), (7, 3, False)])
def test_sampler_shards_cover_the_dataset(n, size, drop_last):
    data = list(range(n))
    shards = [list(dist.DistributedSampler(data, num_replicas=size, rank=r, shuffle=True, seed=4,
                                           drop_last=drop_last)) for r in range(size)]
    assert len({len(s) for s in shards}) == 1  # every rank takes as many steps
    everything = sorted(i for s in shards for i in s)
    if drop_last:
        assert len(everything) == (n // size) * size and len(set(everything)) == len(everything)
    else:
        assert set(everything) == set(range(n))  # all samples, a few repeated to even out
        assert len(everything) == -(-n // size) * size


def test_sampler_epochs_reshuffle_the_same_way_on_every_rank():
    data = list(range(12))
    a0, a1 = (dist.DistributedSampler(data, num_replicas=2, rank=r, seed=1) for r in (0, 1))
    first = (list(a0), list(a1))
    a0.set_epoch(1), a1.set_epoch(1)
    second = (list(a0), list(a1))
    assert first != second
    assert sorted(first[0] + first[1]) == sorted(second[0] + second[1]) == data


def test_dataloader_reads_the_sampler_shard():
    x = d2s.tensor(np.arange(10.0))
    data = TensorDataset(x)
    sampler = dist.DistributedSampler(data, num_replicas=2, rank=1, shuffle=False)
    loader = DataLoader(data, batch_size=2, sampler=sampler, prefetch=0)
    assert len(loader) == 3
    got = np.concatenate([b[0].numpy() for b in loader])
    np.testing.assert_array_equal(got, [1.0, 3.0, 5.0, 7.0, 9.0])
    with pytest.raises(ValueError, match="shuffle=True or a sampler"):
        DataLoader(data, batch_size=2, shuffle=True, sampler=sampler)


# ------------------------------------------------------------------ two processes
@needs_mpi
@pytest.mark.parametrize("mode", ["eager", "static"])
def test_two_ranks_train_like_one_process_on_the_global_batch(mode, tmp_path):
    r = _launch(mode, str(tmp_path / "params"))
    assert r.returncode == 0, r.stdout + r.stderr
    ranks = [np.load(tmp_path / f"params_{k}.npz") for k in (0, 1)]
    sys.path.insert(0, str(HERE))
    try:
        from distributed_worker import train
    finally:
        sys.path.remove(str(HERE))
    single = train(static=mode == "static")
    for k, want in enumerate(single):
        a, b = ranks[0][f"arr_{k}"], ranks[1][f"arr_{k}"]
        np.testing.assert_array_equal(a, b)  # replicas stay bit-identical
        np.testing.assert_allclose(a, want, rtol=0, atol=1e-6)


@needs_mpi
def test_a_rank_that_raises_ends_the_job_instead_of_hanging():
    t = time.monotonic()
    r = _launch("raise")
    assert r.returncode != 0
    assert time.monotonic() - t < 60
    assert "rank 1 raised RuntimeError" in r.stderr


@needs_mpi
def test_a_collective_nobody_joins_times_out():
    t = time.monotonic()
    r = _launch("stall")
    assert r.returncode != 0
    assert "DistributedTimeoutError" in r.stderr and "did not complete within 1 s" in r.stderr
    assert time.monotonic() - t < 50  # well before the sleeping rank would wake (60 s)


@needs_mpi
def test_replicas_of_different_models_are_named_at_construction():
    """Parameters that differ in shape between ranks: every rank gets one clear error naming the
    parameter at DistributedDataParallel(...), not "Other MPI error" deep in a broadcast."""
    r = _launch("mismatch")
    assert r.returncode == 0, r.stderr
    want = "rank 1's '0.weight' is float32[17, 8] where rank 0's is float32[16, 8]"
    # mpiexec forwards both ranks' output through one pipe, so lines may run together: find each
    # rank's message anywhere in the output rather than line by line.
    ranks = re.findall(r"rank (\d): DistributedDataParallel: " + re.escape(want), r.stdout)
    assert sorted(ranks) == ["0", "1"], r.stdout
