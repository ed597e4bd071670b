"""``DistributedDataParallel``: gradients averaged across ranks, overlapped with backward.

Parameters are grouped into buckets of about ``bucket_cap_mb`` (in reverse registration order,
roughly the order backward produces their gradients), as PyTorch's DDP and Horovod's tensor
fusion do, so a model's gradients travel in a few large messages instead of one per tensor.
Each parameter has a post-accumulate-grad hook; when every parameter of a bucket has its
gradient, the bucket is copied into one flat buffer and a non-blocking all-reduce starts,
while backward goes on with the layers below. A callback queued on the backward pass waits
for the reductions at its end and writes the averaged gradients back into ``.grad``.

Works the same for eager modules and ``d2s.jit.to_static`` modules: a static program's
backward accumulates into ``.grad`` through the same engine, so the same hooks fire.
"""
import time

import numpy as np

from ..autograd.engine import queue_callback
from ..nn.module import Module
from ..tensor import Tensor
from . import comm


class _Bucket:
    __slots__ = ("params", "offsets", "dtype", "pending", "request", "send", "recv")

    def __init__(self, params):
        self.params = params
        self.offsets = np.cumsum([0] + [int(np.prod(p.shape, dtype=np.int64)) for p in params]).tolist()
        self.dtype = np.dtype(str(params[0].dtype))
        self.pending = set()
        self.request = None
        self.send = self.recv = None


class DistributedDataParallel(Module):
    """Wrap ``module`` for data-parallel training over MPI (see ``d2s.distributed``).

    Args:
        module: the model (eager or converted with ``d2s.jit.to_static``).
        bucket_cap_mb: the size of one gradient bucket, in MiB.
        broadcast_parameters: start from rank 0's parameters and buffers (default True).

    ``ddp(x)`` runs ``module(x)``; after ``loss.backward()`` every parameter's ``.grad`` is the
    mean over ranks of the local gradients. A parameter that got no gradient on a rank takes
    part with zeros; one that no rank reached keeps ``.grad`` None. ``ddp.module`` is the wrapped model (save or export that one).
    """

    def __init__(self, module, bucket_cap_mb=25, broadcast_parameters=True):
        super().__init__()
        comm.init()
        self.module = module
        comm.check_replicas(module)
        if broadcast_parameters:
            comm.broadcast_parameters(module)
        params = [p for p in module.parameters() if p.requires_grad]
        cap = int(bucket_cap_mb * 2 ** 20)
        self._buckets, self._where = [], {}
        current, size = [], 0
        for p in reversed(params):
            nbytes = int(np.prod(p.shape, dtype=np.int64)) * np.dtype(str(p.dtype)).itemsize
            if current and (size + nbytes > cap or str(p.dtype) != str(current[0].dtype)):
                self._add_bucket(current)
                current, size = [], 0
            current.append(p)
            size += nbytes
        if current:
            self._add_bucket(current)
        for p in params:
            p.register_post_accumulate_grad_hook(self._on_grad)
        self._active = False
        self.comm_seconds = 0.0  # time spent waiting for reductions (for benchmarks)

    def _add_bucket(self, params):
        b = _Bucket(params)
        for i, p in enumerate(params):
            self._where[id(p)] = (b, i)
        self._buckets.append(b)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    # ------------------------------------------------------------ during backward
    def _on_grad(self, p):
        if not self._active:
            self._active = True
            for b in self._buckets:
                b.pending = {id(q) for q in b.params}
                b.request = None
            queue_callback(self._finish)
        b, _ = self._where[id(p)]
        b.pending.discard(id(p))
        if not b.pending and b.request is None:
            self._start(b)
        # MPI advances a non-blocking reduction only inside MPI calls: give the ones in flight
        # a step at every gradient, so they proceed while backward goes on
        for other in self._buckets:
            if other.request is not None:
                other.request.Test()

    def _start(self, b):
        MPI = comm._mpi()
        # after the gradients, one count per parameter of the ranks that have a gradient for
        # it: a parameter no rank reached keeps .grad None (as in one process), not zeros
        end = b.offsets[-1]
        send = np.zeros(end + len(b.params), dtype=b.dtype)
        for k, (p, lo, hi) in enumerate(zip(b.params, b.offsets, b.offsets[1:])):
            if p.grad is not None:
                send[lo:hi] = comm.to_host(p.grad.array).reshape(-1)
                send[end + k] = 1
        b.send, b.recv = send, np.empty_like(send)
        b.request = comm._comm().Iallreduce(send, b.recv, op=MPI.SUM)

    def _finish(self):
        self._active = False
        for b in self._buckets:  # parameters this backward did not reach take part with zeros
            if b.request is None:
                self._start(b)
        t0 = time.perf_counter()
        n = comm.world_size()
        for b in self._buckets:
            comm.wait(b.request, f"the gradient all-reduce of a {b.offsets[-1]}-element bucket")
            end = b.offsets[-1]
            b.recv[:end] /= n
            for k, (p, lo, hi) in enumerate(zip(b.params, b.offsets, b.offsets[1:])):
                if b.recv[end + k] == 0:
                    continue  # no rank has a gradient for it
                g = b.recv[lo:hi].reshape(p.shape).copy()
                p.grad = Tensor._make(g if isinstance(p.array, np.ndarray) else comm.xp_of(p.array).asarray(g))
            b.request = b.send = b.recv = None
        self.comm_seconds += time.perf_counter() - t0
