"""StaticFunction: a function (or method, or module forward) run as cached static programs.

Calling it computes the call's signature (see ``cache.py``), finds or builds the program for
it, and runs the program (see ``concrete.py``). Building a program converts the function's
source once (``d2s.transformers.convert_function``), then runs the converted function on
symbolic inputs inside a ``ProgramBuilder``: tensor arguments become program inputs, module
parameters (and any tensor that requires grad) become program params.
"""
import functools
import inspect
import types
import warnings
import weakref

from d2s_runtime.gc_pause import paused_gc

from .._state import HOOKED_THREADS, STATE
from .. import pytree
from ..autograd import enable_grad, no_grad
from ..autograd.grad_mode import mark_inference
from ..autograd.engine import SymbolicInputNeedsGrad
from ..convert.call import convert_transform, python_rng_states, refuse_frozen_draws
from ..inplace import BUFFER_UPDATES
from ..nn.module import Module
from ..static.builder import ProgramBuilder, flatten_outputs, python_number_type
from ..static.input_spec import InputSpec
from ..tensor import Tensor
from ..transformers import SourceUnavailable, convert_function
from ..user_errors import ConvertError, NoProgramError
from . import config
from .numerics import check_forward
from ..convert import values
from .buffer_writes import buffer_writes as _buffer_writes
from .cache import ProgramCache, replace_kwargs, replace_leaves, signature, varying_dims
from .concrete import _CELL, BUILD_LOCK, ConcreteProgram

_ENABLED = [True]


def enable_to_static(enable=True):
    """Turn conversion on or off everywhere: with ``False``, every StaticFunction runs its
    original function eagerly (for debugging with ordinary Python tools)."""
    _ENABLED[0] = bool(enable)


def to_static_enabled():
    return _ENABLED[0]


class _Conversion:
    """The converted form of one Python function, shared by every binding of it."""

    __slots__ = ("fn", "code", "converted", "eager_only", "error", "warned")

    def __init__(self, fn):
        self.fn = fn
        self.code = None
        self.converted = None
        self.eager_only = False
        self.error = None  # why the source could not be converted (a SourceUnavailable)
        self.warned = False

    def get(self, fallback=True):
        """The converted function (converting on first use), or None to run eagerly.

        With ``fallback=False`` (or ``d2s.jit.config.strict``), a function whose source cannot
        be read raises instead of running eagerly: a caller who believes they run a program
        must not be measuring eager code.
        """
        if self.converted is not None:
            return self.converted
        if not self.eager_only:
            with BUILD_LOCK:
                if self.converted is None and not self.eager_only:
                    self._convert()
        if self.converted is not None:
            return self.converted
        if self.error is not None:
            self._refuse_or_warn(fallback)
        return None

    def _convert(self):
        fn = self.fn
        if getattr(fn, "__d2s_not_to_static__", False):
            self.eager_only = True
            return None
        if getattr(fn, "__d2s_transform__", None) is not None:
            return self._convert_transform(fn)
        try:
            cf = convert_function(fn)
        except SourceUnavailable as e:
            self.eager_only = True
            self.error = e  # get() warns, or refuses without fallback
            return None
        self.converted = cf.fn
        self.code = getattr(cf, "code", None)
        return self.converted

    def _convert_transform(self, fn):
        """``to_static(d2s.func.grad(g))``: the transform runs inside the program around the
        converted ``g`` (its ``.code`` is ``g``'s converted source)."""
        inner = fn
        while getattr(inner, "__d2s_transform__", None) is not None:
            inner = inner.__d2s_transform_of__
        self.converted = convert_transform(fn)
        try:
            self.code = convert_function(inner).code
        except Exception:  # noqa: BLE001 - g runs unconverted (a lambda): no converted code to show
            self.code = _source(inner)
        return self.converted

    def _refuse_or_warn(self, fallback):
        name = getattr(self.fn, "__qualname__", self.fn)
        if not fallback or config.strict:
            why = "fallback=False" if not fallback else "d2s.jit.config.strict is set"
            raise SourceUnavailableError(
                f"d2s.jit.to_static: the source of {name} is not available ({self.error}), and {why}, "
                "so it cannot run as a program: define it with `def` in a file, or pass "
                "fallback=True to run it eagerly") from None
        if not self.warned:
            self.warned = True
            warnings.warn(f"d2s.jit.to_static: the source of {name} is not available "
                          f"({self.error}); it runs eagerly instead (define it in a file to convert it, "
                          "or pass fallback=False to make this an error)", UserWarning, stacklevel=5)


