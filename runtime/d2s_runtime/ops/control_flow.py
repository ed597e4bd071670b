"""Structured ops: ``cond``, ``while``, ``scan`` and ``switch``, each with every rule in one place.

As JAX registers all of ``cond_p``'s rules right after defining it, each op here declares, in
consecutive lines, its block layout (a :class:`~d2s_runtime.ops.registry.BlockLayout`), how the
interpreter runs it (``defstructured``), its shape rule, its dead-code (narrowing) rule
(``defrule(name, "narrow")``) and how each backend lowers it (``deflowering(name, "codegen")``:
the generated Python function, ``codegen.py``; ``deflowering(name, "native")``: the numba
function, ``native/``). The executor, the code generator, the native lowerer, the verifier, the
loader and the passes look these up as they look up any op; none asks for an op by name.

Every sub-block reads only its own inputs: outer values it uses are passed in as op inputs,
after the explicit ones ("captures"). The layouts:

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

``switch``
    inputs ``[index, *operands, *captures]``; blocks ``{"branch0", ..., "branch{n-1}"}`` (``n``:
    the int attr ``branches``), each with inputs ``[*operands, *captures]`` and outputs of equal
    number and dtypes, typed as ``cond``'s; ``index`` is a 0-d int32 or int64, clamped into
    ``[0, n - 1]`` (as JAX's ``lax.switch``), and picks the block that runs.

Tensor lists (``list_new``, ``list_push``, ...) and stacks are plain primitives over arrays
with a leading length dim; see ``ops/tensor_list.py``.

SAFETY. The ``codegen`` and ``native`` lowerings below follow their backends' rule: no text of
the program reaches the generated source. They format only generated local names and validated
Python ints; ops and attrs reach the code as values (``g.glob``), never as text.
"""
from ..errors import LoopLimitError
from .registry import BlockLayout, ShapeError, TensorType, deflowering, defrule, defstructured

__all__ = ["BranchLayout", "WhileLayout", "ScanLayout", "SwitchLayout", "loop_limit_exceeded", "scan_length",
           "scan_stacker", "needed_carries", "clamp_index"]


# ================================================================== layouts
class BranchLayout(BlockLayout):
    """Inputs ``[selector, *operands, *captures]``; every block takes ``[*operands, *captures]``
    and yields the op's outputs; one block runs per call (``cond``)."""

    def __init__(self, keys):
        self.keys = tuple(keys)

    def block_keys(self, op):
        return frozenset(self.keys)

    def branches(self, op):
        """The op's blocks, in selector order (``cond``: then, else)."""
        return [op.blocks[k] for k in self.keys]

    def well_formed(self, op):
        return (set(op.blocks) == set(self.keys) and len(op.inputs) >= 1
                and all(len(b.inputs) == len(op.inputs) - 1 and len(b.outputs) == len(op.outputs)
                        for b in op.blocks.values()))


class WhileLayout(BlockLayout):
    """Inputs ``[*carries, *captures]``, outputs the final carries; blocks ``cond`` (one 0-d
    bool) and ``body`` (the new carries), both over ``[*carries, *captures]`` (``while``)."""

    repeats = True

    def block_keys(self, op):
        return frozenset(("cond", "body"))

    def n_carry(self, op):
        return len(op.outputs)

    def well_formed(self, op):
        b, n = op.blocks, len(op.outputs)
        return (set(b) == {"cond", "body"} and len(op.inputs) >= n
                and len(b["cond"].inputs) == len(op.inputs) == len(b["body"].inputs)
                and len(b["cond"].outputs) == 1 and len(b["body"].outputs) == n)


class ScanLayout(BlockLayout):
    """Inputs ``[*carries, *xs, *captures]``, outputs ``[*carries, *ys]``; block ``body`` over
    ``[*carries, *x slices, *captures]`` yielding ``[*carries, *y slices]`` (``scan``)."""

    repeats = True

    def block_keys(self, op):
        return frozenset(("body",))

    def n_carry(self, op):
        return op.attrs["n_carry"]

    def well_formed(self, op):
        a, b = op.attrs, op.blocks
        nc, nx = a.get("n_carry"), a.get("n_xs")
        if set(b) != {"body"} or type(nc) is not int or type(nx) is not int or nc < 0 or nx < 0:
            return False
        if nx == 0 and type(a.get("length")) is not int:
            return False
        if type(a.get("reverse", False)) is not bool:
            return False
        body = b["body"]
        return (len(op.inputs) >= nc + nx and len(body.inputs) == len(op.inputs)
                and len(body.outputs) == len(op.outputs) >= nc)


