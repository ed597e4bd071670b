"""``to_static`` and ``not_to_static``: the decorators of the dynamic-to-static API; and
TorchScript's names (``script``, ``ignore``, ``unused``, ``export``, ``is_scripting``,
``is_tracing``, ``Final``, ``Attribute``, ``annotate``) as conversion hints, so PyTorch model
files run with their ``torch.jit`` decorators in place."""
import functools
import inspect

from .._state import STATE
from ..nn.module import Module
from . import config
from .static_function import SourceUnavailableError, StaticFunction


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False):
    """``torch.compile`` as PyTorch scripts call it, mapped onto :func:`to_static`: the model
    (or function) runs as static programs whose results equal eager ones.

    Args:
        model: an ``nn.Module`` or a function (omitted: a decorator).
        fullgraph: True raises where a function's source cannot be read (``to_static``'s
            ``fallback=False``) instead of running it eagerly with a warning.
        dynamic, mode, options: accepted; d2s decides its programs by input signature.
        backend: ``'python'``, ``'native'`` or ``'auto'`` choose d2s's backend; PyTorch's
            backend names (``'inductor'``, ...) keep d2s's default.
        disable: True returns ``model`` unchanged, as PyTorch's does.

    Returns:
        What :func:`to_static` returns: a module is converted in place and returned (so its
        ``state_dict`` keys stay the module's own, without PyTorch's ``_orig_mod.`` prefix).
    """
    del dynamic, mode, options  # (d2s's programs follow the input signatures they meet)
    d2s_backend = backend if backend in ("python", "native", "auto") else None
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, backend=backend, disable=disable)
    if disable:
        return model
    return to_static(model, fallback=not fullgraph, backend=d2s_backend)


def to_static(fn=None, *, input_spec=None, fallback=True, check_numerics=False, backend=None):
    """Run a function, method or ``nn.Module`` as static programs, converting its Python control
    flow on tensors into graph ops.

    Use bare (``@to_static``) or with arguments (``@to_static(input_spec=[InputSpec([None, 8])])``).

    Args:
        fn: a function, a bound method, a lambda, a ``functools.partial`` of one of those, or an
            ``nn.Module``. For a module, the same module is
            returned with ``forward`` replaced by a :class:`StaticFunction` bound to it, so
            ``module(x)`` runs the program and ``module.forward.programs`` lists its programs;
            its parameters and buffers are program inputs read at every call.
        input_spec: ``InputSpec``s for the positional arguments (``None`` dims are dynamic, so one
            program serves every size there); without it, one program per input signature
            (shapes, dtypes, Python argument values, training flag).
        check_numerics: check every call's outputs for NaN/inf and, when one holds them, raise
            ``d2s.autograd.NumericsError`` naming the op of the program (and the line of the
            user's source that built it) that first produced them from finite inputs.
        fallback: what to do when the source cannot be read (a lambda, REPL or ``exec`` code):
            ``True`` (the default) runs the function eagerly with a warning; ``False`` raises
            ``SourceUnavailableError``, as does ``d2s.jit.config.strict = True`` globally.
            ``StaticFunction.is_static`` tells which one happens.
        backend: ``'python'``, ``'native'`` or ``'auto'`` (``None``: ``d2s.jit.config.backend``,
            ``'python'`` unless changed): with ``'native'``, each program is also compiled by
            numba in the background and runs natively once ready (the Python backend runs
            until then, and wherever the native one cannot: ``StaticFunction.backend_report()``
            says why). See the documentation's page on the native backend (``docs/native.md``).

    Returns:
        A :class:`StaticFunction` (the module itself for a module; for a partial, a partial
        binding the same arguments to the converted function, reachable as ``.func``); ``fn``
        unchanged if it was marked with :func:`not_to_static`.
    """
    if fn is None:
        return lambda f: to_static(f, input_spec=input_spec, fallback=fallback, check_numerics=check_numerics,
                                   backend=backend)
    if isinstance(fn, Module):
        _convert_exported(fn, backend)
        forward = fn.__dict__.get("forward") or type(fn).forward
        if isinstance(forward, StaticFunction):
            if forward._instance is fn and input_spec is None and not check_numerics and backend is None:
                return fn
            backend = backend if backend is not None else forward._backend
            forward = forward._fn
        elif inspect.ismethod(forward):
            forward = forward.__func__
        sf = StaticFunction(forward, input_spec=input_spec, instance=fn, fallback=fallback,
                            check_numerics=check_numerics, backend=backend)
        object.__setattr__(fn, "forward", sf)
        return fn
    if isinstance(fn, StaticFunction):
        if input_spec is None and fallback == fn._fallback and not check_numerics and backend is None:
            return fn
        return StaticFunction(fn._fn, input_spec=input_spec if input_spec is not None else fn._input_spec,
                              instance=fn._instance, _conversion=fn._conversion, fallback=fallback,
                              check_numerics=check_numerics,
                              backend=backend if backend is not None else fn._backend)
    if getattr(fn, "__d2s_not_to_static__", False):
        return fn
    if isinstance(fn, functools.partial):
        return _partial(fn, input_spec, backend)
    if inspect.ismethod(fn):
        return StaticFunction(fn.__func__, input_spec=input_spec, instance=fn.__self__, fallback=fallback,
                              check_numerics=check_numerics, backend=backend)
    if not callable(fn):
        raise TypeError(f"to_static expects a function, a method or an nn.Module, got {type(fn).__name__}")
    if not inspect.isfunction(fn):
        call = getattr(type(fn), "__call__", None)
        if inspect.isfunction(call):  # a callable object: convert its __call__, bound to it
            return StaticFunction(call, input_spec=input_spec, instance=fn, fallback=fallback,
                                  check_numerics=check_numerics, backend=backend)
        raise TypeError(f"to_static cannot convert {fn!r}: it is not a Python function (builtins and "
                        "C functions have no source to convert)")
    sf = StaticFunction(fn, input_spec=input_spec, fallback=fallback, check_numerics=check_numerics, backend=backend)
    if not fallback or config.strict:
        try:
            sf._converted()  # refuse now, where the user asked for a program, not at the first call
        except SourceUnavailableError:
            raise
        except Exception:  # noqa: BLE001 - other conversion errors surface at the first call, as usual
            pass
    return sf


