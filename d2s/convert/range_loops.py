"""A long ``for`` over a ``range`` of Python ints as one loop op, not N copies of its body.

Unrolling ``for _ in range(n)`` copies the body ``n`` times into the program: a 256-token
``generate`` around a model forward becomes 256 copies of the model. When ``n`` is past
``d2s.jit.config.unroll_threshold`` and the body allows it, the loop becomes one ``while`` op
over a counter that stands for the Python int (a ``WeakIndex``: ``x * i`` keeps ``x``'s dtype
as the int would), with exactly the values unrolling gives. The body allows it when

* every tensor it carries keeps its dtype and shape from one iteration to the next, except a
  sequence grown at its end by ``cat`` (``idx = cat((idx, nxt), dim=1)``), which becomes a
  buffer of its final length (``growing.py``);
* it needs the counter only as a number in tensor code, never as a Python value (an index into
  a module list, ``int(i)``, a shape, a Python number it computes from the counter);
* it carries only tensors, tuples of them, Python numbers that it turns into tensors (a
  ``break`` flag set by a tensor test) or leaves alone, and ``None``/unbound names that it
  binds to tensors; and it mutates no list, dict or set of an enclosing scope.

What it needs is learnt by tracing it: once with the first counter value as a Python int (a
probe into a throwaway block: what unrolling would do with the first iteration), then as the
loop op. Anything that fails either way makes the loop unroll as before, and the reason, with
the user's line that forced it, goes into the unroll warning (``loops.UnrollWarning``).
"""
import threading

from d2s_runtime.ops import TensorType

from .. import ops, pytree
from .._state import STATE
from ..static.weak_index import WeakNumber, number_stand_in, weak
from ..tensor import Tensor
from ..user_errors import ConvertError, at_user_line, traceback_user_line
from . import control_flow as cf, growing
from .growing import Unrolled
from .escaping import refuse_escaping
from .undefined import MaybeUnbound, Undefined


_ATTEMPTS = threading.local()  # how many range loops' loop-op attempts are being traced here


def attempting():
    """Whether a range loop's body is being traced to decide on (or build) its loop op."""
    return getattr(_ATTEMPTS, "depth", 0) > 0


def convert_next(iterator, *default):
    """``next(it)`` in converted code: a long range loop being traced into one loop op unrolls
    instead, before the iterator moves."""
    refuse_iterator_read("next()")
    return next(iterator, *default)


def refuse_iterator_read(what):
    """Called before a traced body advances an iterator (``next(it)``, a ``for`` over it) while
    a loop op is attempted: the attempt stops before the iterator moves, and the loop unrolls
    (each iteration then reads its own item, as eagerly)."""
    if attempting():
        raise _ReadsIterator(f"the body reads an iterator ({what}): each iteration takes its own item, which "
                             "only unrolling follows")



def threshold():
    """Range loops longer than this become loop ops (None: every Python loop unrolls)."""
    from ..jit import config  # d2s.jit imports the converter: its settings are read when a loop converts
    return getattr(config, "unroll_threshold", None)


