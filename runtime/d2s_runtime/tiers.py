"""Backends of the Executor, and the tiered native compile.

An Executor runs its program on the Python backend (``codegen.py`` or the step interpreter)
or on the native backend (``native/``: the program lowered to one numba-compiled function).
``backend='native'`` or ``'auto'`` never makes a program wait for, or fail because of, the
native compiler:

* preparation lowers the program (fast: no compile). A program the native backend cannot
  lower, a machine without numba, a GPU executor: the Python backend runs, and the
  executor's :meth:`~d2s_runtime.Executor.backend_report` says why in one line;
* a lowered program whose compiled form is in the disk cache is loaded at once (a warm
  process runs natively from its first call); any other is compiled on ONE shared
  background thread while the Python backend runs the calls, and is swapped in, atomically,
  when ready. A compile that fails leaves the Python backend running and records why.

Like a JIT's tiers (HotSpot's interpreter then C2, or JAX's async dispatch hiding compile
time), the first call never waits for the slow compiler.

``'auto'`` also never keeps a slower backend. Native code wins by far where numpy's per-op
calls and temporaries dominate (control flow over small tensors: 30-90x here), but can lose
where big kernels do the work: BLAS-bound programs (numba's ``np.dot`` calls scipy's OpenBLAS,
whose thread pool competes with numpy's when both run in one process) and large reductions
(numpy's pairwise SIMD sums beat a fused serial loop). No static rule separated these cases
reliably (a program whose matmuls the optimizer removed, like ``(x @ x.T).sum()``, still ran
slower natively), so once the native function is ready :class:`AutoTrial` times the next real
calls, a block on each backend, and keeps the faster one; ``backend_report()`` says which
and why. A program that computes matrix products must run natively :data:`PRODUCTS_MARGIN`
times faster to switch: its two backends call two BLAS libraries (numpy's OpenBLAS, and MKL
or the OpenBLAS numba's ``np.dot`` calls, ``native/mkl.py``), whose thread pools compete and
whose speeds vary with what else the process runs, so a small
measured lead is not kept (trials that alternated the backends call by call measured an MLP
step 1.27x faster natively that then ran 1.9x slower). Control flow over small tensors wins
natively by tens; the 64-step RNN of ``benchmarks/bench_native.py``, whose pooled stacks keep
its native form free of page faults, by about 1.5x. ``'native'`` always runs native code once it is ready.

The native compiler's disk cache is ``$D2S_CACHE_DIR/native`` (default
``~/.cache/d2s/native``; see ``native.default_cache_dir``), read at each compile.
"""
import atexit
import importlib
import importlib.util
import queue
import statistics
import threading
import time
import weakref

from .ops import OPS
from . import forksafe

BACKENDS = ("python", "native", "auto")

# The backend of an Executor built without ``backend=`` (d2s.jit's programs take theirs from
# ``d2s.jit.config.backend``); the test suite sets it to run the executor tests on each backend.
default_backend = "python"

# Compile in the preparing thread instead of the background one (tests and benchmarks that
# must run natively from the first call, whatever the disk cache holds).
synchronous = False

# The clock of "auto"'s measurement (tests replace it with a deterministic one), and how many
# timed calls of each backend decide: real calls, so the measurement costs at most this many
# calls on the slower backend.
timer = time.perf_counter
AUTO_TRIAL_CALLS = 5
PRODUCTS_MARGIN = 1.25

# Seconds between a compile's submission and its start (see _Worker._loop).
START_DELAY = 0.1

_AVAILABLE = []  # [(module or None, reason)], computed once per process
_AVAILABLE_LOCK = forksafe.Lock()


def native_module():
    """``(native module, None)`` when the native backend can run here, else ``(None, reason)``."""
    if not _AVAILABLE:
        with _AVAILABLE_LOCK:
            if not _AVAILABLE:
                _AVAILABLE.append(_probe())
    return _AVAILABLE[0]


