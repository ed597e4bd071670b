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
import contextlib
import operator
import warnings

import numpy as np

from d2s_runtime import forksafe
from d2s_runtime.device import to_host, xp_of
from d2s_runtime.ops import OPS, RNG
from d2s_runtime.passes import constant_op_value, optimize
from d2s_runtime.tiers import TieredRunner

from .._state import STATE
from ..autograd.anomaly import ACTIVE_THREADS, remember
from ..autograd.engine import grad as autograd_grad
from ..autograd.grad_mode import enable_grad
from ..autograd.node import GRAD_RULES, NONDIFF, Node, grad_node
from ..static import partial_eval  # (a module: tests replace split_training in it)
from ..static.replay import replay_block
from ..static.reach import add_reach_flags
from ..tensor import Tensor
from .backward_build import build_backward

# One program build at a time, process-wide (as torch._dynamo's compile lock): a build runs the
# user's function, which may write module attributes for the duration of the trace, so two
# builds at once could see each other's symbolic values. Builds hold the GIL anyway; cached
# programs run without any lock. Reentrant: a build may ask for another program.
BUILD_LOCK = forksafe.RLock()  # (free again in a forked child)

_DATA = operator.attrgetter("_data")  # a tensor's array (map(_DATA, ...) beats a list comprehension)
# requires_grad is a plain bool attribute (set by d2s as True/False); masks are tuples of it
_REQUIRES_GRAD = operator.attrgetter("requires_grad")


def _optimize(program, what):
    """``optimize(program)`` (the runtime's passes) when it keeps the program's interface; the
    program unchanged otherwise (a failing pass must not break a working program)."""
    try:
        out = optimize(program)
    except Exception as e:  # noqa: BLE001 - any pass failure: keep the unoptimized program
        warnings.warn(f"d2s.jit: optimizing the {what} program failed ({type(e).__name__}: {e}); "
                      "running it unoptimized", RuntimeWarning, stacklevel=4)
        return program
    if out is None or list(out.inputs) != list(program.inputs) or list(out.params) != list(program.params) \
            or len(out.outputs) != len(program.outputs):
        return program
    return out


def tiered(program, device, what, checked=False, optimize=True, backend="python"):
    """The :class:`~d2s_runtime.tiers.TieredRunner` of a converted program: its first run on the
    quick interpreter over the program as built, later runs optimized (``optimize``: the
    passes, see ``_optimize``) and compiled, natively where ``backend`` asks (a ``'native'``
    backend optimizes at once). A program run once (a one-off shape, a debugging call) never
    pays for the passes or the code generation, and the first call of a StaticFunction costs
    conversion, build and a quick preparation only. ``checked``: check the inputs of each run
    (inputs that no signature checked, such as output gradients)."""
    passes = (lambda p: _optimize(p, what)) if optimize else None
    return TieredRunner(program, device, backend, optimize=passes, quick=optimize, checked=checked)


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
        # which tensor arguments required grad when the function differentiates its own inputs
        # (d2s.grad(y, x) inside): the program is only right for calls with the same mask
        self.grad_mask = None
        # [(registry dict, key, tensor)]: where the module's params read by the program live
        # (set by the StaticFunction), to notice a parameter replaced by a new tensor
        self.param_refs = []
        # [(attribute dict, name, value)]: the module's Python attributes when the program was
        # built (set by the StaticFunction); a call finding another value builds a new program.
        # py_written: those the build itself changed (a counter bumped by forward)
        self.py_state = []
        self.py_written = []
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
                                     and type(cur._data) is type(t._data)
                                     and cur._data.shape == t._data.shape and cur._data.dtype == t._data.dtype):
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


class RunProgramNode(Node):
    """The autograd node of one StaticFunction call: ``RunProgramBackward0``."""

    __slots__ = ("entry", "masks", "saved", "given")

    def apply(self, grads):
        # which outputs received a gradient (None: all of them); a value reaching only the
        # others gets None
        given = None
        for g in grads:
            if g is None:
                given = [g is not None for g in grads]
                break
        self.given = given
        return super().apply(grads)

    def release(self):
        super().release()
        self.saved = None


def _run_program_backward(node, *grads):
    if STATE.grad_enabled:
        return _differentiable_backward(node, grads)
    arrays, params, rng, trainer, residuals = node.saved
    if node.entry.random_in_blocks:
        return _differentiable_backward(node, grads, create_graph=False)
    if trainer is not None:
        res = trainer.backward(residuals[0], [g._data for g in grads], residuals[1], node.given)
        make = Tensor._make
        return [None if r is None else make(r) for r in res]
    runner = node.entry.backward_runner(*node.masks)
    with _same_draws(rng):
        res = runner.run(arrays, params, [g._data for g in grads])
    return tuple(Tensor._make(r) for r in res)