class SourceUnavailableError(RuntimeError):
    """``to_static(fn, fallback=False)`` (or ``d2s.jit.config.strict``) on a function whose
    source cannot be read: it would otherwise run eagerly."""


def _source(fn):
    try:
        import textwrap
        return textwrap.dedent(inspect.getsource(getattr(fn, "__code__", fn)))
    except (OSError, TypeError):
        return None


class StaticFunction:
    """A function run as static programs, one per input signature (see ``d2s.jit.to_static``).

    Attributes:
        eager: the original function (bound to its instance for a method).
        code: the converted Python source, as a string.
        programs: the cached Programs, in the order they were built.
    """

    def __init__(self, fn, input_spec=None, instance=None, _conversion=None, fallback=True, check_numerics=False,
                 backend=None):
        self._fn = fn
        self._backend = _check_backend(backend)
        self._fallback = fallback
        self._check_numerics = bool(check_numerics)
        self._instance = instance
        self._input_spec = _normalize_specs(input_spec)
        self._conversion = _conversion or _Conversion(fn)
        self._cache = ProgramCache()
        self._bound = weakref.WeakKeyDictionary()
        self._bound_by_id = {}
        self._is_module = _is_module(instance)
        functools.update_wrapper(self, fn, updated=())

    # ------------------------------------------------------------ binding
    def __get__(self, instance, owner=None):
        if instance is None or self._instance is not None:
            return self
        try:
            sf = self._bound.get(instance)
        except TypeError:
            sf = self._bound_by_id.get(id(instance))
        if sf is None:
            with BUILD_LOCK:  # threads binding one instance at once share one StaticFunction
                try:
                    sf = self._bound.get(instance)
                except TypeError:
                    sf = self._bound_by_id.get(id(instance))
                if sf is None:
                    sf = StaticFunction(self._fn, self._input_spec, instance, self._conversion, self._fallback,
                                        self._check_numerics, self._backend)
                    try:
                        self._bound[instance] = sf
                    except TypeError:
                        self._bound_by_id[id(instance)] = sf
        return sf

    # ------------------------------------------------------------ public attributes
    @property
    def eager(self):
        if self._instance is not None:
            return types.MethodType(self._fn, self._instance)
        return self._fn

    @property
    def is_static(self):
        """Whether calls run a static program (False: the function runs eagerly, because its
        source cannot be read or conversion is switched off with ``enable_to_static(False)``)."""
        return _ENABLED[0] and self._converted() is not None

    def _converted(self):
        return self._conversion.get(self._fallback)

    @property
    def code(self):
        self._converted()
        if self._conversion.code is None:
            return _source(self._fn)
        return self._conversion.code

    @property
    def programs(self):
        return [e.program for e in self._cache.entries]

    @property
    def concrete_programs(self):
        return list(self._cache.entries)

    @property
    def input_spec(self):
        return self._input_spec

    def get_program(self, *args, **kwargs):
        """The Program for a signature: pass tensors, ``InputSpec``s or Python values as you would
        call the function (with none, the ``input_spec`` given to ``to_static``)."""
        if not args and not kwargs and self._input_spec is not None:
            args = tuple(self._input_spec)
        return self._entry(args, kwargs)[0].program

    def clear_cache(self):
        self._cache.clear()

    @property
    def backend(self):
        """The backend asked for (``'python'``, ``'native'`` or ``'auto'``; the default comes
        from ``d2s.jit.config.backend`` when the program is built)."""
        return self._backend or config.backend

    def backend_report(self, per_program=False):
        """Which backend runs the programs, in one line for the last program used (with
        ``per_program=True``, one line per cached program, each led by its input signature):
        ``'native'``, ``'python'``, ``'python (native pending: compiling in background)'`` or
        ``'python (native unsupported: <reason>)'`` (see ``d2s_runtime.Executor.backend_report``)."""
        entries = self._cache.entries
        if not entries:
            return "no program built yet"
        if not per_program:
            return max(entries, key=lambda e: getattr(e, "stamp", 0)).backend_report()
        return "\n".join(f"{_describe_types(getattr(e, 'leaf_types', []))}: {e.backend_report()}" for e in entries)

    def wait_native(self, timeout=None):
        """Wait for the native compiles pending for the cached programs (tests, benchmarks);
        whether every one of them runs natively now."""
        return all([e.wait_native(timeout) for e in self._cache.entries])

    def cache_info(self):
        """``CacheInfo(hits, misses, size, limit, evictions)`` of this function's programs:
        calls that ran a cached program, programs built, programs cached now, the limit
        (``d2s.jit.config.cache_size_limit``) and programs dropped to respect it."""
        return self._cache.info(config.cache_size_limit)

    def __deepcopy__(self, memo):
        # copy.deepcopy(module) copies its static forward: the copy is bound to the copied
        # instance and starts with no programs (the cached ones read the original's params);
        # the function and its conversion are shared, as functions are not copied
        import copy
        instance = copy.deepcopy(self._instance, memo) if self._instance is not None else None
        return StaticFunction(self._fn, self._input_spec, instance, self._conversion, self._fallback,
                              self._check_numerics, self._backend)

    def __copy__(self):
        return StaticFunction(self._fn, self._input_spec, self._instance, self._conversion, self._fallback,
                              self._check_numerics, self._backend)

    def __repr__(self):
        conv = self._conversion
        if not _ENABLED[0]:
            mode = "eager: to_static disabled"
        elif conv.eager_only:
            mode = "eager: source unavailable" if conv.error is not None else "eager"
        elif conv.converted is None:
            mode = "not converted yet"
        else:
            mode = "static"
        return f"<StaticFunction {getattr(self._fn, '__qualname__', self._fn)} ({mode}, {len(self._cache)} programs)>"

    # ------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        mode = getattr(self._fn, "__d2s_grad_mode__", None)
        if mode is not None:  # a function decorated with no_grad() and the like: the whole call in that mode
            with mode():
                out = self._call(args, kwargs)
                if STATE.inference:  # (the program's outputs are made inside inference_mode)
                    mark_inference([t for t in pytree.tree_flatten(out)[0] if isinstance(t, Tensor)])
                return out
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if (HOOKED_THREADS[0] and STATE.hooked) or not _ENABLED[0]:
            return self._call_unbuilt(args, kwargs)
        # The fast path: one signature walk, one dict lookup.
        key, leaves = signature((self._instance.training,) if self._is_module else (), args, kwargs)
        cache = self._cache
        entry = cache.by_key.get(key)
        if entry is not None:
            entry.stamp = next(cache.clock)  # recency, for LRU eviction (see ProgramCache)
        if entry is not None and entry.param_refs and entry.params_replaced() and not entry.rebind_params():
            # a parameter or buffer was replaced by a tensor of another type (or removed):
            # every program of this function reads the old one, so build them again
            self._cache.clear()
            entry = None
        if entry is not None and entry.py_state and not _python_state_holds(entry.py_state):
            entry = self._python_state_changed(entry)
        if entry is None:
            if self._converted() is None:
                return self.eager(*args, **kwargs)
            entry = self._miss(key, args, kwargs)
        if entry.grad_mask is not None and entry.grad_mask != tuple(bool(t.requires_grad) for t in leaves):
            # built for another requires_grad pattern: d2s.grad inside must see this one
            # (eager raises for an input that does not require grad): a one-off program
            with BUILD_LOCK:
                one_off = self._build(args, kwargs, self._entry_types(args, kwargs))
            return one_off.run(leaves)
        if self._check_numerics:
            return _run_checked(entry, leaves)
        return entry.run(leaves)

    def _call_unbuilt(self, args, kwargs):
        """Inside another program being built: inline the converted function into it. Under a
        tracer, or with conversion off: run the original function eagerly."""
        builder = STATE.builder
        # the switch as it was when this build started: a build is never half converted
        if builder is not None and getattr(builder, "to_static_enabled", _ENABLED[0]):
            conv = self._converted()
            if conv is not None:
                if self._instance is not None:
                    return conv(self._instance, *args, **kwargs)
                return conv(*args, **kwargs)
        return self.eager(*args, **kwargs)

    def _head(self):
        return (self._instance.training,) if self._is_module else ()

    def _miss(self, key, args, kwargs):
        """A call whose exact signature is new: find or build the program of its InputSpec
        signature (the exact one without specs) and remember it under the exact one too."""
        entry = self._entry(args, kwargs, specs=self._input_spec, touch=True)[0]
        self._cache.alias(key, entry)
        return entry

    def _entry_types(self, args, kwargs):
        types_ = []
        signature(self._head(), args, kwargs, self._input_spec, types_)
        return types_

    def _entry(self, args, kwargs, specs=None, touch=False):
        """(ConcreteProgram, its signature) for a call, building the program if needed (once,
        however many threads ask for it at the same time)."""
        types_ = []
        key, leaves = signature(self._head(), args, kwargs, specs, types_)
        entry = self._cache.get(key)
        if entry is not None and entry.py_state and not _python_state_holds(entry.py_state):
            entry = self._python_state_changed(entry)
        if entry is None:
            with BUILD_LOCK:
                entry = self._cache.get(key)
                if entry is None:
                    entry = self._build(args, kwargs, types_)
                    self._add(key, entry)
                    return entry, key
        if touch:
            self._cache.touch(entry)
        return entry, key

    def _python_state_changed(self, entry):
        """A Python attribute of the module that a program holds as a constant has another value
        now: drop the programs (built from the old value) so the call builds one from the new
        one. Warns once when the function's own forward keeps changing it (a rebuild per call)."""
        cache = self._cache
        cache.state_rebuilds += 1
        limit = config.cache_size_limit or 8
        if not cache.warned_state and (entry.py_written or cache.state_rebuilds >= limit):
            cache.warned_state = True
            fn = getattr(self._fn, '__qualname__', self._fn)
            if entry.py_written:
                names = ", ".join(f"'{n}'" for n in entry.py_written)
                what = f"{fn} changes the Python attribute(s) {names} of its module on every call"
            else:
                names = ", ".join(sorted({f"'{k}'" for d, k, v in entry.py_state
                                          if not _same_python_value(d.get(k, _MISSING), v)}))
                what = (f"{fn} was built {cache.state_rebuilds + 1} times because Python attribute(s) "
                        f"{names} of its module changed between calls")
            warnings.warn(f"d2s.jit.to_static: {what}. A program holds Python values as constants, so it is "
                          "built again for each new value (slow); keep such state in a tensor "
                          "(register_buffer) to run one program", UserWarning, stacklevel=_user_stacklevel())
        cache.clear()
        return None

    def _add(self, key, entry):
        """Cache a new program, within ``d2s.jit.config.cache_size_limit`` (warning once the
        first time the limit makes this function drop a program)."""
        limit = config.cache_size_limit
        if limit is not None and len(self._cache) >= limit and not self._cache.warned:
            self._cache.warned = True
            _warn_cache_limit(self, self._cache.entries + [entry], limit)
        self._cache.add(key, entry, limit)

    def _build(self, args, kwargs, leaf_types):
        conv = self._converted()
        if conv is None:
            raise NoProgramError(f"{self._fn.__qualname__} cannot be converted (its source is unavailable: defined "
                                 "by exec or in an interactive session?), so it has no program; it runs eagerly")
        device = _device_of(args, kwargs)
        instance = self._instance
        name = getattr(self._fn, "__qualname__", "function")

        def trace_into(builder, requires_grad=None):
            """Run the converted function on new symbolic inputs of ``builder``; returns
            (symbolic inputs, output tensors in order) and stores the output structure."""
            sym = [builder.add_input(shape, dtype, nm, bool(requires_grad and requires_grad[i]))
                   for i, (shape, dtype, nm) in enumerate(leaf_types)]
            it = iter(sym)
            sargs = replace_leaves(tuple(args), it)
            skw = replace_kwargs(kwargs, it) if kwargs else {}
            if instance is not None:
                sargs = (instance,) + tuple(sargs)
            snapshot = _module_snapshot(instance)
            builder.state_tensors = _state_tensors(instance)
            py_state = _python_state(instance)
            input_vars = [t._var for t in sym]
            before = _containers_state(sargs, skw)
            outer_replaced = set(values.REPLACED_LISTS)  # (a to_static function called while tracing)
            values.REPLACED_LISTS.clear()
            rng_before = python_rng_states()
            try:
                out = conv(*sargs, **skw)
                refuse_frozen_draws(name, rng_before)
            except RecursionError as e:
                builder.unsymbolize()
                _restore_symbolic_writes(snapshot)
                raise _recursion_error(e, name) from None
            except BaseException:
                builder.unsymbolize()
                _restore_symbolic_writes(snapshot)
                raise
            finally:
                replaced = set(values.REPLACED_LISTS)
                values.REPLACED_LISTS.clear()
                values.REPLACED_LISTS.update(outer_replaced)
            leaves, rebuild = flatten_outputs(out, same_objects=True)
            leaves, buffer_writes = _buffer_writes(builder, leaves)
            writes = _restore_symbolic_writes(snapshot)
            _refuse_changed_containers(self._fn, instance, before, _containers_state(sargs, skw, replaced))
            writes += _input_writes(builder, sym, input_vars) + buffer_writes
            for w in writes:
                w.start = len(leaves)
                leaves.extend(w.tensors)
            if not py_states:  # the first trace; a retrace (for a backward) is not the state's
                py_states.append(_with_new_attrs(py_state, _python_state(instance)))
            else:  # a retrace for a backward: the build made the forward's Python writes already
                _restore_python_state(py_state, _python_state(instance))
            return sym, leaves, rebuild, out, writes

        py_states = []

        def build(grad_inputs):
            builder = ProgramBuilder(device)
            builder.to_static_enabled = True
            builder.forward_only = True  # grad mode on, so the user's no_grad() regions show
            builder.grad_inputs = grad_inputs
            mask = None
            if grad_inputs:  # inputs record autograd nodes where the caller's tensors require grad
                mask = [bool(t.requires_grad) for t in signature(self._head(), args, kwargs)[1]]
            with builder, enable_grad(), paused_gc():  # see d2s_runtime/gc_pause.py
                _, out_leaves, rebuild, out, writes = trace_into(builder, mask)
                outputs = [builder.var_of(t) for t in out_leaves]
            return builder, out_leaves, rebuild, out, writes, outputs

        grad_mask = None
        try:
            builder, out_leaves, rebuild, out, writes, outputs = build(False)
        except SymbolicInputNeedsGrad:
            # the function calls d2s.grad on its inputs or params: build again with them recording
            builder, out_leaves, rebuild, out, writes, outputs = build(True)
            grad_mask = tuple(bool(t.requires_grad) for t in signature(self._head(), args, kwargs)[1])
        program = builder.program
        program.name = name
        program.outputs = outputs
        program.block.outputs = list(outputs)
        single = out is (out_leaves[0] if out_leaves else None) and len(out_leaves) - sum(
            len(w.tensors) for w in writes) == 1 and python_number_type(out) is None

        def retrace(b, requires_grad):
            sym, leaves, _, _, _ = trace_into(b, requires_grad)
            return sym, leaves

        entry = ConcreteProgram(program, builder.param_tensors, rebuild, single, retrace, device,
                                writes=writes, backend=self.backend)
        entry.param_refs = _param_refs(self._fn, instance, entry.param_tensors)
        # the module's Python attributes as the build found them: the program holds the ones it
        # read as constants, so it is valid only while they keep these values
        entry.py_state = py_states[0]
        entry.py_written = sorted({k for d, k, v in entry.py_state if not _same_python_value(d.get(k, _MISSING), v)})
        # what this signature was, for the cache limit's warning
        entry.leaf_types = list(leaf_types)
        entry.leaf_labels, entry.arg_leaf = _leaf_labels(self._fn, instance, args, kwargs)
        entry.grad_mask = grad_mask
        return entry