COND_LAYOUT, WHILE_LAYOUT, SCAN_LAYOUT = BranchLayout(("then", "else")), WhileLayout(), ScanLayout()


# ================================================================== shared shape helpers
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


def _pred_ok(op, t, what="the predicate"):
    if t.dtype != "bool" or t.ndim != 0:
        raise ShapeError(f"{op.type}: {what} must be a 0-d bool, got {t}")


def _carries_ok(op, carry, new):
    for i, (c, o) in enumerate(zip(carry, new)):
        if c.dtype != o.dtype or c.ndim != o.ndim or any(a is not None and a != b for a, b in zip(c.shape, o.shape)):
            raise ShapeError(f"{op.type}: carry #{i} is typed {c} but the body yields {o}")


def join_branch_types(op, outs):
    """The op's output types from its branches' output types ``outs`` (one list per branch):
    dims that differ between branches unknown; the branches must agree on number, dtypes, ranks."""
    first = outs[0]
    for other in outs[1:]:
        if len(other) != len(first) or any(a.dtype != b.dtype or a.ndim != b.ndim for a, b in zip(first, other)):
            raise ShapeError(f"{op.type}: the branches yield different types: {' vs '.join(str(o) for o in outs)}")
    return tuple(TensorType([d if all(t.shape[k] == d for t in col) else None for k, d in enumerate(col[0].shape)],
                            col[0].dtype) for col in zip(*outs))


def needed_carries(n, live_outputs, fixed_roots, body, new_values, needed_ops):
    """The carry positions (of ``n``) a loop needs: those whose result is live, and, until
    nothing changes, those a needed carry's new value (``new_values[i]``, a name of ``body``)
    or ``fixed_roots`` (names of ``body``) are computed from (``needed_ops(block, roots) ->
    (ops, names)``: the dead-code pass's own analysis, handed to the narrowing rules)."""
    needed = set(live_outputs)
    while True:
        names = needed_ops(body, list(fixed_roots) + [new_values[i] for i in needed])[1]
        more = {i for i in range(n) if body.inputs[i] in names} - needed
        if not more:
            return needed
        needed |= more


def drop_carries(loop, positions, n):
    """Drop carries ``positions`` (of the first ``n``) of a loop (``while``/``scan`` layout)
    from its inputs and outputs, its blocks' inputs and its body's outputs (carries come first
    in each; what follows them stays). A scan's ``n_carry`` attr is the caller's."""
    drop = set(positions)
    keep = [i for i in range(n) if i not in drop]
    loop.inputs = [loop.inputs[i] for i in keep] + loop.inputs[n:]
    loop.outputs = [loop.outputs[i] for i in keep] + loop.outputs[n:]
    for name, blk in loop.blocks.items():
        blk.inputs = [blk.inputs[i] for i in keep] + blk.inputs[n:]
        if name == "body":
            blk.outputs = [blk.outputs[i] for i in keep] + blk.outputs[n:]


def _where(op):
    return f"op {op.type} (output {op.outputs[0] if op.outputs else '-'})"


# ================================================================== cond
def _cond_shape(op, types):
    _pred_ok(op, types[0])
    then_blk, else_blk = op.blocks["then"], op.blocks["else"]
    _check_inputs(op, "then", types[1:], then_blk)
    _check_inputs(op, "else", types[1:], else_blk)
    t_out, e_out = _types(then_blk, then_blk.outputs), _types(else_blk, else_blk.outputs)
    if len(t_out) != len(e_out) or any(a.dtype != b.dtype or a.ndim != b.ndim for a, b in zip(t_out, e_out)):
        raise ShapeError(f"cond: the branches yield different types: then {t_out}, else {e_out}")
    return join_branch_types(op, [t_out, e_out])


