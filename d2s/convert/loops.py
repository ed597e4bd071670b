"""`while` and `for` loops: ``convert_while_loop`` / ``convert_for``, and tensor iterables.

A Python condition keeps Python semantics (the loop unrolls while a program is built); once the
condition is a symbolic tensor the rest of the loop becomes a ``while`` op (``_static_while``).
``for`` unrolls Python iterables (lists, tuples, dicts, ``range`` of Python ints, concrete
tensors) and turns ``range`` with a tensor bound, the rows of a symbolic tensor, and
``enumerate``/``zip`` of those into a ``while`` op over an index. A lowered ``break`` arrives as
an extra test; when it turns symbolic inside an unrolled loop, the remaining iterations run
under a ``cond`` on it instead of being refused.
"""
import types
import warnings

from .. import ops, pytree
from .._state import STATE
from ..static.control_flow import ControlFlowError, while_loop
from ..static.tensor_array import NumberList, TensorArray, numbers_dtype, struct_list_for
from ..static.weak_index import (NumberOrTensor, WeakIndex, WeakNumber, number_or_tensor, number_stand_in, number_type,
                                 plain_tensor, weak)
from ..tensor import Tensor, tensor
from . import control_flow as cf, range_loops, raising
from ..user_errors import ConvertError, at_user_line, user_frame
from .dict_keys import MaybeKey, note_created, refuse as refuse_partial_dict
from .escaping import refuse_escaping
from .iterables import TensorListItems, as_tensor_iterable
from .mixed_numbers import mixed_parts
from .undefined import MaybeNone, MaybeUnbound, Undefined, maybe_unbound
from .values import describe, fresh, is_symbolic, truth, write_back


# ------------------------------------------------------------------ while
def convert_while_loop(test_fn, body_fn, init, names, get_state=None, set_state=None, escaping=None,
                       entry_flags=False):
    """Run ``body_fn`` over the loop variables ``init`` (values of ``names``) while
    ``test_fn`` holds; returns their final values. ``escaping()`` gives the objects of an
    enclosing scope the body mutates (see :func:`refuse_escaping`). ``entry_flags``: the
    converted function updates tensors in place somewhere, so a tensor loop carries for each
    loop variable the body rebinds on some runs only whether it still holds its entry tensor
    (see ``d2s.static.object_identity._ObjectCarry``)."""
    state = tuple(init)
    user_test = test_fn
    test_fn = lambda *s: truth(user_test(*s))  # noqa: E731 - `while xs:` on a grown list tests its length
    count = 0
    while True:
        c = _test(test_fn, state)
        if is_symbolic(c):
            with refuse_escaping(escaping):
                return _static_loop(lambda s: test_fn(*s), lambda s: tuple(body_fn(*s)), state, names,
                                    get_state, set_state, entry_flags=entry_flags)
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


class _FirstIterationFails(Exception):
    def __init__(self, error):
        self.error = error


class _LoopRetry(Exception):
    def __init__(self, dtypes):
        self.dtypes = dtypes


