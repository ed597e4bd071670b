"""`if` statements and ternaries: ``convert_ifelse`` / ``convert_ifexp``.

A Python (or concrete tensor) predicate runs one branch, as Python would (``_py_if``). A
symbolic predicate traces both branches into a ``cond`` op (``_static_if``): each branch runs
on its own copy of the carried values, its outputs are checked against the other branch's
(names defined on one side only, structure, dtype) and Python numbers on one side become
tensors of the other side's dtype.
"""
import contextlib

import numpy as np

from .. import ops, pytree
from .._state import STATE
from ..static.control_flow import ControlFlowError, static_cond, tree_flatten
from ..static.tensor_array import NumberList, TensorArray, numbers_dtype, struct_list_for
from ..static.weak_index import WeakIndex, WeakNumber, number_or_tensor, number_stand_in, number_type
from ..tensor import Tensor, tensor
from . import raising, replay
from ..user_errors import ConvertError, at_user_line
from .dict_keys import MaybeKey, note_created
from .mixed_numbers import find_mixed, mixed_parts, number_types_of
from .escaping import refuse_escaping
from .undefined import MaybeUnbound, Undefined, maybe_unbound
from .values import REPLACED_LISTS, changed, describe, fresh, is_symbolic, truth, write_back

_NUMBER = (bool, int, float, np.generic)

# While a loop body is traced once to learn the types of loop variables that are not yet
# defined, a branch may legitimately leave such a variable undefined.
_probing = [0]


@contextlib.contextmanager
def probing():
    """The extent of such a trial trace of a loop body (nested trials count)."""
    _probing[0] += 1
    try:
        yield
    finally:
        _probing[0] -= 1


class _Retry(Exception):
    """The second branch showed that a leaf the first branch left as a Python value must be a
    tensor: trace again with that hint."""

    def __init__(self, hints):
        self.hints = hints


def convert_ifelse(pred, true_fn, false_fn, args, names, out_names, get_state=None, set_state=None,
                   fillable=(), none_fillable=False, escaping=None):
    """``true_fn(*args)`` if ``pred`` else ``false_fn(*args)``; returns the values of ``out_names``.

    Args:
        pred: the condition (Python value, concrete or symbolic tensor).
        true_fn, false_fn: the branches, functions of ``args`` returning the output tuple.
        args: values of ``names`` on entry (possibly ``Undefined``).
        out_names: names of the outputs, for error messages.
        get_state, set_state: read / write attribute targets the branches assign (or None).
        fillable: outputs that one branch may leave undefined because a flag guards every later
            read (the result variable of an early return); they get zeros there.
        none_fillable: a fillable output undefined in the false branch and None in the true one
            stays None (a loop's peeled first iteration that leaves a ``None`` variable as is).
        escaping: returns the global/closure containers the branches mutate; a tensor ``if``
            traces both branches, so such a mutation is refused (see ``escaping.refuse_escaping``).
    """
    pred = truth(pred)
    if is_symbolic(pred):
        with refuse_escaping(escaping, "tensor `if`"):
            return _static_if(pred, true_fn, false_fn, args, names, out_names, get_state, set_state, fillable,
                              none_fillable)
    return _py_if(pred, true_fn, false_fn, args)


def _py_if(pred, true_fn, false_fn, args):
    return true_fn(*args) if pred else false_fn(*args)


def convert_ifexp(pred, true_thunk, false_thunk):
    """``a if pred else b`` with the two sides as thunks."""
    pred = truth(pred)
    if is_symbolic(pred):
        out = _static_if(pred, lambda: (true_thunk(),), lambda: (false_thunk(),), (), (), ("the value",))
        return out[0]
    return true_thunk() if pred else false_thunk()


