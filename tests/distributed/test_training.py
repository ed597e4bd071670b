"""DistributedDataParallel with converted models whose ranks take different branches: a
parameter reached on some ranks gets the mean over ranks (zeros from the others), one reached
on none keeps ``.grad`` None as in one process (so Adam leaves it alone)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import d2s
import d2s.distributed as dist
from d2s import nn, optim

from .test_distributed import _mpiexec, needs_mpi

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import distributed_branch_worker as worker  # noqa: E402

sys.path.remove(str(HERE))


@needs_mpi
@pytest.mark.parametrize("static", [False, True])
def test_one_rank_ddp_trains_like_plain_training(static):
    dist.init()
    plain, wrapped = worker.model(), worker.model()
    net = d2s.jit.to_static(wrapped) if static else wrapped
    ddp = dist.DistributedDataParallel(net)
    opts = [optim.Adam(m.parameters(), lr=0.1) for m in (plain, wrapped)]
    for step in range(len(worker.SIGNS)):
        x = worker.shard(step, 0)
        for m, o in ((plain, opts[0]), (ddp, opts[1])):
            o.zero_grad()
            (m(d2s.tensor(x)) ** 2).mean().backward()
        for a, b in zip(plain.parameters(), wrapped.parameters()):
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-12)
        for o in opts:
            o.step()
        for a, b in zip(plain.parameters(), wrapped.parameters()):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)


@needs_mpi
@pytest.mark.parametrize("mode", ["eager", "static"])
def test_two_ranks_taking_different_branches(mode, tmp_path):
    import os
    import subprocess
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent.parent), str(HERE.parent.parent / "runtime"), env.get("PYTHONPATH", "")])
    r = subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(HERE / "distributed_branch_worker.py"), mode,
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    ranks = [np.load(tmp_path / f"out_{k}.npz") for k in (0, 1)]
    want = worker.reference()
    for s, (nones, params) in enumerate(want):
        for got in ranks:
            assert list(got[f"none_{s}"]) == nones, f"step {s}"
            for k, p in enumerate(params):
                np.testing.assert_allclose(got[f"p_{s}_{k}"], p, rtol=1e-10, atol=1e-12, err_msg=f"step {s}")
