"""The GPU graph backend (``backend="graph"``): whole programs captured once and replayed as
CUDA graphs, control flow included (conditional graph nodes), so that a call makes no launch
from Python and, without checks, no host synchronization.

Modules:

* ``capture.py``: the capture interpreter (a program walked once under a recorder; control
  flow by block layout; device stacks; the device error word);
* ``tier.py``: :class:`~d2s_runtime.gpu.tier.GraphTier`, the rung of the tier ladder
  (``tiers.py``) that captures at the second call and replays after;
* ``passes/if_convert.py``, a pass the graph tier runs: a ``cond`` with cheap, pure,
  same-typed branches becomes both branches and a ``where`` (no predicate read, no node);
* ``cuda.py``: the backend on a real GPU (cupy's stream capture, cuda-bindings' conditional
  nodes, the cuBLAS shim of ``cublas.py``, kernels from ``kernels.py`` compiled with NVRTC,
  ``nvrtc.py``);
* ``cuda_lower.py``: the CUDA C emitter beside the numba one, over the shared planner
  (``native/plan.py``): element-wise chains and a reduction reading them as one kernel each.

A graph backend is found per device name: ``"gpu"`` gets the CUDA one (cupy and cuda-bindings
are imported only then); other devices may register one (:func:`register_graph_backend`: the
test suite registers a fake capture for its "strict" device, ``tests/strict_graph.py``).
"""
_FACTORIES = {}


def register_graph_backend(device, factory):
    """Make ``backend="graph"`` capture programs of device ``device`` with ``factory()``, a
    :class:`~d2s_runtime.gpu.backends.GraphBackend`."""
    _FACTORIES[device] = factory


def unregister_graph_backend(device):
    _FACTORIES.pop(device, None)


def graph_backend(device):
    """``(backend, None)`` for ``device``, or ``(None, reason)`` where graphs cannot run."""
    device = str(getattr(device, "type", device))  # (d2s passes its device objects)
    factory = _FACTORIES.get(device)
    if factory is None and device in ("gpu", "cuda"):
        from .cuda import cuda_backend
        factory = cuda_backend
    if factory is None:
        return None, f"device {device!r} has no graph backend (graphs run on device 'gpu')"
    try:
        return factory(), None
    except Exception as e:  # noqa: BLE001 - a missing package or driver: the reason, Python runs
        return None, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
