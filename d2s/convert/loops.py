"""`while` and `for` loops: ``convert_while_loop`` / ``convert_for``, and tensor iterables.

A Python condition keeps Python semantics (the loop unrolls while a program is built); once the
condition is a symbolic tensor the rest of the loop becomes a ``while`` op (``_static_while``).
``for`` unrolls Python iterables (lists, tuples, dicts, ``range`` of Python ints, concrete
tensors) and turns ``range`` with a tensor bound, the rows of a symbolic tensor, and
``enumerate``/``zip`` of those into a ``while`` op over an index. A lowered ``break`` arrives as
an extra test; when it turns symbolic inside an unrolled loop, the remaining iterations run
under a ``cond`` on it instead of being refused.
"""
import warnings

from .._state import STATE
from ..tensor import Tensor, tensor
from . import control_flow as cf
from .errors import at_user_line
from .undefined import Undefined
from .values import is_symbolic, write_back


# ------------------------------------------------------------------ while
def convert_while_loop(test_fn, body_fn, init, names, get_state=None, set_state=None):
    """Run ``body_fn`` over the loop variables ``init`` (values of ``names``) while
    ``test_fn`` holds; returns their final values."""
    state = tuple(init)
    count = 0
    while True:
        c = _test(test_fn, state)
        if is_symbolic(c):
            return _static_loop(lambda s: test_fn(*s), lambda s: tuple(body_fn(*s)), state, names,
                                get_state, set_state)
        if not c:
            return state
        count += 1
        if count == UNROLL_WARNING_THRESHOLD + 1:
            _warn_unrolled("while")
        state = tuple(body_fn(*state))


def _test(test_fn, state):
    """The loop test on ``state``; inside a program it is traced into a throwaway block (if it
    is symbolic the ``while`` op's own condition block computes it again)."""
    b = STATE.builder
    if b is None:
        return test_fn(*state)
    with b.sub_block():
        return test_fn(*state)


class _LoopRetry(Exception):
    def __init__(self, dtypes):
        self.dtypes = dtypes


def _static_loop(test, body, state, names, get_state, set_state, extra_vars=(), peeled=False):
    """A ``while`` op over ``extra_vars + state`` (and attribute targets): ``test(s)`` and
    ``body(s)`` take and return the tuple of the state's values (extra vars first)."""
    from ..static.control_flow import ControlFlowError, while_loop
    comps = tuple(get_state()) if get_state is not None else ()
    n_extra, n = len(extra_vars), len(extra_vars) + len(state)
    labels = [f"loop index #{i}" for i in range(n_extra)] + list(names) + \
        [f"attribute #{i}" for i in range(len(comps))]
    if not peeled and any(v is None for v in state):
        return _peel_first(test, body, state, names, get_state, set_state, extra_vars, labels[:n])
    init = list(extra_vars) + list(state) + list(comps)
    lists = [i for i, v in enumerate(init) if type(v) is list and all(isinstance(e, Tensor) for e in v)]
    if lists:
        init = _lists_to_tensor_arrays(body, init, lists, n, set_state)
    if any(isinstance(v, Undefined) for v in init):
        init = _fill_undefined(body, init, n, labels, set_state)
    # still undefined: the body never binds it on the traced path (e.g. a `return` under a Python
    # condition that is False), so it passes through the loop untouched instead of being carried
    dead = {i: v for i, v in enumerate(init) if isinstance(v, Undefined)}

    def widen(vals):
        vals = iter(vals)
        return [dead[i] if i in dead else next(vals) for i in range(len(init))]

    for _ in range(4):
        start = [_as_loop_value(v) for i, v in enumerate(init) if i not in dead]

        def split(vals):
            vals = widen(vals)
            if set_state is not None:
                set_state(tuple(vals[n:]))
            return tuple(vals[:n])

        def cond_fn(*vals):
            return test(split(vals))

        def body_fn(*vals):
            out = list(body(split(vals))) + (list(get_state()) if get_state is not None else [])
            out = _check_carried(labels, init, widen(vals), out)
            return tuple(v for i, v in enumerate(out) if i not in dead)

        try:
            result = while_loop(cond_fn, body_fn, tuple(start))
        except _LoopRetry as r:
            init = [tensor(v, dtype=r.dtypes[i]) if i in r.dtypes else v for i, v in enumerate(init)]
            continue
        except ControlFlowError as e:
            raise at_user_line(f"the variables of this tensor loop do not fit together: {e}") from None
        break
    result = widen(result)
    if set_state is not None:
        set_state(tuple(write_back(o, v) for o, v in zip(comps, result[n:])))
    originals = list(extra_vars) + list(state)
    return tuple(write_back(o, v) for o, v in zip(originals[n_extra:], result[n_extra:n]))


