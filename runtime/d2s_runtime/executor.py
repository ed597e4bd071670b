"""The executor: a Program prepared once and interpreted, on numpy (``device='cpu'``) or cupy
(``device='gpu'``). It prepares and interprets; running faster is the tier ladder's business.

Everything that can be decided before the first call is decided once, in ``__init__``:

* the op order of every block (``schedule.topo_order``: Kahn's algorithm over data
  dependencies; ops with effects, such as random draws, keep their relative order),
* the kernel of every op (``OPS[type].kernel``; the bare ufunc for an op whose ``ufunc`` trait
  says the kernel is exactly that ufunc) or, for a structured op, its ``"run"`` rule,
* a slot number for every var, so values live in a flat list rather than a dict,
* last-use liveness: after each op, the slots no later op reads are cleared, so a buffer is
  freed as soon as it is dead (like torch.fx's ``garbage_collect_values``),
* optionally a buffer plan from the ``memory_plan`` pass (``program.annotations['memory_plan']``):
  element-wise ops then write into a dead buffer of the same size and dtype (``out=``)
  instead of allocating a new one.

``interpret`` is then a tight loop over precomputed ``(kernel, input slots, output slots,
attrs, slots to free)`` steps. A structured op gets ``rule(ctx, op, input_values)`` with a
context whose ``run_block(block, values)`` runs a sub-block (prepared once, cached per Block).
With ``parallel=True`` independent ops of the global block run concurrently on a thread pool
(numpy releases the GIL inside BLAS and most ufunc loops).

The faster tiers (generated Python, ``codegen.py``; the native backend, ``native/``; see
``tiers.py``) belong to a :class:`~d2s_runtime.tiers.TieredRunner`: an Executor built with
``mode`` or ``backend`` asking for them (the default ``mode='auto'`` does) hands its calls to a
ladder over itself, ``executor.runner``, which ``tiers.py`` registers here (``set_ladder``: the
ladder sits above the interpreter, which knows nothing of it). ``mode``, ``source``,
``backend``, ``backend_report()`` and ``wait_native()`` read that ladder.
"""
import os
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np

from .codegen import read_only
from .device import get_xp
from .errors import ExecutionError
from .gc_pause import paused_gc
from .ops.debug import ProgramAssertionError, ProgramRaisedError, ProgramTypeError, ProgramUnboundLocalError
from .ops.guard import GuardError
from .ops.tensor_list import ProgramIndexError
from .schedule import topo_order  # noqa: F401  (re-exported: the order every block runs in)
from .steps import (KERNEL, MULTI, OUT, PRESET, UFUNC1, UFUNC2, apply_buffer_plan,  # noqa: F401  (step kinds)
                    constant_aliased_outputs, prepare_block)

# Errors a program raises on purpose (a failed assert op, a trace guard, a pop from an empty
# tensor list) reach the caller as they are; any other failure is wrapped in an ExecutionError
# naming the op.
PASS_THROUGH = (ExecutionError, ProgramAssertionError, ProgramUnboundLocalError, ProgramTypeError, GuardError,
                ProgramIndexError, ProgramRaisedError)


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


# The tier ladder an Executor's calls go through: ``tiers.TieredRunner.over``, registered by
# ``tiers.py`` when it is imported (the d2s_runtime package imports it with this module).
_LADDER = []