def _static_loop(test, body, state, names, get_state, set_state, extra_vars=(), peeled=False, entry_flags=False):
    """A ``while`` op over ``extra_vars + state`` (and attribute targets): ``test(s)`` and
    ``body(s)`` take and return the tuple of the state's values (extra vars first)."""
    comps = tuple(get_state()) if get_state is not None else ()
    n_extra, n = len(extra_vars), len(extra_vars) + len(state)
    labels = [f"loop index #{i}" for i in range(n_extra)] + list(names) + \
        [f"attribute #{i}" for i in range(len(comps))]
    if not peeled and any(v is None for v in state):
        return _peel_first(test, body, state, names, get_state, set_state, extra_vars, labels[:n], entry_flags)
    init = list(extra_vars) + list(state) + list(comps)
    lists = [i for i, v in enumerate(init) if type(v) is list]
    has_dicts = any(type(v) is dict for v in init)
    # one trial trace of the body serves both (a nested loop's body is traced again per trial)
    trial = _trial(body, init, n, set_state) if lists or has_dicts else None
    if lists:
        try:
            init = _lists_to_tensor_arrays(body, init, lists, n, set_state, labels, trial)
        except _FirstIterationFails as f:
            return _fails_if_it_runs(test, init, n, state, f.error)
    if has_dicts:
        init = _dict_keys_from_body(test, body, init, n, set_state, labels, trial)
    if any(isinstance(v, Undefined) for v in init):
        try:
            init = _fill_undefined(body, init, n, labels, set_state)
        except _FirstIterationFails as f:
            return _fails_if_it_runs(test, init, n, state, f.error)
    # still undefined: the body never binds it on the traced path (e.g. a `return` under a Python
    # condition that is False), so it passes through the loop untouched instead of being carried
    dead = {i: v for i, v in enumerate(init) if isinstance(v, Undefined)}

    weak_at = _weak_positions(init)
    # values that are a Python number on some runs and a tensor on others (min(x.sum(), 0.5)):
    # the loop carries which one each is, and the number exactly, beside the value
    # (or a Python number of one type on some runs and another on others: which type it is)
    mixed_at = {i: v.pytype if v.else_type is None else (v.pytype, v.else_type) for i, v in enumerate(init)
                if isinstance(v, NumberOrTensor) and i not in dead}
    # the Python type each weak variable has before the loop (what a zero-trip run returns)
    start_types = {i: number_type(init[i]) for i in weak_at}
    body_types = {}
    # whether the body, as last traced, leaves each weak variable a Python number (``i += 1``)
    # or makes it a tensor (``s = s + x.sum()``): only the former is a Python number after the
    # loop, and comes back from the program as one
    body_weak, nested_weak = {}, {}

    def widen(vals):
        vals = iter(vals)
        out = [dead[i] if i in dead else number_stand_in(next(vals)) if i in weak_at else next(vals)
               for i in range(len(init))]
        return [_mark_numbers(v, init_nested[i]) if init_nested.get(i) else v for i, v in enumerate(out)]

    # weak variables that the body leaves a Python number on some runs only (a number that an
    # inner loop or `if` may turn into a tensor): each gets a bool loop var, "still the Python
    # number it entered the loop as", found by a first build (see _still_a_number)
    flagged, maybe_number = [], {}
    for _ in range(6):
        # Python numbers inside carried structures (a tuple return value holding a counter)
        init_nested = {i: _number_leaves(v) for i, v in enumerate(init)
                       if i not in weak_at and i not in dead and _is_structure(v)}
        start = [_as_loop_value(v) for i, v in enumerate(init) if i not in dead]
        n_core = len(start)
        start += [tensor(True)] * len(flagged)
        start += list(mixed_parts(init, mixed_at))
        n_flags = len(flagged)

        def split(vals):
            vals = _with_mixed(widen(vals[:n_core]), vals[n_core + n_flags:], mixed_at)
            if set_state is not None:
                set_state(tuple(vals[n:]))
            return tuple(vals[:n])

        def cond_fn(*vals):
            return test(split(vals))

        def body_fn(*vals):
            out = list(body(split(vals))) + (list(get_state()) if get_state is not None else [])
            out = _keys_stay_maybe(init, out)
            parts = _mixed_out(out, mixed_at, labels)
            body_weak.update((i, _is_python_number(out[i])) for i in weak_at if i < len(out))
            body_types.update((i, number_type(out[i])) for i in weak_at if i < len(out))
            maybe_number.update((i, isinstance(out[i], NumberOrTensor)) for i in weak_at if i < len(out))
            flags = [_still_a_number(f, out[i]) for f, i in zip(vals[n_core:], flagged)]
            out = _check_carried(labels, init, widen(vals[:n_core]), out)
            # numbers inside carried structures (a tuple return value holding a loop counter)
            nested_weak.update((i, _number_leaves(o)) for i, o in enumerate(out)
                               if i not in weak_at and i not in dead and _is_structure(o))
            return tuple(v for i, v in enumerate(out) if i not in dead) + tuple(flags) + parts

        try:
            if STATE.builder is not None:
                STATE.builder.entry_flags = bool(entry_flags)  # (read and reset by the while op's builder)
            result = while_loop(cond_fn, body_fn, tuple(start))
        except _LoopRetry as r:
            init = [_number_as(v, *r.dtypes[i]) if i in r.dtypes else v for i, v in enumerate(init)]
            continue
        except ControlFlowError as e:
            raise at_user_line(f"the variables of this tensor loop do not fit together: {e}") from None
        except Exception as e:  # noqa: BLE001 - only what eager code would raise there is deferred
            # a Python list too short for a read every iteration makes (branches defer theirs),
            # or another error Python raises on every path of the body: raised if the loop runs
            if not raising.deferrable(e):
                raise
            return _fails_if_it_runs(test, init, n, state, e)
        more = sorted(i for i, m in maybe_number.items() if m and i < n and i not in flagged)
        if more and STATE.builder is not None:
            flagged += more  # build again, carrying their flags
            continue
        break
    result, still_numbers, parts = (list(result[:n_core]), result[n_core:n_core + len(flagged)],
                                    result[n_core + len(flagged):])
    result = [plain_tensor(v) if i in weak_at and not body_weak.get(i, True) else v
              for i, v in enumerate(_with_mixed(widen(result), parts, mixed_at))]
    for i, flag in zip(flagged, still_numbers):
        result[i] = number_or_tensor(result[i], flag, True, start_types[i])
    result = [_mark_numbers(v, nested_weak.get(i, ())) if i in init_nested or i in nested_weak else v
              for i, v in enumerate(result)]
    retyped = {i for i in weak_at if i < n and start_types.get(i) is not None and i not in flagged
               and body_types.get(i, start_types[i]) is not start_types[i]}
    if retyped:
        result = _number_if_zero_trips(test, init, n, set_state, result, retyped, start_types, body_types)
    if set_state is not None:
        set_state(tuple(write_back(o, v) for o, v in zip(comps, result[n:])))
    originals = list(extra_vars) + list(state)
    return tuple(write_back(o, v) for o, v in zip(originals[n_extra:], result[n_extra:n]))