def _static_if(pred, true_fn, false_fn, args, names, out_names, get_state=None, set_state=None, fillable=(),
               none_fillable=False):
    state0 = get_state() if get_state is not None else ()
    labels = list(out_names) + [f"attribute #{i}" for i in range(len(state0))]
    # A retrace of an enclosing `if` replays this call on values of the same types: start from
    # the hints it ended with then instead of retrying all over again (see convert/replay.py).
    key = (true_fn.__code__, false_fn.__code__, _probing[0] > 0, replay.signature((tuple(args), tuple(state0))))
    hints, fills, maybe, children = replay.recall(key) or ({}, {}, {}, None)
    hints, fills, maybe = dict(hints), dict(fills), dict(maybe)
    # containers passed in but not handed back: a change to one is lost (see values.REPLACED_LISTS)
    watch = [j for j, (n, v) in enumerate(zip(names, args)) if type(v) in (list, dict) and n not in out_names]
    with replay.Rounds(children) as rounds:
        merged, plan = _trace_if(pred, true_fn, false_fn, args, out_names, get_state, set_state, fillable,
                                 none_fillable, state0, labels, hints, fills, maybe, rounds, watch)
    replay.record(key, (hints, fills, maybe, rounds.cur))
    merged = list(merged) if isinstance(merged, (tuple, list)) else [merged]
    (skel, kinds, consts), (weak_numbers, number_on, mixed, number_types) = plan
    extras = merged[len(merged) - 2 * len(mixed):]
    it = iter(merged[:len(merged) - 2 * len(mixed)])
    vals = [next(it) if k == "T" else c for k, c in zip(kinds, consts)]
    vals = [number_stand_in(v) if j in weak_numbers else v for j, v in enumerate(vals)]
    for j, (on_true, py, const) in number_on.items():
        vals[j] = number_or_tensor(vals[j], pred, on_true, py, number=const)
    for j, (on_true, on_false) in number_types.items():
        vals[j] = number_or_tensor(vals[j], pred, True, on_true, else_type=on_false)
    for i, (j, py) in enumerate(sorted(mixed.items())):
        # a number on some runs, a tensor on others, on either side: the branch taken says which
        # (and the number exactly), run by run; or a number of one type or another
        if isinstance(py, tuple):
            vals[j] = number_or_tensor(vals[j], extras[2 * i], True, py[0], else_type=py[1])
            continue
        vals[j] = number_or_tensor(vals[j], extras[2 * i], True, py, number=extras[2 * i + 1])
    everything = pytree.tree_unflatten(skel, vals)
    n_out = len(everything) - len(state0)
    outs, st = everything[:n_out], everything[n_out:]
    originals = dict(zip(names, args))
    outs = tuple(write_back(originals.get(n), v) for n, v in zip(out_names, outs))
    if set_state is not None:
        set_state(tuple(write_back(o, v) for o, v in zip(state0, st)))
    return outs


def _trace_if(pred, true_fn, false_fn, args, out_names, get_state, set_state, fillable, none_fillable, state0,
              labels, hints, fills, maybe, rounds, watch=()):
    """Trace both branches into a ``cond`` op, again while the branches ask for more hints
    (``hints``, ``fills`` and ``maybe`` are updated in place); returns (merged outputs, (output
    plan, positions of the outputs that stay weakly typed ints))."""
    objects = []
    for _ in range(4):
        seen = {}

        failed = {}

        def branch(fn, side):
            def run():
                # (with attribute targets of its own, the `if` carries those: not checked)
                objects[:] = _plain_objects(args) if get_state is None else []
                a = fresh(tuple(args))
                if set_state is not None:
                    set_state(fresh(state0))
                try:
                    raw = tuple(fn(*a))
                except Exception as e:
                    # a too-short Python list read, or the user's `raise`, in this branch: Python
                    # raises only if the branch runs, so the program does too; the other branch
                    # types the outputs
                    if not raising.deferrable(e):
                        raise
                    other = "false" if side == "true" else "true"
                    if other in failed:
                        raise failed[other] from None
                    failed[side] = e
                    raising.defer(e)
                    STATE.builder.undo_inplace()  # what the failed branch updated in place
                    a = fresh(tuple(args))
                    if set_state is not None:
                        set_state(fresh(state0))
                    raw = tuple((false_fn if side == "true" else true_fn)(*a))
                for j in watch:
                    if changed(args[j], a[j]):
                        REPLACED_LISTS.add(id(args[j]))
                _refuse_changed_objects(objects)
                out = _fill_structures(raw, out_names, fillable, fills, side)
                if side == "false":
                    _find_maybe_keys(seen["true_out"], out, maybe)
                    _find_maybe_unbound(seen["true_out"], out, out_names, fillable, maybe)
                out = _bind_maybe_keys(out, maybe)
                out = _bind_maybe_unbound(out, maybe)
                out = _lists_as_arrays(out, hints)
                st = tuple(get_state()) if get_state is not None else ()
                vals, skel = pytree.tree_flatten(out + st)
                tensors = _normalize(side, vals, skel, seen, hints, labels, out + st, fillable, none_fillable)
                return tuple(tensors) + mixed_parts(vals, hints.get("mixed", {}))
            return run

        seen["patches"] = {}
        try:
            merged = static_cond(pred, branch(true_fn, "true"), branch(false_fn, "false"), (),
                                  patches=seen["patches"])
        except _Retry as r:
            if r.hints is not None:
                hints.clear()
                hints.update(r.hints)
            rounds.next_round()
            continue
        except ControlFlowError as e:
            raise at_user_line(f"the branches of this tensor `if` do not fit together: {e}") from None
        return merged, (seen["plan"], (seen.get("weak", ()), seen.get("number_on", {}), hints.get("mixed", {}),
                                       seen.get("number_types", {})))
    raise at_user_line("the branches of this tensor `if` could not be reconciled")


