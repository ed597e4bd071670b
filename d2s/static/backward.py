"""Static backward: the gradient program of a Program, built by the eager gradient rules.

The forward program's ops are replayed symbolically (``dispatch.apply`` for primitives, the
control-flow builders for ``cond``/``while``/``scan``) in a fresh :class:`ProgramBuilder`
whose differentiated inputs require grad, so autograd records nodes on symbolic tensors; the
engine (``d2s.grad``) then runs the same gradient rules as eager backward, which append the
backward ops. The forward is recomputed inside the gradient program (intermediates of a
separate forward run are not reused).
"""
import contextlib

from .. import ops as d
from .._state import STATE
from ..autograd.engine import grad
from ..autograd.grad_mode import enable_grad
from .builder import ProgramBuilder
from .replay import replay_op, replaying_forward


def _is_float(dtype):
    return str(dtype).startswith("float")


def grad_outputs_of(program):
    """Indices of ``program.outputs`` that take a cotangent input (the floating-point ones)."""
    return [k for k, n in enumerate(program.outputs) if _is_float(program.block.lookup(n).type.dtype)]


def default_wrt(program):
    """Every floating-point input and param of ``program``, inputs first."""
    return [n for n in list(program.inputs) + list(program.params) if _is_float(program.block.lookup(n).type.dtype)]


def append_backward(program, wrt=None, *, only_grads=False, keep_prints=False):
    """The gradient program of ``program`` w.r.t. chosen inputs and params.

    Args:
        program: the forward :class:`~d2s_runtime.ir.Program`.
        wrt: names of program inputs and/or params to differentiate with respect to
            (default: :func:`default_wrt`, every floating-point input and param).
        only_grads: leave the forward outputs out of the result's outputs.
        keep_prints: replay the forward's ``print`` ops too (for a joint program whose
            forward part runs as the call's forward; a backward that only recomputes the
            forward must not print again).

    Returns:
        A new Program. Its ``inputs`` are ``[*program.inputs, *cotangents]``: the forward
        inputs under the same names, then one cotangent per floating-point forward output
        (the outputs listed by :func:`grad_outputs_of`, in output order), each typed like its
        output. Its ``params`` are ``program.params``, under the same names (feed them as for
        the forward). Its ``outputs`` are ``[*program.outputs, *grads]`` (``[*grads]`` with
        ``only_grads``): one gradient per ``wrt`` name, in ``wrt`` order, typed like that
        input or param (zeros where the outputs do not depend on it). ``program.constants``
        are copied in.
    """
    wrt = default_wrt(program) if wrt is None else list(wrt)
    gb = program.block
    feeds = set(program.inputs) | set(program.params)
    for name in wrt:
        if name not in feeds:
            raise ValueError(f"append_backward: {name!r} is not an input or param of the program "
                             f"(inputs {program.inputs}, params {program.params})")
        if not _is_float(gb.lookup(name).type.dtype):
            raise ValueError(f"append_backward: cannot differentiate w.r.t. {name!r} of type "
                             f"{gb.lookup(name).type}: only floating-point values have gradients")
    b = ProgramBuilder()
    b.new_name.reserved.update(program.inputs)
    b.new_name.reserved.update(program.params)
    out = b.program
    out.name = f"{program.name}_grad"
    env = {}
    with b, enable_grad():
        for name in program.inputs:
            env[name] = _feed(b, name, gb.lookup(name).type, out.inputs, name in wrt)
        for name in program.params:
            env[name] = _feed(b, name, gb.lookup(name).type, out.params, name in wrt)
        for name, arr in program.constants.items():
            env[name] = b.symbolic(b.program.block.lookup(b.constant(arr)))
        cot_idx = grad_outputs_of(program)
        cots = [b.add_input(gb.lookup(program.outputs[k]).type.shape, gb.lookup(program.outputs[k]).type.dtype)
                for k in cot_idx]
        with replaying_forward() if keep_prints else contextlib.nullcontext():
            for op in gb.ops:
                env.update(zip(op.outputs, replay_op(op, [env[n] for n in op.inputs])))
        fwd_outs = [env[n] for n in program.outputs]
        grads = _grads([fwd_outs[k] for k in cot_idx], cots, [env[n] for n in wrt])
        results = ([] if only_grads else fwd_outs) + grads
        out.outputs = [b.var_of(t) for t in results]
    out.block.outputs = list(out.outputs)
    return out


def gradients(program, wrt=None):
    """``append_backward(program, wrt, only_grads=True)``: inputs ``[*program.inputs,
    *cotangents]``, params ``program.params``, outputs one gradient per ``wrt`` name."""
    return append_backward(program, wrt, only_grads=True)


def _feed(b, name, type, names, requires_grad):
    """A program input or param var keeping the forward program's ``name``."""
    v = b.program.block.add_var(name, type)
    b.defined_in[name] = b.program.block
    names.append(name)
    b.program.block.inputs.append(name)
    return b.symbolic(v, requires_grad)


def _grads(outs, cots, wrt_tensors):
    pairs = [(o, g) for o, g in zip(outs, cots) if o.requires_grad]
    grads = [None] * len(wrt_tensors)
    if pairs and wrt_tensors:
        prev = STATE.grad_enabled
        grads = grad([o for o, _ in pairs], wrt_tensors, grad_outputs=[g for _, g in pairs], allow_unused=True)
        STATE.grad_enabled = prev
    return [d.zeros_like(x) if g is None else g for g, x in zip(grads, wrt_tensors)]