def _still_a_number(flag, value):
    """A flagged loop variable's flag after an iteration: it entered as a Python number
    (``flag``) and the iteration left it one (``value`` a Python number, or a number on the runs
    where its ``is_number`` holds: an inner loop that ran zero times, the branch that kept it)."""
    if isinstance(value, NumberOrTensor):
        return ops.logical_and(flag, value.is_number)
    if _is_python_number(value):
        return flag
    return tensor(False)


def _fails_if_it_runs(test, init, n, state, error):
    """The body reads a Python list that is too short, or a variable not bound yet, on a path
    every iteration takes (the first included): Python raises that IndexError or
    UnboundLocalError if the loop runs at all, else leaves every variable as it was; so does the
    program."""
    ran = test(tuple(_as_loop_value(v) for v in init[:n]))
    raising.defer(error, ops.logical_not(ran) if is_symbolic(ran) else tensor(not ran))
    return tuple(state)


def _peel_first(test, body, state, names, get_state, set_state, extra_vars, labels, entry_flags=False):
    """``h = None`` before a tensor loop whose body makes ``h`` a tensor (``h = x if h is None
    else h + x``): the first iteration runs on its own under a ``cond`` on the loop test, where
    ``h is None`` still holds, and the ``while`` op carries the tensor from then on. After the
    loop such a variable is a MaybeNone: None on runs where the loop ran zero times."""
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
    out = _static_loop(test, body, full[n_extra:], names, get_state, set_state, full[:n_extra], peeled=True,
                       entry_flags=entry_flags)
    if not is_symbolic(go):
        return out
    # zeros stood in for None while the loop was built: the variable is None again when the
    # loop ran zero times, which only the run knows
    return tuple(MaybeNone(v, go) if s is None and v is not None else v for s, v in zip(state, out))


def _with_mixed(vals, parts, mixed_at):
    """``vals`` with each value of ``mixed_at`` a NumberOrTensor again, from its loop-carried
    parts (is a number, the number: see control_flow.mixed_parts)."""
    for j, (i, py) in enumerate(sorted(mixed_at.items())):
        if isinstance(py, tuple):
            vals[i] = number_or_tensor(plain_tensor(vals[i]), parts[2 * j], True, py[0], else_type=py[1])
            continue
        vals[i] = number_or_tensor(plain_tensor(vals[i]), parts[2 * j], True, py, number=parts[2 * j + 1])
    return vals


def _mixed_out(out, mixed_at, labels):
    """The parts of each ``mixed_at`` value after an iteration; a Python number of another type
    than it entered with is refused (a program holds one number type per value)."""
    for i, py in mixed_at.items():
        v = out[i] if i < len(out) else None
        if isinstance(py, tuple):
            got = {v.pytype, v.else_type} if isinstance(v, NumberOrTensor) and v.else_type is not None else \
                {number_type(v)}
            if not got <= set(py):
                name = labels[i] if labels is not None and i < len(labels) else "a loop variable"
                raise at_user_line(
                    f"'{name}' enters this tensor loop a Python {py[0].__name__} on some runs and a "
                    f"{py[1].__name__} on others, and the loop makes it {describe(v)}: a program can carry a "
                    "value of two number types, not three kinds. Give it numbers of one type (0.0 rather than 0)",
                    TypeError)
            continue
        got = v.pytype if isinstance(v, NumberOrTensor) and v.else_type is None else number_type(v)
        if got is not None and got is not py:
            name = labels[i] if labels is not None and i < len(labels) else "a loop variable"
            raise at_user_line(
                f"'{name}' enters this tensor loop a Python {py.__name__} on some runs (a tensor on others) and "
                f"the loop makes it a Python {got.__name__}: a program holds one number type per value. Give it "
                "numbers of one type (0.0 rather than 0)", TypeError)
    return mixed_parts(out, mixed_at)


