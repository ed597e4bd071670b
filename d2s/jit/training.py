"""The training call path of a converted program: its autograd node (``RunProgramBackward0``),
the forward that also returns what its backward reads and that backward (``TrainingRunner``,
cut from the joint forward+backward program by ``d2s.static.partial_eval``), the backward
that recomputes the forward where they cannot be split (``BackwardRunner``), and the eager
replay giving differentiable gradients (``create_graph``) or a random forward's own draws.
"""
import contextlib
import operator

import numpy as np

from d2s_runtime.device import to_host, xp_of
from d2s_runtime.ops import RNG
from d2s_runtime.passes import constant_op_value

from .._state import STATE
from ..autograd.engine import grad as autograd_grad
from ..autograd.grad_mode import enable_grad
from ..autograd.node import Node
from ..static import partial_eval  # (a module: tests replace split_training in it)
from ..static.reach import add_reach_flags
from ..static.replay import replay_block
from ..tensor import Tensor
from .backward_build import build_backward
from .tiering import optimized, tiered


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
        res = trainer.backward(residuals[0], [g.array for g in grads], residuals[1], node.given)
        make = Tensor._make
        return [None if r is None else make(r) for r in res]
    runner = node.entry.backward_runner(*node.masks)
    with _same_draws(rng):
        res = runner.run(arrays, params, [g.array for g in grads])
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
        split = partial_eval.split_training(flagged, wrt, optimize=lambda p: optimized(p, "training"))
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
        bparams = [params[src] if isinstance(src, int) else src.array for src in self.param_src]
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
