"""Building the backward program of a to_static program.

The backward program takes the forward inputs, then one gradient per differentiable forward
output, reads the forward params, and returns the gradients w.r.t. the chosen inputs and
params. It is built by running the converted function once more on symbolic inputs that
require grad, with grad mode on, and then ``d2s.grad`` on the symbolic outputs: the autograd
engine applies the same gradient rules as in eager mode, and since they are written in d2s
ops, they append the gradient computation to the same program (control-flow ops bring their
own gradient rules). The forward is recomputed inside the backward program, which keeps the
forward program free of anything saved only for the backward.
"""
from ..autograd import enable_grad
from ..autograd.engine import grad as _grad
from ..static.builder import ProgramBuilder


def _type_of(t):
    if t._data is None:
        return t._var.type.shape, t._var.type.dtype
    return tuple(t._data.shape), t._data.dtype.name


def build_backward(entry, in_mask, par_mask):
    """``(program, {backward param name: forward param index, or the Parameter itself})``."""
    from ..ops import zeros_like
    builder = ProgramBuilder(entry.device)
    with builder, enable_grad():
        sym_in, outs = entry.retrace(builder, in_mask)
        float_outs = [o for o, f in zip(outs, entry.out_float) if f]
        grad_ins = [builder.add_input(*_type_of(o), name=None) for o in float_outs]
        targets = [s for s, m in zip(sym_in, in_mask) if m]
        for (_, t), m in zip(entry.params, par_mask):
            if m:
                targets.append(builder.param(t))
        roots = [(o, g) for o, g in zip(float_outs, grad_ins) if o.requires_grad]
        if roots and targets:
            grads = _grad([o for o, _ in roots], targets, grad_outputs=[g for _, g in roots],
                          allow_unused=True)
        else:
            grads = [None] * len(targets)
        grads = [zeros_like(t) if g is None else g for g, t in zip(grads, targets)]
        outputs = [builder.var_of(g) for g in grads]
    program = builder.program
    program.outputs = outputs
    program.block.outputs = list(outputs)
    fwd_index = {id(t): i for i, (_, t) in enumerate(entry.params)}
    param_src = {n: fwd_index.get(id(t), t) for n, t in builder.param_tensors.items()}
    return program, param_src