def _plain_objects(args):
    """(object, its attributes) for the user-class objects among ``args`` (not d2s's own)."""
    vals, _ = pytree.tree_flatten(tuple(args))
    return [(o, dict(vars(o))) for o in vals
            if hasattr(o, "__dict__") and not isinstance(o, (Tensor, type)) and not callable(o)
            and not type(o).__module__.startswith("d2s")]


def _refuse_changed_objects(objects):
    """A branch that rebinds an attribute of such an object through a call (``a.add(x)``
    setting ``self.total``) would change it while the program is built, for both branches:
    refused, naming the attribute (an assignment ``a.total = ...`` in the branch itself is
    carried by the `if`)."""
    for o, before in objects:
        now = vars(o)
        diff = [k for k in set(before) | set(now) if k not in before or k not in now or now[k] is not before[k]]
        if diff:
            for k in diff:  # back as it was: the error leaves the object untouched
                if k in before:
                    setattr(o, k, before[k])
                else:
                    delattr(o, k)
            raise at_user_line(
                f"a call inside this tensor `if` sets attribute {sorted(diff)[0]!r} of an object of class "
                f"{type(o).__name__}: "
                "to_static traces both branches, so the object would see both branches' writes. Assign the "
                f"attribute in the branch itself (`obj.{sorted(diff)[0]} = ...`), or return the new value from "
                "the call and assign it there")


def _fill_structures(out, out_names, fillable, fills, side):
    """An early-return result left undefined by one branch takes the other branch's structure
    (tuples of tensors and Python values) with zeros for its tensors: a flag guards every read."""
    if not fillable:
        return out
    out = list(out)
    for j, name in enumerate(out_names):
        if name not in fillable or j >= len(out):
            continue
        v = out[j]
        if isinstance(v, MaybeUnbound):  # the flag guarding every read stands for its own
            v = out[j] = v.value
        if isinstance(v, Undefined):
            if j in fills:
                out[j] = _placeholder(fills[j])
        elif isinstance(v, (tuple, list, dict)) and j not in fills:
            fills[j] = v
            if side == "false":
                raise _Retry(None)  # the true branch left it undefined: trace it again, filled
    return tuple(out)


def _binding(v):
    return "unbound" if isinstance(v, Undefined) else "maybe" if isinstance(v, MaybeUnbound) else "bound"


def _find_maybe_unbound(true_out, false_out, out_names, fillable, maybe):
    """Outputs bound on one side only (or maybe bound, on one side) become MaybeUnbound on
    both: a run-time flag says whether the branch taken bound them, and a later read checks
    it (Python raises UnboundLocalError there). Retries with the sample structure noted."""
    if _probing[0]:
        return  # a trial trace of a loop body: zeros stand in (see loops._fill_undefined)
    new = False
    for j, name in enumerate(out_names):
        if j in maybe or name in fillable or j >= len(false_out):
            continue
        t, f = true_out[j], false_out[j]
        if _binding(t) != _binding(f):
            sample = next(v for v in (t, f) if not isinstance(v, Undefined))
            maybe[j] = sample.value if isinstance(sample, MaybeUnbound) else sample
            new = True
    if new:
        raise _Retry(None)


def _key_binding(d, k):
    return "unbound" if k not in d else "maybe" if type(d[k]) is MaybeKey else "bound"