def numba_missing():
    """Why the native backend cannot run here, as far as a cheap check tells (None: it may):
    the answer of :func:`native_module` once known, else whether numba is installed, without
    importing the native compiler (the background job does that)."""
    if _AVAILABLE:
        return _AVAILABLE[0][1]
    return _numba_spec_missing()


def _numba_spec_missing():
    try:
        if importlib.util.find_spec("numba") is None:
            return "numba is not installed (pip install 'd2s[native]')"
    except (ImportError, ValueError) as e:
        return f"numba cannot be found ({e})"
    return None


def _probe():
    # whether numba is installed, without importing it: importing numba takes about a second,
    # which the first call must not wait for (the background compile imports it; a numba that
    # is installed but broken makes that compile fail, with the reason, and Python keeps running)
    missing = _numba_spec_missing()
    if missing is not None:
        return None, missing
    try:
        native = importlib.import_module(__package__ + ".native")
    except ImportError as e:  # a runtime without the native compiler
        return None, f"the native compiler is not available ({e})"
    return native, None


def one_line(err):
    """An exception as one short line."""
    text = f"{type(err).__name__}: {err}" if isinstance(err, BaseException) else str(err)
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def unsupported_reason(err):
    """One line saying why the native backend refused a program (``err`` from its lowering)."""
    if type(err).__name__ == "NativeUnsupported":
        return one_line(str(err))
    return f"lowering failed: {one_line(err)}"


def compile_failure(err):
    """``(reason, state)`` for a compile that raised ``err``: a program numba cannot type is
    unsupported (``NativeUnsupported``), anything else a failure."""
    if type(err).__name__ == "NativeUnsupported":
        return one_line(str(err)), "unsupported"
    return f"native compile failed: {one_line(err)}", "failed"


class _Worker:
    """One daemon thread compiling native programs, one at a time, in submission order.

    One thread (not one per program): numba's compiler holds the GIL most of the time, so
    parallel compiles would not finish sooner, and a single worker bounds what the
    background takes from the calls running meanwhile. Jobs still queued when the
    interpreter exits are dropped (a daemon thread: exit never waits for compiles).
    """

    def __init__(self):
        self._queue = queue.Queue()
        self._thread = None
        self._lock = forksafe.Lock()
        self.stopping = False
        self.current = None  # the job being compiled now

    def submit(self, job):
        job.submitted = time.monotonic()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="d2s-native-compile", daemon=True)
                self._thread.start()
        self._queue.put(job)

    def after_fork(self):
        """In a forked child: the thread is gone; its queue (maybe locked by it) is replaced,
        and the jobs the parent was compiling or had queued are cancelled, so no executor of
        the child waits for them; the child's own compiles start a new thread."""
        pending = [self.current] + list(self._queue.queue)  # (the deque itself: no lock to take)
        if self.current is not None:  # numba was importing or compiling: its locks and modules are unusable here
            _AVAILABLE[:] = [(None, "this process was forked while the native compiler ran in another thread, whose "
                                    "locks and half-imported modules the child inherits: the Python backend runs here")]
        self._queue, self._thread, self.current = queue.Queue(), None, None
        for job in pending:
            if job is not None:
                job.cancel("the process was forked while it was pending (the child compiles its own programs)")

    def _loop(self):
        while True:
            job = self._queue.get()
            self.current = job
            try:
                # a job is submitted as a first call returns from the executor: let the rest
                # of that call (the caller's code) finish before numba's import and compiler
                # take the GIL in long stretches
                delay = job.submitted + START_DELAY - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                if self.stopping:
                    job.cancel("the interpreter is exiting")
                else:
                    job.run()
            except BaseException:  # noqa: BLE001 - a job reports its own failure; keep serving
                pass
            finally:
                self.current = None


WORKER = _Worker()
forksafe.after_fork(WORKER.after_fork)


def _stop_worker():
    WORKER.stopping = True


atexit.register(_stop_worker)