@defstructured("cond", COND_LAYOUT, _cond_shape)
def _run_cond(ctx, op, values):
    """Runs block ``then`` when the 0-d bool ``pred`` holds, else block ``else``, on the other inputs."""
    blk = op.blocks["then"] if bool(values[0]) else op.blocks["else"]
    return ctx.run_block(blk, values[1:])


@defrule("cond", "narrow")
def _narrow_cond(op, live, needed_ops):
    keep = [i for i, o in enumerate(op.outputs) if o in live]
    if not keep or len(keep) == len(op.outputs):  # (a cond kept only for its effects stays whole)
        return
    op.outputs = [op.outputs[i] for i in keep]
    for blk in op.blocks.values():
        blk.outputs = [blk.outputs[i] for i in keep]


@deflowering("cond", "codegen")
def _cond_codegen(g, op, indent, info):
    """``if pred:`` then-block ``else:`` else-block, both assigning the same output locals."""
    ins = [g.local[n] for n in op.inputs[1:]]
    outs = [g.fresh() for _ in op.outputs]
    g.emit(indent, f"if {g.local[op.inputs[0]]}:", info)
    g.emit_sub(op.blocks["then"], ins, outs, indent + 1)
    g.emit(indent, "else:", info)
    g.emit_sub(op.blocks["else"], ins, outs, indent + 1)
    g.bind(op.outputs, outs)


@deflowering("cond", "native")
def _cond_native(lw, op, env):
    """``if``/``else`` over the two blocks lowered inline (see ``native/plan.py``: branches)."""
    return lw.branches(op, env, [op.blocks["then"], op.blocks["else"]])


# ================================================================== while
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
    _carries_ok(op, carry, new)
    return tuple(carry)


def loop_limit_exceeded(op, limit):
    """Raise LoopLimitError: ``op`` (a loop) wants iteration ``limit + 1``."""
    raise LoopLimitError(f"op {op.type!r} (outputs {', '.join(op.outputs) or 'none'}) did not finish within "
                         f"max_loop_iterations={limit} iterations; its condition may never become false for this "
                         "input, or the bound is too low for it (raise max_loop_iterations, or None for no bound)")


@defstructured("while", WHILE_LAYOUT, _while_shape)
def _run_while(ctx, op, values):
    """Runs block ``body`` on the carries while block ``cond`` yields true (possibly zero times)."""
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


@defrule("while", "narrow")
def _narrow_while(op, live, needed_ops):
    """Drops the carries that neither a live output, the condition, an effect nor another such
    carry needs (a fixed point)."""
    n = len(op.outputs)
    cond_blk, body = op.blocks["cond"], op.blocks["body"]
    read_by_cond = needed_ops(cond_blk, cond_blk.outputs)[1]
    first = {i for i in range(n) if op.outputs[i] in live or cond_blk.inputs[i] in read_by_cond}
    needed = needed_carries(n, first, [], body, body.outputs, needed_ops)
    if not needed or len(needed) == n:
        return
    drop_carries(op, [i for i in range(n) if i not in needed], n)


@deflowering("while", "codegen")
def _while_codegen(g, op, indent, info):
    """``while True:`` the cond block, ``if not flag: break``, the body block, carries reassigned."""
    n = len(op.outputs)
    cond_blk, body_blk = op.blocks["cond"], op.blocks["body"]
    carries = [g.fresh() for _ in range(n)]
    caps = [g.local[x] for x in op.inputs[n:]]
    # 0-d carries start from a constant's scalar twin when there is one (scalar math)
    inits = [g.use(x, scalar=g.is0d(x)) for x in op.inputs[:n]]
    if carries:
        g.emit(indent, f"{', '.join(carries)} = {', '.join(inits)}", info)
    count = None
    if g.loop_limit is not None:
        count = g.fresh()
        g.emit(indent, f"{count} = 0", info)
    g.emit(indent, "while True:", info)
    (flag,) = g.emit_sub(cond_blk, carries + caps, None, indent + 1)
    g.emit(indent + 1, f"if not {flag}: break", info)
    if count is not None:
        limit = g.glob("c", g.loop_limit)
        g.emit(indent + 1, f"{count} += 1", info)
        g.emit(indent + 1, f"if {count} > {limit}: {g.glob('r', loop_limit_exceeded)}({g.glob('o', op)}, {limit})",
               info)
    g.emit_sub(body_blk, carries + caps, carries, indent + 1, owned_inputs=body_blk.inputs[:n])
    g.bind(op.outputs, carries)