def _find_maybe_keys(true_out, false_out, maybe):
    """Keys of a dict output that one branch sets and the other does not (or that one holds on
    some runs only): the dict holds them on both sides as MaybeKeys (see convert/dict_keys.py),
    in one order that keeps each side's own. Retries with each key's sample noted."""
    new = False
    for j in range(min(len(true_out), len(false_out))):
        t, f = true_out[j], false_out[j]
        if type(t) is not dict or type(f) is not dict:
            continue
        order = list(t) + [k for k in f if k not in t]
        for side in (t, f):  # each side's keys in the same relative order on every run
            mine = [k for k in order if k in side]
            if mine != list(side):
                return  # (keys in another order on each side: the structure error names them)
        for k in order:
            if ("key", j, k) not in maybe and _key_binding(t, k) != _key_binding(f, k):
                sample = t[k] if k in t else f[k]
                maybe[("key", j, k)] = sample.value if type(sample) is MaybeKey else sample
                new = True
        if new or ("order", j) not in maybe:
            maybe[("order", j)] = tuple(order)
    if new:
        raise _Retry(None)


def _bind_maybe_keys(out, maybe):
    if not any(isinstance(j, tuple) for j in maybe):
        return out
    out = list(out)
    for j in {j for kind, j, *_ in (x for x in maybe if isinstance(x, tuple))}:
        d = out[j] if j < len(out) else None
        if type(d) is not dict:
            continue
        order = list(maybe.get(("order", j), ())) + [k for k in d if k not in maybe.get(("order", j), ())]
        bound = {}
        for k in order:
            if ("key", j, k) not in maybe:
                if k in d:
                    bound[k] = d[k]
            elif k not in d:
                bound[k] = MaybeKey(_placeholder(maybe[("key", j, k)]), tensor(False))
            else:
                bound[k] = d[k] if type(d[k]) is MaybeKey else MaybeKey(d[k], tensor(True))
        out[j] = bound
    note_created()
    return tuple(out)


def _bind_maybe_unbound(out, maybe):
    if not any(isinstance(j, int) for j in maybe):
        return out
    out = list(out)
    for j, sample in maybe.items():
        if not isinstance(j, int):
            continue
        v = out[j]
        out[j] = maybe_unbound(_placeholder(sample), False) if isinstance(v, Undefined) else maybe_unbound(v, True)
    return tuple(out)


def _placeholder(v):
    vals, skel = pytree.tree_flatten(v)
    return pytree.tree_unflatten(skel, [_zeros_like_type(x) if isinstance(x, Tensor) else x for x in vals])


def _label(labels, skel, k):
    """The user-facing name of leaf ``k`` (the top-level item it belongs to)."""
    count = 0
    for i, sub in enumerate(skel.children):
        count += sub.num_leaves
        if k < count:
            return labels[i] if i < len(labels) else f"output #{i}"
    return "a value"


def _number_dtype(a, b=None):
    vals = [v for v in (a, b) if v is not None]
    if any(isinstance(v, float) or (isinstance(v, np.generic) and v.dtype.kind == "f") for v in vals):
        return "float64"  # a Python float is a double (it stays weakly typed against tensors)
    if all(isinstance(v, bool) for v in vals):
        return "bool"
    return "int64"


