"""``convert_call(f)``: what converted code calls instead of ``f``.

User functions (plain functions, methods, nested defs, a module's ``forward``) are converted
on first use and cached per function object; builtins that matter for tensors map to their
tensor-aware versions; library code (the standard library, site-packages, numpy, d2s itself)
functions marked ``__d2s_not_to_static__`` and generator functions (they run as Python) are
returned unchanged. Calls whose value changes from call to call (``random``, ``numpy.random``,
clocks) are refused while a program is built (``varies_per_call``).
"""
import builtins
import datetime
import functools
import inspect
import os
import random
import sys
import sysconfig
import threading
import time
import types
import uuid
import warnings
import weakref

import numpy as np

from .. import ops
from .._state import STATE
from ..autograd import functional
from ..static.tensor_array import TensorArray
from ..tensor import Tensor
from . import builtins as cb, dict_keys, range_loops
from .iterables import convert_enumerate, convert_range, convert_zip
from .printing import convert_print
from ..user_errors import ConvertError, at_user_line
from .values import is_symbolic

_BUILTINS = {
    builtins.len: cb.convert_len, builtins.print: convert_print, builtins.int: cb.convert_int,
    builtins.float: cb.convert_float, builtins.bool: cb.convert_bool, builtins.range: convert_range,
    builtins.enumerate: convert_enumerate, builtins.zip: convert_zip,
    builtins.isinstance: cb.convert_isinstance, builtins.max: cb.convert_max, builtins.min: cb.convert_min,
    builtins.abs: cb.convert_abs, builtins.list: cb.convert_list, builtins.type: cb.convert_type,
    builtins.next: range_loops.convert_next,
}


def _library_overrides():
    """d2s functions that must accept a TensorArray where users pass a list, and d2s's
    function transforms, whose function argument is converted so its control flow on tensors
    builds graph ops (the transform itself runs inside the program)."""
    out = {ops.stack: cb.convert_stack, ops.concat: cb.convert_concat, ops.cat: cb.convert_concat,
           ops.concatenate: cb.convert_concat, ops.add_n: cb.convert_add_n}
    for fn in (functional.jacobian, functional.hessian, functional.vjp, functional.jvp):
        out[fn] = _converting_first_argument(fn)
    return out


def _converting_first_argument(transform):
    """``transform(func, ...)`` with ``func`` converted first."""
    @functools.wraps(transform)
    def call(func, *args, **kwargs):
        return transform(convert_call(func), *args, **kwargs)
    call.__d2s_converted__ = True
    return call


def convert_transform(f):
    """A d2s function transform (``d2s.func.grad(g)`` and the like, tagged
    ``__d2s_transform__``) rebuilt around the converted ``g``: the transform is applied inside
    the program, never unwrapped to ``g`` and never converted from d2s's own source."""
    return f.__d2s_transform__(convert_call(f.__d2s_transform_of__))

_LIBRARY_MODULES = {"d2s", "d2s_runtime", "numpy", "cupy", "gast", "functools", "itertools",
                    "builtins", "math", "operator", "collections", "typing", "abc", "copy"}
_LIBRARY_DIRS = tuple(os.path.abspath(p) + os.sep for p in {
    sysconfig.get_paths().get("stdlib", ""), sysconfig.get_paths().get("purelib", ""),
    sysconfig.get_paths().get("platlib", ""), sys.prefix} if p)

_OVERRIDES = None
_TENSOR_ITEM = [Tensor.item]
_converted = weakref.WeakKeyDictionary()  # original function -> converted function (or itself)


def is_library(fn):
    """Whether ``fn`` belongs to code that is never converted."""
    module = getattr(fn, "__module__", None) or ""
    if module.split(".")[0] in _LIBRARY_MODULES:
        return True
    code = getattr(fn, "__code__", None)
    if code is None:
        return True
    filename = code.co_filename
    if filename.startswith("<"):
        return True
    path = os.path.abspath(filename)
    return "site-packages" in path or path.startswith(_LIBRARY_DIRS)


# The source conversion of a callee lives one layer up, in d2s.transformers, which hands it
# here when it loads (converted code, the only caller of convert_call, comes from that layer).
_source_converter = None