def _weak_positions(init):
    """Loop variables that eager code holds as Python numbers (``i = 0`` before the loop, a
    ``for`` counter): the loop carries them as tensors, read as WeakIndex (ints: ``z + i``
    keeps an int32 ``z`` int32, as the Python int would) or WeakNumber (a tensor `if` in the
    body may still turn them into another type, as it would a Python number)."""
    return {i for i, v in enumerate(init)
            if isinstance(v, WeakNumber) or (isinstance(v, (bool, int, float)) and not isinstance(v, Tensor))}


def _number_if_zero_trips(test, init, n, set_state, result, retyped, start_types, body_types):
    """Variables the body retypes (``c = 5`` then ``c = d2s.zeros([1]) + 3``, or ``r = 0`` then
    ``r = i / 2``): eager code holds the Python number it started as when the loop runs zero
    times, and the body's type otherwise; the program says which, run by run, from the loop's
    first test."""
    try:
        if set_state is not None:
            set_state(tuple(_as_loop_value(v) for v in init[n:]))
        ran = test(tuple(_as_loop_value(v) for v in init[:n]))
    except Exception:  # noqa: BLE001 - the test needs values only the loop binds: leave the types
        return result
    if not is_symbolic(ran):
        return result
    zero_trips = ops.logical_not(ran if str(ran.dtype) == "bool" else ops.cast(ran, "bool"))
    out = list(result)
    for i in retyped:
        out[i] = number_or_tensor(result[i], zero_trips, True, start_types[i], body_types.get(i))
    return out


def _is_structure(v):
    return isinstance(v, (tuple, list, dict)) or hasattr(type(v), "_d2s_from_output")


def _number_leaves(v):
    """Positions of the leaves of structure ``v`` that stand for Python numbers."""
    return {k for k, x in enumerate(pytree.tree_flatten(v)[0]) if _is_python_number(x)}


def _mark_numbers(v, positions):
    """Structure ``v`` with its leaves at ``positions`` standing for Python numbers (the
    ``while`` op gives back plain tensors), and its other leaves plain tensors."""
    vals, skel = pytree.tree_flatten(v)
    return pytree.tree_unflatten(skel, [number_stand_in(x) if k in positions else plain_tensor(x) for k, x in enumerate(vals)])


def _is_python_number(v):
    return isinstance(v, WeakNumber) or (isinstance(v, (bool, int, float)) and not isinstance(v, Tensor))


def _probe_value(v):
    """``v`` for a trial trace of a loop body: containers (lists, dicts, tensor lists) are
    copied, so what the trial appends or assigns never reaches the loop's real values."""
    if isinstance(v, (bool, int, float)) and not isinstance(v, Tensor):
        # a Python number stays one in the trial, as it is in the loop (weak: what the trial
        # appends, ``xs.append(i * 0.1)``, is a Python float)
        return number_stand_in(_as_loop_value(v))
    return fresh(_as_loop_value(v)) if isinstance(v, (list, dict, tuple)) or hasattr(type(v), "_d2s_children") \
        else _as_loop_value(v)


def _as_loop_value(v):
    if isinstance(v, (bool, int, float)) and not isinstance(v, Tensor):
        # a Python float is a double: a float accumulated in a tensor loop (s += float(x[i]))
        # adds as eager Python adds (it stays weakly typed against tensors)
        return tensor(v, dtype="float64") if type(v) is float else tensor(v)
    return v