def _normalize(side, vals, skel, seen, hints, labels, raw, fillable=(), none_fillable=False):
    """The tensors a branch returns to ``cond``; the true branch (traced first) records which
    leaves are tensors and which stay Python values, the false branch checks itself against it."""
    if side == "true":
        seen["then_block"] = STATE.builder.block
        # the vars the true branch ends with: a tensor object from outside that the false
        # branch updates in place points into the false branch's block while it is traced
        seen["true_vars"] = {id(v): v._var for v in vals if is_symbolic(v)}
        return _plan_true(vals, skel, seen, hints, raw)
    t_raw, t_vals, t_skel = seen["true"]
    if t_skel != skel:
        promote = _growing_lists(seen["true_out"], raw, t_skel, skel)
        if set(promote) - set(hints):
            raise _Retry({**hints, **promote})
        _structure_error(labels, t_skel, skel, raw)
    new_hints, out = dict(hints), []
    number_types = seen["number_types"] = {}
    mixed = find_mixed(t_raw, vals, lambda k: _label(labels, skel, k))
    if mixed:
        new_hints["mixed"] = mixed
    for k, (tr, tv, fv) in enumerate(zip(t_raw, t_vals, vals)):
        name = _label(labels, skel, k)
        t_undef, f_undef = isinstance(tv, Undefined), isinstance(fv, Undefined)
        if t_undef and f_undef:
            continue
        if t_undef or f_undef:
            other = fv if t_undef else tv
            if none_fillable and f_undef and tv is None and name in fillable:
                continue  # None on both paths: the true branch's constant None stands
            if (_probing[0] or name in fillable) and isinstance(other, Tensor):
                if t_undef:
                    new_hints[k] = ("zeros", other)
                else:
                    out.append(_zeros_like_type(other))
                continue
            if name in fillable and isinstance(other, _NUMBER) and not isinstance(other, Tensor):
                # a Python number returned on one side: a (weakly typed) tensor on both, which
                # the flag guarding every read hands back as the number eager code returns
                dtype = _number_dtype(other)
                if t_undef:
                    new_hints[k] = ("zeros", _number_tensor(other, dtype, ()))
                    continue
                new_hints[k] = ("tensor", dtype)
                continue
            side_def = "true" if f_undef else "false"
            if name in fillable and not isinstance(other, (Tensor, tuple, list, dict) + _NUMBER):
                raise at_user_line(
                    f"'{name}' is {describe(other)} when the {side_def} branch of this tensor `if` returns, and "
                    "comes from elsewhere otherwise: a Python value chosen by tensor data cannot be returned "
                    "by a program. Return tensors (or numbers) from both paths, or decide with Python values")
            raise at_user_line(
                f"'{name}' is defined only in the {side_def} branch of this tensor `if`, and is used "
                f"after it; define it before the `if` (or in both branches)")
        types = number_types_of(tr, fv)
        if types is not None and k not in mixed:
            # a Python number of one type on each side (1 and 0.5): one dtype holding both exactly
            # enough, and the predicate says which type eager code holds, run by run
            dtype = "float64" if float in types else "int64"
            number_types[k] = types
            if not (isinstance(tv, Tensor) and str(tv.dtype) == dtype):
                new_hints[k] = ("as", dtype, ()) if isinstance(tr, Tensor) else ("tensor", dtype)
            out.append(_tensor_as(fv, dtype, ()) if isinstance(fv, Tensor) else _number_tensor(fv, dtype, ()))
            continue
        if isinstance(tv, Tensor):
            if isinstance(fv, Tensor):
                if isinstance(tr, _NUMBER) and (fv.dtype != tv.dtype or fv.ndim != tv.ndim):
                    # a Python number on the true side: adopt the other side's dtype and shape
                    new_hints[k] = ("tensor", str(fv.dtype), _shape_for_number(fv))
                    continue
                if (fv.dtype != tv.dtype or fv.ndim != tv.ndim) and _stands_for_number(tr) and tv.ndim <= fv.ndim:
                    new_hints[k] = ("as", str(fv.dtype), _shape_for_number(fv))
                    continue
                if (fv.dtype != tv.dtype or fv.ndim != tv.ndim) and _stands_for_number(fv) and fv.ndim <= tv.ndim:
                    out.append(_tensor_as(fv, str(tv.dtype), _shape_for_number(tv)))
                    continue
                if fv.dtype != tv.dtype:
                    raise at_user_line(
                        f"'{name}' has dtype {tv.dtype} in the true branch of this tensor `if` and {fv.dtype} "
                        f"in the false branch; cast one of them (d2s.cast) so both match")
                if fv.ndim != tv.ndim and _size1_flags(tv, fv):
                    # bool flags of one element but different ranks (``done = False`` then
                    # ``done = s > 20`` with s of shape [1]): both take the higher rank
                    if fv.ndim > tv.ndim:
                        new_hints[k] = ("reshape", _shape_for_number(fv))
                        continue
                    out.append(ops.reshape(fv, list(_shape_for_number(tv))))
                    continue
                if fv.ndim != tv.ndim:
                    raise at_user_line(
                        f"'{name}' has rank {tv.ndim} in the true branch of this tensor `if` and {fv.ndim} in "
                        "the false branch; both branches must give it the same number of dimensions")
                out.append(fv)
            elif isinstance(fv, _NUMBER):
                out.append(_number_tensor(fv, str(tv.dtype), _shape_for_number(tv)))
            else:
                raise at_user_line(f"'{name}' is {describe(tv)} in the true branch of this tensor `if` but "
                                   f"{describe(fv)} in the false branch; both must be tensors")
            continue
        # the true branch left a Python value
        if isinstance(fv, Tensor):
            if isinstance(tv, _NUMBER):
                new_hints[k] = ("tensor", str(fv.dtype), _shape_for_number(fv))
                continue
            raise at_user_line(f"'{name}' is {describe(tv)} in the true branch of this tensor `if` but "
                               f"{describe(fv)} in the false branch; both must be tensors")
        if tv is fv:
            continue
        if isinstance(tv, _NUMBER) and isinstance(fv, _NUMBER):
            if not (type(tv) is type(fv) and tv == fv):
                new_hints[k] = ("tensor", _number_dtype(tv, fv))
            continue
        try:
            same = bool(tv == fv)
        except Exception:
            same = False
        if not same:
            raise at_user_line(f"'{name}' is {describe(tv)} in the true branch of this tensor `if` but "
                               f"{describe(fv)} in the false branch; a Python value that differs between "
                               "the branches of a tensor `if` cannot be represented in the program")
    if new_hints != hints:
        if _patch_true(seen, hints, new_hints):
            # the true branch's block now holds the tensors the hints ask for: check again
            hints.clear()
            hints.update(new_hints)
            return _normalize(side, vals, skel, seen, hints, labels, raw, fillable, none_fillable)
        raise _Retry(new_hints)
    # a value that is a Python int on both sides stays weakly typed after the merge, as the
    # Python int that eager code holds (``z + c`` keeps an int32 ``z`` int32)
    # (an undefined side, filled with a placeholder, counts as the other side's kind)
    seen["weak"] = {k for k, (tr, fv) in enumerate(zip(t_raw, vals))
                    if _is_weak_int(fv if isinstance(tr, Undefined) else tr)
                    and _is_weak_int(tr if isinstance(fv, Undefined) else fv)}
    # a Python float or bool on both sides (of one type) is a Python number after the merge too
    seen["weak"] |= {k for k, (tr, fv) in enumerate(zip(t_raw, vals))
                     if number_type(fv if isinstance(tr, Undefined) else tr) in (float, bool)
                     and number_type(tr if isinstance(fv, Undefined) else fv) is
                     number_type(fv if isinstance(tr, Undefined) else tr)}
    # a Python number on one side and a tensor on the other: which one eager code holds is
    # decided by the predicate, run by run (``return x.sum()`` in the `if`, ``return 0`` after)
    # (a Python constant is kept as it is: the merged tensor has the other side's dtype, which may
    # round it, 0.1 in float32)
    seen["number_on"] = {k: (number_type(tr) is not None, number_type(tr) or number_type(fv),
                             _constant(tr if number_type(tr) is not None else fv))
                         for k, (tr, fv) in enumerate(zip(t_raw, vals))
                         if k not in mixed and _is_plain_tensor(tr) + _is_plain_tensor(fv) == 1
                         and (number_type(tr) is not None) + (number_type(fv) is not None) == 1}
    return tuple(out)