def _peel_first(test, body, state, names, get_state, set_state, extra_vars, labels):
    """``h = None`` before a tensor loop whose body makes ``h`` a tensor (``h = x if h is None
    else h + x``): the first iteration runs on its own under a ``cond`` on the loop test, where
    ``h is None`` still holds, and the ``while`` op carries the tensor from then on. If the loop
    runs zero times such a variable reads as zeros (Python would leave it None)."""
    from .undefined import Undefined
    n_extra = len(extra_vars)
    full = tuple(extra_vars) + tuple(state)

    def first(*s):
        return tuple(body(tuple(s)))

    def skip(*s):
        # None marks "not yet assigned": the cond fills it from the other branch's type
        return tuple(Undefined(lbl) if v is None else v for lbl, v in zip(labels, s))

    go = test(full)
    if not is_symbolic(go):  # the loop's own test decided it after all: plain Python
        full = first(*full) if go else full
    else:
        full = cf.convert_ifelse(go, first, skip, full, labels, labels, get_state, set_state,
                                 fillable=tuple(labels), none_fillable=True)
    full = tuple(None if isinstance(v, Undefined) else v for v in full)
    originals = list(extra_vars) + list(state)
    full = tuple(write_back(o, v) for o, v in zip(originals, full))
    out = _static_loop(test, body, full[n_extra:], names, get_state, set_state, full[:n_extra], peeled=True)
    return out


def _as_loop_value(v):
    if isinstance(v, (bool, int, float)) and not isinstance(v, Tensor):
        return tensor(v)
    return v


def _check_carried(labels, init, ins, outs):
    """Loop variables must keep their dtype; a Python number that starts a variable adopts the
    dtype the body gives it (``s = 0`` then ``s = s + x.sum()``)."""
    retry = {}
    for i, (a, b) in enumerate(zip(ins, outs)):
        if isinstance(b, Undefined) and not isinstance(a, Undefined):
            raise at_user_line(f"'{labels[i]}' is left undefined by an iteration of this tensor loop")
        if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype != b.dtype:
            if isinstance(init[i], (int, float)) and not isinstance(init[i], bool):
                retry[i] = str(b.dtype)
                continue
            raise at_user_line(f"loop variable '{labels[i]}' changes dtype from {a.dtype} to {b.dtype} in the "
                               "body of this tensor loop; cast it (d2s.cast) so it keeps one dtype")
        if isinstance(a, Tensor) and isinstance(b, (bool, int, float)):
            outs[i] = tensor(b, dtype=str(a.dtype))
    if retry:
        raise _LoopRetry(retry)
    return outs


def _lists_to_tensor_arrays(body, init, lists, n, set_state):
    """Python lists carried by a tensor loop whose length the body changes become TensorArrays
    (``xs.append(v)`` then pushes onto one tensor); an empty list learns its element type from
    one trial trace of the body. A list the body keeps at its length (``hs[0] = hs[0] + v``)
    stays a list of loop variables, so indexing and item assignment keep working."""
    from ..static.tensor_array import TensorArray
    out = list(init)
    probed, probe_error = {}, None
    b = STATE.builder
    cf._probing[0] += 1
    try:
        with b.sub_block():
            vals = [list(v) if type(v) is list else _as_loop_value(v) for v in init]
            if set_state is not None:
                set_state(tuple(vals[n:]))
            res = list(body(tuple(vals[:n])))
            probed = {i: res[i] for i in lists if i < len(res)}
    except Exception as e:  # noqa: BLE001 - e.g. a tensor `if` appending on one side only
        probe_error = e
    finally:
        cf._probing[0] -= 1
    for i in lists:
        v = init[i]
        p = probed.get(i)
        if v and type(p) is list and len(p) == len(v):
            continue  # same length after an iteration: a fixed list of loop variables
        if not v and probe_error is not None:
            raise probe_error
        elem = v[0] if v else (p or [None])[0]
        if elem is None or not isinstance(elem, Tensor):
            continue  # never appended to: stays a Python list
        ta = TensorArray.like(cf._zeros_like_type(elem) if not v else elem)
        for e in v:
            ta.append(e)
        out[i] = ta
    return out