@contextlib.contextmanager
def _same_draws(rng):
    """Random ops draw what the forward run drew (``rng``: its generator state), and leave
    the generator where it was, so a backward consumes no random numbers (the draws come from
    this thread's private copies: other threads keep drawing from the shared generator)."""
    if rng is None:
        yield
        return
    with RNG.replaying(rng):
        yield


def _differentiable_backward(node, grads, create_graph=True):
    """Backward with ``create_graph``: replay the forward program through the eager dispatch
    (so autograd records it, with the same gradient rules), then differentiate that replay;
    the gradients it returns are themselves differentiable (higher-order derivatives).
    Without ``create_graph``, the same replay gives plain gradients (for programs whose
    random draws only a replay of the forward's own run reproduces)."""
    entry = node.entry
    program = entry.raw_program
    in_mask, par_mask = node.masks
    arrays, params, rng = node.saved[:3]
    targets = iter(node.inputs)
    env = {}
    for name, arr, m in zip(program.inputs, arrays, in_mask):
        env[name] = next(targets) if m else Tensor._make(arr)
    for (name, p), arr, m in zip(entry.params, params, par_mask):
        env[name] = next(targets) if m else Tensor._make(arr)
    for name, arr in program.constants.items():
        env[name] = Tensor._make(arr)
    with _same_draws(rng), enable_grad():
        outs = replay_block(program.block, [env[n] for n in program.block.inputs])
        diff = [o for o, f in zip(outs, entry.out_float) if f]
        given = node.given or [True] * len(diff)
        used = [(o, g) for o, g, k in zip(diff, grads, given) if o.requires_grad and k]
        if not used:
            return tuple(None for _ in node.inputs)
        return autograd_grad([o for o, _ in used], list(node.inputs), grad_outputs=[g for _, g in used],
                             create_graph=create_graph, allow_unused=True)


class TrainingRunner:
    """A program's forward that also returns the residuals its backward needs, and that
    backward, for one set of values requiring grad (see ``d2s.static.partial_eval``).

    Both halves are cut from the optimized joint forward+backward program, so a training call
    runs the forward once and its backward reads what the forward kept, as eager autograd
    reads saved tensors; random draws (dropout masks) are residuals like any other value.
    """

    def __init__(self, entry, in_mask, par_mask):
        prog = entry.raw_program
        wrt = [n for n, m in zip(prog.inputs, in_mask) if m] + [n for n, m in zip(prog.params, par_mask) if m]
        # the forward also says which of ``wrt`` this call used (the others get no gradient)
        flagged = add_reach_flags(prog, wrt, per_output=True)
        split = partial_eval.split_training(flagged, wrt, optimize=lambda p: _optimize(p, "training"))
        self.n_outputs = len(prog.outputs)
        self.n_wrt, self.n_float = len(wrt), sum(entry.out_float)
        self.n_flags = self.n_wrt * self.n_float
        self.residuals = split.residuals  # where each residual comes from (Split.residuals)
        self._gather = _gatherer(split)
        self._known_flags = _known_flags(flagged, self.n_outputs, self.n_flags)
        self.forward = tiered(split.forward, entry.device, "training forward", backend=entry.backend)
        # flags the forward computes as constants (no branch decides them, the usual case):
        # known now, so calls neither read nor check them
        flags = _constant_outputs(split.forward, self.n_outputs, self.n_flags)
        self.static_used = None if flags is None else self._rows(flags)
        self.static_differentiable = None if flags is None else self.differentiable(self.static_used)
        self._all_used = flags is not None and all(flags)
        # residuals come from the forward as they are (a while's stacks are typed nominally);
        # only the cotangents, which come from the autograd engine, are coerced
        self._backward = tiered(split.backward, entry.device, "backward", backend=entry.backend)
        bb = split.backward.block
        self._cot_dtypes = [np.dtype(bb.vars[n].type.dtype) for n in split.backward.inputs[len(split.residuals):]]

    def gather(self, inputs, params, outputs):
        """The backward's residual values from a call's input and param arrays and the
        forward's outputs."""
        return self._gather([*inputs, *params, *outputs])

    def used(self, outs):
        """For each differentiated value, which floating-point outputs it reached on the call
        whose forward returned ``outs`` (a list of rows of bools)."""
        if self.static_used is not None:
            return self.static_used
        flags = self._known_flags
        if None in flags:  # some depend on this call's path: read them
            flags = _read_flags(flags, outs[self.n_outputs:self.n_outputs + self.n_flags])
        return self._rows(flags)

    def _rows(self, flags):
        return [flags[i * self.n_float:(i + 1) * self.n_float] for i in range(self.n_wrt)]

    def differentiable(self, used):
        """Which floating-point outputs some differentiated value reached (require grad)."""
        return [any(row[k] for row in used) for k in range(self.n_float)]

    def backward(self, residuals, grads, used, given=None):
        """The gradients (None for values that reached no output given a gradient), from a
        call's residuals and its outputs' gradient arrays (``given``: which of them the engine
        sent; the others are zeros)."""
        cots = [g if g.dtype == d else g.astype(d) for g, d in zip(grads, self._cot_dtypes)]
        res = self._backward.run(residuals + cots, [])
        if self._all_used and (given is None or all(given)):
            return res  # every value reached every output, and every output got a gradient
        given = given or [True] * self.n_float
        return [r if any(u and k for u, k in zip(row, given)) else None for r, row in zip(res, used)]


