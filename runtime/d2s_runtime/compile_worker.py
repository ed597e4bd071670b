"""The background compile of compiling tiers: ONE shared daemon thread, one job at a time.

A :class:`CompileJob` lowers (when not done yet) and compiles one program for one tier, then
tells it the outcome (``native_ready(fn)`` or ``native_failed(reason, state)``); the tier keeps
running calls on the tier below meanwhile (``tiers.py``). Also here: how a failure is said in
one line (``one_line``, ``unsupported_reason``, ``compile_failure``).
"""
import atexit
import threading
import queue
import time
import weakref

from . import forksafe
from .errors import LoweringUnsupported

# Seconds between a compile's submission and its start (see _Worker._loop).
START_DELAY = 0.1


def one_line(err):
    """An exception as one short line."""
    text = f"{type(err).__name__}: {err}" if isinstance(err, BaseException) else str(err)
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def unsupported_reason(err):
    """One line saying why the native backend refused a program (``err`` from its lowering)."""
    if isinstance(err, LoweringUnsupported):
        return one_line(str(err))
    return f"lowering failed: {one_line(err)}"


def compile_failure(err):
    """``(reason, state)`` for a compile that raised ``err``: a program numba cannot type is
    unsupported (``LoweringUnsupported``), anything else a failure."""
    if isinstance(err, LoweringUnsupported):
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
        # called in a forked child when the parent was compiling (tiers.py marks numba unusable)
        self.on_fork_mid_compile = []

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
            for hook in self.on_fork_mid_compile:
                hook()
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
    """The background compile of one lowered program for one tier (``target``: its
    ``program``, ``order``, ``native_ready(fn)`` and ``native_failed(reason, state)``)."""

    __slots__ = ("target", "lowered", "native", "cache", "order", "submitted", "find_native")

    def __init__(self, target, lowered, native, cache, order=None, find_native=None):
        # weakly: a tier dropped before its turn is not compiled for
        self.target = weakref.ref(target)
        self.lowered, self.native, self.cache, self.order = lowered, native, cache, order
        self.find_native = find_native  # () -> (native module, None) or (None, reason), for a job started unlowered

    def run(self):
        target = self.target()
        if target is None:
            return
        if self.native is None:  # ("auto": the native compiler imported here, not before the first call)
            self.native, reason = self.find_native()
            if self.native is None:
                target.native_failed(reason, "unsupported")
                return
        if self.lowered is None:  # ("auto": lowered here too)
            try:
                self.lowered = self.native.lower_program(target.program, order=self.order)
            except Exception as e:  # noqa: BLE001 - NativeUnsupported, or a lowering bug: Python runs it
                target.native_failed(unsupported_reason(e), "unsupported")
                return
        try:
            ok, reason = self.native.available()  # imports numba (here, not in the caller's thread)
            if not ok:
                target.native_failed(reason)
                return
            fn = self.native.compile_lowered(self.lowered, cache_dir=self.cache)
        except BaseException as e:  # noqa: BLE001 - a failed compile leaves the Python backend running
            target.native_failed(*compile_failure(e))
            return
        target.native_ready(fn)

    def cancel(self, why):
        target = self.target()
        if target is not None:
            target.native_failed(f"native compile not done: {why}")