def _container_state(obj, replaced=()):
    """What a list/dict argument holds (nested, leaves by identity; a symbolic tensor by its
    variable, which the per-branch aliases share), to tell whether the function changed it; a
    list in ``replaced`` (ids of lists a tensor branch or loop grew into a tensor list) counts
    as changed."""
    if isinstance(obj, (list, dict)):
        items = list(obj.items()) if isinstance(obj, dict) else list(enumerate(obj))
        return (type(obj), id(obj), id(obj) in replaced,
                tuple((k, _container_state(v, replaced)) for k, v in items))
    if isinstance(obj, tuple):
        return (tuple, tuple(_container_state(v, replaced) for v in obj))
    if isinstance(obj, Tensor) and obj.is_symbolic:
        return ("T", id(obj._var))
    return id(obj)


def _containers_state(args, kwargs, replaced=()):
    return ([_container_state(a, replaced) if isinstance(a, (list, dict, tuple)) else None for a in args],
            {k: _container_state(v, replaced) for k, v in kwargs.items() if isinstance(v, (list, dict, tuple))})


def _refuse_changed_containers(fn, instance, before, after):
    """A program cannot change the caller's Python lists and dicts (its arguments are copied
    into it): a function that appends to (or otherwise changes) one is refused, naming it,
    instead of leaving the caller's list silently as it was."""
    if before == after:
        return
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    if instance is not None:
        params = params[1:]
    changed = [params[i] if i < len(params) else f"#{i}" for i, (b, a) in enumerate(zip(before[0], after[0]))
               if b != a] + [k for k in before[1] if before[1][k] != after[1].get(k)]
    code = getattr(fn, "__code__", None)
    where = f'\n  File "{code.co_filename}", line {code.co_firstlineno}, in {fn.__name__}' if code else ""
    raise ConvertError(
        f"{getattr(fn, '__qualname__', 'the function')} changes its list or dict argument "
        f"{', '.join(repr(c) for c in changed)} (appends, pops, item or key writes): a to_static program "
        "cannot change the caller's Python containers, whose contents would silently stay as they were. "
        f"Work on a copy (e.g. `{changed[0]} = list({changed[0]})`) and return it instead{where}")