def set_ladder(factory):
    """Register ``factory(executor, mode, backend) -> runner``: what ``Executor(...)`` hands its
    calls to (``tiers.py`` registers its TieredRunner)."""
    _LADDER[:] = [factory]


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
        self._prepared(program, device, parallel, params, num_threads, use_memory_plan, mode, max_loop_iterations)
        self.runner = _LADDER[0](self, mode, backend)

    @classmethod
    def prepare(cls, program, device="cpu", parallel=False, params=None, num_threads=None, use_memory_plan=True,
                mode="auto", max_loop_iterations=None):
        """An Executor prepared for ``program`` with no ladder of its own (it interprets): what
        a TieredRunner builds its tiers on. ``mode`` says which tier will run it: ``'interp'``
        prepares every sub-block at once, the others only those generated code does not inline."""
        self = cls.__new__(cls)
        self._prepared(program, device, parallel, params, num_threads, use_memory_plan, mode, max_loop_iterations)
        return self

    def _prepared(self, program, device, parallel, params, num_threads, use_memory_plan, mode, max_loop_iterations):
        with paused_gc():  # preparing allocates many long-lived objects: see gc_pause.py
            self._init(program, device, parallel, params, num_threads, use_memory_plan, mode, max_loop_iterations)

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
        self._plans = {}
        self._ndarray = self.xp.ndarray
        self._input_types = [program.block.lookup(n).type for n in program.inputs]
        self._constants = {k: read_only(self.xp.asarray(v)) for k, v in program.constants.items()}
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
            apply_buffer_plan(self._main, plan)
            self._buffer_plan = plan
        self._pool = None
        if parallel:
            self._pool = ThreadPoolExecutor(max_workers=num_threads or os.cpu_count() or 2)
        self.runner = None  # the tier ladder running this executor's calls (see ``ladder``)

    # ------------------------------------------------------------ the tier ladder's, read here
    @property
    def mode(self):
        """``'codegen'`` when generated Python runs this program's Python backend, else ``'interp'``."""
        return self.runner.mode if self.runner is not None else "interp"

    @property
    def codegen_error(self):
        """Why an ``mode='auto'`` executor fell back to the interpreter (None: it did not)."""
        return self.runner.codegen_error if self.runner is not None else None

    @property
    def source(self):
        """The Python source of the generated function (``None`` in interpreter mode)."""
        return self.runner.source if self.runner is not None else None

    @property
    def backend(self):
        """The backend running calls now: ``'python'`` or ``'native'``."""
        return self.runner.backend if self.runner is not None else "python"

    @property
    def backend_requested(self):
        return self.runner.backend_requested if self.runner is not None else "python"

    @property
    def native_origin(self):
        """Where the native machine code came from once ready (``'disk cache'``, ``'compiled'``, ...)."""
        return self.runner.native_origin if self.runner is not None else None

    def backend_report(self):
        """One line: which backend runs this program now, and why not the native one where it
        was asked for (see :meth:`d2s_runtime.tiers.TieredRunner.backend_report`)."""
        return self.runner.backend_report() if self.runner is not None else "python"

    def wait_native(self, timeout=None):
        """Wait until a pending native compile is done (for tests and benchmarks); returns
        whether the native backend runs now."""
        return self.runner.wait_native(timeout) if self.runner is not None else False

    # ------------------------------------------------------------ preparation
    def prepare_sub_blocks(self, blocks):
        """Prepare ``blocks`` (sub-blocks a structured op's ``"run"`` rule will run) now."""
        for block in blocks:
            self._prepare(block)

    def _prepare(self, block, inputs=None, outputs=None, subs=True):
        """``block``'s Plan (see steps.py), cached per Block when prepared with its own inputs;
        ``subs``: prepare the sub-blocks of its structured ops too, at once."""
        plan = self._plans.get(id(block))
        if plan is not None and inputs is None:
            return plan

        def structured_step(rule, op):
            if subs:
                for sub in op.blocks.values():
                    self._prepare(sub)
            return self._cf_kernel(rule, op)

        plan = prepare_block(block, self.xp, structured_step, inputs, outputs)
        if inputs is None or list(inputs) == list(block.inputs):
            self._plans[id(block)] = plan
        return plan

    def _cf_kernel(self, rule, op):
        ctx = self._ctx

        def run_control_flow(xp, *args):
            return rule(ctx, op, list(args))

        return run_control_flow

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
        feeds = self.feeds(inputs, params)
        if self.runner is not None:
            return self.runner.call(feeds)
        return self.interpret(feeds)

    def feeds(self, inputs, params=None):
        """The checked feeds of a call (inputs, then params, then constants), as ``run`` takes them."""
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
        return feeds

    def interpret(self, feeds):
        """Run the prepared steps on ``feeds`` (inputs, params, constants): the interpreter."""
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
        if self.runner is not None:
            return self.runner.unchecked_runner()
        return self.interp_runner()

    def interp_runner(self):
        """:meth:`unchecked_runner` of the interpreter itself."""
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
