"""Per-call "used" flags: whether a program input or param reached a differentiable output on
the path this call took, so ``.grad`` stays ``None`` exactly where eager autograd leaves it.

Eagerly, a parameter read only by the branch not taken is not in the autograd graph and its
``.grad`` stays ``None``; a program's backward would give it zeros instead (and Adam or momentum
would then move it). ``add_reach_flags`` appends one 0-d bool output per chosen input/param,
true when a gradient can flow from it to a floating-point output along the ops this call runs.

The analysis walks each block backwards from its outputs. A primitive passes reachability from
its floating-point outputs to its floating-point inputs unless it carries no gradient
(comparisons, argmax, random draws: ``NONDIFF``). A structured op passes it through its
``reach_rule`` (``d2s.static.registry``, declared in its family module; the loops share
``loop_reach`` below). A ``cond`` selects its branch's reachability
with its predicate; when a branch's own reachability depends on a nested predicate, the
branch computes it and the ``cond`` returns it as an extra output. Through a ``while`` or
``scan``, a value the body can pass on to an output counts as used when the body runs at least
once (a ``while``'s condition is evaluated once more on the initial values to know, or where
that condition holds a branch, as ``and``/``or`` on tensors make, a bool carry the body sets
says so); a carry's initial value that the body overwrites without passing it on counts only
when the body runs zero times, one it passes on only under a branch gets a bool carry and-ed
over the iterations; a capture the body reads only under a branch gets a bool carry or-ed over
the iterations.
An expression of more than ``_NAMED_TERMS`` terms is computed into a var of its block, which
later expressions name; one built larger than ``_MAX_TERMS`` all the same is replaced by
``True`` (used), the old behaviour.
"""
from d2s_runtime.ir import Op, Var
from d2s_runtime.ops import OPS, TensorType
from d2s_runtime.passes import Namer

from ..autograd.node import GRAD_RULES, NONDIFF
from .builder import ALIAS_SELECTS
from .registry import REACH_RULES

_MAX_TERMS = 64
_NAMED_TERMS = 8
_BOOL = TensorType((), "bool")
_INT = TensorType((), "int64")


# ------------------------------------------------------------------ boolean expressions
# An expression is True, False, a var name (a 0-d bool of the block it belongs to), or a tuple
# ("and" | "or", a, b) / ("not", a).
def _size(e):
    return 1 if not isinstance(e, tuple) else 1 + sum(_size(x) for x in e[1:])


def _cap(e):
    return True if isinstance(e, tuple) and _size(e) > _MAX_TERMS else e


def _named(emit, e):
    """``e``, or a var of ``emit``'s block computing it when it is large: expressions built
    from it (over a loop's carries, say) stay small instead of reaching ``_MAX_TERMS``."""
    return emit(e) if isinstance(e, tuple) and _size(e) > _NAMED_TERMS else e


def _not(a):
    if a is True or a is False:
        return not a
    if isinstance(a, tuple) and a[0] == "not":
        return a[1]
    return ("not", a)


def _and(a, b):
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True or a == b:
        return a
    if a == _not(b):
        return False
    return _cap(("and", a, b))


def _or(a, b):
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False or a == b:
        return a
    if a == _not(b):
        return True
    return _cap(("or", a, b))


def _static(e):
    return e is True or e is False


class _Emitter:
    """Writes expressions as ops at the end of a block (each distinct one once)."""

    def __init__(self, block, namer):
        self.block, self.namer, self.done = block, namer, {}

    def __call__(self, e):
        if e in self.done:
            return self.done[e]
        if isinstance(e, str):
            return e
        name = _flag(self.block, self.namer)
        if _static(e):
            op = Op("constant", [], [name], {"value": bool(e), "dtype": "bool", "shape": []})
        elif e[0] == "not":
            op = Op("logical_not", [self(e[1])], [name])
        else:
            op = Op("bitwise_and" if e[0] == "and" else "bitwise_or", [self(e[1]), self(e[2])], [name])
        self.block.ops.append(op)
        self.done[e] = name
        return name


class _Names(Namer):
    """Fresh names for the flags, and the builder's alias selects (``ALIAS_SELECTS``)."""

    def __init__(self, program, selects):
        super().__init__(program, prefix="used_")
        self.selects = frozenset(selects)


def _flag(block, namer):
    """A fresh 0-d bool var of ``block`` (its name)."""
    name = namer()
    block.vars[name] = Var(name, _BOOL)
    return name


# ------------------------------------------------------------------ the analysis
def _is_float(block, name):
    return str(block.lookup(name).type.dtype).startswith("float")


