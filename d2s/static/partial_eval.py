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
Ops of the first kind whose results only the backward reads then move to the backward when
that keeps fewer bytes alive between the halves (``move_to_backward``).
"""
import numpy as np

from d2s_runtime.ir import Program
from d2s_runtime.ops import OPS
from d2s_runtime.ops.control_flow import WhileLayout
from d2s_runtime.passes import is_effect

from .backward import append_backward


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
    joint = merge_replayed_loops(joint)
    return split_joint(joint, len(program.outputs), n_in, cotangents)


def merge_replayed_loops(program):
    """``program`` with each ``while`` of its global block that a later ``while`` replays
    (the gradient rule's copy of the loop, which also pushes every iteration's carries onto
    stacks) removed, its readers reading the copy's carries: the forward then runs each loop
    once. A loop is merged only when the copy provably computes the same carries from the
    same inputs (same ops, attrs and captures, no nested blocks, no random ops)."""
    p = program.clone()
    gb = p.block
    changed = True
    while changed:
        changed = False
        loops = [op for op in gb.ops if isinstance(getattr(OPS.get(op.type), "layout", None), WhileLayout)]
        for a in loops:
            b = next((b for b in loops if b is not a and _replays(a, b)), None)
            if b is not None and _hoist_over(p, a, b):
                changed = True
                break
    return p


def _replays(a, b):
    """Whether ``while`` op ``b`` computes ``a``'s carries (its first ones) and ``a``'s
    condition from the same initial values and captures."""
    n = len(a.outputs)
    if len(b.outputs) <= n or list(b.inputs[:n]) != list(a.inputs[:n]):
        return False
    keys_a = _block_keys(a, n, len(a.outputs))
    keys_b = _block_keys(b, n, len(b.outputs))
    if keys_a is None or keys_b is None:
        return False
    (cond_a, body_a), (cond_b, body_b) = keys_a, keys_b
    return cond_a[0] == cond_b[0] and body_a[:n] == body_b[:n]


def _block_keys(op, n, n_carry):
    """Structural keys of the cond output and body outputs of ``while`` op ``op``: carry ``i``
    (``i < n``) is ``("carry", i)``, the other carries are distinct opaque keys, a capture is
    the outer var it reads; None when a block holds sub-blocks or random/effectful ops."""
    out = []
    for key in ("cond", "body"):
        blk = op.blocks[key]
        env = {}
        for i, name in enumerate(blk.inputs):
            if i < n:
                env[name] = ("carry", i)
            elif i < n_carry:
                env[name] = ("own", id(op), i)
            else:
                env[name] = ("outer", op.inputs[i])
        for o in blk.ops:
            if o.blocks or is_effect(o):  # random draws are effects too
                return None
            try:
                attrs = repr(sorted(o.attrs.items()))
            except TypeError:
                return None
            ins = tuple(env.get(i, ("unknown", i)) for i in o.inputs)
            for k, name in enumerate(o.outputs):
                env[name] = (o.type, attrs, ins, k)
        out.append([env.get(name, ("unknown", name)) for name in blk.outputs])
    return out


def _hoist_over(p, a, b):
    """Put ``b`` (and the ops it needs after ``a``) in ``a``'s place and drop ``a``, renaming
    ``a``'s outputs to ``b``'s first ones; False (nothing changed) when ``b`` depends on ``a``."""
    gb = p.block
    ops = gb.ops
    ia, ib = ops.index(a), ops.index(b)
    if ib < ia:
        return False
    produced = {name: op for op in ops[ia + 1:ib] for name in op.outputs}
    needed, todo = [], list(b.inputs)
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in a.outputs:
            return False
        op = produced.get(name)
        if op is not None and op not in needed:
            needed.append(op)
            todo.extend(op.inputs)
    moved = [op for op in ops[ia + 1:ib] if op in needed]
    if any(op.blocks or is_effect(op) for op in moved):  # random draws are effects too
        return False  # moving it would reorder draws or effects
    rest = [op for op in ops[ia + 1:ib] if op not in needed]
    gb.ops = ops[:ia] + moved + [b] + rest + ops[ib + 1:]
    rename = dict(zip(a.outputs, b.outputs))
    for op in gb.ops:
        op.inputs = [rename.get(i, i) for i in op.inputs]
    gb.outputs = [rename.get(o, o) for o in gb.outputs]
    p.outputs = [rename.get(o, o) for o in p.outputs]
    for name in a.outputs:
        gb.vars.pop(name, None)
    return True


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
    constants = set(j.constants)
    fwd_ops, bwd_ops = move_to_backward(gb, fwd_ops, bwd_ops, fwd_outs, grads, constants | unknown)

    # residuals: known values the backward reads (or returns as a gradient)
    produced = unknown.union(o for op in bwd_ops for o in op.outputs)  # (moved ops' results too)
    residuals, seen = [], set()
    for name in [n for op in bwd_ops for n in op.inputs] + list(grads):
        if name not in produced and name not in constants and name not in seen:
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


def move_to_backward(block, fwd_ops, bwd_ops, fwd_outs, grads, not_residual):
    """``(fwd_ops, bwd_ops)`` with the forward ops whose results only the backward reads moved
    to the start of the backward, where that keeps less memory alive between the two halves.

    An op computed only for the backward (a relu mask, ``1 - y*y`` of tanh, a transpose of an
    activation, a zeros buffer) costs the same in either half, but computed in the forward its
    result is a residual, held from the forward call until backward; computed in the backward,
    its inputs are held instead. Moving it never computes anything twice. Ops are decided from
    the last to the first (each op's forward consumers are decided before it), and one moves
    when the bytes its inputs add to the residuals are at most the bytes its results free; a
    view (transpose, reshape, ...) is counted as the value it views, and inputs, params and
    constants cost nothing (the caller holds them anyway), nor do scalars. Effects, random draws and ops with
    sub-blocks never move. ``not_residual``: the names never held as residuals (constants, and
    values depending on a cotangent)."""
    from d2s_runtime.ops import OPS

    constants = not_residual

    producer = {o: op for op in fwd_ops for o in op.outputs}
    fwd_use = {}  # name -> readers among the forward ops (and the forward's outputs)
    for op in fwd_ops:
        for n in op.inputs:
            fwd_use[n] = fwd_use.get(n, 0) + 1
    for n in fwd_outs:
        fwd_use[n] = fwd_use.get(n, 0) + 1

    roots = {}

    def root(name):
        # the value whose buffer ``name`` may be a view of (itself for a fresh value); a loop,
        # not recursion: a chain of views may be as long as the program
        chain = []
        r = name
        while r not in roots:
            op = producer.get(r)
            opdef = OPS.get(op.type) if op is not None else None
            if opdef is None or not opdef.view or not op.inputs:
                roots[r] = r
                break
            chain.append(r)
            r = op.inputs[0]
        r = roots[r]
        for n in chain:
            roots[n] = r
        return r

    def weight(r):
        if r not in producer:  # an input, param or constant: held by the caller or program
            return 0
        t = block.vars[r].type
        n = 1
        for d in t.shape:
            n *= 1 if d is None else d
        if n <= 1 and None not in t.shape:
            return 0  # a scalar (the 1 of ``1 - y*y``): not worth keeping a larger value for
        try:
            return n * np.dtype(t.dtype).itemsize
        except TypeError:
            return n * 8

    resid = set()
    for n in [n for op in bwd_ops for n in op.inputs] + list(grads):
        if n not in constants:
            resid.add(n)
    held = {}  # root -> how many residuals view it
    for n in resid:
        r = root(n)
        held[r] = held.get(r, 0) + 1

    moved = set()
    for op in reversed(fwd_ops):
        opdef = OPS.get(op.type)
        if opdef is None or op.blocks or opdef.effect or opdef.random:
            continue
        if any(fwd_use.get(o, 0) for o in op.outputs) or not any(o in resid for o in op.outputs):
            continue
        freed, drop = 0, {}
        for o in op.outputs:
            if o in resid:
                r = root(o)
                drop[r] = drop.get(r, 0) + 1
        for r, k in drop.items():
            if held[r] == k:
                freed += weight(r)
        added, new_roots = 0, set()
        for i in op.inputs:
            if i in constants or i in resid:
                continue
            r = root(i)
            if held.get(r, 0) - drop.get(r, 0) <= 0 and r not in new_roots:
                new_roots.add(r)
                added += weight(r)
        if added > freed:
            continue
        moved.add(id(op))
        for o in op.outputs:
            if o in resid:
                resid.discard(o)
                held[root(o)] -= 1
        for i in op.inputs:
            fwd_use[i] -= 1
            if i not in constants and i not in resid:
                resid.add(i)
                r = root(i)
                held[r] = held.get(r, 0) + 1
    if not moved:
        return fwd_ops, bwd_ops
    return ([op for op in fwd_ops if id(op) not in moved],
            [op for op in fwd_ops if id(op) in moved] + list(bwd_ops))


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


__all__ = ["Split", "split_training", "split_joint", "move_to_backward"]