def loop_op(r, body_fn, state, names, extra_test, get_state, set_state, escaping, entry_flags, static_for,
            peeled=False):
    """``for item in r`` (a ``range``) as one loop op, built by ``static_for`` (loops.py's builder of
    a symbolic ``for``, handed in: loops.py calls this module).

    Returns:
        ``(True, final loop vars, None)``; or, when the loop must unroll, ``(False, (the items
        left, the loop vars now), reason)`` (reason None: too short to be worth a loop op). A
        first iteration that changes shapes the later ones keep (a prompt's logits, then one
        token's) runs on its own first, as unrolling runs it; the items left then start after it.
    """
    limit = threshold()
    if STATE.builder is None or limit is None or len(r) <= limit:
        return False, (r, state), None
    state = tuple(state)
    comps = tuple(get_state()) if get_state is not None else ()
    labels = list(names) + [f"attribute #{i}" for i in range(len(comps))]
    reason = _ineligible(state + comps, labels, escaping)
    if reason is not None:
        return False, (r, state), reason
    peel = False
    _ATTEMPTS.depth = getattr(_ATTEMPTS, "depth", 0) + 1
    try:
        plan = _probe(r, body_fn, state, comps, labels, extra_test, get_state, set_state)
        _same_every_iteration(r, body_fn, state, comps, labels, get_state, set_state)
        return True, _build(r, body_fn, state, names, extra_test, get_state, set_state, escaping, entry_flags,
                            comps, plan, static_for), None
    except _ReadsIterator as u:
        if _ATTEMPTS.depth > 1:
            raise  # (to the outermost attempt, before any iterator moved)
        reason = u.reason
    except _ShapeChange as u:
        reason = u.reason
        peel = not peeled and len(r) > 1 and (extra_test is None or extra_test(*state) is True)
    except Unrolled as u:
        reason = u.reason
    except _ChangingState:
        raise
    except Exception as e:  # noqa: BLE001 - unrolling is Python's own semantics: it raises what eager would
        reason = _describe(e)
    finally:
        _ATTEMPTS.depth -= 1
    if set_state is not None:
        set_state(comps)
    if peel:  # the first iteration on its own, as unrolling runs it; the others as the loop op
        state = tuple(body_fn(r[0], *state))
        return loop_op(r[1:], body_fn, state, names, extra_test, get_state, set_state, escaping, entry_flags,
                       static_for, peeled=True)
    return False, (r, state), reason


class _ShapeChange(Unrolled):
    """An iteration changes the shape of a carried tensor."""


class _ReadsIterator(Unrolled):
    """The body would advance an iterator: caught by the outermost attempt (an inner loop that
    unrolled would advance it while the outer one is still being traced)."""


# ------------------------------------------------------------------ eligibility
def _ineligible(values, labels, escaping):
    """Why the loop vars ``values`` (and attribute targets) cannot be carried by a loop op
    built from a range loop, or None."""
    for label, v in zip(labels, values):
        bad = _uncarriable(v)
        if bad is not None:
            return f"'{label}' holds {bad}, which stays a Python value only when the loop unrolls"
    if escaping is not None:
        try:
            objs = escaping()
        except NameError:
            objs = ()
        if any(isinstance(o, (list, dict, set)) for o in objs):
            return "the body mutates a list, dict or set of an enclosing scope"
    return None


def _uncarriable(v):
    if v is None or isinstance(v, (Tensor, bool, int, float, Undefined, MaybeUnbound)):
        return None
    if type(v) is tuple or (isinstance(v, tuple) and hasattr(type(v), "_fields")):
        for x in v:
            bad = _uncarriable(x)
            if bad is not None:
                return bad
        return None
    return f"a {type(v).__name__}"


def _describe(e):
    """An exception of the loop-op attempt as a reason: its message's first line and the user's
    line it was raised at."""
    where = traceback_user_line(e.__traceback__)
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    text = f"{type(e).__name__}: {first}" if not isinstance(e, cf.ConvertError) else first
    return f"{text} (at {where})" if where else text


# ------------------------------------------------------------------ the probe
class _Plan:
    """What the probe learnt: the loop vars holding Python numbers that the first iteration
    leaves as they were or sets to the counter (position -> value before the loop: the loop op
    must do the same on every path), and the sequences it grows (position -> (dim, growth))."""

    def __init__(self, first):
        self.first = first
        self.tensor_break = False
        self.python_numbers = {}
        self.growing = {}