def _plan_true(vals, skel, seen, hints, raw):
    """The true branch's outputs under ``hints``: which leaves are tensors (cond outputs) and
    which stay Python values; returns the tensors."""
    eff = [_make(hints[k], v) if k in hints else v for k, v in enumerate(vals)]
    kinds = ["T" if isinstance(v, Tensor) else "C" for v in eff]
    seen["true"] = (vals, eff, skel)
    seen["true_out"] = raw
    seen["plan"] = (skel, kinds, [None if k == "T" else v for k, v in zip(kinds, eff)])
    return tuple(v for v in eff if isinstance(v, Tensor))


def _patch_true(seen, hints, new_hints):
    """Apply hints that only turn Python numbers (or undefined values) of the true branch into
    tensors by adding those constants to its already traced block, instead of tracing both
    branches again: a retrace also retraces every nested `if` and loop. Returns False when a
    hint needs a real retrace (lists becoming TensorArrays)."""
    patches, blk = seen.get("patches"), seen.get("then_block")
    if patches is None or blk is None:
        return False
    if "mixed" in hints and new_hints.get("mixed") != hints["mixed"]:
        return False  # (the true branch's outputs end with the parts of other mixed values)
    t_raw = seen["true"][0]
    for k, h in new_hints.items():
        old = hints.get(k)
        if old is h or k == "mixed":
            continue
        if isinstance(k, tuple):
            return False  # a list becoming a TensorArray
        if old is not None and old[0] == h[0] and not isinstance(h[1], Tensor) and old[1] == h[1]:
            continue
        if not (
                (h[0] == "tensor" and isinstance(t_raw[k], _NUMBER)) or
                (h[0] == "zeros" and isinstance(t_raw[k], Undefined))):
            return False
    b = STATE.builder
    outer, b.block = b.block, blk
    try:
        tensors = _plan_true(t_raw, seen["true"][2], seen, new_hints, seen["true_out"])
        # (and the parts of the values that are numbers on some runs only: see find_mixed)
        tensors += mixed_parts(t_raw, new_hints.get("mixed", {}))
        ends = seen.get("true_vars", {})
        blk.outputs = [b.resolve(ends[id(t)].name, tensor=t) if id(t) in ends else b.var_of(t) for t in tensors]
    finally:
        b.block = outer
    b.block_leaves[blk] = list(tensors)  # (so `cond` sees which outside objects the branch returns)
    patches["tree"] = tree_flatten(tensors)[1]
    return True


