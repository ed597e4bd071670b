"""The MPI communicator and the collectives d2s needs, with timeouts.

Collectives are started non-blocking and waited for with a deadline: a rank that dies (or
raises and leaves the collective) must make the others fail with a clear error instead of
hanging forever. :func:`init` also installs an exception hook that aborts the whole MPI job
when one rank raises, so the others exit at once rather than wait for the deadline.
"""
import json
import os
import sys
import time

import numpy as np

from d2s_runtime.device import to_host as _device_to_host
from d2s_runtime.device import xp_of

from ..tensor import Tensor

_STATE = {"comm": None, "timeout": None}
_DEFAULT_TIMEOUT = 300.0  # seconds a collective may wait for the other ranks


class DistributedError(RuntimeError):
    """A distributed operation could not run (MPI missing, not initialized, bad arguments)."""


class DistributedTimeoutError(DistributedError):
    """A collective did not complete in time: another rank failed or is far behind."""


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise DistributedError(
            "d2s.distributed needs mpi4py and an MPI library: pip install 'd2s[distributed]' "
            f"(installs mpi4py and the mpich wheel), then run with mpiexec -n N python ... ({e})") from None
    return MPI


def is_available():
    """Whether mpi4py and an MPI library can be imported."""
    try:
        _mpi()
    except DistributedError:
        return False
    return True


def init(timeout=None, abort_on_exception=True):
    """Join the MPI job (idempotent); returns the communicator.

    Args:
        timeout: seconds a collective waits for the other ranks before raising
            :class:`DistributedTimeoutError` (default ``D2S_DIST_TIMEOUT`` or 300).
        abort_on_exception: an uncaught exception on this rank aborts every rank of the job
            (``MPI.COMM_WORLD.Abort``), so none is left waiting in a collective.
    """
    MPI = _mpi()
    if _STATE["comm"] is None:
        _STATE["comm"] = MPI.COMM_WORLD
        if abort_on_exception and _STATE["comm"].Get_size() > 1:
            _install_abort_hook(_STATE["comm"])
    if timeout is not None or _STATE["timeout"] is None:
        _STATE["timeout"] = float(timeout if timeout is not None
                                  else os.environ.get("D2S_DIST_TIMEOUT", _DEFAULT_TIMEOUT))
    return _STATE["comm"]


def _install_abort_hook(comm):
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        sys.stderr.write(f"d2s.distributed: rank {comm.Get_rank()} raised {kind.__name__}; aborting the MPI job\n")
        sys.stderr.flush()
        # the launcher forwards this rank's stderr asynchronously: Abort kills the job at once,
        # and on a loaded machine the traceback and this line were sometimes cut off
        time.sleep(0.5)
        comm.Abort(1)

    sys.excepthook = hook


def is_initialized():
    return _STATE["comm"] is not None


def _comm():
    if _STATE["comm"] is None:
        raise DistributedError("d2s.distributed is not initialized: call d2s.distributed.init() first")
    return _STATE["comm"]


def rank():
    """This process's rank (0 .. world_size - 1)."""
    return _comm().Get_rank()


def world_size():
    """The number of processes in the job."""
    return _comm().Get_size()


def wait(request, what):
    """Wait for a non-blocking MPI request, raising :class:`DistributedTimeoutError` after
    the configured timeout (polling with a short sleep so a waiting rank does not spin)."""
    start = time.monotonic()
    deadline = start + _STATE["timeout"]
    pause = 1e-5
    # MPI makes progress on a non-blocking collective only inside MPI calls: poll without
    # sleeping for a short while (the usual case: the other ranks are about as far), then
    # with growing sleeps so a rank left waiting does not hold a core
    spin_until = start + 0.05
    while not request.Test():
        now = time.monotonic()
        if now < spin_until:
            continue
        if now > deadline:
            raise DistributedTimeoutError(
                f"d2s.distributed: {what} did not complete within {_STATE['timeout']:.0f} s on rank {rank()}: "
                "another rank has failed or stopped taking part (set the limit with init(timeout=...))")
        time.sleep(pause)
        pause = min(pause * 2, 1e-3)


_OPS = ("sum", "mean")


def _host_array(t):
    if not isinstance(t, Tensor) or t.is_symbolic:
        raise DistributedError(f"expected a concrete d2s.Tensor, got {type(t).__name__}")
    return t.array


def to_host(arr):
    """A contiguous numpy array of ``arr`` (a device array is copied to the host: the MPI
    library is not assumed to be CUDA-aware)."""
    if isinstance(arr, np.ndarray):
        return np.ascontiguousarray(arr)
    return np.ascontiguousarray(_device_to_host(arr))


def write_back(arr, host):
    """Copy ``host`` (numpy) into ``arr`` (numpy or device array) in place."""
    arr[...] = host if isinstance(arr, np.ndarray) else xp_of(arr).asarray(host)