def _check_carried(labels, init, ins, outs):
    """Loop variables must keep their dtype and rank; a Python number that starts a variable
    adopts the dtype and shape the body gives it (``s = 0`` then ``s = s + x.sum()``, or
    ``c = 5`` then ``c = d2s.zeros([1]) + 3``), as it may in eager code. A variable that may
    be unbound on entry is bound once an iteration assigns it."""
    retry = {}
    for i, (a, b) in enumerate(zip(ins, outs)):
        if isinstance(a, MaybeUnbound):
            if isinstance(b, Undefined):
                outs[i] = b = a
            b = outs[i] = maybe_unbound(b, True)
            a, b = a.value, b.value
            if isinstance(a, Tensor) and isinstance(b, (bool, int, float)):
                if not _is_python_number(a):  # (one standing for a Python number stays one: nested_weak)
                    outs[i] = maybe_unbound(tensor(b, dtype=str(a.dtype)), outs[i].bound)
                continue
        if isinstance(b, Undefined) and not isinstance(a, Undefined):
            raise at_user_line(f"'{labels[i]}' is left undefined by an iteration of this tensor loop")
        if isinstance(a, Tensor) and isinstance(b, Tensor) and (a.dtype != b.dtype or a.ndim != b.ndim):
            if _is_python_number(init[i]):
                # (a number an enclosing tensor loop carries for eager code's Python number, too:
                # `total = 0` before two nested loops that add int32 tensors to it)
                retry[i] = (str(b.dtype), [d if isinstance(d, int) else 1 for d in _static_shape(b)])
                continue
            if a.dtype != b.dtype:
                raise at_user_line(f"loop variable '{labels[i]}' changes dtype from {a.dtype} to {b.dtype} in "
                                   "the body of this tensor loop, so its dtype after the loop would depend on the "
                                   "number of iterations (it may run zero times); cast it (d2s.cast) so it keeps "
                                   "one dtype", CarriedDtypeChange)
            raise at_user_line(f"loop variable '{labels[i]}' changes rank from {a.ndim} to {b.ndim} in the body of "
                               f"this tensor loop (shape {_fmt_shape(a)} becomes {_fmt_shape(b)}): a program "
                               "carries one rank per variable, and its rank after the loop would depend on the "
                               "number of iterations; keep its rank (reshape it), or use another name for the "
                               "new value")
        kind_a, kind_b = _carried_kind(a), _carried_kind(b)
        if kind_a is not None and kind_b is not None and kind_a != kind_b:
            raise at_user_line(f"loop variable '{labels[i]}' is {kind_a} before an iteration of this tensor loop "
                               f"and {kind_b} after it: a program carries one structure per variable, and after "
                               "the loop it would depend on the number of iterations; keep one structure, or "
                               "use another name for the new value")
        if isinstance(a, Tensor) and isinstance(b, (bool, int, float)):
            outs[i] = _number_as(b, str(a.dtype), _static_shape(a))
    if retry:
        raise _LoopRetry(retry)
    return outs


class CarriedDtypeChange(ConvertError):
    """A loop variable whose dtype an iteration changes (an int32 carry plus int64 values)."""


def _fmt_shape(t):
    return "[" + ", ".join("?" if not isinstance(d, int) else str(d) for d in _static_shape(t)) + "]"


def _carried_kind(v):
    """How an error names what a loop variable holds (a tensor, a tuple of 2, None, a str
    'ab', ...), or None for values a loop may turn into one another (a Python number and a
    tensor, placeholders)."""
    if isinstance(v, (list, TensorArray)):
        return "a list"  # (a list whose length the loop changes becomes a tensor list)
    if isinstance(v, (Tensor, bool, int, float, Undefined, MaybeUnbound)) or hasattr(type(v), "_d2s_children"):
        return "a tensor" if isinstance(v, Tensor) else None
    if v is None:
        return "None"
    if isinstance(v, tuple):
        return f"a tuple of {len(v)}"
    if isinstance(v, dict):
        return f"a dict with keys {list(v)}"
    if isinstance(v, str):
        return f"the str {v!r}"
    return None


def _static_shape(t):
    return t._var.type.shape if t.is_symbolic else t.array.shape


def _number_as(v, dtype, shape):
    """Python number ``v`` (or a tensor standing for one) as a tensor of ``dtype`` and
    ``shape`` (unknown dims as 1)."""
    shape = [d if isinstance(d, int) else 1 for d in shape]
    if isinstance(v, Tensor):
        v = ops.cast(plain_tensor(v), dtype) if str(v.dtype) != dtype else plain_tensor(v)
        return ops.broadcast_to(v, shape) if list(_static_shape(v)) != shape else v
    return ops.full(shape, v, dtype=dtype) if shape else tensor(v, dtype=dtype)


def _trial(body, init, n, set_state):
    """One trial trace of the loop body into a throwaway block, on copies of the loop's values:
    (its outputs or None, the exception it raised or None, the copies it ran on)."""
    b = STATE.builder
    vals = list(init)
    with cf.probing():
        try:
            with b.sub_block():
                vals = [_probe_value(v) for v in init]
                if set_state is not None:
                    set_state(tuple(vals[n:]))
                return list(body(tuple(vals[:n]))), None, vals
        except Exception as e:  # noqa: BLE001 - the callers decide what a failed trial means
            return None, e, vals