def _constant(v):
    """``v`` if it is a Python number (not a tensor standing for one), else None."""
    return v if isinstance(v, (bool, int, float)) and not isinstance(v, Tensor) else None


def _is_plain_tensor(v):
    return isinstance(v, Tensor) and not isinstance(v, WeakNumber)


def _is_weak_int(v):
    return isinstance(v, WeakIndex) or (isinstance(v, int) and not isinstance(v, (bool, Tensor)))


def _growing_lists(t_out, f_out, t_skel, f_skel):
    """Retry hints turning each top-level output that is a list of tensors of one dtype on one
    side and a list of another length (or a TensorArray) on the other into a TensorArray on both
    sides: ``xs.append(v)`` under a tensor ``if`` makes a list whose length is known only at run
    time. The hint holds an element whose type an empty list's TensorArray takes. Outputs that
    differ otherwise are left to the structure check, which names them."""
    promote = {}
    for i, (a, b) in enumerate(zip(t_skel.children, f_skel.children)):
        if a == b:
            continue
        sides = (t_out[i], f_out[i])
        if not all(type(v) is list or isinstance(v, TensorArray) for v in sides):
            continue
        elems = [e for v in sides if type(v) is list for e in v]
        # (a 0-d stand-in for a Python number, x[i].item(), is a number too)
        numbers = [e for e in elems if (isinstance(e, _NUMBER) and not isinstance(e, Tensor)) or
                   (number_type(e) is not None and e.ndim == 0)]
        if numbers and not any(isinstance(v, TensorArray) for v in sides) and \
                all(not isinstance(e, Tensor) or e.ndim == 0 for e in elems) and \
                all(isinstance(e, (Tensor,) + _NUMBER) for e in elems):
            # Python numbers (with 0-d tensors such as a loop counter's multiples): a tensor list
            # of their common dtype; returned as Python numbers if no element is a tensor
            kind = "numbers" if len(numbers) == len(elems) else "scalars"
            promote[("list", i)] = (kind, numbers_dtype(elems))
            continue
        if elems and all(isinstance(e, (tuple, dict)) for e in elems) and \
                not any(isinstance(v, TensorArray) for v in sides):
            if struct_list_for(elems) is None:  # (zeros of the element types; never read)
                continue
            promote[("list", i)] = ("struct", tuple(elems))
            continue
        if not elems:
            # appended on one side only (the other left it as it was, empty): the element type
            # is the grown side's
            grown = [v for v in sides if isinstance(v, TensorArray) and v.data is not None]
            if not grown or type(grown[0]) not in (TensorArray, NumberList):
                continue
            kind = "numbers" if type(grown[0]) is NumberList else "scalars"
            promote[("list", i)] = (kind, str(grown[0].data.dtype)) if grown[0].data.ndim == 1 \
                else grown[0].element_zeros()
            continue
        if not all(isinstance(e, Tensor) and e.dtype == elems[0].dtype for e in elems):
            continue
        if any(isinstance(v, TensorArray) and (v.data is None or v.data.dtype != elems[0].dtype) for v in sides):
            continue
        promote[("list", i)] = elems[0]
    return promote


def _lists_as_arrays(out, hints):
    """Apply the ``_growing_lists`` hints: those outputs become TensorArrays."""
    out = list(out)
    for k, elem in hints.items():
        if isinstance(k, tuple) and k[1] < len(out) and type(out[k[1]]) is list:
            if isinstance(elem, tuple) and elem[0] == "struct":  # lists of tuples of tensors
                ta = struct_list_for(elem[1])
            elif isinstance(elem, tuple):  # ("numbers" or "scalars", dtype)
                ta = (NumberList if elem[0] == "numbers" else TensorArray).like(tensor(0, dtype=elem[1]))
            else:
                ta = TensorArray.like(_zeros_like_type(elem))
            for e in out[k[1]]:
                ta.append(e)
            out[k[1]] = ta
    return tuple(out)


