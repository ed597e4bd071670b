"""Splits a joint forward+backward program into a forward that keeps residuals and a backward
that reads them, so training a converted forward never recomputes it.

The joint program (``append_backward``: the forward's ops replayed, then the gradient rules'
ops) holds two kinds of ops: those that read no cotangent (the forward and everything the
gradient needs that depends only on inputs and params: activations, masks, the stacks a
``while`` pushes) and those that do. The first kind becomes the *forward* program; the values
of it that the second kind reads are its *residuals*, returned as extra outputs (like JAX's
partial evaluation into known and unknown parts, or PyTorch's saved tensors). The second kind
becomes the *backward* program, whose inputs are the residuals and the cotangents.

Sub-blocks read outer values only through their op's inputs, so deciding per op of the global
block is exact: a ``cond``/``while`` op is forward when none of its inputs is a cotangent.
"""
from d2s_runtime.ir import Program

from .backward import append_backward, grad_outputs_of


class Split:
    """The two halves of a joint program.

    Attributes:
        forward: inputs and params as the original program; outputs the original outputs,
            then the residuals it computes (``n_outputs`` original ones first).
        backward: inputs ``[*residuals, *cotangents]``; no params; outputs one gradient per
            differentiated input/param.
        residuals: for each residual input of ``backward``, where its value comes from:
            ``("input", i)``, ``("param", i)`` (the call's i-th input/param array) or
            ``("output", j)`` (the forward's j-th output).
        n_outputs: the number of original outputs.
    """

    def __init__(self, forward, backward, residuals, n_outputs):
        self.forward, self.backward = forward, backward
        self.residuals, self.n_outputs = residuals, n_outputs

    def gather(self, inputs, params, outputs):
        """The backward's residual values from a call's input and param arrays and the
        forward's outputs."""
        src = {"input": inputs, "param": params, "output": outputs}
        return [src[kind][i] for kind, i in self.residuals]


def split_training(program, wrt, optimize=None):
    """The :class:`Split` of ``program``'s joint forward+backward w.r.t. ``wrt`` (names of
    inputs/params). ``optimize`` (``Program -> Program``), when given, runs on the joint
    program before the split, so forward and backward share one simplified computation."""
    joint = append_backward(program, wrt, keep_prints=True)
    n_in = len(program.inputs)
    cotangents = joint.inputs[n_in:]
    if optimize is not None:
        joint = optimize(joint)
    return split_joint(joint, len(program.outputs), n_in, cotangents)


def split_joint(joint, n_outputs, n_inputs, cotangents):
    """Split ``joint`` (outputs: ``n_outputs`` forward outputs, then gradients; inputs: the
    ``n_inputs`` forward inputs, then ``cotangents``) into a :class:`Split`."""
    j = joint.clone()
    gb = j.block
    unknown = set(cotangents)  # values that depend on a cotangent
    fwd_ops, bwd_ops = [], []
    for op in gb.ops:
        if any(n in unknown for n in op.inputs):
            bwd_ops.append(op)
            unknown.update(op.outputs)
        else:
            fwd_ops.append(op)
    fwd_outs, grads = j.outputs[:n_outputs], j.outputs[n_outputs:]

    # residuals: known values the backward reads (or returns as a gradient)
    constants = set(j.constants)
    residuals, seen = [], set()
    for name in [n for op in bwd_ops for n in op.inputs] + list(grads):
        if name not in unknown and name not in constants and name not in seen:
            seen.add(name)
            residuals.append(name)

    inputs = j.inputs[:n_inputs]
    in_index = {n: i for i, n in enumerate(inputs)}
    par_index = {n: i for i, n in enumerate(j.params)}
    extra = [r for r in residuals if r not in in_index and r not in par_index and r not in fwd_outs]
    f_outputs = list(fwd_outs) + extra
    out_index = {}
    for k, n in enumerate(f_outputs):
        out_index.setdefault(n, k)
    sources = []
    for r in residuals:
        if r in in_index:
            sources.append(("input", in_index[r]))
        elif r in par_index:
            sources.append(("param", par_index[r]))
        else:
            sources.append(("output", out_index[r]))

    forward = _program(j, f"{joint.name}_forward", inputs, list(j.params), fwd_ops, f_outputs)
    backward = _program(j, f"{joint.name}_backward", residuals + list(cotangents), [], bwd_ops, list(grads))
    return Split(forward, backward, sources, n_outputs)


def _program(joint, name, inputs, params, ops, outputs):
    """A program over ``ops`` (taken from ``joint``'s global block) with these feeds and
    outputs; the constants and var types it needs are copied from ``joint``."""
    gb = joint.block
    p = Program()
    p.name = name
    p.inputs, p.params, p.outputs = list(inputs), list(params), list(outputs)
    read = {n for op in ops for n in op.inputs} | set(outputs)
    p.constants = {n: a for n, a in joint.constants.items() if n in read}
    b = p.block
    b.inputs = list(inputs) + list(params) + list(p.constants)
    for n in b.inputs:
        b.vars[n] = gb.vars[n]
    for op in ops:
        for o in op.outputs:
            b.vars[o] = gb.vars[o]
        for sub in op.blocks.values():
            sub.parent = b
    b.ops = list(ops)
    b.outputs = list(outputs)
    return p


__all__ = ["Split", "split_training", "split_joint", "grad_outputs_of"]