def _known_flags(flagged, n_outputs, n_flags):
    """The reach flags of ``flagged`` (see ``add_reach_flags``) known when it is built (a
    program without control flow knows them all), None for those known only when it runs:
    reading a flag from a device array waits for the device (a host sync per call)."""
    producer = {o: op for op in flagged.block.ops for o in op.outputs}
    out = []
    for name in flagged.outputs[n_outputs:n_outputs + n_flags]:
        op = producer.get(name)
        out.append(bool(op.attrs["value"]) if op is not None and op.type == "constant" else None)
    return out


def _read_flags(known, arrays):
    """``known`` with its None entries read from ``arrays``; on a device, in one copy."""
    dyn = [a for k, a in zip(known, arrays) if k is None]
    xp = xp_of(dyn[0])
    values = iter([bool(a) for a in dyn] if xp is np else to_host(xp.stack(dyn)).tolist())
    return [bool(next(values)) if k is None else k for k in known]


class BackwardRunner:
    """The backward program of a ConcreteProgram and its prepared executor.

    Its inputs are the forward inputs, then one gradient per differentiable (floating) forward
    output; its params are the forward params; its outputs are the gradients w.r.t. the
    forward inputs and params selected by the masks (in that order).
    """

    def __init__(self, entry, in_mask, par_mask):
        self.entry = entry
        self.in_mask, self.par_mask = in_mask, par_mask
        program, param_index = _build_backward(entry, in_mask, par_mask)
        self.param_src = [param_index[n] for n in program.params]
        # checked: output gradients come from the engine, not from a signature-checked call
        self._tiered = tiered(program, entry.device, "backward", checked=True, backend=entry.backend)

    @property
    def program(self):
        return self._tiered.program

    def run(self, arrays, params, grads):
        """Gradients for forward input ``arrays``, forward ``params`` (arrays, in the forward
        program's param order) and output gradients ``grads``."""
        bparams = [params[src] if isinstance(src, int) else src._data for src in self.param_src]
        return self._tiered.run(list(arrays) + list(grads), bparams)


def _build_backward(entry, in_mask, par_mask):
    """(backward program, {backward param name: index of the forward param, or the tensor})."""
    return build_backward(entry, in_mask, par_mask)


def _gatherer(split):
    """``pick(inputs + params + outputs) -> residuals``: ``split.gather`` as one C-level pick."""
    n_in, n_par = len(split.forward.inputs), len(split.forward.params)
    base = {"input": 0, "param": n_in, "output": n_in + n_par}
    index = [base[kind] + i for kind, i in split.residuals]
    if not index:
        return lambda values: []
    pick = operator.itemgetter(*index)
    if len(index) == 1:
        return lambda values: [pick(values)]
    return lambda values: list(pick(values))


def _constant_outputs(program, start, n):
    """The values (bools) of ``program``'s outputs ``start..start+n`` when each is a constant
    (a ``constant`` op or a program constant), else None."""
    producer = {o: op for op in program.block.ops for o in op.outputs}
    values = []
    for name in program.outputs[start:start + n]:
        op = producer.get(name)
        if op is not None and op.type == "constant" and not op.inputs:
            v = constant_op_value(op)
        elif name in program.constants:
            v = np.asarray(program.constants[name])
        else:
            return None
        if v.size != 1:
            return None
        values.append(bool(v.reshape(-1)[0]))
    return values