def _recursion_error(exc, name):
    """The error for a build that recursed past Python's limit: most likely a recursion ended
    by a tensor condition, whose both branches are traced, so it never ends while building."""
    import linecache
    import os
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    counts = {}
    tb = exc.__traceback__
    while tb is not None:  # the user's line met most often in the stack: the recursive call
        filename = tb.tb_frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(pkg) and not filename.startswith("<"):
            counts[(filename, tb.tb_lineno)] = counts.get((filename, tb.tb_lineno), 0) + 1
        tb = tb.tb_next
    where = None
    if counts:
        filename, line = max(counts, key=counts.get)
        where = (filename, line, linecache.getline(filename, line).strip())
    message = (f"building the program of {name} recursed past Python's recursion limit. A recursion "
               "ended by a tensor condition cannot become a static program: both branches of a tensor "
               "`if` are built, so the recursive call is built again without end. End the recursion "
               "with a Python value (a depth counter), or mark the function @d2s.jit.not_to_static")
    if where is not None:
        filename, line, text = where
        message += f"\n  File \"{filename}\", line {line}\n    {text}\n    {'^' * max(1, len(text))}"
    return ConvertError(message)


def _run_checked(entry, leaves):
    """Run ``entry``, then raise naming the op that made NaN/inf if an output holds them."""
    out = entry.run(leaves)
    tensors, _ = flatten_outputs(out)
    check_forward(entry, leaves, tensors)
    return out