@deflowering("while", "native")
def _while_native(lw, op, env):
    """``while True:`` with the cond block and a ``break``; the loop owns its carries (see
    ``native/plan.py``: loop carries) and its body updates them in place."""
    n = len(op.outputs)
    ins = [lw.value(env, x) for x in op.inputs]
    carries = lw.loop_carries(op, ins[:n], may_own=True)
    caps = ins[n:]
    with lw.loop(caps) as ind:
        lw.emit(ind, "while True:")
        (flag,) = lw.lower_block(op.blocks["cond"], carries + caps, ind + 1)
        if flag.kind != "s":
            lw.unsupported(op, "the loop predicate is not 0-d")
        lw.emit(ind + 1, f"if not {flag.name}:")
        lw.emit(ind + 2, "break")
        body = op.blocks["body"]
        res = lw.lower_block(body, carries + caps, ind + 1, owned=lw.owned_carries(body, carries))
        lw.update_carries(op, carries, res, body, ind + 1)
    return lw.bind(op, env, lw.loop_results(carries))


# ================================================================== scan
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
    _carries_ok(op, carry, out[:nc])
    return tuple(carry) + tuple(TensorType((n,) + tuple(t.shape), t.dtype) for t in out[nc:])


def scan_length(xs, length):
    """The number of steps of a scan over ``xs`` (their common leading dim) or ``length``."""
    n = int(xs[0].shape[0]) if xs else int(length)
    for x in xs:
        if x.shape[0] != n:
            raise ValueError(f"scan: xs have different leading dims ({n} and {x.shape[0]})")
    return n


def scan_stacker(xp):
    """``stack(col, shape, dtype)``: the ``ys`` of a scan (one per step) along a new leading
    axis, or typed zeros for zero steps (``shape``/``dtype``: a y's static type)."""
    def stack(col, shape, dtype):
        if not col:
            if shape is None:
                raise ValueError("scan: ran zero steps and the type of its outputs is unknown")
            return xp.zeros((0,) + tuple(d or 0 for d in shape), dtype=dtype)
        return xp.stack([xp.asarray(y) for y in col])

    return stack


@defstructured("scan", SCAN_LAYOUT, _scan_shape)
def _run_scan(ctx, op, values):
    """Runs block ``body`` once per leading index of the xs, threading the carries and stacking the ys."""
    nc, nx = op.attrs["n_carry"], op.attrs["n_xs"]
    carries, xs, caps = list(values[:nc]), values[nc:nc + nx], list(values[nc + nx:])
    n = scan_length(xs, op.attrs.get("length"))
    body = op.blocks["body"]
    ny = len(op.outputs) - nc
    ys = [[None] * n for _ in range(ny)]
    steps = range(n - 1, -1, -1) if op.attrs.get("reverse") else range(n)
    for t in steps:
        out = ctx.run_block(body, carries + [x[t] for x in xs] + caps)
        carries = list(out[:nc])
        for j in range(ny):
            ys[j][t] = out[nc + j]
    stack = scan_stacker(ctx.xp)
    out_types = [body.lookup(name).type for name in body.outputs[nc:]]
    return carries + [stack([] if n == 0 else col, t.shape, t.dtype) for col, t in zip(ys, out_types)]


@defrule("scan", "narrow")
def _narrow_scan(op, live, needed_ops):
    """Drops the ys nothing reads and the carries no live result needs (a fixed point)."""
    nc = op.attrs["n_carry"]
    body = op.blocks["body"]
    ny = len(op.outputs) - nc
    live_ys = [j for j in range(ny) if op.outputs[nc + j] in live]
    needed = needed_carries(nc, {i for i in range(nc) if op.outputs[i] in live},
                            [body.outputs[nc + j] for j in live_ys], body, body.outputs, needed_ops)
    dead_ys = [nc + j for j in range(ny) if j not in live_ys]
    dead_carries = [i for i in range(nc) if i not in needed]
    if not needed and not live_ys:  # (a scan kept only for its effects stays whole)
        return
    if dead_ys:
        op.outputs = [o for k, o in enumerate(op.outputs) if k not in dead_ys]
        body.outputs = [o for k, o in enumerate(body.outputs) if k not in dead_ys]
    if dead_carries:
        drop_carries(op, dead_carries, nc)
        op.attrs = {**op.attrs, "n_carry": nc - len(dead_carries)}