def _lists_to_tensor_arrays(body, init, lists, n, set_state, labels=None, trial=None):
    """Python lists carried by a tensor loop whose length the body changes become TensorArrays
    (``xs.append(v)`` then pushes onto one tensor); an empty list learns its element type from
    one trial trace of the body. A list the body keeps at its length (``hs[0] = hs[0] + v``)
    stays a list of loop variables, so indexing and item assignment keep working."""
    out = list(init)
    res, probe_error, vals = trial if trial is not None else _trial(body, init, n, set_state)
    probed = {i: res[i] for i in lists if i < len(res)} if res is not None else {}
    if probe_error is not None:  # e.g. a tensor `if` appending on one side only
        # the body may have failed because a list was still short while it was traced
        # (``feats[-2]`` under a tensor `if`): what it appended before failing gives the type
        grown = {i: vals[i] for i in lists if type(vals[i]) is list and len(vals[i]) > len(init[i])}
        if grown:
            probed, probe_error = grown, None
    for i in lists:
        v = init[i]
        p = probed.get(i)
        if v and type(p) is list and len(p) == len(v):
            continue  # same length after an iteration: a fixed list of loop variables
        if not v and probe_error is not None:
            if isinstance(probe_error, IndexError):
                raise _FirstIterationFails(probe_error)
            raise probe_error
        if not v and isinstance(p, TensorArray):  # grown under a tensor `if` in the body
            if p.data is None:
                continue
            ta = type(p).like(p.element_zeros())
            out[i] = ta
            continue
        items = list(v) + (list(p) if type(p) is list else [])
        if not items:
            continue  # never appended to: stays a Python list
        if all(isinstance(e, (tuple, dict)) for e in items):  # ``outs.append((h, c))``
            ta = struct_list_for(items)
            if ta is not None:
                for e in v:
                    ta.append(e)
                out[i] = ta
                continue
        if not all(isinstance(e, (Tensor,) + cf._NUMBER) for e in items):
            kinds = sorted({type(e).__name__ for e in items if not isinstance(e, (Tensor,) + cf._NUMBER)})
            name = labels[i] if labels is not None and i < len(labels) else "a list"
            raise at_user_line(
                f"'{name}' is a Python list of {', '.join(kinds)} values whose length this tensor loop changes; "
                "the body runs once while the program is built, so it cannot grow or shrink once per "
                "iteration. Only lists of tensors or numbers, or of tuples of them with one structure and "
                "dtypes, can (they become tensor lists); keep other lists out of tensor loops", ConvertError)
        # (a 0-d stand-in for a Python number, x[i].item(), is a number: the list comes back as numbers)
        tensors = [e for e in items if isinstance(e, Tensor) and not _number_element(e)]
        dtype = numbers_dtype(items)
        like = cf._zeros_like_type(tensors[0]) if tensors else tensor(0, dtype=dtype)
        if str(like.dtype) != dtype:
            like = ops.cast(like, dtype)
        kind = TensorArray if tensors else NumberList
        ta = kind.like(like)
        for e in v:
            ta.append(e if isinstance(e, Tensor) and str(e.dtype) == dtype else
                      ops.cast(e, dtype) if isinstance(e, Tensor) else tensor(e, dtype=dtype))
        out[i] = ta
    return out


def _number_element(e):
    return number_type(e) is not None and e.ndim == 0


def _dict_keys_from_body(test, body, init, n, set_state, labels, trial=None):
    """A dict the loop body adds keys to (``d['a'] = v`` first assigned inside the loop) is
    carried with those keys, learnt from one trial trace of the body, each a MaybeKey (see
    convert/dict_keys.py) holding zeros of the value's type and a false flag on entry: Python's
    dict lacks them when the loop runs zero times, and a read then raises KeyError."""
    dicts = [i for i, v in enumerate(init) if type(v) is dict]
    res, error, vals = trial if trial is not None else _trial(body, init, n, set_state)
    if res is None:  # the real trace reports the error at the user's line
        return init
    res = res + list(vals[n:])
    out, added = list(init), []
    for i in dicts:
        got = res[i] if i < len(res) else None
        if type(got) is not dict:
            continue
        new = [k for k in got if k not in init[i]]
        if not new:
            continue
        filled = dict(init[i])
        for k in new:
            v = got[k]
            if type(v) is MaybeKey:  # (set in a tensor `if` of the body)
                v = v.value
            if isinstance(v, Tensor):
                placeholder = cf._zeros_like_type(v)
            elif isinstance(v, cf._NUMBER):
                placeholder = type(v)(0)
            elif isinstance(v, (tuple, list, dict)):
                placeholder = cf._placeholder(v)
            else:
                raise at_user_line(f"the dict '{labels[i]}' gets key {k!r} first inside this tensor loop, holding "
                                   f"{type(v).__name__}; only tensors, numbers and containers of them can be "
                                   "carried by the loop. Assign the key before the loop", ConvertError)
            # held on the runs where an iteration set it (Python's dict lacks it after zero trips)
            filled[k] = MaybeKey(placeholder, tensor(False))
        out[i] = filled
        added.append(f"{labels[i]}[{', '.join(repr(k) for k in new)}]")
    if added:
        note_created()
    return out