def add_reach_flags(program, wrt, per_output=False):
    """A copy of ``program`` with one more output per name in ``wrt`` (inputs or params): a
    0-d bool, true when that value reached a floating-point output on this call's path.

    With ``per_output``, one flag per pair of a ``wrt`` name and a floating-point output
    instead (``wrt``-major, outputs in order): whether that value reached that output, so a
    caller knows which outputs carry a gradient on this call (eagerly, an output computed
    only from values that need no gradient does not require grad) and which values a
    backward from some of the outputs reaches."""
    p = program.clone()
    p.annotations.pop("memory_plan", None)
    namer = _Names(p, p.annotations.get(ALIAS_SELECTS, ()))
    gb = p.block
    roots = {}
    float_outs = [k for k, n in enumerate(p.outputs) if _is_float(gb, n)]
    for k in float_outs:
        roots.setdefault(p.outputs[k], {})[k if per_output else 0] = True
    reach = _block_reach(gb, roots, namer)
    emit = _Emitter(gb, namer)
    if per_output:
        flags = [emit(reach.get(n, {}).get(k, False)) for n in wrt for k in float_outs]
    else:
        flags = [emit(reach.get(n, {}).get(0, False)) for n in wrt]
    p.outputs = list(p.outputs) + flags
    gb.outputs = list(p.outputs)
    return p


def _block_reach(block, roots, namer):
    """{var: {k: expression}}: var reaches output ``k`` of ``block`` under the expression
    (over vars of ``block``), starting from ``roots`` (the block's outputs)."""
    reach = {n: dict(ks) for n, ks in roots.items()}
    emit = _Emitter(block, namer)

    def flow(src, ks, when=True):
        d = reach.setdefault(src, {})
        for k, e in ks.items():
            d[k] = _named(emit, _or(d.get(k, False), _and(when, e)))

    for op in list(reversed(block.ops)):
        outs = [reach.get(o) for o in op.outputs]
        if not any(outs):
            continue
        rule = REACH_RULES.get(op.type)
        if rule is not None:
            rule(block, op, outs, flow, namer)
        elif op.type in NONDIFF or op.type not in GRAD_RULES:
            continue
        elif op.type == "where" and op.outputs[0] in namer.selects and outs[0]:
            # an in-place update reaching an alias: the new value where the objects are one
            flag = op.inputs[0]
            flow(op.inputs[1], outs[0], flag)
            flow(op.inputs[2], outs[0], _not(flag))
        else:
            for o, ks in zip(op.outputs, outs):
                if ks and _is_float(block, o):
                    for i in op.inputs:
                        if _is_float(block, i):
                            flow(i, ks)
    return reach


def _sub_reach(sub, namer):
    """{block input position: {block output position: expression over ``sub``'s vars}}."""
    roots = {}
    for k, n in enumerate(sub.outputs):
        if _is_float(sub, n):
            roots.setdefault(n, {})[k] = True
    reach = _block_reach(sub, roots, namer)
    return {j: reach[n] for j, n in enumerate(sub.inputs) if reach.get(n)}