@deflowering("scan", "codegen")
def _scan_codegen(g, op, indent, info):
    """A ``for`` over the steps, the body inlined, each step's ys collected then stacked."""
    a = op.attrs
    nc, nx = a["n_carry"], a["n_xs"]
    body = op.blocks["body"]
    ny = len(op.outputs) - nc
    carries = [g.fresh() for _ in range(nc)]
    xs = [g.local[x] for x in op.inputs[nc:nc + nx]]
    caps = [g.local[x] for x in op.inputs[nc + nx:]]
    if carries:
        inits = [g.use(x, scalar=g.is0d(x)) for x in op.inputs[:nc]]
        g.emit(indent, f"{', '.join(carries)} = {', '.join(inits)}", info)
    n, t = g.fresh(), g.fresh()
    length = g.glob("c", a.get("length", 0))
    g.emit(indent, f"{n} = {g.glob('r', scan_length)}([{', '.join(xs)}], {length})", info)
    cols = [g.fresh() for _ in range(ny)]
    for c in cols:
        g.emit(indent, f"{c} = [None] * {n}", info)
    rng = f"range({n} - 1, -1, -1)" if a.get("reverse") else f"range({n})"
    g.emit(indent, f"for {t} in {rng}:", info)
    slices = [g.fresh() for _ in range(nx)]
    for s, x in zip(slices, xs):
        g.emit(indent + 1, f"{s} = {x}[{t}]", info)
    outs = [g.fresh() for _ in range(ny)]
    g.emit_sub(body, carries + slices + caps, carries + outs, indent + 1, owned_inputs=body.inputs[:nc + nx])
    for c, y in zip(cols, outs):
        g.emit(indent + 1, f"{c}[{t}] = {y}", info)
    ys = []
    stack = g.glob("r", scan_stacker(g.xp)) if cols else None
    for j, c in enumerate(cols):
        yt = g.types.get(body.outputs[nc + j])
        y = g.fresh()
        shape = g.glob("c", None if yt is None else tuple(yt.shape))
        dtype = g.glob("c", None if yt is None else yt.dtype)
        g.emit(indent, f"{y} = {stack}({c}, {shape}, {dtype})", info)
        ys.append(y)
    if cols:
        g.emit(indent, f"del {', '.join(cols)}")
    g.bind(op.outputs, carries + ys)


@deflowering("scan", "native")
def _scan_native(lw, op, env):
    """A ``for`` over the leading axis writing the ys into preallocated arrays; the loop owns
    its carries (copied in) and its body updates them in place."""
    a = op.attrs
    nc, nx = a["n_carry"], a["n_xs"]
    body = op.blocks["body"]
    reverse = a.get("reverse", False)
    ins = [lw.value(env, x) for x in op.inputs]
    carries = lw.loop_carries(op, ins[:nc], may_own=False)
    xs = ins[nc:nc + nx]
    for x in xs:
        if lw.is_stack(x):
            lw.unsupported(op, "scans over a tensor stack")
        if x.kind != "a":
            lw.unsupported(op, "an xs is 0-d")
    caps = ins[nc + nx:]
    ind = lw.indent
    nloc = lw.fresh()
    if xs:
        lw.emit(ind, f"{nloc} = {xs[0].name}.shape[0]")
        for x in xs[1:]:
            lw.emit(ind, f"if {x.name}.shape[0] != {nloc}: raise ValueError('scan: xs have different leading dims')")
    else:
        lw.emit(ind, f"{nloc} = {lw.int_literal(a.get('length'), 'scan length')}")
    outs_t = [lw.type_of(o) for o in op.outputs]
    ys = lw.scan_outputs(outs_t[nc:], nloc)
    tloc = lw.fresh()
    rng = f"range({nloc} - 1, -1, -1)" if reverse else f"range({nloc})"
    with lw.loop(caps) as ind:
        lw.emit(ind, f"for {tloc} in {rng}:")
        slices = [lw.leading_slice(x, tloc, ind + 1) for x in xs]
        res = lw.lower_block(body, carries + slices + caps, ind + 1, owned=lw.owned_carries(body, carries))
        if any(lw.is_stack(v) for v in res[nc:]):
            lw.unsupported(op, "a tensor stack is a scan output")
        lw.store_scan_outputs(ys, res[nc:], tloc, nloc, reverse, ind + 1)
        lw.update_carries(op, carries, res, body, ind + 1)
    return lw.bind(op, env, lw.loop_results(carries) + lw.scan_results(ys))


