"""Control-flow ops: their layout, shape rules (``SHAPE_RULES``) and executor rules (``RULES``).

``RULES[op_type](ctx, op, input_values) -> list of output values`` runs one control-flow op;
``ctx.run_block(block, input_values)`` runs a sub-block and returns the values of its outputs.
``SHAPE_RULES[op_type](op, input_types) -> tuple of TensorType`` gives its output types (the
verifier re-runs it). The printer, passes, executor, serializer and ONNX exporter all rely on
the layout below; every sub-block reads only its own inputs (outer values it uses are passed
in as op inputs, after the explicit ones: "captures").

``cond``
    inputs ``[pred, *operands, *captures]``; blocks ``{"then", "else"}``, each with inputs
    ``[*operands, *captures]`` (the op's inputs after ``pred``, one for one, the same list for
    both blocks) and outputs of equal number and dtypes; the op's outputs are the selected
    block's outputs, typed with dims that differ between the branches unknown. ``pred`` is a
    0-d bool. No attrs.

``while``
    inputs ``[*init_carries, *captures]``; outputs ``[*final_carries]`` (so the number of
    carries is ``len(op.outputs)``); blocks ``{"cond", "body"}``, both with inputs
    ``[*carries, *captures]``: ``cond`` yields one 0-d bool, ``body`` yields the new carries.
    The carries' types are the body's input types (dims that change across iterations are
    unknown there, so they may be wider than the init types). No attrs. Runs ``body`` while
    ``cond`` holds, possibly zero times.

``scan``
    inputs ``[*init_carries, *xs, *captures]``; outputs ``[*final_carries, *ys]``; block
    ``{"body"}`` with inputs ``[*carries, *x_slices, *captures]`` and outputs
    ``[*new_carries, *y_slices]``; attrs ``n_carry``, ``n_xs``, ``reverse`` (bool) and, when
    ``n_xs == 0``, ``length``. Step ``t`` (for ``t`` in ``0..T-1``, or ``T-1..0`` when
    ``reverse``) feeds ``xs[i][t]`` and stores its ``y``s at ``ys[j][t]``; ``T`` is the leading
    dim of the xs (or ``length``).

Tensor lists (``list_new``, ``list_push``, ``list_pop``, ``list_get``, ``list_len``,
``list_stack``) are plain primitives over arrays with a leading length dim; see
``ops/tensor_list.py``.
"""
from .errors import LoopLimitError
from .ops import ShapeError, TensorType


# ------------------------------------------------------------------ executor rules
def _run_cond(ctx, op, values):
    blk = op.blocks["then"] if bool(values[0]) else op.blocks["else"]
    return ctx.run_block(blk, values[1:])


def _run_while(ctx, op, values):
    n = len(op.outputs)
    carries, caps = list(values[:n]), list(values[n:])
    cond_blk, body_blk = op.blocks["cond"], op.blocks["body"]
    limit = getattr(ctx, "max_loop_iterations", None)
    count = 0
    while bool(ctx.run_block(cond_blk, carries + caps)[0]):
        count += 1
        if limit is not None and count > limit:
            loop_limit_exceeded(op, limit)
        carries = list(ctx.run_block(body_blk, carries + caps))
    return carries


def loop_limit_exceeded(op, limit):
    """Raise LoopLimitError: ``op`` (a ``while``) wants iteration ``limit + 1``."""
    raise LoopLimitError(f"op 'while' (outputs {', '.join(op.outputs) or 'none'}) did not finish within "
                         f"max_loop_iterations={limit} iterations; its condition may never become false for this "
                         "input, or the bound is too low for it (raise max_loop_iterations, or None for no bound)")


def _run_scan(ctx, op, values):
    xp = ctx.xp
    nc, nx = op.attrs["n_carry"], op.attrs["n_xs"]
    carries, xs, caps = list(values[:nc]), values[nc:nc + nx], list(values[nc + nx:])
    n = int(xs[0].shape[0]) if nx else int(op.attrs["length"])
    for x in xs:
        if x.shape[0] != n:
            raise ValueError(f"scan: xs have different leading dims ({n} and {x.shape[0]})")
    body = op.blocks["body"]
    ny = len(op.outputs) - nc
    ys = [[None] * n for _ in range(ny)]
    steps = range(n - 1, -1, -1) if op.attrs.get("reverse") else range(n)
    for t in steps:
        out = ctx.run_block(body, carries + [x[t] for x in xs] + caps)
        carries = list(out[:nc])
        for j in range(ny):
            ys[j][t] = out[nc + j]
    if n == 0:
        out_types = [body.lookup(name).type for name in body.outputs[nc:]]
        stacked = [xp.zeros((0,) + tuple(d or 0 for d in t.shape), dtype=t.dtype) for t in out_types]
    else:
        stacked = [xp.stack([xp.asarray(y) for y in col]) for col in ys]
    return carries + stacked