def _make(hint, v):
    if hint[0] == "zeros":
        return _zeros_like_type(hint[1])
    if hint[0] == "as":
        return _tensor_as(v, hint[1], hint[2])
    if hint[0] == "reshape":
        return ops.reshape(v, list(hint[1])) if isinstance(v, Tensor) else _number_tensor(v, "bool", hint[1])
    if isinstance(v, Tensor):
        return v
    return _number_tensor(v, hint[1], hint[2] if len(hint) > 2 else ())


def _stands_for_number(v):
    """A tensor carrying what eager code holds as a Python number (a loop variable that started
    as one, an int merged by a tensor `if`): it may take the other branch's type."""
    return isinstance(v, WeakNumber)


def _tensor_as(t, dtype, shape):
    """``t`` (standing for a Python number) cast to ``dtype`` and broadcast to ``shape``."""
    if str(t.dtype) != dtype:
        t = ops.cast(t, dtype)
    have = t._var.type.shape if t.is_symbolic else t.shape
    if tuple(have) != tuple(shape):
        t = ops.broadcast_to(t, list(shape))
    return t


def _size1_flags(a, b):
    """Whether ``a`` and ``b`` are bool tensors known to hold one element each."""
    def one(t):
        shape = t._var.type.shape if t.is_symbolic else t.shape
        return all(d == 1 for d in shape)
    return a.dtype == "bool" and b.dtype == "bool" and one(a) and one(b)


def _shape_for_number(t):
    """The shape a Python number on the other side of a tensor `if` takes to merge with ``t``
    (unknown dims as 1: the merged type widens them)."""
    shape = t._var.type.shape if t.is_symbolic else t.shape
    return tuple(d if isinstance(d, int) else 1 for d in shape)


def _number_tensor(v, dtype, shape):
    return ops.full(list(shape), v, dtype=dtype) if shape else tensor(v, dtype=dtype)


def _zeros_like_type(t):
    """Zeros with ``t``'s dtype and shape (unknown dims as 1): a placeholder never read."""
    shape = [d if isinstance(d, int) else 1 for d in (t._var.type.shape if t.is_symbolic else t.shape)]
    z = ops.zeros(*shape, dtype=str(t.dtype)) if shape else ops.zeros((), dtype=str(t.dtype))
    # standing in for a Python number, so does its placeholder (the merge keeps it a number)
    return number_stand_in(z) if isinstance(t, WeakNumber) else z


def _structure_error(labels, t_skel, f_skel, raw):
    for i, (a, b) in enumerate(zip(t_skel.children, f_skel.children)):
        if a != b:
            name = labels[i] if i < len(labels) else f"output #{i}"
            if a.node_type is dict and b.node_type is dict and list(a.node_data) != list(b.node_data):
                only = [k for k in a.node_data if k not in b.node_data] + [k for k in b.node_data if k not in a.node_data]
                raise at_user_line(
                    f"the dict '{name}' has keys {list(a.node_data)} after the true branch of this tensor `if` and "
                    f"{list(b.node_data)} after the false branch: Python's dict would hold {only} on some runs only, "
                    f"which a program cannot represent. Assign {name}[{only[0]!r}] before the `if` (or in both "
                    "branches)")
            raise at_user_line(f"'{name}' has a different structure in the two branches of this tensor `if` "
                               f"({_fmt(a)} vs {_fmt(b)}); both branches must give it the same nesting of "
                               "tuples, lists and dicts")
    raise at_user_line("the branches of this tensor `if` give different structures")


def _fmt(s):
    if s.node_type is None:
        return "a value"
    if s.node_type is dict:
        return f"dict with keys {list(s.node_data)}"
    if not issubclass(s.node_type, (list, tuple)):  # a TensorArray (a registered pytree node)
        return "a list grown in a tensor loop or branch"
    return f"{s.node_type.__name__} of {len(s.children)}"


# ------------------------------------------------------------------ pinned Python control flow
def python_cond(value, kind, reason):
    """``value`` for an ``if``/``while`` that must stay Python; a symbolic tensor is an error."""
    if is_symbolic(value):
        raise at_user_line(f"a tensor-dependent `{kind}` {reason} is not supported by to_static: the "
                           f"condition is a symbolic tensor here. Move the `{kind}` out of it, or compute the "
                           "condition from Python values", ConvertError)
    return value
