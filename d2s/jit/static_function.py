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

from .. import pytree
from .._state import HOOKED_THREADS, STATE
from ..autograd.grad_mode import mark_inference
from ..convert import values
from ..layouts import input_layout
from ..nn.module import STRUCTURE_VERSION
from ..convert.call import convert_transform, python_rng_states, refuse_frozen_draws
from ..static.builder import ProgramBuilder, flatten_outputs, python_number_type
from ..static.input_spec import InputSpec
from ..tensor import Tensor
from ..transformers import SourceUnavailable, convert_function
from ..user_errors import ConvertError, NoProgramError
from . import config
from .buffer_writes import buffer_writes as _buffer_writes
from .cache import ProgramCache, alias_pattern, replace_kwargs, replace_leaves, signature, varying_dims
from .concrete import BUILD_LOCK, ConcreteProgram
from .numerics import check_forward
from .object_guards import ObjectGuards, parameters
from .side_effects import (_MISSING, OutsideWatch, _containers_state, _global_state, _globals_snapshot,
                           _input_writes, _is_module, _module_snapshot, _module_structure, _param_refs,
                           _python_state, _python_state_holds, _refuse_changed_containers, _restore_global_writes,
                           _restore_python_state, _restore_symbolic_writes, _same_python_value, _state_tensors,
                           _structure_holds, _with_new_attrs)

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


def _defaults_of(fn):
    """``fn``'s default values as a call reads them: the positional ones (a tuple, compared by
    identity: setting new ones makes a new tuple) and a copy of the keyword-only ones (a dict,
    which can change in place)."""
    kd = getattr(fn, "__kwdefaults__", None)
    return getattr(fn, "__defaults__", None), (dict(kd) if kd is not None else None)


class SourceUnavailableError(RuntimeError):
    """``to_static(fn, fallback=False)`` (or ``d2s.jit.config.strict``) on a function whose
    source cannot be read: it would otherwise run eagerly."""


def _source(fn):
    try:
        import textwrap
        return textwrap.dedent(inspect.getsource(getattr(fn, "__code__", fn)))
    except (OSError, TypeError):
        return None


