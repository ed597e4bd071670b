"""One program of a StaticFunction: built once per signature, prepared once, run per call.

``ConcreteProgram.run`` is the per-call hot path: read the tensor arguments' arrays and the
parameters' current arrays (parameters are program inputs, never constants, so an optimizer
step is seen by the next call), run the prepared executor, wrap the outputs and rebuild the
returned structure. When grad mode is on and an input or parameter requires grad, the outputs
get one autograd node, ``RunProgramBackward0``, whose rule runs the program's backward program
(built lazily, once per program and set of inputs needing grad).

Programs run as built on their first call and optimized (``d2s.passes.optimize``) from their
second on (the runtime's ``TieredRunner``, see ``tiered``), so a first call costs conversion,
build and preparation only.
"""
import operator
import warnings

import numpy as np

from d2s_runtime import forksafe
from d2s_runtime.ops import OPS, RNG

from .._state import STATE
from ..autograd.anomaly import ACTIVE_THREADS, remember
from ..autograd.node import GRAD_RULES, NONDIFF, grad_node
from ..tensor import Tensor, array_of
from .tiering import tiered
from .training import BackwardRunner, RunProgramNode, TrainingRunner, _run_program_backward

# One program build at a time, process-wide (as torch._dynamo's compile lock): a build runs the
# user's function, which may write module attributes for the duration of the trace, so two
# builds at once could see each other's symbolic values. Builds hold the GIL anyway; cached
# programs run without any lock. Reentrant: a build may ask for another program.
BUILD_LOCK = forksafe.RLock()  # (free again in a forked child)

_DATA = array_of  # a tensor's array (map(_DATA, ...) beats a list comprehension)
# requires_grad is a plain bool attribute (set by d2s as True/False); masks are tuples of it
_REQUIRES_GRAD = operator.attrgetter("requires_grad")


_CELL = object()  # the key of a param ref that is a closure cell (see static_function._param_refs)


