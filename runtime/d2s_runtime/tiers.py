"""The tier ladder: one runner, for ``d2s.jit`` and ``d2s_runtime.load`` alike, that runs a
program on the cheapest tier first and climbs as the program proves to be reused.

:class:`TieredRunner` owns the ladder of one program, its tiers explicit and in order:

1. **quick interpreter** (``quick=True``): the program as built, on the step interpreter, which
   is the cheapest to prepare. A program run once (a one-off shape, a debugging call) never pays
   for the passes or the code generation (``d2s.jit`` runs every new program this way first);
2. **optimized + generated Python**: the program optimized (``optimize``, when given) and
   compiled by ``codegen.py`` into one Python function (the step interpreter where codegen
   cannot, or with ``parallel=True``); from the second call, or at once without ``quick``;
3. **native**: the program compiled by numba (``native/``), in the background, swapped in when
   ready (``backend='native'`` or ``'auto'``);
4. **graph** (``backend='graph'``, on a GPU): the program captured at the second call and
   replayed as a CUDA graph after (``gpu/tier.py``), swapped into the runner's box as the
   native tier is.

Each call runs the tier in ``runner.box[0]``; a tier taking over stores its call there, once,
so calls in flight finish on the tier below and the next ones run on the new one.
:class:`~d2s_runtime.Executor` (the prepared program and its interpreter) hands its calls to a
ladder over itself (``TieredRunner.over``), so ``Executor(program, backend=...)`` climbs the
same rungs.

``backend='native'`` or ``'auto'`` never makes a program wait for, or fail because of, the
native compiler:

* preparation lowers the program (fast: no compile). A program the native backend cannot
  lower, a machine without numba, a GPU executor: the Python tier runs, and
  :meth:`TieredRunner.backend_report` says why in one line;
* a lowered program whose compiled form is in the disk cache is loaded at once (a warm
  process runs natively from its first call); any other is compiled on ONE shared background
  thread (``compile_worker.py``) while the Python tier runs the calls, and is swapped in when
  ready. A compile that fails leaves the Python tier running and records why.

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
import importlib
import importlib.util
import statistics
import threading
import time

import numpy as np

from . import codegen
from . import executor as _executor
from . import forksafe, threads
from .compile_worker import WORKER, CompileJob, compile_failure, one_line, unsupported_reason  # noqa: F401
from .gc_pause import paused_gc
from .errors import ExecutionError
from .executor import PASS_THROUGH, Executor
from .ops import OPS

BACKENDS = ("python", "native", "auto", "graph")

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


def _forked_mid_compile():
    # numba was importing or compiling in the parent: its locks and modules are unusable here
    _AVAILABLE[:] = [(None, "this process was forked while the native compiler ran in another thread, whose "
                            "locks and half-imported modules the child inherits: the Python backend runs here")]


WORKER.on_fork_mid_compile.append(_forked_mid_compile)


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


# ====================================================================== tier 2: generated Python
class GeneratedTier:
    """The program as one generated Python function (``codegen.py``) over a prepared Executor
    (its op order, its buffer plan, and its interpreter for the sub-blocks of structured ops
    without a codegen lowering). ``GeneratedTier.build`` returns None where codegen cannot
    compile the program (the interpreter runs it; ``error`` says why), unless ``required``."""

    def __init__(self, executor, compiled):
        self.executor, self.compiled, self.fn = executor, compiled, compiled.fn

    @classmethod
    def build(cls, executor, required):
        ex = executor
        memory_plan = ex._buffer_plan
        try:
            compiled = codegen.compile_program(ex.program, ex.xp, ex._ctx, ex._main.order, memory_plan=memory_plan)
        except Exception as e:
            if required:
                raise
            # the interpreter runs it; preparing its sub-blocks now reports a malformed
            # program with the interpreter's own message
            ex.prepare_sub_blocks(ex.program.block.sub_blocks())
            return None, e
        ex.prepare_sub_blocks(compiled.rule_blocks)
        return cls(ex, compiled), None

    def call(self, feeds):
        try:
            if self.executor._copied_outputs:
                return self.executor._copy_outputs(self.fn(*feeds))
            return self.fn(*feeds)
        except PASS_THROUGH:
            raise
        except Exception as e:
            raise self.error(e) from e

    def error(self, err):
        """The ExecutionError naming the op of the generated line that raised ``err``."""
        info, frame_locals = self.compiled.locate(err.__traceback__)
        if info is None:
            return ExecutionError(f"program execution failed: {type(err).__name__}: {err}")
        op = info.op
        shapes = ", ".join(f"{n}:{tuple(getattr(frame_locals.get(loc), 'shape', ()))}"
                           for n, loc in zip(op.inputs, info.input_locals))
        return ExecutionError(f"op {op.type!r} (outputs {', '.join(op.outputs)}) failed on inputs {shapes or '()'}: "
                              f"{type(err).__name__}: {err}")

    def unchecked_runner(self):
        """``run(inputs, params)`` of this tier, minus the per-call checks (Executor.unchecked_runner)."""
        fn, consts, error = self.fn, self.executor._const_values, self.error
        if self.executor._copied_outputs:
            # on a device, outputs that may alias a constant are copied
            call = self.call

            def run_compiled_copying(inputs, params):
                return call(inputs + params + consts)
            return run_compiled_copying
        # the call inlined: one Python frame less per call
        if consts:
            def run_compiled_consts(inputs, params):
                try:
                    return fn(*inputs, *params, *consts)
                except PASS_THROUGH:
                    raise
                except Exception as e:
                    raise error(e) from e
            return run_compiled_consts

        def run_compiled(inputs, params):
            try:
                return fn(*inputs, *params)
            except PASS_THROUGH:
                raise
            except Exception as e:
                raise error(e) from e
        return run_compiled


# ====================================================================== tier 3: native
# the native states in which calls go through the box (the backend that runs may change)
_BOXED_STATES = frozenset({"pending", "measuring", "native", "auto-python"})


def _output_mismatch(program, outs, ndarray):
    """What is wrong with a native function's outputs ``outs`` (None: nothing)."""
    if type(outs) not in (list, tuple) or len(outs) != len(program.outputs):
        return f"expected a list of {len(program.outputs)} outputs, got {type(outs).__name__}"
    for name, o in zip(program.outputs, outs):
        t = program.block.lookup(name).type
        if type(o) is not ndarray or o.dtype.name != t.dtype or o.ndim != len(t.shape):
            return (f"output {name} should be a {t.dtype} array of rank {len(t.shape)}, got "
                    f"{type(o).__name__} {getattr(o, 'dtype', '')} {getattr(o, 'shape', '')}")
    return None


