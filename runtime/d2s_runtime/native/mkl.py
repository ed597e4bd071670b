"""Intel MKL's matrix products for the native backend, where the optional extra installed it.

numba's ``np.dot`` calls the BLAS of scipy, an OpenBLAS. On the products of
``benchmarks/bench_native.py`` MKL (the BLAS torch's CPU wheels use) is 1.2 to 1.7 times faster
on the 2-core AVX-512 machine the benchmarks ran on (``benchmarks/bench_native_matmul.py``
prints both), and those products are most of an MLP step's and an RNN's time. With
``pip install 'd2s[mkl]'`` (the ``mkl`` wheel puts ``libmkl_rt`` in ``<prefix>/lib``) the
native lowering calls ``_lib.smatmul``/``dmatmul``, which call ``cblas_sgemm``/``cblas_dgemm``;
without it, ``np.dot`` as before. ``D2S_NATIVE_BLAS=openblas`` keeps ``np.dot`` where MKL is
installed (``mkl`` requires it to be found; a clear error where it is not).

The library is found without importing numba (the lowering decides which call to write and
must stay cheap) and opened with ``ctypes``. Its functions are registered with llvmlite under
names of d2s's own (``SGEMM``, ``DGEMM``) when ``_lib`` is imported, before any generated code
is compiled or loaded from numba's disk cache: machine code links to them by name, so code
cached by one process runs in the next. The interface layer is set to LP64 (32-bit dims, what
the declared signatures take) before the first call; a process that already chose ILP64
through ``MKL_INTERFACE_LAYER`` gets ``np.dot``.
"""
import ctypes
import glob
import os
import sys

from .. import forksafe, threads

SGEMM, DGEMM = "d2s_cblas_sgemm", "d2s_cblas_dgemm"
_ENV = "D2S_NATIVE_BLAS"

_lock = forksafe.Lock()
_state = {}  # "lib": (ctypes.CDLL or None, reason); "registered": True


def _candidates():
    """Where the ``mkl`` wheel (and conda) put ``libmkl_rt``: the prefixes' ``lib`` folders."""
    seen = []
    for prefix in (sys.prefix, sys.base_prefix, os.environ.get("CONDA_PREFIX")):
        if prefix and prefix not in seen:
            seen.append(prefix)
    for prefix in seen:
        yield from sorted(glob.glob(os.path.join(prefix, "lib", "libmkl_rt.so*")), reverse=True)


def _open():
    choice = os.environ.get(_ENV, "").strip().lower()
    if choice not in ("", "mkl", "openblas"):
        raise ValueError(f"{_ENV}={choice!r}: expected 'mkl' or 'openblas'")
    if choice == "openblas":
        return None, f"{_ENV}=openblas"
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        set_layer = getattr(lib, "MKL_Set_Interface_Layer", None)
        if set_layer is None or not hasattr(lib, "cblas_sgemm"):
            continue
        set_layer.argtypes, set_layer.restype = [ctypes.c_int], ctypes.c_int
        if set_layer(0) != 0:  # MKL_INTERFACE_LP64; another layer was chosen first in this process
            return None, "MKL runs with 64-bit integers (MKL_INTERFACE_LAYER) in this process"
        _threading_layer(lib)
        _govern(lib)
        return lib, ""
    reason = "MKL is not installed (pip install 'd2s[mkl]')"
    if choice == "mkl":
        raise RuntimeError(f"{_ENV}=mkl: {reason}")
    return None, reason


_GNU_THREADS = 3  # MKL_THREADING_GNU


def _threading_layer(lib):
    """GNU OpenMP threads (libgomp) for MKL, unless ``MKL_THREADING_LAYER`` chose. MKL's default,
    Intel's OpenMP, keeps its workers spinning for 200 ms after each product: measured with
    benchmarks/bench_native.py on 2 cores, numpy's own products (OpenBLAS, whose threads then
    wait for a core) ran 1.15 to 1.25 times slower beside it, and the native MLP step took
    2.27 ms against 1.96 ms with GNU threads. Where libgomp cannot be loaded, MKL keeps its
    default.

    GNU OpenMP's thread pool does not survive ``fork``: a forked child's first product waited
    forever (a ``multiprocessing`` pool with the "fork" start method, a data loader's worker).
    A child forked through ``os.fork`` therefore runs MKL on one thread, which never enters
    the pool (measured: the child's products then finish, the parent keeps its threads)."""
    if os.environ.get("MKL_THREADING_LAYER"):
        return
    layer = getattr(lib, "MKL_Set_Threading_Layer", None)
    one_thread = getattr(lib, "MKL_Set_Num_Threads", None)
    if layer is None or one_thread is None:
        return
    try:
        ctypes.CDLL("libgomp.so.1", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return
    layer.argtypes, layer.restype = [ctypes.c_int], ctypes.c_int
    one_thread.argtypes, one_thread.restype = [ctypes.c_int], None
    if layer(_GNU_THREADS) == _GNU_THREADS:
        os.register_at_fork(after_in_child=lambda: one_thread(1))


def _govern(lib):
    """Let ``threads.govern`` set MKL's thread count from what the machine has free (see
    ``d2s_runtime/threads.py``): MKL computes a product alike on any number of threads."""
    get_max, set_num = getattr(lib, "MKL_Get_Max_Threads", None), getattr(lib, "MKL_Set_Num_Threads", None)
    if get_max is None or set_num is None:
        return
    get_max.argtypes, get_max.restype = [], ctypes.c_int
    set_num.argtypes, set_num.restype = [ctypes.c_int], None
    current = []

    def set_threads(n):
        if not current or current[0] != n:  # (a ctypes call only when the count changes)
            set_num(n)
            current[:] = [n]

    threads.register(get_max, set_threads)
    os.register_at_fork(after_in_child=current.clear)


def _opened():
    with _lock:
        if "lib" not in _state:
            _state["lib"] = _open()
        return _state["lib"][0]


def library():
    """The opened ``libmkl_rt`` (``ctypes.CDLL``), or None where the native backend's products
    use ``np.dot``; looked up once per process."""
    return _opened()


def blas_name():
    """Which BLAS the native backend's matrix products call here: ``"mkl"`` or
    ``"openblas (<why not MKL>)"``."""
    lib = library()
    return "mkl" if lib is not None else f"openblas ({_state['lib'][1]})"


def register():
    """Make ``SGEMM``/``DGEMM`` resolvable by machine code numba compiles or loads (called by
    ``_lib`` at import, so before any generated code). Whether MKL is used. It reads the opened
    library itself, not through ``library()``: a lowering told "no MKL" (the tests' OpenBLAS
    fixture replaces ``library``) while ``_lib`` was first imported must not leave the symbols
    unregistered for a later lowering that calls MKL."""
    lib = _opened()
    if lib is None:
        return False
    with _lock:
        if not _state.get("registered"):
            import llvmlite.binding as llvm
            for name, fn in ((SGEMM, lib.cblas_sgemm), (DGEMM, lib.cblas_dgemm)):
                llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)
            _state["registered"] = True
    return True
