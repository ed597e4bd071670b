"""One BLAS thread while a loop of small matrix products runs.

numpy's OpenBLAS splits every product above ~2.6e5 multiply-adds over its threads, and its
worker threads wait for work by spinning. A loop of small products (an RNN step:
``(32, 256) @ (256, 256)``, two million multiply-adds) then pays a hand-over between threads
per product, and on a machine whose cores other processes also use, a worker that is not
running when its share is handed to it stalls the product for a scheduler tick: measured on
the 2-core machine of ``benchmarks/bench_native.py`` with other processes busy, such a loop ran
6 to 10 times slower on 2 threads than on 1 (on an idle machine, 2 threads gain little at
these sizes). The generated code (``codegen.py``) therefore runs a ``while`` or ``scan`` whose
products are all known to be small with OpenBLAS set to one thread, and restores the count
after it (also when the loop raises).

On a machine whose cores are all busy the same stall hits large products too (a
``(256, 2048) @ (2048, 256)`` product: 70 ms on 2 threads against 7 ms on 1, measured there).
d2s does not react to the machine's load: its behaviour would then depend on other processes.
Set ``OPENBLAS_NUM_THREADS`` (or ``--threads 1`` in the benchmarks) on an oversubscribed machine.

The count is process-wide: ``enter``/``leave`` keep a depth count under a lock so that loops
running in several threads at once set it once and restore it once (a product another thread
computes meanwhile runs on one thread: slower, never different). Where numpy's BLAS is not an
OpenBLAS whose thread count can be set (another BLAS, no ctypes, not Linux), both calls do
nothing. ``SMALL_PRODUCT`` is the size (multiply-adds of one product) up to which a product
counts as small; ``enabled`` turns the whole mechanism off.
"""

from .ops import OPS
from . import forksafe

enabled = True
SMALL_PRODUCT = 1 << 23

_lock = forksafe.Lock()
_depth = [0]
_saved = [None]
_api = []  # [(get, set)] once looked up; [None] where unavailable


def _find():
    """``(get_num_threads, set_num_threads)`` of the OpenBLAS numpy uses, or None."""
    try:
        import ctypes
        import numpy  # noqa: F401 - loads its BLAS, so that it is among the mapped files
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if "openblas" in line.lower() and
                     len(line.split(None, 5)) == 6}
    except (OSError, ImportError):
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""), ("openblas", "64_"),
                               ("openblas", "")):
            get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            if get is not None and set_ is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                set_.restype, set_.argtypes = None, [ctypes.c_int]
                return get, set_
    return None


def _functions():
    if not _api:
        _api.append(_find())
    return _api[0]


def available():
    """Whether numpy's BLAS thread count can be set here."""
    return _functions() is not None


def enter():
    """Run BLAS on one thread until the matching :func:`leave`."""
    if not enabled:
        return
    api = _functions()
    if api is None:
        return
    with _lock:
        if _depth[0] == 0:
            _saved[0] = api[0]()
            if _saved[0] != 1:
                api[1](1)
        _depth[0] += 1


def leave():
    """End an :func:`enter` (the last one restores the thread count)."""
    api = _functions()
    if api is None:
        return
    with _lock:
        if _depth[0] == 0:
            return
        _depth[0] -= 1
        if _depth[0] == 0 and _saved[0] not in (None, 1):
            api[1](_saved[0])


def _is_loop(op):
    opdef = OPS.get(op.type)
    return opdef is not None and opdef.structured and opdef.layout.repeats


def small_product_loops(ops, type_of):
    """Whether a loop among ``ops`` (a structured op whose layout repeats a block: ``while``,
    ``scan``), and every loop nested in it, computes matrix products, all of sizes known to be
    at most ``SMALL_PRODUCT`` multiply-adds; ``type_of(name)`` gives a var's TensorType (or None)."""
    found = False
    stack = [b for op in ops if _is_loop(op) for b in op.blocks.values()]
    while stack:
        block = stack.pop()
        for sub in block.ops:
            stack.extend(sub.blocks.values())
            opdef = OPS.get(sub.type)
            if opdef is None or opdef.ufunc != "matmul":
                continue
            ta, tb = (type_of(n) for n in sub.inputs[:2])
            if ta is None or tb is None or None in ta.shape or None in tb.shape:
                return False
            size = 1
            for d in ta.shape:
                size *= d
            if size * (tb.shape[-1] if len(tb.shape) >= 2 else 1) > SMALL_PRODUCT:
                return False
            found = True
    return found


def threads():
    """numpy's BLAS thread count now (None where it cannot be read)."""
    api = _functions()
    return None if api is None else api[0]()
