"""The executor: runs a Program on numpy (``device='cpu'``) or cupy (``device='gpu'``).

Everything that can be decided before the first call is decided once, in ``__init__``:

* the op order of every block (``schedule.topo_order``: Kahn's algorithm over data
  dependencies; ops with effects, such as random draws, keep their relative order),
* the kernel of every op (``OPS[type].kernel``; the bare ufunc for an op whose ``ufunc`` trait
  says the kernel is exactly that ufunc) or, for control-flow ops, its rule
  (``control_flow.RULES[type]``),
* a slot number for every var, so values live in a flat list rather than a dict,
* last-use liveness: after each op, the slots no later op reads are cleared, so a buffer is
  freed as soon as it is dead (like torch.fx's ``garbage_collect_values``),
* optionally a buffer plan from the ``memory_plan`` pass (``program.annotations['memory_plan']``):
  element-wise ops then write into a dead buffer of the same size and dtype (``out=``)
  instead of allocating a new one.

``run`` is then a tight loop over precomputed ``(kernel, input slots, output slots, attrs,
slots to free)`` steps. Control-flow ops get ``RULES[type](ctx, op, input_values)`` with a
context whose ``run_block(block, values)`` runs a sub-block (prepared once, cached per Block).
With ``parallel=True`` independent ops of the global block run concurrently on a thread pool
(numpy releases the GIL inside BLAS and most ufunc loops).

By default (``mode='auto'``) the prepared program is then also compiled by ``codegen.py`` into
one Python function (straight-line kernel calls, control flow as native ``if``/``while``/
``for`` over inlined sub-blocks; see that module, and ``Executor.source`` for the code), which
``run`` calls instead of the step loop: small-tensor programs with control flow are dominated
by per-op overhead, which the generated code mostly removes. The step interpreter remains for
``parallel=True``, for ``mode='interp'``, and for what codegen cannot compile.

With ``backend='native'`` (or ``'auto'``) the program is also lowered to one numba-compiled
function (``native/``), compiled in the background and swapped in when ready; the Python
backend above runs meanwhile, and wherever the native one cannot (see ``tiers.py``).
"""
import os
import threading
from collections import namedtuple
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np

from . import codegen
from . import forksafe
from .control_flow import RULES
from .device import get_xp
from .errors import ExecutionError
from .gc_pause import paused_gc
from .ops import OPS
from .ops.debug import ProgramAssertionError, ProgramRaisedError, ProgramTypeError, ProgramUnboundLocalError
from .ops.guard import GuardError
from .ops.tensor_list import ProgramIndexError
from .schedule import FeedView, topo_order
from . import threads, tiers

# Step kinds
KERNEL, MULTI, OUT, UFUNC1, UFUNC2, PRESET = range(6)
Step = namedtuple("Step", "kind fn ins out attrs frees")
Step.__doc__ = """One prepared op: ``kind`` (KERNEL, MULTI, OUT, UFUNC1, UFUNC2, PRESET), the callable, input
slots, output slot (a tuple of slots for MULTI), attrs and slots to clear afterwards."""


# Errors a program raises on purpose (a failed assert op, a trace guard, a pop from an empty
# tensor list) reach the caller as they are; any other failure is wrapped in an ExecutionError
# naming the op.
PASS_THROUGH = (ExecutionError, ProgramAssertionError, ProgramUnboundLocalError, ProgramTypeError, GuardError,
                ProgramIndexError, ProgramRaisedError)


def is_control_flow(op):
    """Whether ``op`` is run by a control-flow rule rather than a kernel."""
    return bool(op.blocks) or op.type not in OPS


class ExecContext:
    """What a control-flow rule sees: the array namespace and a way to run sub-blocks."""

    __slots__ = ("executor", "xp", "device", "max_loop_iterations")

    def __init__(self, executor):
        self.executor = executor
        self.xp = executor.xp
        self.device = executor.device
        self.max_loop_iterations = executor.max_loop_iterations

    def run_block(self, block, input_values):
        """Run ``block`` with its inputs bound to ``input_values``; returns its output values."""
        return self.executor.run_block(block, input_values)


class _Plan:
    """One block, prepared: steps in order, slots, liveness."""

    __slots__ = ("block", "input_slots", "output_slots", "n_slots", "steps", "order", "slot_of",
                 "succ", "n_preds", "step_inputs", "consumers", "pinned", "free_first", "presets", "pad")