def set_source_converter(convert):
    """Sets ``convert(fn)``, which gives ``fn`` converted (or ``fn`` itself when its source cannot
    be read); called by d2s.transformers."""
    global _source_converter
    _source_converter = convert


def _convert_function(fn):
    try:
        return _converted[fn]
    except (KeyError, TypeError):
        pass
    if fn.__code__.co_flags & inspect.CO_GENERATOR:
        # a generator runs as Python: its loops unroll as it is consumed, and a tensor
        # condition inside it raises at its line (a generator cannot become graph ops)
        new = fn
    else:
        if _source_converter is None:
            raise RuntimeError("convert_call converts a function's source through d2s.transformers, which "
                               "is not loaded; import d2s.transformers (or use d2s.jit.to_static) first")
        new = _source_converter(fn)
    try:
        _converted[fn] = new
    except TypeError:
        pass
    return new


def _append_watched(array, x):
    """``array.append(x)`` on a tensor list of a program: the list holds the tensor object ``x``
    in eager code, so an in-place update of ``x`` after the append must reach the list
    (``ProgramBuilder.note_appended``)."""
    out = array.append(x)
    if is_symbolic(x):
        STATE.builder.note_appended(x, array)
    return out


def convert_call(f):
    """The callable converted code should call in place of ``f``."""
    builder = STATE.builder
    guards = None
    if builder is not None:
        if varies_per_call(f):
            raise at_user_line(_per_call_message(f), ConvertError)
        guards = getattr(builder, "object_guards", None)
        if guards is not None:  # what it reads through objects is checked on later calls
            guards.note_call(f)
    g = _convert_call(f)
    outside = getattr(builder, "outside_watch", None) if builder is not None else None
    if outside is not None and ((g is not f and not _runs_unconverted(f, g)) or
                                (getattr(f, "__name__", None) == "<lambda>" and not is_library(f))):
        # converted code (or a user's lambda) must not change the lists and dicts that outlive
        # the call (see jit.side_effects.OutsideWatch); a function marked not_to_static, or a
        # library's, runs as Python while the program is built, as its author chose
        outside.note_call(f)
    if guards is not None:  # (and what it reads through its arguments, when it is called)
        g = guards.watch_arguments(f, g)
    if dict_keys.active() and _runs_unconverted(f, g):
        # its own reads of a dict's keys would not be checked (see convert/dict_keys.py)
        return dict_keys.guard(g, f)
    return g


# Python calls whose value changes from one call to the next (random draws, clocks): converted
# code runs them once, while the program is built, and every call of the program would reuse the
# value. They are refused at the user's line (see varies_per_call), never frozen in silence.
_CLOCKS = {"time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
           "process_time_ns", "thread_time", "thread_time_ns"}
_RANDOM_MODULES = ("random", "secrets", "numpy.random")


def _random_states():
    return (random.Random, np.random.RandomState, np.random.Generator, np.random.BitGenerator)


def varies_per_call(f):
    """Whether calling ``f`` gives a new value each time, by design: a function or method of
    Python's ``random`` or ``secrets``, of ``numpy.random`` (its generators too), a clock of
    ``time``, ``datetime``'s ``now``/``today``, ``os.urandom``, ``uuid.uuid1``/``uuid4``."""
    try:
        owner = getattr(f, "__self__", None)
        name = getattr(f, "__name__", "")
        module = getattr(f, "__module__", None) or ""
        if isinstance(owner, _random_states()):
            return True
        if module in _RANDOM_MODULES or module.startswith("numpy.random"):
            return True
        if owner is time and name in _CLOCKS:
            return True
        if owner in (datetime.datetime, datetime.date) and name in ("now", "utcnow", "today"):
            return True
        return f in (os.urandom, uuid.uuid1, uuid.uuid4)
    except Exception:  # noqa: BLE001 - an object that cannot be inspected is an ordinary callable
        return False


def _per_call_message(f):
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    owner = getattr(f, "__self__", None)
    if name.startswith("Random.") and owner is getattr(random, "_inst", None):
        name = "random." + name.split(".", 1)[1]
    if isinstance(owner, np.random.RandomState) and owner is getattr(np.random.mtrand, "_rand", None):
        name = "numpy.random." + name.split(".", 1)[1]
    return (f"`{name}(...)` gives a new value on each eager call, but converted code runs it once, while the "
            "program is built, and every later call of the program would reuse that value. Draw inside the "
            "program with d2s's random ops, which draw on every call (d2s.rand, d2s.randn, d2s.randint(low, "
            "high, size): high excluded, so random.randint(a, b) is d2s.randint(a, b + 1, ())), or compute the value "
            "outside the converted function and pass it in as an argument (a Python number gives one program "
            "per value, a tensor one program for all)")