def _keys_stay_maybe(init, out):
    """A key that a dict holds on some runs only on entry (a MaybeKey) that the body sets:
    held after the iteration on every run (the flag True there), carried as a MaybeKey."""
    out = list(out)
    for i, v in enumerate(init):
        if i >= len(out) or type(v) is not dict or type(out[i]) is not dict:
            continue
        keys = [k for k, x in v.items() if type(x) is MaybeKey]
        if not keys or not any(k in out[i] and type(out[i][k]) is not MaybeKey for k in keys):
            continue
        out[i] = {k: MaybeKey(x, tensor(True)) if k in keys and type(x) is not MaybeKey else x
                  for k, x in out[i].items()}
    return out


def _fill_undefined(body, init, n, labels, set_state):
    """Trace the body once into a throwaway block to learn the type of each variable that is
    first bound inside the loop; start it as zeros of that type (read only if the loop runs
    zero times, where Python would raise NameError)."""
    b = STATE.builder
    with cf.probing():
        try:
            with b.sub_block():
                vals = [_probe_value(v) for v in init]
                if set_state is not None:
                    set_state(tuple(vals[n:]))
                out = list(body(tuple(vals[:n])))
        except UnboundLocalError as e:
            # the first iteration reads a variable that nothing bound yet: Python raises this
            # if the loop runs at all
            raise _FirstIterationFails(e) from None
        except ConvertError:
            raise  # (a complete error at the user's line already: a nested construct refused)
        except Exception as e:
            names = [labels[i] for i, v in enumerate(init) if isinstance(v, Undefined)]
            raise at_user_line(f"{', '.join(repr(x) for x in names)} must be defined before this tensor loop "
                               f"(it is read in the loop before it is first assigned): {e}") from None
    filled = list(init)
    for i, v in enumerate(init[:n]):
        if isinstance(v, Undefined) and i < len(out):
            o = out[i].value if isinstance(out[i], MaybeUnbound) else out[i]
            if isinstance(o, Tensor):
                o = weak(cf._zeros_like_type(o)) if isinstance(o, WeakIndex) else cf._zeros_like_type(o)
            elif isinstance(o, (bool, int, float)):
                o = type(o)(0)
            elif isinstance(o, (tuple, list, dict)):  # a tuple return value: zeros of its structure
                o = cf._placeholder(o)
            else:
                continue
            # unbound until an iteration binds it: a read after a loop that ran zero times
            # raises UnboundLocalError when the program runs, as Python would
            filled[i] = maybe_unbound(o, False)
    return filled


# ------------------------------------------------------------------ for
def convert_for(iterable, body_fn, init, names, extra_test=None, get_state=None, set_state=None,
                escaping=None, entry_flags=False, dead_when_broken=()):
    """Run ``body_fn(item, *loop_vars)`` for each item of ``iterable``; returns the loop vars.

    ``extra_test(*loop_vars)`` (a lowered ``break``) is checked before each iteration;
    ``escaping()`` gives the objects of an enclosing scope the body mutates; ``entry_flags``:
    see :func:`convert_while_loop`. ``dead_when_broken``: the loop vars (by name) that nothing
    reads once the break flag is set, because every break of the loop is a ``return``: an
    unrolled loop whose return depends on a tensor may then change their type or rank from one
    iteration to the next (a network returning from its loop over stages).
    """
    refuse_partial_dict(iterable, "iterating over")
    it = as_tensor_iterable(iterable)
    if isinstance(it, TensorListItems) and any(v is iterable for v in init):
        raise at_user_line("this `for` changes the list it iterates over, whose length is known only when the "
                           "program runs (it was grown in a tensor loop or branch); iterate over a copy "
                           "(`for v in list(xs):`) or over indexes", ConvertError)
    if it is not None:
        with refuse_escaping(escaping):
            return _static_for(it, body_fn, tuple(init), names, extra_test, get_state, set_state, entry_flags)
    reason, init = None, tuple(init)
    if isinstance(iterable, types.GeneratorType):
        range_loops.refuse_iterator_read("a for over a generator")
    if type(iterable) is range:  # a long one may become one loop op (see range_loops.py)
        done, got, reason = range_loops.loop_op(iterable, body_fn, init, names, extra_test, get_state, set_state,
                                                escaping, entry_flags, _static_for)
        if done:
            return got
        iterable, init = got  # (after a first iteration run on its own, the items left)
    return _py_for(iterable, body_fn, init, names, extra_test, get_state, set_state, dead_when_broken, reason)