def all_reduce(tensor, op="sum"):
    """Reduce ``tensor`` across all ranks, in place (as ``torch.distributed.all_reduce``):
    every rank ends with the sum (``op="sum"``) or the mean (``op="mean"``). Returns ``tensor``."""
    if op not in _OPS:
        raise DistributedError(f"all_reduce: op must be one of {_OPS}, got {op!r}")
    MPI = _mpi()
    arr = _host_array(tensor)
    buf = to_host(arr)
    out = np.empty_like(buf)
    wait(_comm().Iallreduce(buf, out, op=MPI.SUM), f"all_reduce of a {buf.dtype}{list(buf.shape)} tensor")
    if op == "mean":
        out /= world_size()
    write_back(arr, out)
    return tensor


def broadcast(tensor, root=0):
    """Overwrite ``tensor`` on every rank with its value on ``root``, in place. Returns it."""
    arr = _host_array(tensor)
    buf = to_host(arr)
    wait(_comm().Ibcast(buf, root=root), f"broadcast of a {buf.dtype}{list(buf.shape)} tensor")
    write_back(arr, buf)
    return tensor


def broadcast_parameters(module, root=0):
    """Give every rank ``root``'s parameters and buffers (call once before training, so all
    replicas start equal); shapes and dtypes must already agree."""
    for t in list(module.parameters()) + [b for b in _buffers(module)]:
        broadcast(t, root)


def check_replicas(module, what="DistributedDataParallel"):
    """Raise ``DistributedError`` on every rank, naming the first difference, unless every rank's
    ``module`` has the same parameters and buffers (names, shapes, dtypes) as rank 0's -- as
    PyTorch's DDP checks at construction: a broadcast of mismatched tensors fails deep inside MPI
    ("Other MPI error") or, worse, silently reads the wrong bytes."""
    if world_size() == 1:
        return
    desc = [[name, list(t.shape), str(t.dtype)] for name, t in _named_state(module)]
    text = np.frombuffer(json.dumps(desc).encode(), np.uint8)
    comm = _comm()
    counts = np.empty(world_size(), np.int64)
    comm.Allgather(np.array([text.size], np.int64), counts)
    gathered = np.empty(int(counts.sum()), np.uint8)
    comm.Allgatherv(text, [gathered, counts])
    ends = np.cumsum(counts)
    every = [json.loads(gathered[e - c:e].tobytes()) for e, c in zip(ends, counts)]
    for r, theirs in enumerate(every[1:], 1):
        if theirs == every[0]:
            continue
        first = {n: (s, d) for n, s, d in every[0]}
        other = {n: (s, d) for n, s, d in theirs}
        for name in list(first) + [n for n in other if n not in first]:
            a, b = first.get(name), other.get(name)
            if a != b:
                def show(v):
                    return "nothing" if v is None else f"{v[1]}{v[0]}"
                raise DistributedError(f"{what}: rank {r}'s {name!r} is {show(b)} where rank 0's is {show(a)}; "
                                       "every rank must build the same model (same layers, sizes and dtypes)")
        raise DistributedError(f"{what}: rank {r}'s parameters and buffers come in another order than rank 0's")


def _named_state(module):
    yield from module.named_parameters()
    for m_name, m in module.named_modules():
        for b_name, b in m.__dict__.get("_buffers", {}).items():
            if b is not None:
                yield (f"{m_name}.{b_name}" if m_name else b_name), b


def _buffers(module):
    for m in module.modules():
        for b in m.__dict__.get("_buffers", {}).values():
            if b is not None:
                yield b


def barrier():
    """Wait until every rank reaches this point (with the timeout)."""
    wait(_comm().Ibarrier(), "barrier")


# ------------------------------------------------------------------ torch.distributed's names
def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, **kwargs):
    """``torch.distributed.init_process_group``: joins the MPI job (:func:`init`). d2s's
    processes are MPI ranks, started by ``mpiexec -n N``: a ``world_size``/``rank`` given, or set
    by a launcher in ``WORLD_SIZE``/``RANK`` (``torchrun``), that is not the MPI job's raises,
    instead of every process training alone as rank 0 of 1."""
    del backend, init_method, kwargs  # (MPI is the transport; the job is mpiexec's)
    seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout
    comm = init(timeout=seconds)
    size, me = comm.Get_size(), comm.Get_rank()
    want_size = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", size))
    want_rank = rank if rank != -1 else int(os.environ.get("RANK", me))
    if (want_size, want_rank) != (size, me):
        raise DistributedError(
            f"init_process_group: asked for rank {want_rank} of {want_size}, but this process is MPI rank {me} of "
            f"{size}. d2s runs data parallel over MPI: start the job with `mpiexec -n {want_size} python ...` "
            "(not torchrun)")


def destroy_process_group(group=None):
    """``torch.distributed.destroy_process_group``: nothing to do (MPI ends with the process)."""
    del group


def get_rank(group=None):
    """``torch.distributed.get_rank``: :func:`rank`."""
    del group
    return rank()


def get_world_size(group=None):
    """``torch.distributed.get_world_size``: :func:`world_size`."""
    del group
    return world_size()
