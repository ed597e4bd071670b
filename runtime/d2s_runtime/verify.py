"""The IR verifier (like JAX's ``typecheck_jaxpr`` or torch.fx's ``Graph.lint``).

``verify(program)`` checks, and raises :class:`VerifyError` naming the op and the var:

* every op type is registered (a primitive, or a structured op holding exactly the sub-blocks
  its layout names),
* single assignment: no var is defined twice anywhere in the program,
* every var is defined before it is used, in the same block: a sub-block reads only its own
  inputs and the vars it defines (outer values reach it as explicit op inputs),
* every var has a type in its block, and block/program outputs are defined,
* every op's output types agree with its shape rule (re-run on its input types; a structured
  op's rule also reads its blocks),
* a ``constant`` op's literal value holds exactly the elements its ``shape`` attr says.
"""
import math

import numpy as np

from .dtypes import DTYPES
from .ops import OPS, TensorType
from .ops.registry import block_keys


class VerifyError(ValueError):
    """A malformed program."""


def verify(program):
    """Raise :class:`VerifyError` if ``program`` is malformed; return None otherwise."""
    defined = {}  # var name -> where (for "defined twice" messages)
    gb = program.block
    feeds = list(program.inputs) + list(program.params) + list(program.constants)
    for name in list(gb.inputs) + [n for n in feeds if n not in gb.inputs]:
        if name in defined:
            raise VerifyError(f"var {name!r} is an input of the program twice")
        defined[name] = "a program input"
    for kind, names in (("input", program.inputs), ("param", program.params), ("constant", program.constants)):
        for n in names:
            if n not in gb.vars:
                raise VerifyError(f"program {kind} {n!r} has no Var (type) in the global block")
    for name, arr in program.constants.items():
        t = gb.vars[name].type
        if tuple(arr.shape) != t.shape or arr.dtype.name != t.dtype:
            raise VerifyError(f"constant {name!r} holds an array {arr.dtype.name}{list(arr.shape)} but its var "
                              f"is typed {t}")
    scope = _verify_block(gb, set(gb.inputs) | set(feeds), defined, "the global block")
    for name in program.outputs:
        if name not in gb.vars:
            raise VerifyError(f"program output {name!r} is not defined in the global block")
        if name not in scope:
            raise VerifyError(f"program output {name!r} {_why_not_in_scope(name, gb, defined)}")


def _verify_block(block, scope, defined, where):
    """Check ``block`` (and its sub-blocks); returns the names defined at its end."""
    scope = set(scope)
    for name in scope:
        if name not in block.vars:
            raise VerifyError(f"{where}: input {name!r} has no Var (type) in its block")
    for i, op in enumerate(block.ops):
        label = f"{where}, op #{i} {op.type!r} (outputs {', '.join(op.outputs) or 'none'})"
        want = block_keys(op)
        if want is None:
            raise VerifyError(f"{label}: unknown op type {op.type!r} (not in the op registry)")
        # a primitive holds no sub-blocks and a structured op exactly its own: anything else
        # would slip past the type check below
        if set(op.blocks) != set(want):
            raise VerifyError(f"{label}: has blocks {sorted(op.blocks)}, but {op.type!r} takes {sorted(want)}")
        for name in op.inputs:
            if name not in scope:
                raise VerifyError(f"{label}: reads var {name!r} {_why_not_in_scope(name, block, defined)}")
        for key, sub in op.blocks.items():
            sub_where = f"{where} > {op.type} #{i} block {key!r}"
            for name in sub.inputs:
                if name in defined:
                    raise VerifyError(f"{sub_where}: input var {name!r} is defined twice (also {defined[name]})")
                defined[name] = f"an input of {sub_where}"
            _verify_block(sub, sub.inputs, defined, sub_where)
        for name in op.outputs:
            if name in defined:
                raise VerifyError(f"{label}: var {name!r} is defined twice (also {defined[name]})")
            if name not in block.vars:
                raise VerifyError(f"{label}: output var {name!r} has no Var (type) in its block")
            defined[name] = f"by {label}"
            scope.add(name)
        _check_types(op, block, label)
        if op.type == "constant":
            _check_constant(op, label)
    for name in block.outputs:
        if name not in scope:
            raise VerifyError(f"{where}: block output {name!r} {_why_not_in_scope(name, block, defined)}")
    return scope


def _why_not_in_scope(name, block, defined):
    if name in defined:
        return (f"that is not in this block's scope (it is defined {defined[name]}); a sub-block may read only "
                "its own inputs and the vars it defines: pass outer values in as op inputs")
    b = block
    while b is not None:
        if any(name in op.outputs for op in b.ops):
            return "before it is defined (it is defined by a later op)"
        b = b.parent
    return "that is never defined"


def _check_types(op, block, label):
    opdef = OPS[op.type]
    if opdef.structured:
        if opdef.infer is None:  # a structured op registered without a shape rule (tests' own ops)
            return
        infer = lambda types: opdef.infer(op, types)  # noqa: E731
    else:
        infer = lambda types: opdef.infer(*types, **op.attrs)  # noqa: E731
    types = [block.lookup(n).type for n in op.inputs]
    try:
        expected = infer(types)
    except Exception as e:  # noqa: BLE001 -- hostile attrs may break a shape rule in any way
        raise VerifyError(f"{label}: its shape rule rejects input types "
                          f"({', '.join(f'{n}:{t}' for n, t in zip(op.inputs, types))}): {e}") from None
    if isinstance(expected, TensorType):
        expected = (expected,)
    expected = tuple(expected)
    if len(expected) != len(op.outputs):
        raise VerifyError(f"{label}: has {len(op.outputs)} outputs but its shape rule gives {len(expected)}")
    for name, t in zip(op.outputs, expected):
        got = block.vars[name].type
        if got != t:
            raise VerifyError(f"{label}: output var {name!r} is typed {got} but the shape rule of "
                              f"{op.type!r} gives {t}")


def _check_constant(op, label):
    # the shape rule reads only the attrs `shape` and `dtype`: a literal of another size (say
    # from an edited program.json) would otherwise fail only when the program runs
    a = op.attrs
    # checked before numpy sees them: dtype 'S1000000000' would allocate a GB per element
    if a.get("dtype") not in DTYPES:
        raise VerifyError(f"{label}: dtype {a.get('dtype')!r} is not one of {', '.join(DTYPES)}")
    shape = a.get("shape", ())
    if not isinstance(shape, (list, tuple)) or not all(type(d) is int and 0 <= d < 1 << 48 for d in shape):
        raise VerifyError(f"{label}: shape {shape!r} is not a list of non-negative ints")
    try:
        value = np.asarray(a.get("value"), dtype=a.get("dtype"))
    except (TypeError, ValueError) as e:
        raise VerifyError(f"{label}: its value cannot be read as {a.get('dtype')}: {e}") from None
    want = math.prod(shape)
    if value.size != want:
        raise VerifyError(f"{label}: its value holds {value.size} element(s) but its shape {list(a.get('shape', ()))} "
                          f"needs {want}")