def _fill_undefined(body, init, n, labels, set_state):
    """Trace the body once into a throwaway block to learn the type of each variable that is
    first bound inside the loop; start it as zeros of that type (read only if the loop runs
    zero times, where Python would raise NameError)."""
    b = STATE.builder
    cf._probing[0] += 1
    try:
        with b.sub_block():
            vals = [_as_loop_value(v) for v in init]
            if set_state is not None:
                set_state(tuple(vals[n:]))
            out = list(body(tuple(vals[:n])))
    except Exception as e:
        names = [labels[i] for i, v in enumerate(init) if isinstance(v, Undefined)]
        raise at_user_line(f"{', '.join(repr(x) for x in names)} must be defined before this tensor loop "
                           f"(it is read in the loop before it is first assigned): {e}") from None
    finally:
        cf._probing[0] -= 1
    filled = list(init)
    for i, v in enumerate(init[:n]):
        if isinstance(v, Undefined) and i < len(out):
            o = out[i]
            if isinstance(o, Tensor):
                filled[i] = cf._zeros_like_type(o)
            elif isinstance(o, (bool, int, float)):
                filled[i] = type(o)(0)
            elif isinstance(o, (tuple, list, dict)):  # a tuple return value: zeros of its structure
                filled[i] = cf._placeholder(o)
    return filled


# ------------------------------------------------------------------ for
class TensorIterable:
    """Something a ``for`` loop walks with a ``while`` op: ``length()`` items, item ``i``."""

    def length(self):
        raise NotImplementedError

    def item(self, i):
        raise NotImplementedError


class TensorRange(TensorIterable):
    """``range(start, stop, step)`` where some bound is a symbolic tensor."""

    def __init__(self, start, stop, step):
        if not isinstance(step, Tensor) and step == 0:
            raise ValueError("range() arg 3 must not be zero")
        self.start, self.stop, self.step = start, stop, step

    def length(self):
        from .. import ops
        span = ops.sub(self.stop, self.start)
        if isinstance(self.step, Tensor) or self.step != 1:  # (a Python step is never 0 here)
            step = self.step
            # ceil(span / step) for either sign of step, never negative
            span = ops.floordiv(ops.add(span, ops.sub(step, ops.sign(step))), step)
        return ops.maximum(ops.cast(span, "int64"), 0)

    def item(self, i):
        from .. import ops
        from .weak_index import weak
        plain = not isinstance(self.step, Tensor) and not isinstance(self.start, Tensor) and \
            self.step == 1 and self.start == 0
        return weak(i if plain else ops.add(self.start, ops.mul(i, self.step)))


class TensorRows(TensorIterable):
    """The rows of a symbolic tensor."""

    def __init__(self, x):
        self.x = x

    def length(self):
        return self.x.shape[0]

    def item(self, i):
        return self.x[i]


class TensorEnumerate(TensorIterable):
    def __init__(self, inner, start=0):
        self.inner, self.start = inner, start

    def length(self):
        return self.inner.length()

    def item(self, i):
        from .. import ops
        from .weak_index import weak
        return (weak(ops.add(i, self.start) if not (isinstance(self.start, int) and self.start == 0) else i),
                self.inner.item(i))


class TensorZip(TensorIterable):
    def __init__(self, parts):
        self.parts = parts

    def length(self):
        from .. import ops
        lengths = [p.length() for p in self.parts]
        out = lengths[0]
        for n in lengths[1:]:
            out = ops.minimum(out, n)
        return out

    def item(self, i):
        return tuple(p.item(i) for p in self.parts)


def as_tensor_iterable(x):
    if isinstance(x, TensorIterable):
        return x
    if is_symbolic(x):
        return TensorRows(x)
    return None