def _probe(r, body_fn, state, comps, labels, extra_test, get_state, set_state):
    """Trace the first iteration as unrolling would (the counter a Python int) into a
    throwaway block, and compare what it gives back with what it got. A sequence it grows is
    traced through a second iteration too, which must grow it by as much (a part sliced from
    the sequence itself, ``idx[:, -1:]``, has a size the program cannot know statically)."""
    b = STATE.builder
    plan = _Plan(r[0])
    try:
        with cf.probing(), b.sub_block():
            with growing.watch(state) as seen:
                out = tuple(body_fn(r[0], *state))
                after = tuple(get_state()) if get_state is not None else ()
            # a break (or return) that a tensor decides: unrolled, every later iteration runs under a
            # cond on it, which turns the Python numbers it changes into tensors as the loop op does
            plan.tensor_break = extra_test is not None and isinstance(extra_test(*out), Tensor)
            for i, (label, a, o) in enumerate(zip(labels, state + comps, out + after)):
                _compare(plan, i, label, a, o, seen, len(state))
            if plan.growing and len(r) > 1:
                with growing.watch(out) as seen:
                    again = tuple(body_fn(r[1], *out))
                for i, growth in plan.growing.items():
                    g = seen.grown(again[i])
                    if g is None or g[0] is not out[i] or tuple(g[1:]) != tuple(growth):
                        raise Unrolled(f"'{labels[i]}' grows by a part whose size changes from one iteration to "
                                       "the next")
    finally:
        if set_state is not None:
            set_state(comps)
    return plan


def _compare(plan, i, label, a, o, seen, n_vars):
    if i < n_vars and _python_number(o) and (type(o) is type(a) and o == a or _is_counter(plan, o)):
        # left as it was, or the counter (``last = i``, or the target of the `for` itself)
        plan.python_numbers[i] = a
        return
    if a is o:
        return
    if a is None or isinstance(a, Undefined):
        _first_bound(plan, label, o)
        return
    if isinstance(a, tuple) or isinstance(o, tuple):
        a_leaves, a_def = pytree.tree_flatten(a, leaf_types=Tensor)
        o_leaves, o_def = pytree.tree_flatten(o, leaf_types=Tensor)
        if a_def != o_def:
            if isinstance(a, tuple) and isinstance(o, tuple) and len(a) == len(o):
                for x, y in zip(a, o):
                    _compare_leaf(plan, None, label, x, y, seen)
                return
            raise Unrolled(f"'{label}' changes structure in an iteration")
        for x, y in zip(a_leaves, o_leaves):
            _compare_leaf(plan, None, label, x, y, seen)
        return
    _compare_leaf(plan, i if i < n_vars else None, label, a, o, seen)


def _first_bound(plan, label, o):
    """A variable unbound (or None) before the loop that an iteration binds to ``o``: tensors
    are carried from then on; a Python number only as the function's return value (which the
    program hands back as the number), since anything else would read it as a Python value."""
    for leaf in pytree.tree_leaves(o, leaf_types=Tensor):
        if isinstance(leaf, MaybeUnbound):
            leaf = leaf.value
        if isinstance(leaf, Tensor) or leaf is None or isinstance(leaf, Undefined):
            continue
        if _python_number(leaf) and (label == "the return value" or plan.tensor_break):
            continue
        raise Unrolled(f"'{label}' is bound to a {type(leaf).__name__} in an iteration, which stays a Python "
                       "value only when the loop unrolls")