class NativeTier:
    """The program compiled by numba (``native/``), run in place of the Python tier once ready.

    Preparing it lowers the program (no compile); a program whose compiled form is in the disk
    cache is loaded at once, any other compiled in the background after the first call (see the
    module docstring). Its ``state``: off | pending | measuring | native | auto-python |
    unsupported | failed. Calls reach it through the runner's box; the Python tier's call is
    read from ``runner._python_call`` at each use."""

    def __init__(self, runner, base):
        self.runner, self.executor, self.program = runner, base, base.program
        self.requested = runner.backend_requested
        self.fn = None
        self._job = None  # the compile to start after the first call
        self._job_lock = forksafe.Lock()
        self.state = "off"
        self.reason = None
        self.auto_reason = None  # why "auto" chose the backend it runs (once decided)
        self.trial = None  # "auto"'s measurement while the state is "measuring"
        self.origin = None  # where the machine code came from once ready: "disk cache", "compiled", ...
        self.done = threading.Event()
        self.done.set()
        self._start()

    def _start(self):
        base = self.executor
        reason = self.refusal()
        cache = None  # the native compiler's default: $D2S_CACHE_DIR/native
        if reason is None and self.requested == "auto" and not synchronous:
            # "auto" never makes the first call wait for the native backend: importing the
            # native compiler, the lowering, the disk-cache lookup and the load or compile all
            # run in the background after it
            reason = numba_missing()
            if reason is None:
                self._defer(CompileJob(self, None, None, cache, order=base._main.order, find_native=native_module))
                return
        native = None
        if reason is None:
            native, reason = native_module()
        lowered = None
        if reason is None:
            try:
                lowered = native.lower_program(self.program, order=base._main.order)
            except Exception as e:  # noqa: BLE001 - NativeUnsupported, or a lowering bug: Python runs it
                reason = unsupported_reason(e)
        if reason is not None:
            self.state, self.reason = "unsupported", reason
            return
        try:
            cached = native.is_cached(lowered, cache_dir=cache)
        except Exception:  # noqa: BLE001 - an unreadable cache: compile in the background
            cached = False
        if cached or synchronous:
            # a warm process: load the compiled function now and run natively from the first
            # call (a load that fails falls back to the background compile). It costs numba's
            # start-up (about a second) if numba is not imported yet
            try:
                fn = native.compile_lowered(lowered, cache_dir=cache)
            except Exception as e:  # noqa: BLE001 - a failed compile leaves the Python backend running
                if synchronous:
                    self.native_failed(*compile_failure(e))
                    return
            else:
                self.native_ready(fn)
                return
        self._defer(CompileJob(self, lowered, native, cache))

    def refusal(self):
        """Why this program's executor cannot run natively whatever the program (None: it can)."""
        if self.executor.xp is not np:
            return f"device {self.executor.device!r} runs on the Python backend"
        if self.executor.parallel:
            return "parallel=True runs on the Python step interpreter"
        return None

    def boxed(self):
        """Whether calls go through the box (the backend that runs may change)."""
        return self.state in _BOXED_STATES

    def _defer(self, job):
        self.state = "pending"
        self.done.clear()
        # submitted after the first call: numba's compiler holds the GIL most of the time, so
        # compiling while the first call runs would make that call slower than on Python alone
        self._job = job
        self.runner.box[0] = self._first_call_then_compile

    def _first_call_then_compile(self, feeds):
        try:
            return self.runner._python_call(feeds)
        finally:
            self.submit()

    def submit(self):
        """Start the deferred compile now (the first call or a wait does)."""
        with self._job_lock:  # threads finishing first calls at once submit it once
            job, self._job = self._job, None
        if job is not None:
            if self.runner.box[0] == self._first_call_then_compile:
                self.runner.box[0] = self.runner._python_call
            WORKER.submit(job)

    def native_ready(self, fn):
        """(The compile worker, or a cache load.) Swap the native function in: one store into
        the box that every runner reads, so calls in flight finish on the Python tier and the
        next ones run natively."""
        consts_in = self.executor._const_values
        if consts_in:
            # the Python tier's constants are read-only arrays, which a function compiled for
            # writable ones does not take: the native one gets writable copies, made once. An
            # output that is a view of one is made read-only, as the Python tier's are: a
            # caller writing into it would change every later run's result
            n_var = len(self.program.inputs) + len(self.program.params)
            consts = [np.array(c) for c in consts_in]
            const_dtypes = {c.dtype for c in consts}
            maybe_views = [i for i, name in enumerate(self.program.outputs)
                           if np.dtype(self.program.block.lookup(name).type.dtype) in const_dtypes]
            compiled = fn
            may_share = np.may_share_memory

            def fn(*feeds):
                outs = compiled(*feeds[:n_var], *consts)
                for i in maybe_views:
                    o = outs[i]
                    if o.flags.writeable and any(may_share(o, c) for c in consts):
                        o = outs[i] = o.view()  # (the constant itself must stay writable)
                        o.flags.writeable = False
                return outs
        self.origin = getattr(fn, "origin", None)
        if computes_products(self.program):
            # products on as many BLAS threads as the machine has free (threads.py)
            governed, govern = fn, threads.govern

            def fn(*feeds):
                govern()
                return governed(*feeds)
        self.fn = fn
        if self.requested == "auto":
            # native may be slower (BLAS-bound programs, big reductions): time both backends
            self.trial = AutoTrial(margin=PRODUCTS_MARGIN if computes_products(self.program) else 1.0)
            self.state, self.reason = "measuring", None
            self.runner.box[0] = self._call_auto_trial
            self.done.set()
            return
        self.state, self.reason = "native", None
        self.runner.backend = "native"
        self.runner.box[0] = self._call_native_first
        self.done.set()

    def native_failed(self, reason, state="failed"):
        """(The compile worker.) The native tier will not run: keep the Python one."""
        self.state, self.reason = state, reason
        self.done.set()

    def _call_auto_trial(self, feeds):
        """("auto", while measuring.) The first native call checks its outputs (untimed, as
        :meth:`_call_native_first` does); the next calls run a block on each backend (Python's
        first), until :class:`AutoTrial` decides, then the winner runs every call."""
        trial = self.trial
        if not trial.checked:
            trial.checked = True
            outs = self._call_native(feeds)
            if self.state == "measuring":
                bad = _output_mismatch(self.program, outs, self.executor._ndarray)
                if bad is not None:
                    self._drop(f"native outputs do not match the program: {bad}")
                    return self.runner._python_call(feeds)
            return outs
        which, timed = trial.next_backend()
        clock = timer
        t0 = clock()
        outs = self._call_native(feeds) if which == "native" else self.runner._python_call(feeds)
        elapsed = clock() - t0
        if self.state != "measuring" or not timed:  # native dropped or decided meanwhile
            return outs
        decision = trial.record(which, elapsed)
        if decision is not None and self.state == "measuring":
            winner, self.auto_reason = decision
            if winner == "native":
                self.state, self.runner.backend = "native", "native"
                self.runner.box[0] = self._call_native
            else:
                self.state = "auto-python"
                self.runner.box[0] = self.runner._python_call
        return outs

    def _call_native(self, feeds):
        try:
            return self.fn(*feeds)
        except TypeError as e:
            # a read-only input array (np.broadcast_to, a frozen buffer): not a signature the
            # native function was compiled for; a writable copy is (the Python tier never
            # writes into inputs either, so nothing else changes)
            if any(type(f) is np.ndarray and not f.flags.writeable for f in feeds):
                try:
                    return self.fn(*[np.array(f) if type(f) is np.ndarray and not f.flags.writeable else f
                                     for f in feeds])
                except Exception as e2:  # noqa: BLE001
                    e = e2
            return self._run_failed(feeds, e)
        except Exception as e:  # noqa: BLE001 - see below
            return self._run_failed(feeds, e)

    def _run_failed(self, feeds, e):
        """Run the call on the Python tier: an error the program raises on purpose (a failed
        assert, a bad index) then reaches the caller exactly as Python raises it; if Python
        succeeds, native was wrong for this input: stop using it."""
        out = self.runner._python_call(feeds)
        self._drop(f"native run failed where the Python backend did not: {one_line(e)}")
        return out

    def _call_native_first(self, feeds):
        """The first native call checks what the compiled function returns (arrays of the
        program's output dtypes and ranks) once; later calls skip the check."""
        outs = self._call_native(feeds)
        if self.state != "native":
            return outs
        bad = _output_mismatch(self.program, outs, self.executor._ndarray)
        if bad is not None:
            self._drop(f"native outputs do not match the program: {bad}")
            return self.runner._python_call(feeds)
        if self.runner.box[0] == self._call_native_first:
            self.runner.box[0] = self._call_native
        return outs

    def _drop(self, reason):
        self.runner.box[0] = self.runner._python_call
        self.runner.backend = "python"
        self.state, self.reason = "failed", reason

    def report(self):
        """See :meth:`TieredRunner.backend_report`."""
        state = self.state
        if state == "native":
            return f"native (auto: {self.auto_reason})" if self.auto_reason else "native"
        if state == "off":
            return "python"
        if state == "pending":
            return "python (native pending: compiling in background)"
        if state == "measuring":
            return "python (auto: native ready, timing both backends on the next calls)"
        if state == "auto-python":
            return f"python (auto: {self.auto_reason})"
        return f"python (native {state}: {self.reason})"

    def wait(self, timeout=None):
        """Wait until a pending compile is done; whether the native tier runs now."""
        self.submit()  # (not yet started when no call ran)
        self.done.wait(timeout)
        return self.runner.backend == "native"