def _output_vars(builder, leaves, writes, name):
    """The program vars of the output tensors ``leaves``. An attribute a write gives back
    (``self.count += 1``) bound to a tensor of a sub-block only (rebound inside a tensor branch
    or loop the program could not carry it out of: the rest of a function after an early
    ``return`` on a tensor condition runs inside such a branch) is refused with an error naming
    it, not the builder's KeyError about an undefined var."""
    out = []
    for t in leaves:
        try:
            out.append(builder.var_of(t))
        except KeyError:
            what = next((f"the attribute {w.name!r}" for w in writes if any(x is t for x in w.tensors)
                         and getattr(w, "name", None)), "a tensor attribute")
            raise ConvertError(
                f"to_static of {name}: {what} is updated inside a tensor-dependent branch or loop, and the "
                "program cannot carry that update out of it (after an early `return` on a tensor condition, the "
                "rest of the function runs inside such a branch). Compute the new value in the branch and "
                "assign the attribute once, outside it, or run this function eagerly") from None
    return out


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
        self._defaults = _defaults_of(fn)
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
        if not self._defaults_hold():
            self._defaults_changed()
        if (HOOKED_THREADS[0] and STATE.hooked) or not _ENABLED[0]:
            return self._call_unbuilt(args, kwargs)
        # The fast path: one signature walk, one dict lookup.
        key, leaves = signature(self._head(), args, kwargs)
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
        if entry is not None and entry.structure_version != STRUCTURE_VERSION[0] and not self._structure_holds(entry):
            entry = None
        if entry is None:
            if self._converted() is None:
                return self.eager(*args, **kwargs)
            entry = self._miss(key, args, kwargs)
        if entry.par_mask != _param_mask(entry.param_tensors):
            # a param it reads was frozen (requires_grad_(False)) or unfrozen since the build:
            # what requires grad inside the function changed, so build it again
            entry = self._rebuilt(entry, args, kwargs)
        if self._check_numerics:
            return _run_checked(entry, leaves)
        return entry.run(leaves)

    def _defaults_hold(self):
        """Whether the function's default values are those its programs were built with (a
        default reassigned, ``f.__defaults__ = (5.0,)``, or a keyword-only one changed)."""
        d, kd = self._defaults
        return getattr(self._fn, "__defaults__", None) is d and getattr(self._fn, "__kwdefaults__", None) == kd

    def _defaults_changed(self):
        """New default values: the converted function takes them, and the programs, which hold
        the old ones as constants, are built again (before, the first build's stayed)."""
        self._defaults = _defaults_of(self._fn)
        conv = self._conversion.converted
        target = getattr(conv, "__func__", conv)
        if target is not None:
            target.__defaults__ = getattr(self._fn, "__defaults__", None)
            target.__kwdefaults__ = getattr(self._fn, "__kwdefaults__", None)
        self._cache.clear()

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
        # the grad mode is part of every signature: the program is built in it (see _build)
        if self._is_module:
            return (STATE.grad_enabled, STATE.inference, self._instance.training)
        return (STATE.grad_enabled, STATE.inference)

    def _rebuilt(self, entry, args, kwargs):
        """``entry`` built again for the params' requires_grad now, under every signature that
        reached it."""
        with BUILD_LOCK:
            new = self._build(args, kwargs, self._entry_types(args, kwargs))
            self._cache.replace(entry, new)
        return new

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
        if entry is not None and entry.structure_version != STRUCTURE_VERSION[0] and not self._structure_holds(entry):
            entry = None
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

    def _structure_holds(self, entry):
        """Whether the module tree still has the submodules and hooks ``entry`` was built with
        (checked when some module's changed since it last held); if not, drop the programs."""
        if entry.structure is None or _structure_holds(entry.structure):
            entry.structure_version = STRUCTURE_VERSION[0]
            return True
        self._cache.clear()  # a submodule replaced, or a hook added to one: build again
        return False

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
                        f"{names} of its module (or globals it reads) changed between calls")
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
        # how the caller's arrays are laid out (the signature holds it): whether a reshape of
        # an input shares its elements (see d2s/layouts.py)
        in_layouts = [input_layout(getattr(t, "_data", None), shape)
                      for t, (shape, _, _) in zip(signature(self._head(), args, kwargs)[1], leaf_types)]

        def trace_into(builder, requires_grad=None):
            """Run the converted function on new symbolic inputs of ``builder``; returns
            (symbolic inputs, output tensors in order) and stores the output structure."""
            sym = [builder.add_input(shape, dtype, nm, bool(requires_grad and requires_grad[i]), in_layouts[i])
                   for i, (shape, dtype, nm) in enumerate(leaf_types)]
            # one tensor passed as several arguments is one symbolic tensor (its later inputs
            # go unread): `query is key` holds, and a write through one name reaches the other
            it = iter(sym if aliases is None else [sym[j] for j in aliases])
            sargs = replace_leaves(tuple(args), it)
            skw = replace_kwargs(kwargs, it) if kwargs else {}
            if instance is not None:
                sargs = (instance,) + tuple(sargs)
            snapshot = _module_snapshot(instance, self._fn)
            global_snapshot = _globals_snapshot(self._fn)
            builder.state_tensors = _state_tensors(instance, self._fn)
            py_state = _python_state(instance, self._fn)
            global_state = _global_state(self._fn) if not py_states else []
            guards = builder.object_guards = ObjectGuards() if not py_states else None
            if guards is not None:  # values read through objects, before the function runs
                guards.add_function(self._fn, instance, parameters(self._fn, sargs, skw), skip_scalar_roots=True)
            if not py_states:
                structures.append((_module_structure(instance), STRUCTURE_VERSION[0]))
            input_vars = [t._var for t in sym]
            before = _containers_state(sargs, skw)
            outside = builder.outside_watch = OutsideWatch(self._fn, instance, builder.state_tensors)
            outer_replaced = set(values.REPLACED_LISTS)  # (a to_static function called while tracing)
            values.REPLACED_LISTS.clear()
            rng_before = python_rng_states()
            try:
                out = conv(*sargs, **skw)
                refuse_frozen_draws(name, rng_before)
            except RecursionError as e:
                builder.unsymbolize()
                _restore_symbolic_writes(snapshot)
                _restore_global_writes(global_snapshot)
                raise _recursion_error(e, name) from None
            except BaseException:
                builder.unsymbolize()
                _restore_symbolic_writes(snapshot)
                _restore_global_writes(global_snapshot)
                raise
            finally:
                replaced = set(values.REPLACED_LISTS)
                values.REPLACED_LISTS.clear()
                values.REPLACED_LISTS.update(outer_replaced)
            leaves, rebuild = flatten_outputs(out, same_objects=True)
            leaves, buffer_writes = _buffer_writes(builder, leaves)
            writes = _restore_symbolic_writes(snapshot) + _restore_global_writes(global_snapshot)
            _refuse_changed_containers(self._fn, instance, before, _containers_state(sargs, skw, replaced))
            outside.refuse_changed(self._fn, replaced)
            if not py_states:
                helpers.extend(outside.functions)  # (their global tensors are params: see _param_refs)
            writes += _input_writes(builder, sym, input_vars) + buffer_writes
            for w in writes:
                w.start = len(leaves)
                leaves.extend(w.tensors)
            if not py_states:  # the first trace; a retrace (for a backward) is not the state's
                py_states.append(_with_new_attrs(py_state, _python_state(instance, self._fn)) + global_state + guards.entries)
                keep.extend(guards.keep)
            else:  # a retrace for a backward: the build made the forward's Python writes already
                _restore_python_state(py_state, _python_state(instance, self._fn))
            return sym, leaves, rebuild, out, writes

        py_states = []
        structures = []
        keep = []
        helpers = []

        # The program is built in the caller's grad mode, with its inputs (and the params it
        # reads) requiring grad as the caller's tensors do, so the function sees what it sees
        # eagerly: `x.requires_grad`, `(x * w).requires_grad`, `d2s.is_grad_enabled()`, an
        # in-place op refused on a leaf requiring grad. The cache key holds the grad mode and
        # each tensor argument's requires_grad (see cache.signature), and the entry the params'
        # (see StaticFunction._call), so no other call runs this program.
        grad_on = STATE.grad_enabled
        call_leaves = signature(self._head(), args, kwargs)[1]
        aliases = alias_pattern(call_leaves)
        mask = [bool(getattr(t, "requires_grad", False)) for t in call_leaves]
        builder = ProgramBuilder(device)
        builder.to_static_enabled = True
        builder.forward_only = True  # the user's no_grad() regions are marked by stop_gradient
        builder.grad_inputs = True
        builder.never_differentiated = not grad_on
        with builder, paused_gc():  # see d2s_runtime/gc_pause.py
            _, out_leaves, rebuild, out, writes = trace_into(builder, mask)
            outputs = _output_vars(builder, out_leaves, writes, name)
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
        entry.param_refs = _param_refs(self._fn, instance, entry.param_tensors, helpers)
        # the module's Python attributes as the build found them: the program holds the ones it
        # read as constants, so it is valid only while they keep these values
        entry.py_state = py_states[0]
        entry.py_state_keep = keep  # the argument objects whose attributes py_state reads
        entry.structure, entry.structure_version = structures[0]
        # (an attribute the build created is set once, not changed at every call: not warned of)
        entry.py_written = sorted({k for d, k, v in entry.py_state
                                   if v is not _MISSING and not _same_python_value(d.get(k, _MISSING), v)},
                                  key=str)  # (a list index among attribute names)
        # what this signature was, for the cache limit's warning
        entry.leaf_types = list(leaf_types)
        entry.leaf_labels, entry.arg_leaf = _leaf_labels(self._fn, instance, args, kwargs)
        entry.par_mask = _param_mask(entry.param_tensors)
        return entry


def _param_mask(params):
    return tuple([t.requires_grad for t in params]) if params else ()


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
