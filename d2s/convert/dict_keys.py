"""Dict keys that a tensor ``if`` sets in one branch only, or a tensor loop first sets in its body.

Python's dict holds such a key on some runs only. The converted dict holds it on every run, its
value a ``MaybeKey`` (a ``MaybeUnbound``: the value, and a bool tensor saying whether the run
took the path that set it), carried by later branches and loops as two leaves. Uses give
Python's answers where the program can compute them:

- ``d[k]`` checks the flag when the program runs: KeyError(k) where the key is absent, as
  Python raises (``getitem``);
- ``k in d`` is the flag, a bool standing in for Python's bool (``contains``);
- ``d.get(k, default)`` selects between the value and a default of the value's dtype and shape;
- ``d[k] = v`` binds the key on every run, in the place Python gives it (see ``setitem``);
- a program returning such a dict returns it when the key is set and raises otherwise.

Anything else that sees the set of keys (``len``, iteration, ``keys()``/``items()``, passing
the dict to a library function, printing it) is refused at the user's line, naming the dict's
key: its answer would depend on a tensor, which a Python value cannot.
"""
from .. import ops
from .._state import STATE
from ..static.weak_index import number_stand_in, number_type
from ..tensor import Tensor
from ..user_errors import ConvertError, at_user_line
from .builtins import assert_op
from .undefined import MaybeKey, MaybeUnbound
from .values import is_symbolic


def partial_keys(d):
    """The keys of plain dict ``d`` that it holds on some runs only."""
    if type(d) is not dict:
        return []
    return [k for k, v in d.items() if type(v) is MaybeKey]


def _error(d, what):
    k = partial_keys(d)[0]
    return at_user_line(f"{what} a dict whose key {k!r} was set on some runs only (in one branch of a tensor "
                        f"`if`, or first inside a tensor loop): Python's answer depends on the data, which a "
                        f"Python value cannot. Set {k!r} before the `if` or loop (or in both branches), or "
                        f"read it as d[{k!r}]", ConvertError)


def refuse(value, what):
    """``value``, unless it is such a dict (then a clear error at the user's line)."""
    if type(value) is dict and partial_keys(value):
        raise _error(value, what)
    return value


def plain_iterable(value):
    """A comprehension's iterable: such a dict is refused (its keys depend on the run)."""
    return refuse(value, "iterating over")


def checked_unpack(value):
    """The value of ``a, b = value``: such a dict is refused (its keys depend on the run)."""
    return refuse(value, "unpacking")


def checked_compare(value):
    """An operand of ``==``/``!=``: such a dict is refused (its key set depends on the run)."""
    return refuse(value, "comparing (==)")


def symbolic_key(d, key, what):
    """Refuses a key known only when the program runs where eager code looks one up by value.
    A tensor standing for a Python number (a tensor loop's counter, ``len`` of a list grown in
    one) is a number eagerly, which finds the key equal to it; the program cannot choose a key
    by value. Another tensor is looked up by identity, eagerly too: not among the keys, it
    raises KeyError, saying why."""
    if not is_symbolic(key) or not isinstance(d, dict):
        return
    try:
        if key in d:
            return  # this very tensor object is a key
    except TypeError:
        return
    if number_type(key) is not None:
        raise at_user_line(
            f"{what} a dict at a {number_type(key).__name__} known only when the program runs (a counter of a "
            "tensor loop, or a number computed from tensors): eager code finds the key equal to it, but a "
            "program cannot pick a dict entry by a run-time value. Keep the values in a list or a tensor and "
            "index that, or make the loop a Python loop (pass its bound as a Python int)", ConvertError)
    if what == "reading":
        raise at_user_line(
            "a tensor used as a dict key is looked up by identity (tensors hash by id, eagerly too), and no "
            "key of this dict is this tensor object; use a Python value as the key", KeyError)


def getitem(d, key):
    """``d[key]`` for such a dict: the value, checked when the program runs (KeyError(key))."""
    symbolic_key(d, key, "reading")
    v = d[key]
    if type(v) is not MaybeKey:
        return v
    if not is_symbolic(v.bound):
        if not bool(v.bound):
            raise at_user_line(repr(key), KeyError)
        return v.value
    assert_op(v.bound, repr(key), "KeyError")
    return v.value