def _compare_leaf(plan, i, label, a, o, seen):
    if a is o:
        return
    if isinstance(a, MaybeUnbound):
        a = a.value
    if isinstance(o, MaybeUnbound):
        o = o.value
    if _python_number(o):
        if plan.tensor_break:
            return
        raise Unrolled(f"'{label}' is a Python number that an iteration sets from Python values (the counter, "
                       "a constant): only unrolling keeps it a Python number")
    if isinstance(o, Tensor):
        if isinstance(a, Tensor) and not isinstance(a, WeakNumber):
            if a.dtype != o.dtype:
                raise Unrolled(f"'{label}' changes dtype from {a.dtype} to {o.dtype} in an iteration")
            sa, so = _shape(a), _shape(o)
            if sa != so or seen.grown(o) is not None:
                growth = seen.grown(o)
                if growth is None or growth[0] is not a or i is None:
                    raise _ShapeChange(f"'{label}' changes shape from {_fmt(sa)} to {_fmt(so)} in an iteration (a loop "
                                   "op carries one shape; only a sequence grown at its end by cat of a part of "
                                   "fixed size becomes a buffer of its final length)")
                plan.growing[i] = growth[1:]
        return
    if o is None or isinstance(o, Undefined):
        return  # (left unbound, or None on this path: the loop op decides, as for a tensor loop)
    raise Unrolled(f"'{label}' becomes a {type(o).__name__} in an iteration")


def _is_counter(plan, v):
    return type(v) is int and v == plan.first


def _python_number(v):
    return isinstance(v, (bool, int, float)) and not isinstance(v, Tensor)


def _shape(t):
    shape = t._var.type.shape if t.is_symbolic else t._data.shape
    return tuple(d if isinstance(d, int) else None for d in shape)


def _fmt(shape):
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


# ------------------------------------------------------------------ the body, traced twice
def _same_every_iteration(r, body_fn, state, comps, labels, get_state, set_state):
    """The loop op traces the body once for every iteration: a body that traces into other ops
    a second time on the same inputs reads Python state that changes (a counter in a closure)
    and is refused with an error (the traces have already moved that state, so unrolling now
    would start from the wrong place; an iterator is caught before it moves)."""
    b = STATE.builder
    traces = []
    try:
        for _ in range(2):
            with cf.probing(), b.sub_block() as blk:
                args = [_placeholder(b, blk, v) for v in state]
                item = _RangeItems(r).item(_placeholder(b, blk, _COUNTER))
                out = tuple(body_fn(item, *args))
                after = tuple(get_state()) if get_state is not None else ()
                traces.append(_canonical(b, blk, out + after))
            if set_state is not None:
                set_state(comps)
    finally:
        if set_state is not None:
            set_state(comps)
    if traces[0] != traces[1]:
        raise _ChangingState(at_user_line(
            "this loop over a range of Python ints would become one loop op, whose body is traced once for every "
            "iteration, but a second trace of its body gives other ops than the first: it reads Python state that "
            "changes from one iteration to the next (a counter in a closure, an object's attribute). Make that "
            "value a loop variable or a tensor, or set d2s.jit.config.unroll_threshold = None to unroll long "
            "Python loops", ConvertError).args[0])


class _ChangingState(ConvertError):
    """A body that reads changing Python state, found after its traces changed it."""


_COUNTER = object()  # (asks _placeholder for the loop counter's: an int64 scalar)


def _placeholder(b, blk, v):
    """A symbolic input of ``blk`` standing for loop value ``v`` (tensors, and the tensors in
    tuples); other values stay themselves."""
    if v is _COUNTER:
        var = b._new_var(TensorType((), "int64"))
        blk.inputs.append(var.name)
        return b.symbolic(var)
    if isinstance(v, Tensor):
        shape = v._var.type.shape if v.is_symbolic else v._data.shape
        var = b._new_var(TensorType(tuple(shape), str(v.dtype)))
        blk.inputs.append(var.name)
        t = b.symbolic(var)
        return number_stand_in(t) if isinstance(v, WeakNumber) else t
    if type(v) is tuple:
        return tuple(_placeholder(b, blk, x) for x in v)
    if isinstance(v, tuple) and hasattr(type(v), "_fields"):
        return type(v)(*[_placeholder(b, blk, x) for x in v])
    return v