# ================================================================== switch
MAX_BRANCHES = 1 << 16


class SwitchLayout(BranchLayout):
    """Inputs ``[index, *operands, *captures]``; blocks ``branch0`` .. ``branch{n-1}`` (``n``: the
    ``branches`` attr), each over ``[*operands, *captures]`` yielding the op's outputs; the index
    picks one (``switch``)."""

    def __init__(self):
        super().__init__(())

    @staticmethod
    def keys_of(n):
        return tuple(f"branch{j}" for j in range(n))

    def block_keys(self, op):
        n = op.attrs.get("branches")
        if type(n) is not int or not 1 <= n <= MAX_BRANCHES:
            raise ValueError(f"switch: the branches attr must be an int in [1, {MAX_BRANCHES}], got {n!r}")
        return frozenset(self.keys_of(n))

    def branches(self, op):
        return [op.blocks[k] for k in self.keys_of(op.attrs["branches"])]

    def well_formed(self, op):
        try:
            keys = self.block_keys(op)
        except ValueError:
            return False
        return (set(op.blocks) == keys and len(op.inputs) >= 1
                and all(len(b.inputs) == len(op.inputs) - 1 and len(b.outputs) == len(op.outputs)
                        for b in op.blocks.values()))


SWITCH_LAYOUT = SwitchLayout()


def _switch_shape(op, types):
    if types[0].dtype not in ("int32", "int64") or types[0].ndim != 0:
        raise ShapeError(f"switch: the index must be a 0-d int32 or int64, got {types[0]}")
    blocks = SWITCH_LAYOUT.branches(op)
    for key, blk in zip(SWITCH_LAYOUT.keys_of(len(blocks)), blocks):
        _check_inputs(op, key, types[1:], blk)
    return join_branch_types(op, [_types(blk, blk.outputs) for blk in blocks])


def clamp_index(k, n):
    """Branch ``k`` of ``n``, clamped into ``[0, n - 1]`` as JAX's ``lax.switch`` clamps."""
    return min(max(int(k), 0), n - 1)


@defstructured("switch", SWITCH_LAYOUT, _switch_shape)
def _run_switch(ctx, op, values):
    """Runs block ``branch{k}`` on the operands, ``k`` the 0-d integer index clamped into the branches' range."""
    blocks = SWITCH_LAYOUT.branches(op)
    return ctx.run_block(blocks[clamp_index(values[0], len(blocks))], values[1:])


@defrule("switch", "narrow")
def _narrow_switch(op, live, needed_ops):
    """As ``cond``'s: the outputs nothing reads go, from every branch."""
    _narrow_cond(op, live, needed_ops)


@deflowering("switch", "codegen")
def _switch_codegen(g, op, indent, info):
    """``if k == 0:`` ... ``elif`` ... ``else:`` over the branches, ``k`` the clamped index."""
    blocks = SWITCH_LAYOUT.branches(op)
    ins = [g.local[n] for n in op.inputs[1:]]
    outs = [g.fresh() for _ in op.outputs]
    k = g.fresh()
    g.emit(indent, f"{k} = {g.glob('r', clamp_index)}({g.local[op.inputs[0]]}, {g.glob('c', len(blocks))})", info)
    for j, blk in enumerate(blocks):
        head = "else:" if j == len(blocks) - 1 else f"{'if' if j == 0 else 'elif'} {k} == {j}:"
        g.emit(indent, head, info)
        g.emit_sub(blk, ins, outs, indent + 1)
    g.bind(op.outputs, outs)


@deflowering("switch", "native")
def _switch_native(lw, op, env):
    """``if``/``elif``/``else`` over the blocks lowered inline, on the index clamped into range."""
    return lw.branches(op, env, SWITCH_LAYOUT.branches(op))