def python_rng_states():
    """The states of Python's and numpy's global random generators."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return random.getstate(), keys.tobytes(), pos, has_gauss, gauss


def refuse_frozen_draws(name, before):
    """After a build that started with the global generators in state ``before``: a draw made
    while the program was built, by code the converter does not see (a lambda, a library
    function, a not_to_static one; in converted code itself the call is refused at its line),
    is refused, since every call of the program would reuse it. With other Python threads
    alive the draw may be theirs: a warning then, not an error."""
    if python_rng_states() == before:
        return
    message = (f"building the program of {name} drew from Python's `random` or numpy's global `numpy.random` "
               "generator (in a lambda, a library function or a function marked not_to_static, which run as "
               "Python while the program is built): every call of the program would reuse that draw, where eager "
               "code draws anew each call. Draw with d2s's random ops (d2s.rand, d2s.randn, d2s.randint), which "
               "draw on every call, or pass the value in as an argument")
    if threading.active_count() > 1:
        warnings.warn(message + " (or another thread drew meanwhile)", UserWarning, stacklevel=2)
        return
    raise ConvertError(message)


def _runs_unconverted(f, g):
    """Whether ``g``, what converted code calls for ``f``, is not converted source: ``f``
    itself (a builtin, a library function, a dict's method) or one of d2s's stand-ins."""
    if g is f:
        return not (isinstance(f, (types.FunctionType, types.MethodType)) and
                    getattr(f, "__code__", getattr(getattr(f, "__func__", None), "__code__", None)) is not None
                    and f.__name__ != "<lambda>" and not is_library(getattr(f, "__func__", f)))
    return not isinstance(g, (types.FunctionType, types.MethodType)) or \
        getattr(g, "__module__", "").startswith("d2s.convert")


def _convert_call(f):
    try:
        mapped = _BUILTINS.get(f)
    except TypeError:  # unhashable callable
        mapped = None
    if mapped is None:
        global _OVERRIDES
        if _OVERRIDES is None:
            _OVERRIDES = _library_overrides()
        try:
            mapped = _OVERRIDES.get(f)
        except TypeError:
            mapped = None
    if mapped is not None:
        return mapped
    if isinstance(f, types.FunctionType) and getattr(f, "__d2s_transform__", None) is not None:
        return convert_transform(f)
    if getattr(f, "__d2s_not_to_static__", False) or getattr(f, "__d2s_converted__", False):
        return f
    target = getattr(f, "_d2s_convert_target", None)  # e.g. a StaticFunction called from converted code
    if target is not None:
        return convert_call(target)
    if isinstance(f, types.FunctionType):
        if f.__name__ == "<lambda>" or is_library(f):
            return f
        return _convert_function(f)
    if isinstance(f, types.MethodType):
        func = f.__func__
        if func is _TENSOR_ITEM[0] and is_symbolic(f.__self__):
            return functools.partial(cb.convert_item, f.__self__)
        if func is TensorArray.append and STATE.builder is not None:
            return functools.partial(_append_watched, f.__self__)
        if isinstance(func, types.FunctionType) and not is_library(func) and \
                not getattr(func, "__d2s_not_to_static__", False) and func.__name__ != "<lambda>":
            return types.MethodType(_convert_function(func), f.__self__)
        return f
    if _is_module(f):
        forward = getattr(f, "forward", None)
        if isinstance(forward, types.MethodType):
            if f._has_hooks():  # the module's forward hooks run around the converted forward
                return functools.partial(_call_with_hooks, f, convert_call(forward))
            return convert_call(forward)
        return f
    return f


def _is_module(obj):
    mod = sys.modules.get("d2s.nn.module")
    return mod is not None and isinstance(obj, mod.Module)


def _call_with_hooks(module, forward, *args, **kwargs):
    return module._call_with_hooks(forward, args, kwargs)