def setitem(d, key, value):
    """``d[key] = value``. Setting a key held on some runs only keeps its place, which is
    Python's place on runs that held it; on runs that did not, Python appends it, so the place
    is Python's as long as no later key is held then: with a later key held on every run that
    is refused here, with later keys held on some runs only the program checks it when it
    runs (the run-time error stands for an order the program could not give)."""
    symbolic_key(d, key, "writing into")
    old = d.get(key) if type(d) is dict else None
    if type(old) is MaybeKey:
        later = list(d)[list(d).index(key) + 1:]
        if later:
            if any(type(d[k]) is not MaybeKey for k in later):
                raise at_user_line(
                    f"setting key {key!r} of a dict that holds it on some runs only (set in one branch of a "
                    f"tensor `if`, or first inside a tensor loop), after later keys that it holds on every "
                    f"run: Python's key order would then depend on the data. Set {key!r} before the `if` or "
                    "loop", ConvertError)
            held = d[later[0]].bound
            for k in later[1:]:
                held = ops.logical_or(held, d[k].bound)
            ok = ops.logical_or(old.bound, ops.logical_not(held))
            if is_symbolic(ok):
                assert_op(ok, f"setting key {key!r} of a dict that did not hold it on this run while it held later "
                              "keys (set in a tensor `if` or loop): Python's key order would differ from the "
                              f"program's; set {key!r} before the `if` or loop", "RuntimeError")
            elif not bool(ok):
                raise at_user_line(f"setting key {key!r} of a dict that does not hold it while it holds later "
                                   "keys: Python's key order would differ from the program's", ConvertError)
    d[key] = value


def convert_in(key, container, negate=False):
    """``key in container`` (``not in`` with ``negate``): for a key a dict holds on some runs
    only, whether this run holds it (a bool tensor standing in for Python's bool)."""
    if type(container) is dict:
        symbolic_key(container, key, "looking up a key of")
        try:
            v = container.get(key)
        except TypeError:
            v = None
        if type(v) is MaybeKey:
            if not is_symbolic(v.bound):
                return bool(v.bound) != negate
            return number_stand_in(ops.logical_not(v.bound) if negate else v.bound)
    return (key not in container) if negate else (key in container)


def dict_get(d, key, default=None):
    """``d.get(key, default)`` for such a dict: the value where the key is set, else ``default``,
    when both are tensors of one dtype and shape (else refused: the result's type would
    depend on the run)."""
    symbolic_key(d, key, "looking up a key of")
    v = d.get(key)
    if type(v) is not MaybeKey:
        return d.get(key, default)
    a = v.value
    if isinstance(a, Tensor) and isinstance(default, Tensor) and str(a.dtype) == str(default.dtype) and \
            tuple(a.shape) == tuple(default.shape):
        return ops.where(v.bound, a, default)
    raise at_user_line(f"d.get({key!r}, default) on a dict that holds {key!r} on some runs only: the value and "
                       "the default must be tensors of one dtype and shape for the program to choose between "
                       "them; set the key before the `if` or loop", ConvertError)


def guard(f, user_f=None):
    """``f`` (a callable converted code calls without converting it: a builtin, a library
    function, a dict's method; ``user_f``: what the user's code named, for messages) checked for
    such dicts among its arguments; a dict's ``get`` gives the answer above."""
    name = getattr(user_f if user_f is not None else f, "__name__", "a function")
    owner = getattr(f, "__self__", None)
    if type(owner) is dict and partial_keys(owner):
        if getattr(f, "__name__", "") == "get":
            return lambda *a: dict_get(owner, *a)
        if getattr(f, "__name__", "") in ("__getitem__",):
            return lambda k: getitem(owner, k)
        raise _error(owner, f"calling .{getattr(f, '__name__', '?')}() of")

    def call(*args, **kwargs):
        for a in (*args, *kwargs.values()):
            refuse(a, f"passing to {name}()")
        return f(*args, **kwargs)
    return call


def active():
    """Whether the program being built holds such dicts (only then are calls guarded)."""
    b = STATE.builder
    return b is not None and getattr(b, "partial_dicts", False)


def note_created():
    b = STATE.builder
    if b is not None:
        b.partial_dicts = True