def convert_for(iterable, body_fn, init, names, extra_test=None, get_state=None, set_state=None):
    """Run ``body_fn(item, *loop_vars)`` for each item of ``iterable``; returns the loop vars.

    ``extra_test(*loop_vars)`` (a lowered ``break``) is checked before each iteration.
    """
    it = as_tensor_iterable(iterable)
    if it is not None:
        return _static_for(it, body_fn, tuple(init), names, extra_test, get_state, set_state)
    return _py_for(iterable, body_fn, tuple(init), names, extra_test, get_state, set_state)


# A Python loop unrolled into a program more often than this warns once (per loop line).
UNROLL_WARNING_THRESHOLD = 1000
_UNROLL_WARNED = set()


class UnrollWarning(UserWarning):
    """A Python loop unrolled more than ``UNROLL_WARNING_THRESHOLD`` times into a program."""


def _warn_unrolled(kind):
    """Called once a Python loop being built into a program passes the threshold."""
    if STATE.builder is None:
        return
    from .errors import user_location
    loc = user_location()
    key = loc[:2] if loc is not None else None
    if key in _UNROLL_WARNED:
        return
    _UNROLL_WARNED.add(key)
    where = f" at {loc[0]}:{loc[1]} (`{loc[2]}`)" if loc is not None else ""
    message = (f"d2s.jit.to_static: this Python `{kind}` loop{where} has unrolled more than "
               f"{UNROLL_WARNING_THRESHOLD} times into the program: every iteration adds its ops, so the "
               "program and its build time grow with the trip count. Make the trip count a tensor "
               "argument of the converted function (call it with `d2s.tensor(n)`, so `range(n)` or "
               "`while i < n` compares against a tensor) and the loop becomes one `while` op.")
    if loc is not None:
        warnings.warn_explicit(message, UnrollWarning, loc[0], loc[1])
    else:
        warnings.warn(message, UnrollWarning, stacklevel=3)


def _py_for(iterable, body_fn, state, names, extra_test, get_state, set_state):
    count = 0
    for item in iterable:
        count += 1
        if count == UNROLL_WARNING_THRESHOLD + 1:
            _warn_unrolled("for")
        if extra_test is not None:
            go_on = extra_test(*state)
            if is_symbolic(go_on):
                # A tensor-dependent break in an unrolled loop: this and every later iteration
                # run under a cond on the flag instead of stopping the Python loop.
                state = cf.convert_ifelse(go_on, lambda *s, item=item: body_fn(item, *s),
                                          lambda *s: s, state, names, names, get_state, set_state,
                                          fillable=names)
                continue
            if not go_on:
                break
        state = tuple(body_fn(item, *state))
    return state


def _static_for(it, body_fn, state, names, extra_test, get_state, set_state):
    from .. import ops
    n = it.length()
    index0 = tensor(0)

    def test(s):
        go = ops.lt(s[0], n)
        if extra_test is not None:
            more = extra_test(*s[1:])
            go = ops.logical_and(go, more)
        return go

    def body(s):
        i = s[0]
        out = tuple(body_fn(it.item(i), *s[1:]))
        return (ops.add(i, 1),) + out

    return _static_loop(test, body, state, names, get_state, set_state, extra_vars=(index0,))


# ------------------------------------------------------------------ builtins that make iterables
def convert_range(*args):
    """``range`` that accepts symbolic tensor bounds (then a loop over it becomes a while op)."""
    if any(is_symbolic(a) for a in args):
        if len(args) == 1:
            return TensorRange(0, args[0], 1)
        if len(args) == 2:
            return TensorRange(args[0], args[1], 1)
        return TensorRange(*args)
    return range(*[a.__index__() if isinstance(a, Tensor) else a for a in args])


def convert_enumerate(x, start=0):
    it = as_tensor_iterable(x)
    if it is not None or is_symbolic(start):
        if it is None:
            raise at_user_line("enumerate() with a symbolic start needs a tensor to iterate over")
        return TensorEnumerate(it, start)
    return enumerate(x, start)


def convert_zip(*xs):
    its = [as_tensor_iterable(x) for x in xs]
    if any(i is not None for i in its):
        if not all(i is not None for i in its):
            raise at_user_line("zip() of symbolic tensors with Python sequences is not supported inside a "
                               "program; make every part a tensor (d2s.tensor / d2s.stack)")
        return TensorZip(its)
    return zip(*xs)