def _warn_cache_limit(sf, entries, limit):
    lines, suggestion = varying_dims(entries)
    name = getattr(sf._fn, "__qualname__", sf._fn)
    what = "; ".join(lines) if lines else "the input signature changes between calls"
    hint = (f"mark those dims dynamic with to_static(..., {suggestion})" if suggestion else
            "mark the changing dims dynamic with an InputSpec holding None there "
            "(to_static(..., input_spec=[InputSpec([None, ...])]))")
    warnings.warn(f"d2s.jit.to_static: {name} was built for more than {limit} input signatures "
                  f"(d2s.jit.config.cache_size_limit) because {what}. To build one program for all of "
                  f"them, {hint}. From now on its least recently used program is dropped for each new "
                  "one (raise d2s.jit.config.cache_size_limit to keep more)", UserWarning, stacklevel=_user_stacklevel())


def _user_stacklevel():
    """The ``stacklevel`` of the first frame outside d2s: the user's call (a module's
    ``__call__`` in d2s.nn included)."""
    import os
    import sys
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    return level


def _leaf_labels(fn, instance, args, kwargs):
    """(a label per tensor argument, in signature order, e.g. ``'x'`` or ``'pair[1]'``; and for
    each positional argument the index of its tensor, or None when it is not a plain tensor)."""
    import numpy as np
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    if instance is not None and names:
        names = names[1:]
    labels, arg_leaf = [], []

    def visit(a, label):
        if isinstance(a, (Tensor, np.ndarray, InputSpec)):
            labels.append(label)
            return True
        if type(a) in (list, tuple):
            for j, x in enumerate(a):
                visit(x, f"{label}[{j}]")
        elif type(a) is dict:
            for k, v in a.items():
                visit(v, f"{label}[{k!r}]")
        return False

    for i, a in enumerate(args):
        label = names[i] if i < len(names) else f"argument #{i}"
        n = len(labels)
        arg_leaf.append(n if visit(a, label) else None)
    for k in sorted(kwargs or {}):
        visit(kwargs[k], k)
    return labels, arg_leaf


