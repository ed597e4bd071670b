"""``convert_call(f)``: what converted code calls instead of ``f``.

User functions (plain functions, methods, nested defs, a module's ``forward``) are converted
on first use and cached per function object; builtins that matter for tensors map to their
tensor-aware versions; library code (the standard library, site-packages, numpy, d2s itself)
functions marked ``__d2s_not_to_static__`` and generator functions (they run as Python) are
returned unchanged.
"""
import builtins
import functools
import inspect
import os
import sys
import sysconfig
import types
import weakref

from .. import ops
from .._state import STATE
from ..autograd import functional
from ..static.tensor_array import TensorArray
from ..tensor import Tensor
from . import builtins as cb, dict_keys
from .loops import convert_enumerate, convert_range, convert_zip
from .values import is_symbolic

_BUILTINS = {
    builtins.len: cb.convert_len, builtins.print: cb.convert_print, builtins.int: cb.convert_int,
    builtins.float: cb.convert_float, builtins.bool: cb.convert_bool, builtins.range: convert_range,
    builtins.enumerate: convert_enumerate, builtins.zip: convert_zip,
    builtins.isinstance: cb.convert_isinstance, builtins.max: cb.convert_max, builtins.min: cb.convert_min,
    builtins.abs: cb.convert_abs, builtins.list: cb.convert_list, builtins.type: cb.convert_type,
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
    g = _convert_call(f)
    if dict_keys.active() and _runs_unconverted(f, g):
        # its own reads of a dict's keys would not be checked (see convert/dict_keys.py)
        return dict_keys.guard(g, f)
    return g


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
