"""Computes ops whose inputs are all constants once, at pass time, and regroups constant chains.

* An op (not an effect, not control flow) whose inputs are all constants is run now with its
  numpy kernel; a small result (<= 16 elements) becomes a ``constant`` op, a larger one a
  program constant (global block only). Ops that *expand* their inputs (``broadcast_to``,
  ``full`` of a big shape...) are left to run: storing their result would cost memory for no
  time saved, and the algebraic pass can exploit them as they are.
* ``(x * c1) * c2 -> x * (c1*c2)`` and ``(x + c1) + c2 -> x + (c1+c2)`` (ops with the
  ``associative`` trait) when the inner op has no other reader, the regrouped op has the same
  type, and that type is an integer or bool one, whose arithmetic (wrapping) regroups exactly.
  Never for floats: ``(x * (n / (n - 1))) * momentum`` regrouped changed a BatchNorm's running
  variance in its last bits against eager code's, and ``x * 16 * 0.0625`` would not overflow
  where eager code does.

Sub-blocks are folded on their own (their constants arrive as block inputs, so only what is
constant inside the sub-block folds there).
"""
import numpy as np

from ..ir import Op
from ..ops import OPS, TensorType
from ._util import Namer, SMALL_CONSTANT, constant_op, constant_op_value, is_effect, prune_vars, start, trait, use_counts



def constant_folding(program):
    """Return a new Program with constant subexpressions computed (see the module docstring)."""
    p = start(program)
    namer = Namer(p, "k")
    for block in p.blocks:
        _fold_block(p, block, namer)
    return p


def _fold_block(program, block, namer):
    is_global = block is program.block
    known = {}
    if is_global:
        known.update(program.constants)
    new_ops = []
    uses = use_counts(block, program.outputs if is_global else ())
    made = {}  # var -> op in new_ops that defines it
    for op in block.ops:
        if op.type == "constant":
            known[op.outputs[0]] = constant_op_value(op)
            new_ops.append(op)
            made[op.outputs[0]] = op
            continue
        opdef = OPS.get(op.type)
        foldable = opdef is not None and not op.blocks and not is_effect(op)
        if foldable and all(n in known for n in op.inputs):
            folded = _evaluate(opdef, op, [known[n] for n in op.inputs], block)
            # a sub-block cannot hold program constants: there, only small results fold
            if folded is not None and (is_global or all(v.size <= SMALL_CONSTANT for v in folded)):
                for name, value in zip(op.outputs, folded):
                    known[name] = value
                    if value.size <= SMALL_CONSTANT:
                        c = Op(*constant_op(name, value))
                        new_ops.append(c)
                        made[name] = c
                    else:
                        program.constants[name] = value
                        block.inputs.append(name)
                continue
        regrouped = _regroup(op, block, known, made, uses, namer) if trait(op, "associative") else None
        if regrouped is not None:
            new_ops.extend(regrouped)
            for o in regrouped:
                for name in o.outputs:
                    made[name] = o
            continue
        new_ops.append(op)
        for name in op.outputs:
            made[name] = op
    block.ops = new_ops
    prune_vars(block)


def _evaluate(opdef, op, values, block):
    """The op's outputs computed with numpy, or None when folding would not pay or fails."""
    out_types = [block.vars[n].type for n in op.outputs]
    sizes = [_size(t) for t in out_types]
    out_size = None if None in sizes else sum(sizes)
    in_size = max([v.size for v in values], default=0)
    if out_size is None or (out_size > SMALL_CONSTANT and out_size > in_size):
        return None  # an expansion (broadcast_to, full of a big shape): keep it lazy
    try:
        r = opdef.kernel(np, *values, **op.attrs)
    except Exception:  # leave it to the runtime, which reports errors with context
        return None
    results = list(r) if isinstance(r, (tuple, list)) and opdef.n_out != 1 else [r]
    results = [np.asarray(x) for x in results]
    for x, t in zip(results, out_types):
        if TensorType(x.shape, x.dtype.name) != t and not _fits(x, t):
            return None
    return [np.array(x, order="C") for x in results]  # not ascontiguousarray: it makes 0-d arrays 1-d


def _fits(x, t):
    return x.dtype.name == t.dtype and len(x.shape) == len(t.shape) and all(
        d is None or d == s for d, s in zip(t.shape, x.shape))


def _size(t):
    if None in t.shape:
        return None
    return int(np.prod(t.shape, dtype=np.int64))


def _regroup(op, block, known, made, uses, namer):
    """``(x op c1) op c2`` -> ``x op (c1 op c2)``, or None when the pattern does not apply."""
    a, b = op.inputs
    if a in known and b not in known:
        a, b = b, a
    if b not in known or a in known:
        return None
    inner = made.get(a)
    if inner is None or inner.type != op.type or uses.get(a, 0) != 1:
        return None
    x, c1 = inner.inputs
    if x in known and c1 not in known:
        x, c1 = c1, x
    if c1 not in known or x in known:
        return None
    if np.dtype(block.vars[op.outputs[0]].type.dtype).kind not in "biu":
        return None  # float sums and products regrouped round differently
    c2 = known[b]
    folded = getattr(np, OPS[op.type].ufunc)(known[c1], c2)
    if folded.size > SMALL_CONSTANT:
        return None
    try:
        t = OPS[op.type].infer(block.vars[x].type, TensorType(folded.shape, folded.dtype.name))
    except ValueError:
        return None
    if t != block.vars[op.outputs[0]].type:
        return None  # the regrouped constant would change the result's shape or dtype
    name = namer()
    block.add_var(name, TensorType(folded.shape, folded.dtype.name))
    known[name] = folded
    return [Op(*constant_op(name, folded)), Op(op.type, [x, name], op.outputs, dict(op.attrs))]