class _StateWrite:
    """A module attribute the function assigned a tensor (or a container of tensors) to, e.g.
    ``self.last_h = h``: the program returns those tensors as extra outputs and each call
    assigns their values to the attribute, as eager execution would."""

    __slots__ = ("module", "name", "tensors", "rebuild", "start", "container", "buffer")

    def __init__(self, module, name, value, container, buffer=None):
        self.module, self.name, self.container = module, name, container
        self.tensors, self.rebuild = flatten_outputs(value)
        self.start = 0
        self.buffer = buffer  # a buffer updated in place (self.buf.add_(v)): written into its array

    def apply(self, outputs, leaves=None):
        value = self.rebuild(outputs[self.start:self.start + len(self.tensors)])
        if self.buffer is not None:
            with no_grad():
                self.buffer.copy_(value)
            return
        c = self.container
        if c is not None and type(c) is type(value) and isinstance(c, (list, dict)):
            if isinstance(c, list):
                c[:] = value
            else:
                c.clear()
                c.update(value)
            value = c  # mutated in place: other references to the container see it too
        setattr(self.module, self.name, value)


class _InputWrite:
    """A tensor argument the function assigned into in place (``x[0] = 0.0``): its final value
    is an extra program output, copied into the caller's tensor after each call, as eager
    ``setitem`` writes into the caller's array."""

    __slots__ = ("index", "tensors", "start")

    def __init__(self, index, tensor):
        self.index, self.tensors, self.start = index, [tensor], 0

    def apply(self, outputs, leaves=None):
        target = leaves[self.index]
        if target.requires_grad:
            # eager code refuses a leaf (and would give a non-leaf a new autograd history,
            # which a copy into its array cannot): refuse before writing anything
            raise RuntimeError(
                f"argument #{self.index} of this to_static function is updated in place, and the caller's "
                "tensor requires grad: autograd cannot follow a write into it. Pass a copy (x.clone()) or "
                "assign a new value in the function (x = x + v) and return it")
        target._data[...] = outputs[self.start]._data
        target._version += 1