# A Python loop unrolled into a program more often than this warns once (per loop line).
UNROLL_WARNING_THRESHOLD = 1000
_UNROLL_WARNED = set()


class UnrollWarning(UserWarning):
    """A Python loop unrolled more than ``UNROLL_WARNING_THRESHOLD`` times into a program."""


def _warn_unrolled(kind, reason=None):
    """Called once a Python loop being built into a program passes the threshold; ``reason``:
    why a range loop could not be one loop op (see range_loops.py)."""
    if STATE.builder is None:
        return
    loc = user_frame()
    key = loc[:2] if loc is not None else None
    if key in _UNROLL_WARNED:
        return
    _UNROLL_WARNED.add(key)
    where = f" at {loc[0]}:{loc[1]} (`{loc[2]}`)" if loc is not None else ""
    message = (f"d2s.jit.to_static: this Python `{kind}` loop{where} has unrolled more than "
               f"{UNROLL_WARNING_THRESHOLD} times into the program: every iteration adds its ops, so the "
               "program and its build time grow with the trip count."
               f"{range_loops.format_reason(reason)} Make the trip count a tensor "
               "argument of the converted function (call it with `d2s.tensor(n)`, so `range(n)` or "
               "`while i < n` compares against a tensor) and the loop becomes one `while` op.")
    if loc is not None:
        warnings.warn_explicit(message, UnrollWarning, loc[0], loc[1])
    else:
        warnings.warn(message, UnrollWarning, stacklevel=3)


def _py_for(iterable, body_fn, state, names, extra_test, get_state, set_state, dead=(), reason=None):
    count = 0
    items = iter(iterable)
    while True:
        # the break flag is tested before the next item is taken: a `break` leaves an iterator
        # (a generator) at the item after the one it broke on, as Python's does
        go_on = extra_test(*state) if extra_test is not None else True
        if go_on is not True and not is_symbolic(go_on) and not go_on:
            break
        try:
            item = next(items)
        except StopIteration:
            break
        count += 1
        if count == UNROLL_WARNING_THRESHOLD + 1:
            _warn_unrolled("for", reason)
        if is_symbolic(go_on):
            # A tensor-dependent break in an unrolled loop: this and every later iteration
            # run under a cond on the flag instead of stopping the Python loop. Where the
            # loop returned, its dead variables take the other side's values (whatever their
            # type), as nothing reads them again.
            state = _guarded_iteration(go_on, lambda *s, item=item: body_fn(item, *s), state, names,
                                       get_state, set_state, dead)
            continue
        state = tuple(body_fn(item, *state))
    return state


def _guarded_iteration(go_on, body, state, names, get_state, set_state, dead):
    """One iteration of an unrolled loop under a ``cond`` on its break flag ``go_on``."""
    try:
        return cf.convert_ifelse(go_on, body, lambda *s: s, state, names, names, get_state, set_state,
                                 fillable=names)
    except ConvertError:
        if not any(n in dead and isinstance(v, Tensor) for n, v in zip(names, state)):
            raise
    # where the loop has returned, a tensor nothing reads again takes the other side's value,
    # whatever its type or rank there (a network changing x's rank from stage to stage)
    return cf.convert_ifelse(go_on, body, lambda *s: tuple(Undefined(n) if n in dead and isinstance(v, Tensor)
                                                           else v for n, v in zip(names, s)),
                             state, names, names, get_state, set_state, fillable=names)


def _static_for(it, body_fn, state, names, extra_test, get_state, set_state, entry_flags=False):
    n = it.length()
    try:
        return _static_for_from(0, n, it, body_fn, state, names, extra_test, get_state, set_state, entry_flags)
    except CarriedDtypeChange:
        # a length known to be at least one: the first iteration runs on its own, as eager's
        # does (promoting the variable), and the loop carries the promoted dtype from then on
        if not isinstance(n, int) or n < 1 or (extra_test is not None and extra_test(*state) is not True):
            raise
    state = tuple(body_fn(it.item(weak(tensor(0))), *state))
    return _static_for_from(1, n, it, body_fn, state, names, extra_test, get_state, set_state, entry_flags)


def _static_for_from(first, n, it, body_fn, state, names, extra_test, get_state, set_state, entry_flags):
    index0 = tensor(first)

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

    return _static_loop(test, body, state, names, get_state, set_state, extra_vars=(index0,),
                        entry_flags=entry_flags)