# ====================================================================== the ladder
class TieredRunner:
    """One program's ladder of tiers (see the module docstring), prepared at its first call.

    Args:
        program: the Program.
        device: ``'cpu'`` or ``'gpu'``.
        backend: ``'python'``, ``'native'`` or ``'auto'`` (None: :data:`default_backend`).
        optimize: ``program -> program`` run before the generated-Python tier (the passes;
            None: the program as given).
        quick: run the first call on the quick interpreter over the program as given, and
            optimize and generate Python from the second (a ``'native'`` backend optimizes at
            once: its compile, of the optimized program, starts after the first call, and a
            warm disk cache runs it natively from the first call).
        checked: ``run`` checks its inputs as ``Executor.run`` does (inputs no signature
            checked); otherwise it trusts them (``Executor.unchecked_runner``).
        mode: ``'auto'``, ``'codegen'`` or ``'interp'``: the Python tier (see Executor).
        options: the Executor's other options (``parallel``, ``params``, ``num_threads``,
            ``use_memory_plan``, ``max_loop_iterations``).

    Attributes:
        run: ``run(arrays, param_arrays) -> outputs``, the per-call entry (it changes as the
            runner climbs: read it at each call).
        program: the program of the rung running now (the built one, then the optimized one).
        executor: the prepared Executor of that rung (preparing the first rung if needed).
        backend: the backend running calls now (``'python'`` or ``'native'``).
    """

    def __init__(self, program, device="cpu", backend=None, *, optimize=None, quick=False, checked=False,
                 mode="auto", **options):
        self.backend_requested = self._backend(backend)
        self.program, self.device, self._mode, self._options = program, device, mode, options
        self._optimize, self._checked = optimize, checked
        self._pending = quick  # the optimized rung is still to be built
        self._init_state()
        # threads running the same program prepare and optimize it once; a runner, once
        # published, stays valid (each holds its own executor), so runs need no lock
        self._lock = forksafe.Lock()
        self.run = self._first_run

    @classmethod
    def over(cls, executor, mode="auto", backend=None):
        """The ladder of an Executor built with ``mode``/``backend`` (its only rung: that
        executor, with generated Python and native tiers as asked; no passes)."""
        self = cls.__new__(cls)
        self.backend_requested = cls._backend(backend)
        self.program, self.device, self._mode, self._options = executor.program, executor.device, mode, {}
        self._optimize, self._checked, self._pending = None, False, False
        self._init_state()
        self._lock = forksafe.Lock()
        self._use(executor)
        return self

    @staticmethod
    def _backend(backend):
        backend = default_backend if backend is None else backend
        if backend not in BACKENDS:
            raise ValueError(f"Executor: backend must be 'python', 'native', 'auto' or 'graph', got {backend!r}")
        return backend

    def _init_state(self):
        self._exec = None         # the prepared Executor of the rung running now
        self.mode = "interp"      # 'codegen' once generated Python runs the Python tier
        self.codegen_error = None
        self.generated = None     # the GeneratedTier, if any
        self.native = None        # the NativeTier, if any
        self.backend = "python"
        self.box = [None]         # the call (feeds -> outputs) of the tier running now

    # ------------------------------------------------------------ rungs
    def _rung(self, program, quick=False):
        """Prepare the rung of ``program``: the quick interpreter, or the optimized program
        (as given when no ``optimize``) with its generated Python and native tiers."""
        if quick:
            base = Executor.prepare(program, self.device, mode="interp", **self._options)
            self._use(base, quick=True)
            return
        if self._optimize is not None:
            program = self._optimize(program)
        self._use(Executor.prepare(program, self.device, mode=self._mode, **self._options))

    def _use(self, base, quick=False):
        if self._mode == "codegen" and base.parallel:
            raise ValueError("Executor: parallel=True runs on the step interpreter; use mode='auto' or 'interp'")
        generated, error = None, None
        if not quick and self._mode != "interp" and not base.parallel:
            generated, error = GeneratedTier.build(base, required=self._mode == "codegen")
        native = None
        base.runner = self
        # the Python tier's call (feeds: inputs, params, constants); native swaps its own in
        python_call = generated.call if generated is not None else base.interpret
        self.generated, self.codegen_error = generated, error
        self.mode = "codegen" if generated is not None else "interp"
        self._python_call = python_call
        self.box[0] = python_call
        self.backend = "python"
        if not quick and self.backend_requested == "graph":
            from .gpu.tier import GraphTier  # (cupy and cuda-bindings only where a GPU is asked for)
            native = GraphTier(self, base)
        elif not quick and self.backend_requested != "python":
            native = NativeTier(self, base)
        self.native = native
        run = self._make_run(base)
        # publish the run before the executor: a thread that sees the executor finds its run
        self._run = run
        self.program = base.program
        self._exec = base

    def _make_run(self, base):
        if not self._checked:
            return self._unchecked(base)
        names = list(base.program.params)
        run = base.run

        def checked_runner(arrays, param_arrays):
            return run(*arrays, params=dict(zip(names, param_arrays)) if names else None)
        return checked_runner

    @property
    def executor(self):
        """The prepared Executor of the rung running now (the first rung prepared on first use)."""
        if self._exec is None:
            with self._lock:
                if self._exec is None:
                    if self._pending and self.backend_requested == "native":
                        self._rung(self.program)
                        self._pending = False
                    else:
                        self._rung(self.program, quick=self._pending)
                    self.run = self._climb if self._pending else self._run
        return self._exec

    @property
    def prepared(self):
        """Whether a rung is prepared (a call ran, or ``executor`` was read)."""
        return self._exec is not None

    def _first_run(self, arrays, params):
        self.executor
        return self._run(arrays, params)

    def _climb(self, arrays, params):
        self.optimize_now()
        return self._run(arrays, params)

    def optimize_now(self):
        """Climb from the quick interpreter to the optimized rung at once (instead of at the
        second call)."""
        if self._pending:
            with self._lock:
                if self._pending:
                    with paused_gc():  # the generated code too (see gc_pause.py)
                        self._rung(self.program)
                    self.run = self._run
                    self._pending = False

    # ------------------------------------------------------------ calls
    def call(self, feeds):
        """Run a call (feeds: inputs, params, constants of the rung running now) on its tier."""
        return self.box[0](feeds)

    def unchecked_runner(self):
        """``run(inputs, params) -> outputs`` minus the per-call checks and conversions (see
        ``Executor.unchecked_runner``); with a native backend asked for, it runs whichever tier
        runs now (it picks up the native one once swapped in)."""
        return self._unchecked(self.executor)

    def _unchecked(self, base):
        if self.native is not None and self.native.boxed():
            box, consts = self.box, base._const_values
            if consts:
                def run_tiered_consts(inputs, params):
                    return box[0](inputs + params + consts)
                return run_tiered_consts

            def run_tiered(inputs, params):
                return box[0](inputs + params)
            return run_tiered
        if self.generated is not None:
            return self.generated.unchecked_runner()
        return base.interp_runner()

    # ------------------------------------------------------------ reports
    @property
    def source(self):
        """The Python source of the generated function (``None`` where the interpreter runs)."""
        return self.generated.compiled.source if self.generated is not None else None

    @property
    def native_origin(self):
        """Where the native machine code came from once ready (``'disk cache'``, ``'compiled'``, ...)."""
        return self.native.origin if self.native is not None else None

    def backend_report(self):
        """One line: which backend runs this program now, and why not the native one where it
        was asked for (``'native'``, ``'python (native pending: compiling in background)'``,
        ``'python (native unsupported: <reason>)'``, ...); with ``backend='auto'``, why it runs
        the one it chose (``'native (auto: <reason>)'``, ``'python (auto: measured native
        2.5x slower than python (...))'``)."""
        if self._exec is None or self._pending:
            if self.backend_requested == "python":
                return "python"
            tier = "graph" if self.backend_requested == "graph" else "native"
            return f"python ({tier} pending: prepared at the first call)"
        if self.native is None:
            return "python"
        return self.native.report()

    def wait_native(self, timeout=None):
        """Wait until a pending native compile is done (for tests and benchmarks); returns
        whether the native backend runs now."""
        if self.native is None:
            return False
        return self.native.wait(timeout)


_executor.set_ladder(TieredRunner.over)