def loop_reach(block, op, outs, flow, namer, entered, extend):
    """Reachability through a loop (a structured op whose layout carries values through its
    ``body`` block: ``while``, ``scan``): a value the body can pass on to an output counts as
    used when the loop runs its body at least once (``entered(block, op, namer, body, accs)``:
    an expression saying so, which may add a bool carry to ``accs``). A capture (or ``xs``) the
    body reads only under a branch gets a bool carry instead, or-ed each iteration with whether
    this iteration's path read it, so a parameter of the branch that no iteration took (or of a
    body that ran zero times) stays unused. ``extend(op, n_carry, added, namer)``: what else the
    op changes when ``added`` carries are inserted after its first ``n_carry`` ones (its other
    blocks' inputs, its attrs)."""
    body = op.blocks["body"]
    n_carry = OPS[op.type].layout.n_carry(op)
    d = _sub_reach(body, namer)
    step = {j: {k for k, e in ks.items() if e is not False} for j, ks in d.items()}
    accs = []  # (new value: expression over body vars, outer var, initial bool, body input var)
    bemit = _Emitter(body, namer)
    entered = entered(block, op, namer, body, accs)
    # body outputs whose value reaches an output of the op someone reads (through carries)
    live = {k for k, ks in enumerate(outs) if ks}
    grew = True
    while grew:
        grew = False
        for j in range(n_carry):
            if j not in live and step.get(j, set()) & live:
                live.add(j)
                grew = True
    for j, name in enumerate(op.inputs):
        if not _is_float(block, name):
            continue
        seen, todo, hit = {j}, [j], set()
        while todo:
            for k in step.get(todo.pop(), ()):
                hit.add(k)
                if k < n_carry and k not in seen:
                    seen.add(k)
                    todo.append(k)
        carries = sorted({k for k in hit & live if k < n_carry} | ({j} if j < n_carry else set()))
        if j < n_carry:  # its initial value is the result when it reaches each carry at once and stays
            simple = all(d.get(j, {}).get(k) is True for k in carries)
        else:  # reaching a carry on some iteration is reaching the result when it stays there
            simple = all(outs[k] for k in carries)
        simple = simple and all(d.get(k, {}).get(k) is True for k in carries)
        vector = len(carries) > (j < n_carry) and not simple
        when = entered
        if j >= n_carry and hit & live and (not vector or any(k >= n_carry for k in hit & live)):
            u = False
            for k in live:
                u = _named(bemit, _or(u, d.get(j, {}).get(k, False)))
            if not _static(u):
                when = _flag(block, namer)
                accs.append(_acc(body, namer, when, False, lambda used, u=u: _or(used, u)))
        if vector:
            # the value moves between carries under branches, or takes more than one iteration
            # to reach some: one bool carry per carry, saying whether it holds (a gradient path
            # from) the value now
            held = {k: _flag(block, namer) for k in carries}
            ins = {}
            for k in carries:
                # (a capture enters carry k afresh each iteration it reaches it)
                enters = d.get(j, {}).get(k, False) if j >= n_carry else False
                new = lambda r, k=k, c=carries, i=ins, e=enters: _held(d, c, i, k, e, bemit)  # noqa: E731
                accs.append(_acc(body, namer, held[k], k == j, new))
                ins[k] = accs[-1][3]
            for k, ks in enumerate(outs):
                if ks and k in held:
                    flow(name, ks, held[k])
                elif ks and k in hit:
                    flow(name, ks, when)
            continue
        kept = d.get(j, {}).get(j, False) if j < n_carry else False
        if hit & live == {j} and not _static(kept):
            # the body passes this carry on to itself only under a branch: its initial value is
            # the result when every iteration passed it on (and-ed over the iterations; true
            # when the loop runs zero times). Carries no output reads (an in-place update's
            # alias of the object, say) do not count.
            kept_var = _flag(block, namer)
            accs.append(_acc(body, namer, kept_var, True, lambda held, kept=kept: _and(held, kept)))
        else:
            kept_var = True
        for k, ks in enumerate(outs):
            if ks and k in hit:
                flow(name, ks, kept_var if k == j else when)
            elif ks and k == j and j < n_carry:
                # the body never passes this carry on (it overwrites it): its initial value is
                # the result only when the loop runs zero times
                flow(name, ks, _not(entered))
    if accs:
        _add_flag_carries(block, op, n_carry, accs, namer, bemit, extend)


def _held(d, carries, ins, k, enters, emit):
    """Whether carry ``k`` holds the tracked value after an iteration: the value enters it on
    this iteration's path (``enters``), or some carry that held it before passes it on."""
    e = enters
    for i in carries:
        e = _named(emit, _or(e, _and(ins[i], d.get(i, {}).get(k, False))))
    return e


def _own(block, name, namer, also=()):
    """``name`` as a new output of ``block``: an ``identity`` of it where it is already an
    input or output of the block (or in ``also``). Replays rebuild control flow from blocks
    with the builders, which read one tensor object in two places as one Python object
    under two names and track it as aliases: a flag passed on as is would cost that
    tracking at every replay (a gradient rule replays its body several times)."""
    if name not in block.inputs and name not in block.outputs and name not in also:
        return name
    fresh = _flag(block, namer)
    block.ops.append(Op("identity", [name], [fresh]))
    return fresh


def _acc(body, namer, out, init, new):
    """One bool carry: ``init`` before the loop, ``new(var)`` (an expression over the body's
    vars and this carry's body input ``var``) after each iteration, its final value ``out``.
    ``new`` is called when the carries are added, so it may read other carries' inputs."""
    var = _flag(body, namer)
    return [new, out, init, var]


def _add_flag_carries(block, op, n_carry, accs, namer, emit, extend):
    """Give loop ``op`` the bool carries of ``accs`` (made by ``_acc``); ``emit`` writes
    expressions into its body; ``extend``: see ``loop_reach``."""
    body = op.blocks["body"]
    inits = []
    for new, out, init, var in accs:
        name = _flag(block, namer)
        inits.append(Op("constant", [], [name], {"value": init, "dtype": "bool", "shape": []}))
    news = []
    for new, out, init, var in accs:
        news.append(_own(body, emit(new(var)), namer, news))
    at = block.ops.index(op)
    block.ops[at:at] = inits
    op.inputs[n_carry:n_carry] = [o.outputs[0] for o in inits]
    op.outputs[n_carry:n_carry] = [out for _, out, _, _ in accs]
    body.inputs[n_carry:n_carry] = [var for _, _, _, var in accs]
    body.outputs[n_carry:n_carry] = news
    extend(op, n_carry, len(accs), namer)