def not_to_static(fn):
    """Leave ``fn`` as plain Python: converted code calls it as is, without converting it."""
    fn.__d2s_not_to_static__ = True
    return fn


def _partial(p, input_spec, backend=None):
    """``to_static(functools.partial(f, *args, **kw))``: ``f`` converted, the same arguments
    bound. The bound arguments are passed on every call, so a bound tensor is a program input
    and a bound Python value part of the program's signature, as if the caller passed them;
    ``input_spec`` describes the arguments the partial is called with."""
    if input_spec is not None and p.args and not isinstance(input_spec, dict):
        specs = list(input_spec) if isinstance(input_spec, (list, tuple)) else [input_spec]
        input_spec = [None] * len(p.args) + specs
    inner = to_static(p.func, input_spec=input_spec, backend=backend)
    return functools.partial(inner, *p.args, **p.keywords)


# ------------------------------------------------------------------ TorchScript's names
def _convert_exported(module, backend):
    """Methods marked with :func:`export` anywhere in ``module``'s tree become StaticFunctions
    bound to their module (``d2s.jit.save`` then writes each under ``methods/``)."""
    for m in module.modules():
        for klass in type(m).__mro__:
            for name, value in vars(klass).items():
                if getattr(value, "__d2s_export__", False) and name != "forward" and \
                        not isinstance(m.__dict__.get(name), StaticFunction):
                    object.__setattr__(m, name, StaticFunction(value, instance=m, backend=backend))


def export(fn):
    """TorchScript's ``@torch.jit.export``: mark a module method to be converted along with
    ``forward`` when the module is (``to_static(module)`` converts it too, and
    ``d2s.jit.save`` writes its program under ``methods/<name>/``)."""
    fn.__d2s_export__ = True
    return fn


def ignore(fn=None, drop=False):
    """TorchScript's ``@torch.jit.ignore`` (with or without ``drop=``): the function stays plain
    Python, called as it is by converted code (as :func:`not_to_static`)."""
    if fn is None:
        return lambda f: ignore(f, drop=drop)
    return not_to_static(fn)


def unused(fn):
    """TorchScript's ``@torch.jit.unused``: the function (or method) stays plain Python and is
    never converted (as :func:`not_to_static`); d2s still runs it if it is called."""
    if isinstance(fn, property):
        return fn
    return not_to_static(fn)


def is_scripting():
    """True while a program is being built (converted code of ``to_static``/``script`` running on
    symbolic tensors), False in eager code: ``if not torch.jit.is_scripting():`` branches run
    eagerly only, as they do outside TorchScript."""
    return STATE.builder is not None


def is_tracing():
    """True while ``d2s.jit.trace`` records a function, False otherwise."""
    return STATE.tracer is not None


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """TorchScript's ``torch.jit.script``, here :func:`to_static`: a function, method or module
    converted (its Python control flow on tensors becoming graph ops), run as programs.
    ``example_inputs`` and the TorchScript-internal arguments are accepted and unused (the
    programs are built per input signature at the first calls)."""
    if obj is None:
        return lambda f: to_static(f)
    return to_static(obj)


class Final:
    """``x: d2s.jit.Final[int]`` (TorchScript's mark of a module constant) is accepted: d2s reads
    the attribute as the Python value it is, so ``Final[T]`` is just ``T``."""

    def __class_getitem__(cls, item):
        return item


def Attribute(value, type=None):  # noqa: A002 - TorchScript's argument name
    """TorchScript's ``torch.jit.Attribute(value, type)``: the value itself."""
    return value


def annotate(the_type, the_value):
    """TorchScript's ``torch.jit.annotate(type, value)``: the value itself."""
    return the_value