RULES = {"cond": _run_cond, "while": _run_while, "scan": _run_scan}
# the sub-blocks each control-flow op holds (the loader and verifier refuse any other set)
BLOCKS = {"cond": {"then", "else"}, "while": {"cond", "body"}, "scan": {"body"}}


# ------------------------------------------------------------------ shape rules
def _types(block, names):
    return [block.lookup(n).type for n in names]


def _check_inputs(op, key, given, block):
    want = _types(block, block.inputs)
    if len(given) != len(want):
        raise ShapeError(f"{op.type}: block {key!r} takes {len(want)} inputs but the op passes {len(given)}")
    for i, (g, w) in enumerate(zip(given, want)):
        if g.dtype != w.dtype or g.ndim != w.ndim or any(
                a is not None and a != b for a, b in zip(w.shape, g.shape)):
            raise ShapeError(f"{op.type}: input #{i} of block {key!r} is typed {w} but the op passes {g}")


def _pred_ok(op, t):
    if t.dtype != "bool" or t.ndim != 0:
        raise ShapeError(f"{op.type}: the predicate must be a 0-d bool, got {t}")


def _cond_shape(op, types):
    _pred_ok(op, types[0])
    then_blk, else_blk = op.blocks["then"], op.blocks["else"]
    _check_inputs(op, "then", types[1:], then_blk)
    _check_inputs(op, "else", types[1:], else_blk)
    t_out, e_out = _types(then_blk, then_blk.outputs), _types(else_blk, else_blk.outputs)
    if len(t_out) != len(e_out) or any(a.dtype != b.dtype or a.ndim != b.ndim for a, b in zip(t_out, e_out)):
        raise ShapeError(f"cond: the branches yield different types: then {t_out}, else {e_out}")
    return tuple(TensorType([x if x == y else None for x, y in zip(a.shape, b.shape)], a.dtype)
                 for a, b in zip(t_out, e_out))


def _while_shape(op, types):
    n = len(op.outputs)
    cond_blk, body_blk = op.blocks["cond"], op.blocks["body"]
    _check_inputs(op, "cond", types, cond_blk)
    _check_inputs(op, "body", types, body_blk)
    c_out = _types(cond_blk, cond_blk.outputs)
    if len(c_out) != 1:
        raise ShapeError(f"while: the cond block must yield one bool scalar, it yields {c_out}")
    _pred_ok(op, c_out[0])
    carry = _types(body_blk, body_blk.inputs[:n])
    new = _types(body_blk, body_blk.outputs)
    if len(new) != n:
        raise ShapeError(f"while: the body yields {len(new)} values for {n} carries")
    for i, (c, o) in enumerate(zip(carry, new)):
        if c.dtype != o.dtype or c.ndim != o.ndim or any(a is not None and a != b for a, b in zip(c.shape, o.shape)):
            raise ShapeError(f"while: carry #{i} is typed {c} but the body yields {o}")
    return tuple(carry)


def _scan_shape(op, types):
    nc, nx = op.attrs["n_carry"], op.attrs["n_xs"]
    body = op.blocks["body"]
    xs = types[nc:nc + nx]
    if any(x.ndim == 0 for x in xs):
        raise ShapeError(f"scan: every x needs a leading axis, got {xs}")
    lens = {x.shape[0] for x in xs if x.shape[0] is not None}
    if not nx:
        lens.add(op.attrs["length"])
    if len(lens) > 1:
        raise ShapeError(f"scan: xs have different leading dims {sorted(lens)}")
    n = lens.pop() if lens else None
    slices = [TensorType(x.shape[1:], x.dtype) for x in xs]
    _check_inputs(op, "body", list(types[:nc]) + slices + list(types[nc + nx:]), body)
    carry = _types(body, body.inputs[:nc])
    out = _types(body, body.outputs)
    for i, (c, o) in enumerate(zip(carry, out[:nc])):
        if c.dtype != o.dtype or c.ndim != o.ndim or any(a is not None and a != b for a, b in zip(c.shape, o.shape)):
            raise ShapeError(f"scan: carry #{i} is typed {c} but the body yields {o}")
    return tuple(carry) + tuple(TensorType((n,) + tuple(t.shape), t.dtype) for t in out[nc:])


SHAPE_RULES = {"cond": _cond_shape, "while": _while_shape, "scan": _scan_shape}