class Executor:
    """Runs a :class:`~d2s_runtime.ir.Program`; prepared once, reusable across calls.

    Args:
        program: the Program to run.
        device: ``'cpu'`` (numpy) or ``'gpu'`` (cupy).
        parallel: run independent ops of the global block concurrently on a thread pool.
        params: default arrays for the program's params (by var name); ``run(params=...)``
            overrides them per call.
        num_threads: thread-pool size for ``parallel`` (default: the CPU count).
        use_memory_plan: honour ``program.annotations['memory_plan']`` (buffer reuse) if present.
        mode: ``'auto'`` (compile the program into one Python function, see ``codegen.py``,
            unless ``parallel``; the interpreter where that is not possible), ``'codegen'``
            (compile, or raise), or ``'interp'`` (the step interpreter). ``self.mode`` says
            which one runs (and ``self.codegen_error`` why an ``'auto'`` one fell back).
        max_loop_iterations: if set, a ``while`` op that runs more iterations than this raises
            :class:`LoopLimitError` naming the op; ``None`` (default): no bound.
        backend: ``'python'`` (the default, unless ``tiers.default_backend`` says otherwise:
            ``mode`` above), ``'native'`` (the program compiled by
            numba, see ``tiers.py``: compiled in the background while the Python backend runs,
            or loaded at once from the disk cache; where it cannot run, the Python backend
            runs and :meth:`backend_report` says why, never an error) or ``'auto'`` (native
            where it is supported and faster: once compiled, the next calls time both
            backends, alternating, and the faster one is kept; its first call never waits
            for numba, even with a warm disk cache).
            ``self.backend`` says which one runs now; ``self.native_origin`` where the
            native code came from (``'disk cache'``, ``'compiled'``, ...).
    """

    def __init__(self, program, device="cpu", parallel=False, params=None, num_threads=None,
                 use_memory_plan=True, mode="auto", max_loop_iterations=None, backend=None):
        if backend is None:
            backend = tiers.default_backend
        if backend not in tiers.BACKENDS:
            raise ValueError(f"Executor: backend must be 'python', 'native' or 'auto', got {backend!r}")
        with paused_gc():  # preparing allocates many long-lived objects: see gc_pause.py
            self._init(program, device, parallel, params, num_threads, use_memory_plan, mode, max_loop_iterations)
        self._init_backend(backend)

    def _init(self, program, device, parallel, params, num_threads, use_memory_plan, mode, max_loop_iterations):
        if mode not in ("auto", "codegen", "interp"):
            raise ValueError(f"Executor: mode must be 'auto', 'codegen' or 'interp', got {mode!r}")
        if max_loop_iterations is not None and (type(max_loop_iterations) is not int or max_loop_iterations < 0):
            raise ValueError(f"Executor: max_loop_iterations must be a non-negative int or None, got "
                             f"{max_loop_iterations!r}")
        self.max_loop_iterations = max_loop_iterations
        if mode == "codegen" and parallel:
            raise ValueError("Executor: parallel=True runs on the step interpreter; use mode='auto' or 'interp'")
        self.program = program
        self.device = device
        self.xp = get_xp(device)
        self.parallel = parallel
        self._ctx = ExecContext(self)
        self._rules = RULES
        self._plans = {}
        self._ndarray = self.xp.ndarray
        self._input_types = [program.block.lookup(n).type for n in program.inputs]
        self._constants = {k: codegen.read_only(self.xp.asarray(v)) for k, v in program.constants.items()}
        self._default_params = {}
        if params:
            self.set_params(params)
        feeds = list(program.inputs) + list(program.params) + list(program.constants)
        # codegen inlines sub-blocks; the interpreter prepares one only if a rule runs it
        self._main = self._prepare(program.block, inputs=feeds, outputs=program.outputs,
                                   subs=mode == "interp" or parallel)
        n_in, n_par = len(program.inputs), len(program.params)
        self._param_slots = self._main.input_slots[n_in:n_in + n_par]
        self._const_slots = self._main.input_slots[n_in + n_par:]
        self._const_values = [self._constants[k] for k in program.constants]
        # numpy hands out constants as read-only views; a device array cannot be read-only
        self._copied_outputs = constant_aliased_outputs(program) if self.xp is not np else ()
        self._buffer_plan = None
        plan = getattr(program, "annotations", {}).get("memory_plan") if use_memory_plan else None
        if plan and not parallel and self.xp is np:
            self._apply_buffer_plan(self._main, plan)
        self._pool = None
        if parallel:
            self._pool = ThreadPoolExecutor(max_workers=num_threads or os.cpu_count() or 2)
        self._compiled = None
        self.mode = "interp"
        self.codegen_error = None  # why codegen fell back to the interpreter (mode='auto')
        if mode != "interp" and not parallel:
            self._compile(plan if self._buffer_plan is not None else None, required=mode == "codegen")

    # ------------------------------------------------------------ codegen
    def _compile(self, memory_plan, required):
        try:
            self._compiled = codegen.compile_program(self.program, self.xp, self._ctx, self._main.order,
                                                     memory_plan=memory_plan)
        except Exception as e:
            if required:
                raise
            # the interpreter runs it; preparing its sub-blocks now reports a malformed
            # program with the interpreter's own message
            self.codegen_error = e
            for block in self.program.block.sub_blocks():
                self._prepare(block)
            return
        for block in self._compiled.rule_blocks:
            self._prepare(block)
        self.mode = "codegen"
        self._fn = self._compiled.fn

    # ------------------------------------------------------------ backends
    def _init_backend(self, requested):
        self.backend_requested = requested
        self.backend = "python"
        # what runs the feeds (inputs + params + constants) now: the Python backend's call, or
        # the native one once swapped in; runners read it from this box at each call
        self._python_call = self._call_compiled if self._compiled is not None else self._call_interp
        self._box = [self._python_call]
        self._native_fn = None
        self._job = None  # the compile to start after the first call
        self._job_lock = forksafe.Lock()
        self._native_state = "off"  # off | pending | measuring | native | auto-python | unsupported | failed
        self._native_reason = None
        self._auto_reason = None  # why "auto" chose the backend it runs (once decided)
        self._trial = None  # "auto"'s measurement while the state is "measuring"
        # where the native machine code came from once ready: "disk cache", "compiled", ...
        self.native_origin = None
        self._native_done = threading.Event()
        self._native_done.set()
        if requested == "python":
            return
        reason = self._native_refusal()
        cache = None  # the native compiler's default: $D2S_CACHE_DIR/native
        if reason is None and requested == "auto" and not tiers.synchronous:
            # "auto" never makes the first call wait for the native backend: importing the
            # native compiler, the lowering, the disk-cache lookup and the load or compile all
            # run in the background after it
            reason = tiers.numba_missing()
            if reason is None:
                self._defer_native(tiers.CompileJob(self, None, None, cache, order=self._main.order))
                return
        native = None
        if reason is None:
            native, reason = tiers.native_module()
        lowered = None
        if reason is None:
            try:
                lowered = native.lower_program(self.program, order=self._main.order)
            except Exception as e:  # noqa: BLE001 - NativeUnsupported, or a lowering bug: Python runs it
                reason = tiers.unsupported_reason(e)
        if reason is not None:
            self._native_state, self._native_reason = "unsupported", reason
            return
        try:
            cached = native.is_cached(lowered, cache_dir=cache)
        except Exception:  # noqa: BLE001 - an unreadable cache: compile in the background
            cached = False
        if cached or tiers.synchronous:
            # a warm process: load the compiled function now and run natively from the first
            # call (a load that fails falls back to the background compile). It costs numba's
            # start-up (about a second) if numba is not imported yet
            try:
                fn = native.compile_lowered(lowered, cache_dir=cache)
            except Exception as e:  # noqa: BLE001 - a failed compile leaves the Python backend running
                if tiers.synchronous:
                    self._native_failed(*tiers.compile_failure(e))
                    return
            else:
                self._native_ready(fn)
                return
        self._defer_native(tiers.CompileJob(self, lowered, native, cache))

    def _defer_native(self, job):
        self._native_state = "pending"
        self._native_done.clear()
        # submitted after the first call: numba's compiler holds the GIL most of the time, so
        # compiling while the first call runs would make that call slower than on Python alone
        self._job = job
        self._box[0] = self._first_call_then_compile

    def _first_call_then_compile(self, feeds):
        try:
            return self._python_call(feeds)
        finally:
            self._submit_compile()

    def _submit_compile(self):
        with self._job_lock:  # threads finishing first calls at once submit it once
            job, self._job = self._job, None
        if job is not None:
            if self._box[0] == self._first_call_then_compile:
                self._box[0] = self._python_call
            tiers.WORKER.submit(job)

    def _native_refusal(self):
        """Why this executor cannot run natively whatever the program (None: it can)."""
        if self.xp is not np:
            return f"device {self.device!r} runs on the Python backend"
        if self.parallel:
            return "parallel=True runs on the Python step interpreter"
        return None

    def _native_ready(self, fn):
        """(The compile worker, or a cache load.) Swap the native function in: one store into
        the box that every runner reads, so calls in flight finish on the Python backend and
        the next ones run natively."""
        if self._const_values:
            # the Python backend's constants are read-only arrays, which a function compiled
            # for writable ones does not take: the native one gets writable copies, made once.
            # An output that is a view of one is made read-only, as the Python backend's are:
            # a caller writing into it would change every later run's result
            n_var = len(self.program.inputs) + len(self.program.params)
            consts = [np.array(c) for c in self._const_values]
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
        self.native_origin = getattr(fn, "origin", None)
        if tiers.computes_products(self.program):
            # products on as many BLAS threads as the machine has free (threads.py)
            governed, govern = fn, threads.govern

            def fn(*feeds):
                govern()
                return governed(*feeds)
        self._native_fn = fn
        if self.backend_requested == "auto":
            # native may be slower (BLAS-bound programs, big reductions): time both backends
            self._trial = tiers.AutoTrial(
                margin=tiers.PRODUCTS_MARGIN if tiers.computes_products(self.program) else 1.0)
            self._native_state, self._native_reason = "measuring", None
            self._box[0] = self._call_auto_trial
            self._native_done.set()
            return
        self._native_state, self._native_reason = "native", None
        self.backend = "native"
        self._box[0] = self._call_native_first
        self._native_done.set()

    def _call_auto_trial(self, feeds):
        """("auto", while measuring.) The first native call checks its outputs (untimed, as
        :meth:`_call_native_first` does); the next calls run a block on each backend (Python's
        first), until :class:`tiers.AutoTrial` decides, then the winner runs every call."""
        trial = self._trial
        if not trial.checked:
            trial.checked = True
            outs = self._call_native(feeds)
            if self._native_state == "measuring":
                bad = _output_mismatch(self.program, outs, self._ndarray)
                if bad is not None:
                    self._drop_native(f"native outputs do not match the program: {bad}")
                    return self._python_call(feeds)
            return outs
        which, timed = trial.next_backend()
        timer = tiers.timer
        t0 = timer()
        outs = self._call_native(feeds) if which == "native" else self._python_call(feeds)
        elapsed = timer() - t0
        if self._native_state != "measuring" or not timed:  # native dropped or decided meanwhile
            return outs
        decision = trial.record(which, elapsed)
        if decision is not None and self._native_state == "measuring":
            winner, self._auto_reason = decision
            if winner == "native":
                self._native_state, self.backend = "native", "native"
                self._box[0] = self._call_native
            else:
                self._native_state = "auto-python"
                self._box[0] = self._python_call
        return outs

    def _native_failed(self, reason, state="failed"):
        """(The compile worker.) The native backend will not run: keep the Python one."""
        self._native_state, self._native_reason = state, reason
        self._native_done.set()

    def _call_native(self, feeds):
        try:
            return self._native_fn(*feeds)
        except TypeError as e:
            # a read-only input array (np.broadcast_to, a frozen buffer): not a signature the
            # native function was compiled for; a writable copy is (the Python backend never
            # writes into inputs either, so nothing else changes)
            if any(type(f) is np.ndarray and not f.flags.writeable for f in feeds):
                try:
                    return self._native_fn(*[np.array(f) if type(f) is np.ndarray and not f.flags.writeable else f
                                             for f in feeds])
                except Exception as e2:  # noqa: BLE001
                    e = e2
            return self._native_run_failed(feeds, e)
        except Exception as e:  # noqa: BLE001 - see below
            return self._native_run_failed(feeds, e)

    def _native_run_failed(self, feeds, e):
        """Run the call on the Python backend: an error the program raises on purpose (a failed
        assert, a bad index) then reaches the caller exactly as Python raises it; if Python
        succeeds, native was wrong for this input: stop using it."""
        out = self._python_call(feeds)
        self._drop_native(f"native run failed where the Python backend did not: {tiers.one_line(e)}")
        return out

    def _call_native_first(self, feeds):
        """The first native call checks what the compiled function returns (arrays of the
        program's output dtypes and ranks) once; later calls skip the check."""
        outs = self._call_native(feeds)
        if self._native_state != "native":
            return outs
        bad = _output_mismatch(self.program, outs, self._ndarray)
        if bad is not None:
            self._drop_native(f"native outputs do not match the program: {bad}")
            return self._python_call(feeds)
        if self._box[0] == self._call_native_first:
            self._box[0] = self._call_native
        return outs

    def _drop_native(self, reason):
        self._box[0] = self._python_call
        self.backend = "python"
        self._native_state, self._native_reason = "failed", reason

    def _call_interp(self, feeds):
        if self._pool is not None:
            names = list(self.program.params)
            n_in = len(self.program.inputs)
            params = dict(zip(names, feeds[n_in:n_in + len(names)])) if names else None
            return self.run(*feeds[:n_in], params=params)
        plan = self._main
        env = [None] * plan.n_slots
        for s, v in zip(plan.input_slots, feeds):
            env[s] = v
        return self._run_steps(plan, env)

    def backend_report(self):
        """One line: which backend runs this program now, and why not the native one where it
        was asked for (``'native'``, ``'python (native pending: compiling in background)'``,
        ``'python (native unsupported: <reason>)'``, ...); with ``backend='auto'``, why it runs
        the one it chose (``'native (auto: <reason>)'``, ``'python (auto: measured native
        2.5x slower than python (...))'``)."""
        state = self._native_state
        if state == "native":
            return f"native (auto: {self._auto_reason})" if self._auto_reason else "native"
        if state == "off":
            return "python"
        if state == "pending":
            return "python (native pending: compiling in background)"
        if state == "measuring":
            return "python (auto: native ready, timing both backends on the next calls)"
        if state == "auto-python":
            return f"python (auto: {self._auto_reason})"
        return f"python (native {state}: {self._native_reason})"

    def wait_native(self, timeout=None):
        """Wait until a pending native compile is done (for tests and benchmarks); returns
        whether the native backend runs now."""
        self._submit_compile()  # (not yet started when no call ran)
        self._native_done.wait(timeout)
        return self.backend == "native"

    @property
    def source(self):
        """The Python source of the generated function (``None`` in interpreter mode)."""
        return self._compiled.source if self._compiled is not None else None

    def _call_compiled(self, feeds):
        try:
            if self._copied_outputs:
                return self._copy_outputs(self._fn(*feeds))
            return self._fn(*feeds)
        except PASS_THROUGH:
            raise
        except Exception as e:
            raise self._compiled_error(e) from e

    def _compiled_error(self, err):
        info, frame_locals = self._compiled.locate(err.__traceback__)
        if info is None:
            return ExecutionError(f"program execution failed: {type(err).__name__}: {err}")
        op = info.op
        shapes = ", ".join(f"{n}:{tuple(getattr(frame_locals.get(loc), 'shape', ()))}"
                           for n, loc in zip(op.inputs, info.input_locals))
        return ExecutionError(f"op {op.type!r} (outputs {', '.join(op.outputs)}) failed on inputs {shapes or '()'}: "
                              f"{type(err).__name__}: {err}")

    # ------------------------------------------------------------ preparation
    def _prepare(self, block, inputs=None, outputs=None, subs=True):
        plan = self._plans.get(id(block))
        if plan is not None and inputs is None:
            return plan
        inputs = list(block.inputs if inputs is None else inputs)
        outputs = list(block.outputs if outputs is None else outputs)
        order, succ, n_preds = topo_order(FeedView(block, inputs))
        slot_of = {}

        def slot(name):
            s = slot_of.get(name)
            if s is None:
                s = slot_of[name] = len(slot_of)
            return s

        input_slots = [slot(n) for n in inputs]
        ops = block.ops
        for i in order:
            for o in ops[i].outputs:
                slot(o)
        for name in outputs:
            if name not in slot_of:
                raise ValueError(f"block output {name!r} is neither an input of the block nor defined in it")
        output_slots = [slot_of[n] for n in outputs]
        pinned = set(output_slots)

        # last-use liveness: the position (in `order`) after which each slot is dead
        last_use = {}
        for pos, i in enumerate(order):
            for name in ops[i].inputs:
                last_use[slot_of[name]] = pos
            for name in ops[i].outputs:
                last_use.setdefault(slot_of[name], pos)  # never read: dead right after definition
        frees = [[] for _ in order]
        for s, pos in last_use.items():
            if s not in pinned:
                frees[pos].append(s)
        free_first = tuple(s for s in input_slots if s not in last_use and s not in pinned)

        steps = []
        presets = []
        for pos, i in enumerate(order):
            op = ops[i]
            ins = tuple(slot_of[n] for n in op.inputs)
            outs = tuple(slot_of[n] for n in op.outputs)
            frees_here = tuple(frees[pos])
            if op.type == "constant" and not ins:
                # literals are made once, here; each run only binds them (kernels never write
                # into their inputs, and the buffer plan never donates a literal)
                literal = self.xp.asarray(OPS["constant"].kernel(self.xp, **op.attrs))
                presets.append((outs[0], codegen.read_only(literal)))
                steps.append(Step(PRESET, None, (), outs[0], {}, frees_here))
                continue
            if is_control_flow(op):
                rule = self._rules.get(op.type)
                if rule is None:
                    raise ValueError(f"op {op.type!r} (outputs {op.outputs}) is neither a registered kernel nor a "
                                     "control-flow op with an executor rule")
                if subs:
                    for sub in op.blocks.values():
                        self._prepare(sub)
                steps.append(Step(MULTI, self._cf_kernel(rule, op), ins, outs, {}, frees_here))
                continue
            opdef = OPS[op.type]
            if opdef.n_out != 1 or len(outs) != 1:
                steps.append(Step(MULTI, opdef.kernel, ins, outs, _kernel_attrs(op.attrs), frees_here))
            elif opdef.ufunc is not None and not op.attrs and len(ins) in (1, 2) and \
                    hasattr(self.xp, opdef.ufunc) and \
                    codegen.direct_ufunc_ok(op, lambda n: block.lookup(n).type):
                kind = UFUNC1 if len(ins) == 1 else UFUNC2
                steps.append(Step(kind, getattr(self.xp, opdef.ufunc), ins, outs[0], {}, frees_here))
            else:
                steps.append(Step(KERNEL, opdef.kernel, ins, outs[0], _kernel_attrs(op.attrs), frees_here))
        plan = _Plan()
        plan.block, plan.order, plan.slot_of = block, order, slot_of
        plan.input_slots, plan.output_slots, plan.n_slots = input_slots, output_slots, len(slot_of)
        plan.steps = steps
        plan.presets = presets
        # inputs take slots 0..k-1, so a sub-block's env is its input list padded with Nones
        dense = input_slots == list(range(len(input_slots)))
        plan.pad = [None] * (len(slot_of) - len(input_slots)) if dense else None
        plan.pinned, plan.free_first = pinned, free_first
        # for parallel scheduling: successor lists and reader counts, by position in `order`
        pos_of = {i: p for p, i in enumerate(order)}
        plan.succ = [[pos_of[j] for j in succ[i]] for i in order]
        plan.n_preds = [n_preds[i] for i in order]
        plan.step_inputs = [tuple(set(slot_of[n] for n in ops[i].inputs)) for i in order]
        consumers = [0] * len(slot_of)
        for ins in plan.step_inputs:
            for s in ins:
                consumers[s] += 1
        plan.consumers = consumers
        if inputs == list(block.inputs):
            self._plans[id(block)] = plan
        return plan

    def _cf_kernel(self, rule, op):
        ctx = self._ctx

        def run_control_flow(xp, *args):
            return rule(ctx, op, list(args))

        return run_control_flow

    def _apply_buffer_plan(self, plan, memory_plan):
        """Turn element-wise steps whose output the plan assigns to a dead buffer into
        ``ufunc(..., out=buffer)`` steps (see passes/memory_plan.py for the plan's format).

        A donor's slot is then not cleared at its last use: the receiving step takes the array
        out of it, so the buffer is handed over instead of freed and allocated again."""
        reuse = memory_plan.get("reuse", {})
        steps = list(plan.steps)
        ops = plan.block.ops
        donors = set()
        for pos, i in enumerate(plan.order):
            op = ops[i]
            donor = reuse.get(op.outputs[0]) if len(op.outputs) == 1 else None
            opdef = OPS.get(op.type)
            if donor is None or opdef is None or not opdef.out_ok or donor not in plan.slot_of:
                continue
            ds = plan.slot_of[donor]
            if ds in plan.pinned or ds in plan.input_slots or ds in donors:
                continue
            t = plan.block.lookup(op.outputs[0]).type
            if None in t.shape:
                continue
            donors.add(ds)
            ufunc = getattr(np, opdef.ufunc)
            steps[pos] = steps[pos]._replace(kind=OUT, fn=_OutStep(ufunc, ds, t.shape, np.dtype(t.dtype)))
        plan.steps = [st._replace(frees=tuple(s for s in st.frees if s not in donors)) for st in steps]
        self._buffer_plan = memory_plan

    # ------------------------------------------------------------ params
    def set_params(self, params):
        """Set the default arrays for program params (by var name)."""
        for k, v in params.items():
            self._default_params[k] = self.xp.asarray(v)

    # ------------------------------------------------------------ running
    def __call__(self, *inputs, params=None):
        return self.run(*inputs, params=params)

    def run(self, *inputs, params=None):
        """Run the program on ``inputs`` (arrays, in ``program.inputs`` order).

        Args:
            inputs: one array per program input; converted with ``xp.asarray``.
            params: arrays for the program's params, keyed by param var name (defaults to the
                ones given to the constructor or ``set_params``).

        Returns:
            The list of output arrays, in ``program.outputs`` order.
        """
        prog = self.program
        if len(inputs) != len(prog.inputs):
            raise TypeError(f"Executor.run: the program takes {len(prog.inputs)} input(s) "
                            f"({', '.join(f'{n}:{t}' for n, t in zip(prog.inputs, self._input_types))}), "
                            f"got {len(inputs)}")
        feeds = [self._check_input(k, a) for k, a in enumerate(inputs)]
        for name in prog.params:
            v = params.get(name) if params else None
            if v is None:
                v = self._default_params.get(name)
                if v is None:
                    raise KeyError(f"Executor.run: no value for param {name!r} "
                                   f"({prog.block.lookup(name).type}); pass params={{'{name}': array}}")
            else:
                v = self.xp.asarray(v)
            feeds.append(v)
        feeds += self._const_values
        if self._native_state in _BOXED_STATES:
            return self._box[0](feeds)
        if self._compiled is not None:
            return self._call_compiled(feeds)
        plan = self._main
        env = [None] * plan.n_slots
        for s, v in zip(plan.input_slots, feeds):
            env[s] = v
        if self._pool is not None:
            return self._copy_outputs(self._run_parallel(plan, env))
        return self._copy_outputs(self._run_steps(plan, env))

    def _copy_outputs(self, outs):
        """``outs`` with the outputs that may alias a constant copied (on a device, where a
        caller writing into one would change what later runs compute)."""
        for k in self._copied_outputs:
            if outs[k] is not None:
                outs[k] = outs[k].copy()
        return outs

    def unchecked_runner(self):
        """A function ``run(inputs, params) -> outputs`` that runs the prepared program as
        :meth:`run` does, minus ``run``'s per-call checks and conversions.

        ``inputs`` is a list of arrays of the array namespace, one per program input, each
        already of the input's dtype and shape; ``params`` a list of arrays in
        ``program.params`` order (no defaults are filled in). For callers that check their
        inputs once themselves (``d2s.jit`` checks each call against the signature its program
        was built for): on small programs these checks cost as much as running them. In
        parallel mode the function calls :meth:`run`. With a native backend asked for, the
        function runs whichever backend runs now (it picks up the native one once swapped in).
        """
        if self.backend_requested != "python" and self._native_state in _BOXED_STATES:
            box, consts = self._box, self._const_values
            if consts:
                def run_tiered_consts(inputs, params):
                    return box[0](inputs + params + consts)
                return run_tiered_consts

            def run_tiered(inputs, params):
                return box[0](inputs + params)
            return run_tiered
        if self._compiled is not None and self._copied_outputs:
            # on a device, outputs that may alias a constant are copied (_call_compiled)
            call, consts = self._call_compiled, self._const_values

            def run_compiled_copying(inputs, params):
                return call(inputs + params + consts)
            return run_compiled_copying
        if self._compiled is not None:
            # _call_compiled, inlined: one Python frame less per call
            fn, consts, error = self._fn, self._const_values, self._compiled_error
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
        if self._pool is not None:
            names, run = list(self.program.params), self.run

            def run_parallel(inputs, params):
                return run(*inputs, params=dict(zip(names, params)) if names else None)
            return run_parallel
        plan, run_steps = self._main, self._run_steps
        if self._copied_outputs:
            copy_outputs, raw_steps = self._copy_outputs, run_steps

            def run_steps(plan, env):
                return copy_outputs(raw_steps(plan, env))
        slots = list(plan.input_slots[:len(self.program.inputs)]) + list(self._param_slots)
        consts = list(zip(self._const_slots, self._const_values))
        n_slots = plan.n_slots

        def run_interp(inputs, params):
            env = [None] * n_slots
            for s, a in zip(slots, inputs + params):
                env[s] = a
            for s, v in consts:
                env[s] = v
            return run_steps(plan, env)
        return run_interp

    def run_block(self, block, input_values):
        """Run a sub-block with ``block.inputs`` bound to ``input_values``; returns its outputs."""
        plan = self._plans.get(id(block))
        if plan is None:
            plan = self._prepare(block)
        if len(input_values) != len(plan.input_slots):
            raise TypeError(f"run_block: the block takes {len(plan.input_slots)} input(s) {plan.block.inputs}, "
                            f"got {len(input_values)}")
        if plan.pad is not None:
            env = [*input_values, *plan.pad]
        else:
            env = [None] * plan.n_slots
            for s, v in zip(plan.input_slots, input_values):
                env[s] = v
        return self._run_steps(plan, env)

    def _check_input(self, k, a):
        t = self._input_types[k]
        arr = self.xp.asarray(a)
        if arr.dtype.name != t.dtype:
            if not np.can_cast(arr.dtype, t.dtype, "same_kind"):
                raise TypeError(f"Executor.run: input #{k} ({self.program.inputs[k]}:{t}) expects dtype {t.dtype}, "
                                f"got {arr.dtype.name}; cast it first")
            arr = arr.astype(t.dtype)
        shape = arr.shape
        if len(shape) != len(t.shape) or any(d is not None and d != s for d, s in zip(t.shape, shape)):
            raise ValueError(f"Executor.run: input #{k} ({self.program.inputs[k]}) expects shape {t}, "
                             f"got {tuple(shape)}")
        return arr

    def _run_steps(self, plan, env):
        xp = self.xp
        ndarray = self._ndarray
        for s, v in plan.presets:
            env[s] = v
        for s in plan.free_first:
            env[s] = None
        step = None
        try:
            for step in plan.steps:
                kind, fn, ins, out, attrs, frees = step
                if kind == UFUNC2:
                    r = fn(env[ins[0]], env[ins[1]])
                    env[out] = r if type(r) is ndarray else xp.asarray(r)
                elif kind == UFUNC1:
                    r = fn(env[ins[0]])
                    env[out] = r if type(r) is ndarray else xp.asarray(r)
                elif kind == KERNEL:
                    r = fn(xp, *[env[i] for i in ins], **attrs)
                    env[out] = r if type(r) is ndarray else xp.asarray(r)
                elif kind == MULTI:
                    for o, r in zip(out, fn(xp, *[env[i] for i in ins], **attrs)):
                        env[o] = r if type(r) is ndarray else xp.asarray(r)
                elif kind == OUT:  # a ufunc writing into a planned buffer
                    env[out] = fn(env, [env[i] for i in ins])
                # PRESET: a literal bound before the loop; nothing to compute
                for s in frees:
                    env[s] = None
        except PASS_THROUGH:
            raise
        except Exception as e:
            raise self._step_error(plan, step, env, e) from e
        return [env[s] for s in plan.output_slots]

    def _step_error(self, plan, step, env, err):
        pos = next((k for k, st in enumerate(plan.steps) if st is step), None)
        if pos is None:
            return ExecutionError(f"program execution failed: {err}")
        op = plan.block.ops[plan.order[pos]]
        shapes = ", ".join(f"{n}:{tuple(getattr(env[plan.slot_of[n]], 'shape', ()))}" for n in op.inputs)
        return ExecutionError(f"op {op.type!r} (outputs {', '.join(op.outputs)}) failed on inputs {shapes or '()'}: "
                              f"{type(err).__name__}: {err}")

    def _run_parallel(self, plan, env):
        remaining = list(plan.n_preds)
        readers = list(plan.consumers)
        pinned = plan.pinned
        steps = plan.steps
        for s, v in plan.presets:
            env[s] = v
        for s in plan.free_first:
            env[s] = None
        ready = [p for p, n in enumerate(remaining) if n == 0]
        running = {}
        while ready or running:
            for p in ready:
                running[self._pool.submit(self._run_one, plan, p, env)] = p
            ready = []
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in done:
                p = running.pop(f)
                f.result()
                for q in plan.succ[p]:
                    remaining[q] -= 1
                    if remaining[q] == 0:
                        ready.append(q)
                for s in plan.step_inputs[p]:
                    readers[s] -= 1
                    if readers[s] == 0 and s not in pinned:
                        env[s] = None
                outs = steps[p].out
                for s in (outs if isinstance(outs, tuple) else (outs,)):
                    if readers[s] == 0 and s not in pinned:
                        env[s] = None
        return [env[s] for s in plan.output_slots]

    def _run_one(self, plan, p, env):
        xp, ndarray = self.xp, self._ndarray
        step = plan.steps[p]
        kind, fn, ins, out, attrs, frees = step
        args = [env[i] for i in ins]
        try:
            if kind == PRESET:
                return
            if kind == MULTI:
                for o, r in zip(out, fn(xp, *args, **attrs)):
                    env[o] = r if type(r) is ndarray else xp.asarray(r)
            else:
                r = fn(*args) if kind in (UFUNC1, UFUNC2) else fn(xp, *args, **attrs)
                env[out] = r if type(r) is ndarray else xp.asarray(r)
        except PASS_THROUGH:
            raise
        except Exception as e:
            raise self._step_error(plan, step, env, e) from e

    def close(self):
        """Shut the thread pool down (parallel mode)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)


def constant_aliased_outputs(program):
    """Positions of ``program``'s outputs that may be (views of) its constants or literals:
    outputs of ``constant`` ops and program constants, what view and movement ops make of
    them, and (conservatively) every output of a control-flow op that may pass one through."""

    def scan(block, alias):
        for op in block.ops:
            if op.type == "constant":
                alias.update(op.outputs)
            elif op.blocks:
                inner = set(alias)
                if any(i in alias for i in op.inputs):
                    for sub in op.blocks.values():
                        inner.update(sub.inputs)
                hit = any(i in alias for i in op.inputs)
                for sub in op.blocks.values():
                    sub_alias = scan(sub, set(inner))
                    hit = hit or any(o in sub_alias for o in sub.outputs)
                if hit:
                    alias.update(op.outputs)
            elif op.inputs and op.inputs[0] in alias:
                opdef = OPS.get(op.type)
                if opdef is None or opdef.view or opdef.movement:
                    alias.update(op.outputs)
        return alias

    alias = scan(program.block, set(program.constants))
    return tuple(k for k, n in enumerate(program.outputs) if n in alias)


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


class _OutStep:
    """A ufunc step writing into the buffer left by a dead value (planned by memory_plan)."""

    __slots__ = ("ufunc", "donor", "shape", "dtype")

    def __init__(self, ufunc, donor_slot, shape, dtype):
        self.ufunc, self.donor, self.shape, self.dtype = ufunc, donor_slot, tuple(shape), dtype

    def __call__(self, env, args):
        buf = env[self.donor]
        env[self.donor] = None
        # the plan is static; check anyway, since writing into a wrong buffer would corrupt data
        if (type(buf) is not np.ndarray or buf.shape != self.shape or buf.dtype != self.dtype
                or not buf.flags.writeable or buf.base is not None):
            return np.asarray(self.ufunc(*args))
        return self.ufunc(*args, out=buf)


def _kernel_attrs(attrs):
    """Attrs as the kernels take them (JSON lists back to tuples where kernels need tuples)."""
    return dict(attrs)