def _input_writes(builder, sym, input_vars):
    """``_InputWrite``s for the symbolic inputs that setitem rebound to a new value of the
    program's top block (a value left inside a branch's block is not one the program has)."""
    top = builder.program.block
    return [_InputWrite(i, t) for i, (t, v) in enumerate(zip(sym, input_vars))
            if t._var is not v and builder.defined_in.get(t._var.name) is top]


_REGISTRIES = ("_parameters", "_buffers", "_modules")


def _module_snapshot(instance):
    """What to restore after tracing a module's forward: each submodule's attributes (and the
    contents of its list/dict attributes), and its registries."""
    if not _is_module(instance):
        return None
    snap = []
    for m in instance.modules():
        d = m.__dict__
        attrs = {k: v for k, v in d.items() if k not in _REGISTRIES}
        contents = {k: (list(v) if type(v) is list else dict(v)) for k, v in attrs.items()
                    if type(v) in (list, dict)}
        regs = {r: dict(d[r]) for r in _REGISTRIES if r in d}
        snap.append((m, attrs, contents, regs))
    return snap


def _holds_symbolic(v, depth=0):
    if isinstance(v, Tensor):
        return v.is_symbolic
    if depth < 8 and isinstance(v, (list, tuple)):
        return any(_holds_symbolic(x, depth + 1) for x in v)
    if depth < 8 and isinstance(v, dict):
        return any(_holds_symbolic(x, depth + 1) for x in v.values())
    return False


def _restore_symbolic_writes(snapshot):
    """Undo the attribute writes of a trace that left symbolic tensors on a module (they mean
    nothing once the build ends) and return them as ``_StateWrite``s; other writes stay."""
    if not snapshot:
        return []
    writes = []
    for m, attrs, contents, regs in snapshot:
        d = m.__dict__
        for k in [k for k in d if k not in _REGISTRIES]:
            v = d[k]
            if not _holds_symbolic(v):
                continue
            before = attrs.get(k, _MISSING)
            container = before if before is v and k in contents else None
            buffer = regs.get("_buffers", {}).get(k)
            if buffer is None or not (isinstance(v, Tensor) and BUFFER_UPDATES.get(id(v)) is v):
                buffer = None
            writes.append(_StateWrite(m, k, v if container is None else
                                      (list(v) if type(v) is list else dict(v)), container, buffer))
            if container is not None:  # mutated in place (xs.append(h)): put the contents back
                if type(v) is list:
                    v[:] = contents[k]
                else:
                    v.clear()
                    v.update(contents[k])
            elif before is _MISSING:
                del d[k]
            else:
                d[k] = before
            for r, saved in regs.items():  # a tensor assigned over a buffer unregistered it
                if k in saved and k not in d[r]:
                    d[r][k] = saved[k]
    return writes


_MISSING = object()


_PY_STATE_TYPES = frozenset({int, float, bool, str, type(None)})