class CompileJob:
    """The background compile of one lowered program for one executor."""

    __slots__ = ("executor", "lowered", "native", "cache", "order", "submitted")

    def __init__(self, executor, lowered, native, cache, order=None):
        # weakly: an executor dropped before its turn is not compiled for
        self.executor = weakref.ref(executor)
        self.lowered, self.native, self.cache, self.order = lowered, native, cache, order

    def run(self):
        executor = self.executor()
        if executor is None:
            return
        if self.native is None:  # ("auto": the native compiler imported here, not before the first call)
            self.native, reason = native_module()
            if self.native is None:
                executor._native_failed(reason, "unsupported")
                return
        if self.lowered is None:  # ("auto": lowered here too)
            try:
                self.lowered = self.native.lower_program(executor.program, order=self.order)
            except Exception as e:  # noqa: BLE001 - NativeUnsupported, or a lowering bug: Python runs it
                executor._native_failed(unsupported_reason(e), "unsupported")
                return
        try:
            ok, reason = self.native.available()  # imports numba (here, not in the caller's thread)
            if not ok:
                executor._native_failed(reason)
                return
            fn = self.native.compile_lowered(self.lowered, cache_dir=self.cache)
        except BaseException as e:  # noqa: BLE001 - a failed compile leaves the Python backend running
            executor._native_failed(*compile_failure(e))
            return
        executor._native_ready(fn)

    def cancel(self, why):
        executor = self.executor()
        if executor is not None:
            executor._native_failed(f"native compile not done: {why}")


class AutoTrial:
    """The measurement that decides "auto": the calls after the native function is ready (the
    first of them native and untimed, checking its outputs) run a block on Python, then one on
    native, each one untimed call and :data:`AUTO_TRIAL_CALLS` calls timed with :data:`timer`;
    the backend with the lower median wins (native by ``margin``), Python on a tie (the exact
    one). Blocks, not alternate calls: alternating charged each backend's BLAS threads, still
    spinning after its last call, and the data it pushed out of the caches, to the other
    backend's next call, and misjudged matrix-heavy programs both ways. What is left of that
    charge falls on the block that runs second, native's: an unclear case stays on Python."""

    def __init__(self, calls=None, margin=1.0):
        self.calls = calls or AUTO_TRIAL_CALLS
        self.margin = margin  # how many times faster native must be to win
        self.times = {"native": [], "python": []}
        self.turn = 0
        self.checked = False  # the first native call (untimed) checked its outputs
        self.lock = forksafe.Lock()

    def next_backend(self):
        """``(backend, timed)`` for the next call."""
        with self.lock:
            self.turn += 1
            first = self.turn <= self.calls + 1
            return ("python" if first else "native"), self.turn not in (1, self.calls + 2)

    def record(self, backend, seconds):
        """Record one timed call; returns ``(winner, reason)`` once decided, else ``None``."""
        with self.lock:
            self.times[backend].append(seconds)
            nat, py = self.times["native"], self.times["python"]
            if len(nat) < self.calls or len(py) < self.calls:
                return None
            tn, tp = statistics.median(nat), statistics.median(py)
        ms = f"median of {self.calls} calls each: native {tn * 1e3:.3g} ms, python {tp * 1e3:.3g} ms"
        if tn * self.margin < tp:
            return "native", f"measured {tp / max(tn, 1e-12):.2f}x faster than python ({ms})"
        if tn < tp:
            return "python", (f"measured native {tp / max(tn, 1e-12):.2f}x faster than python, under the "
                              f"{self.margin:g}x asked of a program with matrix products ({ms})")
        return "python", f"measured native {tn / max(tp, 1e-12):.2f}x slower than python ({ms})"


def computes_products(program):
    """Whether ``program`` (or a block inside it) computes matrix products (BLAS calls)."""
    blocks = [program.block]
    while blocks:
        for op in blocks.pop().ops:
            blocks.extend(op.blocks.values())
            opdef = OPS.get(op.type)
            if opdef is not None and opdef.ufunc == "matmul":
                return True
    return False