class ConcreteProgram:
    """The program of one signature, with everything a call needs precomputed.

    Attributes:
        program: the forward :class:`~d2s_runtime.ir.Program` being run (the built one, then,
            from the second call on, the optimized one when passes exist).
        raw_program: the program as built.
        params: ``[(var name, Parameter)]`` the program reads at every call.
        device: ``'cpu'`` or ``'gpu'``.
    """

    def __init__(self, program, param_tensors, rebuild, single, retrace, device="cpu", optimize=True,
                 writes=(), backend="python"):
        self.raw_program = program
        self.backend = backend
        self._tiered = tiered(program, device, "forward", optimize=optimize, backend=backend)
        self.params = [(n, param_tensors[n]) for n in program.params]
        self.param_tensors = [t for _, t in self.params]
        self.rebuild = rebuild
        self.single = single
        self.retrace = retrace
        self.device = device
        # module attributes the function assigned tensors to; their values follow the returned
        # tensors among the program's outputs
        self.writes = list(writes)
        # which of the params it reads required grad at the build (set by the StaticFunction):
        # the program is only right while they still do
        self.par_mask = ()
        # [(registry dict, key, tensor)]: where the module's params read by the program live
        # (set by the StaticFunction), to notice a parameter replaced by a new tensor
        self.param_refs = []
        # [(attribute dict, name, value)]: the module's Python attributes when the program was
        # built (set by the StaticFunction); a call finding another value builds a new program.
        # py_written: those the build itself changed (a counter bumped by forward)
        self.py_state = []
        self.py_written = []
        # the module tree's submodules and their forward hooks as the build found them (see
        # side_effects._module_structure): a program holds the submodules it called, and their hooks
        self.structure = None
        self.structure_version = None  # nn.module.STRUCTURE_VERSION when structure last held
        self._backward = {}
        self._trainers = {}
        self._reachable = {}
        gb = program.block
        self.out_float = [np.dtype(gb.lookup(n).type.dtype).kind == "f" for n in program.outputs]
        self.any_float_out = any(self.out_float)
        self.random = any(_draws(op) for b in program.blocks for op in b.ops)
        # the gradient rules of cond/while/scan replay their sub-blocks, drawing again: a
        # random op in one (dropout under a tensor `if`) would get a mask the forward never
        # drew, so such a program's backward replays the forward eagerly with its draws
        self.random_in_blocks = any(_draws(op) for b in program.blocks if b is not program.block for op in b.ops)

    @property
    def program(self):
        return self._tiered.program

    @property
    def executor(self):
        return self._tiered.executor

    def _programs_run(self):
        """(role, TieredRunner) of the programs calls have run: the forward, and for calls
        that record autograd the training forward and the backward of each TrainingRunner (the
        forward alone where no call has run yet)."""
        progs = [("forward", self._tiered)] if self._tiered.prepared else []
        for r in list(self._trainers.values()):  # (a copy: another thread may add a trainer)
            if r is not None:
                progs += [(role, t) for role, t in (("training forward", r.forward), ("backward", r._backward))
                          if t.prepared]
        return progs or [("forward", self._tiered)]

    def backend_report(self):
        """One line: the backend the programs calls have run are on now, and why not the native
        one where it was asked for (see ``d2s_runtime.Executor.backend_report``): the forward's
        report alone, ``'native'`` when a training call's programs all run natively, else each
        program's report led by its role (``'training forward: native; backward: python (...)'``)."""
        reports = [(role, t.backend_report()) for role, t in self._programs_run()]
        if len(reports) == 1:
            return reports[0][1]
        if all(r == "native" for _, r in reports):
            return "native"
        return "; ".join(f"{role}: {r}" for role, r in reports)

    def wait_native(self, timeout=None):
        """Wait for the pending native compiles of the programs calls have run; whether they
        all run natively now."""
        return all([t.wait_native(timeout) for _, t in self._programs_run()])

    def params_replaced(self):
        """Whether a parameter this program reads is no longer the one found where it was
        found at build time (``module.w = nn.Parameter(...)``, a global rebound, or deleted)."""
        for d, k, t in self.param_refs:
            if k is _CELL:
                try:
                    if d.cell_contents is not t:
                        return True
                except ValueError:  # the closure variable was deleted
                    return True
            elif d.get(k) is not t:
                return True
        return False

    def rebind_params(self):
        """Read the replacements of replaced parameters from now on, when each has the type
        the program was built for; returns False (nothing changed) when one does not, or
        was removed, and the program must be built again."""
        new_refs = []
        for d, k, t in self.param_refs:
            try:
                cur = d.cell_contents if k is _CELL else d.get(k)
            except ValueError:
                return False
            if cur is not t and not (isinstance(cur, Tensor) and not cur.is_symbolic
                                     and type(cur.array) is type(t.array)
                                     and cur.array.shape == t.array.shape and cur.array.dtype == t.array.dtype):
                return False
            new_refs.append((d, k, cur))
        swap = {id(t): ref[2] for (_, _, t), ref in zip(self.param_refs, new_refs)}
        self.params = [(n, swap.get(id(t), t)) for n, t in self.params]
        self.param_tensors = [t for _, t in self.params]
        self.param_refs = new_refs
        return True

    def run(self, leaves):
        """Run the program on tensor arguments ``leaves``; returns the user's output structure."""
        if not STATE.grad_enabled or not self.any_float_out:
            return self._run_no_grad(leaves)
        # which values require grad, read once (the masks key the prepared trainers)
        in_mask = tuple(map(_REQUIRES_GRAD, leaves))
        par_mask = tuple(map(_REQUIRES_GRAD, self.param_tensors))
        if not (any(in_mask) or any(par_mask)):
            return self._run_no_grad(leaves)
        arrays = list(map(_DATA, leaves))
        params = list(map(_DATA, self.param_tensors))
        masks = (in_mask, par_mask)
        trainer = self.trainer(in_mask, par_mask)
        run = trainer.forward.run if trainer is not None else self._tiered.run
        if masks is not None and self.random:
            # a backward that replays the forward (create_graph, random ops under control flow)
            # must draw what this run drew, so the generator state is kept for it; no other
            # thread may draw between the snapshot and this run's own draws
            with RNG.lock:
                rng = RNG.state()
                outs = run(arrays, params)
        else:
            rng = None
            outs = run(arrays, params)
        if trainer is not None:
            # the forward also returned what the backward needs (no recomputation)
            tensors = [Tensor._make(o) for o in outs[:trainer.n_outputs]]
            used = trainer.used(outs)
            # as eagerly, an output that no value requiring grad reached on this call's path
            # (a detached value, a branch reading no parameter) does not require grad
            differentiable = trainer.static_differentiable or trainer.differentiable(used)
            if any(differentiable):
                residuals = (trainer.gather(arrays, params, outs), used)
            else:
                masks = None
        else:
            tensors = [Tensor._make(o) for o in outs]
            residuals = None
            differentiable = self._reachable_outputs(*masks) if masks is not None else None
            if differentiable is not None and not any(differentiable):
                masks = None
        if masks is not None:
            self._attach_node(leaves, arrays, params, tensors, masks, rng, trainer, residuals, differentiable)
        if self.writes:
            for w in self.writes:
                w.apply(tensors, leaves)
        if self.single:
            return tensors[0]
        return self.rebuild(tensors)

    def _run_no_grad(self, leaves):
        """``run`` for a call that records no autograd: the per-call hot path of inference."""
        params = self.param_tensors
        outs = self._tiered.run(list(map(_DATA, leaves)), list(map(_DATA, params)) if params else [])
        make = Tensor._make
        if self.single and not self.writes:
            return make(outs[0])
        tensors = [make(o) for o in outs]
        for w in self.writes:
            w.apply(tensors, leaves)
        if self.single:
            return tensors[0]
        return self.rebuild(tensors)

    # ------------------------------------------------------------ autograd
    def trainer(self, in_mask, par_mask):
        """The :class:`TrainingRunner` for these masks (built once), or None when this
        program's backward cannot be split from it (the backward then recomputes the forward)."""
        key = (in_mask, par_mask)
        try:
            return self._trainers[key]
        except KeyError:
            pass
        if self.random_in_blocks:
            self._trainers[key] = None
            return None
        with BUILD_LOCK:  # one build at a time; a trainer is published once, complete
            if key in self._trainers:
                return self._trainers[key]
            try:
                r = TrainingRunner(self, in_mask, par_mask)
            except Exception as e:  # noqa: BLE001 - keep training working through the recomputing backward
                warnings.warn(f"d2s.jit: could not split the backward of program {self.raw_program.name!r} from its "
                              f"forward ({type(e).__name__}: {e}); its backward recomputes the forward",
                              RuntimeWarning, stacklevel=4)
                r = None
            self._trainers[key] = r
        return r

    def _reachable_outputs(self, in_mask, par_mask):
        """For each floating-point output, whether any value requiring grad can reach it at all
        (on some path; used where no per-call flags exist): a detached output never can."""
        key = (in_mask, par_mask)
        r = self._reachable.get(key)
        if r is None:
            prog = self.raw_program
            gb = prog.block
            live = {n for n, m in zip(prog.inputs, in_mask) if m} | {n for n, m in zip(prog.params, par_mask) if m}
            for op in gb.ops:
                if op.type in NONDIFF or (not op.blocks and op.type not in GRAD_RULES):
                    continue
                if any(i in live for i in op.inputs):
                    live.update(op.outputs)
            r = self._reachable[key] = [n in live for n, f in zip(prog.outputs, self.out_float) if f]
        return r

    def _attach_node(self, leaves, arrays, params, outputs, masks, rng=None, trainer=None, residuals=None,
                     differentiable=None):
        in_mask, par_mask = masks
        targets = [t for t, m in zip(leaves, in_mask) if m] + \
                  [t for t, m in zip(self.param_tensors, par_mask) if m]
        diff = [o for o, f in zip(outputs, self.out_float) if f]
        node = RunProgramNode()
        node.op, node.rule, node.attrs = "run_program", _run_program_backward, {}
        node.inputs, node.versions, node.pre_hooks, node.retained, node.freed = tuple(targets), None, None, None, False
        node.next_functions = tuple([(t.grad_fn, t._out_idx) if t.grad_fn is not None else (grad_node(t), 0)
                                     for t in targets])
        node.entry, node.masks = self, masks
        node.saved = (arrays, params, rng, trainer, residuals)
        node.given = None
        node.outputs = tuple(diff)
        if ACTIVE_THREADS[0]:
            remember(node)
        for i, o in enumerate(diff):
            if differentiable is not None and not differentiable[i]:
                continue
            o.requires_grad = True
            o.grad_fn = node
            o._out_idx = i

    def backward_runner(self, in_mask, par_mask):
        """The prepared backward of this program for the inputs/params marked in the masks."""
        key = (in_mask, par_mask)
        r = self._backward.get(key)
        if r is None:
            with BUILD_LOCK:  # it may run the user's function again: one build at a time
                r = self._backward.get(key)
                if r is None:
                    r = self._backward[key] = BackwardRunner(self, in_mask, par_mask)
        return r


def _draws(op):
    """Whether ``op`` draws from the random generator (its ``random`` trait)."""
    opdef = OPS.get(op.type)
    return opdef is not None and opdef.random