def _python_state(instance):
    """``[(attribute dict, name, value)]`` of the Python scalar attributes of a module tree
    (``training`` aside: it is part of every signature already)."""
    if not _is_module(instance):
        return []
    return [(m.__dict__, k, v) for m in instance.modules() for k, v in m.__dict__.items()
            if type(v) in _PY_STATE_TYPES and k != "training"]


def _with_new_attrs(before, after):
    """``before`` plus, as missing, the attributes that only ``after`` has (created by the
    trace: a later call finding them set is not the state the program was built from)."""
    seen = {(id(d), k) for d, k, _ in before}
    return before + [(d, k, _MISSING) for d, k, _ in after if (id(d), k) not in seen]


def _restore_python_state(before, after):
    """Put back the Python attributes listed in ``before``; drop those only ``after`` has."""
    for d, k, v in before:
        if d.get(k, _MISSING) is not v:
            d[k] = v
    seen = {(id(d), k) for d, k, _ in before}
    for d, k, _ in after:
        if (id(d), k) not in seen:
            d.pop(k, None)


def _same_python_value(a, b):
    return a is b or (type(a) is type(b) and a == b)


def _python_state_holds(state):
    for d, k, v in state:
        cur = d.get(k, _MISSING)
        if cur is not v and not (type(cur) is type(v) and cur == v):
            return False
    return True


def _state_tensors(instance):
    """``{id: tensor}`` of the plain (unregistered) tensor attributes of a module tree: a
    program reads them as params, so a forward that replaces one (``self.running = ...``) is
    read afresh on the next call instead of being frozen into a constant."""
    if not _is_module(instance):
        return {}
    out = {}
    for m in instance.modules():
        for k, v in m.__dict__.items():
            if isinstance(v, Tensor) and not v.is_symbolic and k not in _REGISTRIES:
                out[id(v)] = v
    return out


def _param_refs(fn, instance, tensors):
    """``[(dict, key, tensor)]`` locating each of ``tensors`` (the program's params) where the
    function finds it: a parameter or buffer registry of the module it is bound to (or of a
    module it reads from a global or closure variable), the instance's attributes, a global
    variable or a closure cell (as ``(cell, _CELL, tensor)``). A call compares them, so a
    parameter replaced by a new tensor (``m.w = nn.Parameter(...)``, ``w = w - lr * w.grad``
    on a global) makes the programs be built again instead of reading the old one."""
    if not tensors:
        return []
    where = {}

    def add_module(mod):
        for m in mod.modules():
            for reg in ("_parameters", "_buffers"):
                d = m.__dict__.get(reg)
                for k, v in (d or {}).items():
                    if v is not None:
                        where.setdefault(id(v), (d, k))
            # plain tensor attributes too (``self.running = d2s.zeros(4)``, or a buffer that a
            # forward reassigned a plain tensor to): a forward that writes one hands the next
            # call a new tensor, which must be read, not the one the program was built with
            d = m.__dict__
            for k, v in list(d.items()):
                if isinstance(v, Tensor) and k not in _REGISTRIES:
                    where.setdefault(id(v), (d, k))

    def add_value(d, k, v):
        if isinstance(v, Tensor):
            where.setdefault(id(v), (d, k))
        elif _is_module(v):
            add_module(v)

    if _is_module(instance):
        add_module(instance)
    elif instance is not None and isinstance(getattr(instance, "__dict__", None), dict):
        for k, v in list(instance.__dict__.items()):
            add_value(instance.__dict__, k, v)
    code = getattr(fn, "__code__", None)
    g = getattr(fn, "__globals__", None)
    if code is not None and isinstance(g, dict):
        for name in code.co_names:
            if name in g:
                add_value(g, name, g[name])
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        add_value(cell, _CELL, v)
    return [(*where[id(t)], t) for t in tensors if id(t) in where]


def _device_of(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor) and not a.is_symbolic:
            return a.device
    return "cpu"


def _check_backend(backend):
    if backend is not None and backend not in ("python", "native", "auto", "graph"):
        raise ValueError(f"d2s.jit.to_static: backend must be 'python', 'native', 'auto' or 'graph', got "
                         f"{backend!r}")
    return backend


def _describe_types(types_):
    return "(" + ", ".join(f"{dtype}{list(shape)}" for shape, dtype, _ in types_) + ")"


def _normalize_specs(input_spec):
    if input_spec is None:
        return None
    if isinstance(input_spec, InputSpec):
        return [input_spec]
    if isinstance(input_spec, dict):
        return dict(input_spec)
    return list(input_spec)


def _is_module(obj):
    if obj is None:
        return False
    return isinstance(obj, Module)