def _canonical(b, blk, outs):
    """``blk``'s ops and the values ``outs`` with every var named by where it comes from (an
    input's position, an op's position and output, or the outer var a capture reads)."""
    names = {}
    ops = _canonical_ops(b, blk, names, {}, 0)
    leaves = []
    for leaf in pytree.tree_leaves(outs, leaf_types=Tensor):
        if isinstance(leaf, Tensor):
            leaves.append(("T", names.get(leaf._var.name, ("ext", leaf._var.name)) if leaf.is_symbolic
                           else ("concrete", id(leaf._data))))
        elif isinstance(leaf, (bool, int, float, str, type(None))):
            leaves.append((type(leaf).__name__, leaf))
        else:
            leaves.append(("object", type(leaf).__name__))
    return ops, tuple(leaves)


def _outer_token(b, name):
    """An outer var read by a trace: by name, a program constant by value (an array a layer makes
    anew on every call, a causal mask, is the same constant twice)."""
    arr = b.program.constants.get(name)
    if arr is None:
        return ("ext", name)
    return ("const", arr.dtype.str, arr.shape, hash(arr.tobytes()))


def _canonical_ops(b, blk, names, outer, depth):
    caps = {inner: outer_name for outer_name, inner in b.captures.get(blk, {}).items()}
    for k, n in enumerate(blk.inputs):
        if n in caps:
            names[n] = outer.get(caps[n]) or _outer_token(b, caps[n])
        else:
            names.setdefault(n, ("in", k))
    out = []
    for j, op in enumerate(blk.ops):
        ins = tuple(names.get(n, ("ext", n)) for n in op.inputs)
        for q, o in enumerate(op.outputs):
            names[o] = ("op", depth, j, q)
        subs = []
        for key in sorted(op.blocks):
            subs.append((key, _canonical_ops(b, op.blocks[key], {}, names, depth + 1)))
        out.append((op.type, repr(sorted(op.attrs.items())), ins, tuple(subs)))
    return tuple(out)


# ------------------------------------------------------------------ the loop op
class _RangeItems:
    """The items of a Python ``range`` for a loop op: item ``i`` is ``start + i * step`` as a
    counter standing for the Python int."""

    def __init__(self, r):
        self.r = r

    def length(self):
        return len(self.r)

    def item(self, i):
        if self.r.start == 0 and self.r.step == 1:
            return weak(i)
        return weak(ops.add(ops.mul(i, self.r.step), self.r.start))


def _build(r, body_fn, state, names, extra_test, get_state, set_state, escaping, entry_flags, comps, plan,
           static_for):
    n = len(r)
    buffers = growing.Buffers(plan.growing, n, extra_test is not None)
    numbers, counters, carried = plan.python_numbers, set(), set()

    def body(item, *s):
        s = buffers.views(s)
        out = tuple(body_fn(item, *s))
        for i in numbers:
            if out[i] is item:
                counters.add(i)
            elif plan.tensor_break:
                carried.add(i)  # (a tensor break makes it a tensor when unrolled too)
            elif out[i] is not s[i] or i in counters:
                raise Unrolled(f"'{names[i]}' is a Python number that some iterations change from Python values "
                               "(the counter, a constant): only unrolling keeps it a Python number")
        return buffers.carries(names, s, out)

    test = None
    if extra_test is not None:
        def test(*s):
            return extra_test(*buffers.views(s))

    start = buffers.start(state)
    with refuse_escaping(escaping):
        out = static_for(_RangeItems(r), body, start, names, test, get_state, set_state, entry_flags)
    out = list(buffers.finish(out))
    for i, v in numbers.items():
        if i in carried:
            continue
        if i not in counters:
            out[i] = v  # unchanged on every path the loop op traced: the Python number it was
        elif extra_test is None:
            out[i] = r[-1]  # the counter after every iteration ran: its last value, a Python int
        # (else the counter where a break ended the loop: the loop op's number, as an unrolled
        # loop's tensor break gives too)
    return tuple(out)


def format_reason(reason):
    """The unroll warning's sentence for ``reason``."""
    return f" It unrolls because it cannot be one loop op: {reason}." if reason else ""

