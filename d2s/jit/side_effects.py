"""What a program's build does besides computing: the side effects a StaticFunction traces and
replays on each call, as eager code would have them.

While the converted function runs on symbolic inputs it may write module state (a buffer
assigned a tensor, a Python attribute such as a step counter bumped) or containers passed in;
the program carries the written tensors as extra outputs (``_StateWrite``, ``_InputWrite``), the
build's Python writes are recorded (``_python_state``) and later calls compare them, and the
objects the build changed are put back (``_restore_symbolic_writes``, ``_restore_python_state``)
so nothing symbolic leaks out of the build. ``_param_refs`` records where each parameter the
program reads lives, so a replaced parameter is noticed.
"""
import inspect
import types

from ..autograd import no_grad
from ..inplace import BUFFER_UPDATES
from ..nn.module import Module
from ..static.builder import flatten_outputs
from ..tensor import Tensor
from ..user_errors import ConvertError
from .concrete import _CELL
from .object_guards import _plain_attr, chains_of
from .state_values import _MISSING, _PY_STATE_TYPES, _Cell


# the attributes every Module has (parameter, buffer, submodule and hook registries): d2s's own
# state, which a build may change (a lazy layer registering its parameters)
_MODULE_INTERNALS = frozenset(Module().__dict__)


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


def _code_names(fn):
    """``(function, global names)``: the names ``fn``'s code reads as globals or attributes, its
    lambdas' and comprehensions' included (the unwrapped function; None without code)."""
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    code = getattr(fn, "__code__", None)
    if code is None:
        return None, set()
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if inspect.iscode(k))
    return fn, names


_OUTSIDE_TYPES = (list, dict, set)


def _outside_containers(fn, instance):
    """``[(where, container)]``: the lists, dicts and sets a converted function reaches that
    outlive its call: the attributes of its module tree (a ``self.history`` list) and the
    globals and closure variables its code names, or reaches through plain attributes
    (``REC.items``). A program runs the function's Python once, while it is built, so an append
    to one of them would happen once instead of at every call; the build compares their
    contents before and after (``_refuse_changed_outside``; the functions it calls are added
    as they are called, see ``OutsideWatch``)."""
    found, seen = [], set()

    def add(where, v):
        if isinstance(v, _OUTSIDE_TYPES) and id(v) not in seen:
            seen.add(id(v))
            found.append((where, v))

    if _is_module(instance):
        for path, m in instance.named_modules():
            for k, v in m.__dict__.items():
                if k not in _MODULE_INTERNALS:
                    add(f"self.{path + '.' if path else ''}{k}", v)
    for where, v in _function_containers(fn, instance):
        add(where, v)
    return found


def _function_containers(fn, bound=None, via="", cells=True):
    """``(where, container)`` for the lists, dicts and sets ``fn``'s code names as globals or
    closure variables, or reaches from them (or from ``self``, the ``bound`` instance) through
    plain attributes (``REC.items.append``, ``self.items.append``); ``via`` names the function
    for a helper."""
    fn, names = _code_names(fn)
    if fn is None:
        return
    g = getattr(fn, "__globals__", {})
    for n in sorted(names):
        if n in g:
            yield f"the global {n!r}{via}", g[n]
    closure = _cells(fn) if cells else {}
    for n, v in closure.items():
        yield f"the closure variable {n!r}{via}", v
    for name, value, steps in _chain_starts(fn, g, closure, bound):
        text = name
        for step, key in steps:
            if step != "attr" or isinstance(value, _OUTSIDE_TYPES + (Tensor,)):
                break
            try:
                got = _plain_attr(value, key)
            except Exception:  # noqa: BLE001 - an object that cannot be read without code: not followed
                got = None
            if got is None:
                break
            value, text = got[1], f"{text}.{key}"
            if isinstance(value, _OUTSIDE_TYPES):
                yield f"{text}{via}", value
                break


def _cells(fn):
    """``fn``'s closure variables that hold a value, by name (an empty cell is left out)."""
    closure = {}
    for n, cell in zip(fn.__code__.co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            closure[n] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return closure


def _chain_starts(fn, g, closure, bound):
    """``(name, value, steps)`` of each attribute chain ``fn``'s code reads (``chains_of``) from
    a global in ``g``, a closure variable in ``closure`` or its ``self`` argument (``bound``, the
    instance of a converted method, or None)."""
    self_name = fn.__code__.co_varnames[0] if bound is not None and fn.__code__.co_argcount else None
    for kind, name, steps in chains_of(fn.__code__):
        if kind == "global" and name in g:
            yield name, g[name], steps
        elif kind == "deref" and name in closure:
            yield name, closure[name], steps
        elif kind == "fast" and name == self_name:
            yield name, bound, steps


class OutsideWatch:
    """The outside containers (``_outside_containers``) of a converted function and of the user
    functions its code calls while the program is built (``def log(v): HIST.append(v)``), each
    one's contents taken before the function that reaches it first runs."""

    def __init__(self, fn, instance, state_tensors=None):
        self.containers = _outside_containers(fn, instance)
        self.snapshot = _outside_snapshot(self.containers)
        self._ids = {id(c) for _, c in self.containers}
        self._calls = set()
        # the tensors the called functions name (globals, closures, defaults) join the ones the
        # program reads as params (see _function_tensors); ``functions``: where to find them
        self.state_tensors = state_tensors if state_tensors is not None else {}
        self.functions = []

    def note_call(self, f):
        """``f`` is about to be called by converted code while the program is built."""
        import types

        func = inspect.unwrap(getattr(f, "__func__", f))
        if not isinstance(func, types.FunctionType):
            return
        bound = f.__self__ if isinstance(f, types.MethodType) else None
        mark = (func.__code__, id(func.__globals__), id(bound))
        if mark in self._calls:
            return
        self._calls.add(mark)
        from ..convert.call import is_library  # (convert is a layer above this one)
        if is_library(func):
            return
        # a function the converted code itself defines (a nested ``def record(v)``) closes over
        # the call's own locals (made afresh at each call) or over the converted function's
        # closure (checked above): its cells are not followed (d2s.transformers.pipeline compiles
        # converted code as ``__d2s_converted``, which names the functions nested in it)
        nested = "__d2s_converted.<locals>." in func.__qualname__
        self.state_tensors.update(_function_tensors(func, cells=not nested))
        self.functions.append(func)
        for where, c in _function_containers(func, bound, f" (through {func.__qualname__})", cells=not nested):
            if isinstance(c, _OUTSIDE_TYPES) and id(c) not in self._ids:
                self._ids.add(id(c))
                self.containers.append((where, c))
                self.snapshot.extend(_outside_snapshot([(where, c)]))

    def refuse_changed(self, fn, replaced=()):
        _refuse_changed_outside(fn, self.containers, self.snapshot, replaced)


def _outside_state(obj, replaced=()):
    if isinstance(obj, set):
        return (set, id(obj), frozenset(id(v) for v in obj))
    return _container_state(obj, replaced)


def _outside_snapshot(containers):
    """What each outside container holds now, and a shallow copy to put it back from."""
    return [(_outside_state(c), type(c)(c)) for _, c in containers]


def _refuse_changed_outside(fn, containers, snapshot, replaced=()):
    """Refuse a function whose build changed a list, dict or set that outlives the call (see
    ``_outside_containers``), after putting its contents back: eager code would change it at
    every call, a program only once, so later calls would silently see it unchanged."""
    changed = [(where, c, copy) for (where, c), (state, copy) in zip(containers, snapshot)
               if _outside_state(c, replaced) != state]
    if not changed:
        return
    for _, c, copy in changed:
        c.clear()
        c.update(copy) if not isinstance(c, list) else c.extend(copy)
    names = ", ".join(where for where, _, _ in changed)
    code = getattr(inspect.unwrap(getattr(fn, "__func__", fn)), "__code__", None)
    where = f'\n  File "{code.co_filename}", line {code.co_firstlineno}, in {code.co_name}' if code else ""
    raise ConvertError(
        f"{getattr(fn, '__qualname__', 'the function')} changes {names} (an append, pop, item or key write), "
        "a list, dict or set that outlives the call: a to_static program runs the function's Python once, when "
        "it is built, so eager code would change it at every call and the program only at the first, and "
        "later calls would silently see it as the first call left it. Keep such records outside the converted "
        "function (return the values and append them after the call), or keep the state in tensors "
        f"(a buffer updated by assignment){where}")


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


class _GlobalWrite:
    """A global the function rebinds to a tensor (``global STEP; STEP = STEP + 1``): the program
    returns the tensor as an extra output and each call binds the global to its value, as
    eager execution would (the build leaves the global as it found it)."""

    __slots__ = ("globals", "name", "tensors", "rebuild", "start")

    def __init__(self, g, name, value):
        self.globals, self.name = g, name
        self.tensors, self.rebuild = flatten_outputs(value)
        self.start = 0

    def apply(self, outputs, leaves=None):
        self.globals[self.name] = self.rebuild(outputs[self.start:self.start + len(self.tensors)])


def _globals_snapshot(fn):
    """``[(globals, name, value before)]`` of the globals ``fn``'s code assigns (``global x``)."""
    import dis

    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    code, g = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if code is None or not isinstance(g, dict):
        return []
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")}
    return [(g, n, g.get(n, _MISSING)) for n in sorted(names)]


def _restore_global_writes(snapshot):
    """Put back the globals a trace bound to symbolic tensors (they mean nothing once the build
    ends); returns them as ``_GlobalWrite``s."""
    writes = []
    for g, name, before in snapshot:
        v = g.get(name, _MISSING)
        if v is _MISSING or not _holds_symbolic(v):
            continue
        writes.append(_GlobalWrite(g, name, v))
        if before is _MISSING:
            del g[name]
        else:
            g[name] = before
    return writes


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
            if _same_bits(outputs[self.start].array, target.array):
                # the name held another tensor when it was updated (``if x.sum() > 0: x = x * 2``
                # then ``x += 1``): on this input eager code did not write into the caller's
                # tensor, which is left as it is instead of refused
                return
            # eager code refuses a leaf (and would give a non-leaf a new autograd history,
            # which a copy into its array cannot): refuse before writing anything
            raise RuntimeError(
                f"argument #{self.index} of this to_static function is updated in place, and the caller's "
                "tensor requires grad: autograd cannot follow a write into it. Pass a copy (x.clone()) or "
                "assign a new value in the function (x = x + v) and return it")
        target.array[...] = outputs[self.start].array
        target._version += 1


def _same_bits(a, b):
    """Whether arrays ``a`` and ``b`` (numpy's or a device's, both with ``tobytes``) hold the
    same bits."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _input_writes(builder, sym, input_vars):
    """``_InputWrite``s for the symbolic inputs that setitem rebound to a new value of the
    program's top block (a value left inside a branch's block is not one the program has)."""
    top = builder.program.block
    return [_InputWrite(i, t) for i, (t, v) in enumerate(zip(sym, input_vars))
            if t._var is not v and builder.defined_in.get(t._var.name) is top]


_REGISTRIES = ("_parameters", "_buffers", "_modules")


def _state_holder(v):
    """Whether ``v`` is an object whose attributes a function may rebind to tensors: a module,
    or a plain instance with a ``__dict__`` (not a Python module, class, function or tensor)."""
    if _is_module(v):
        return True
    if isinstance(v, (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType,
                      Tensor)):
        return False
    return type(getattr(v, "__dict__", None)) is dict


def _reached_modules(fn, instance=None):
    """The objects a converted function may write attributes of: ``instance`` (a module's tree,
    or a plain object whose method is converted) and the modules and plain objects its code
    names as globals or closure variables, or reaches from them through plain attributes
    (``MODEL.count += 1``, ``STATE.total = STATE.total + x`` in a plain function), each once."""
    roots = [instance] if instance is not None and _state_holder(instance) else []
    fn, names = _code_names(fn) if fn is not None else (None, ())
    if fn is not None:
        g = getattr(fn, "__globals__", None) or {}
        closure = _cells(fn)
        roots += [g[n] for n in sorted(names) if n in g and _state_holder(g[n])]
        roots += [v for v in closure.values() if _state_holder(v)]
        for _, value, steps in _chain_starts(fn, g, closure, instance):
            for step, key in steps:
                if step != "attr" or _is_module(value) or isinstance(value, Tensor):
                    break  # (a module's whole tree is in already)
                try:
                    got = _plain_attr(value, key)
                except Exception:  # noqa: BLE001 - an object that cannot be read without code
                    got = None
                if got is None:
                    break
                value = got[1]
                if _state_holder(value):
                    roots.append(value)
    seen, out = set(), []
    for root in roots:
        for m in (root.modules() if _is_module(root) else (root,)):
            if id(m) not in seen:
                seen.add(id(m))
                out.append(m)
    return out


def _module_snapshot(instance, fn=None):
    """What to restore after tracing a module's forward (or a function that writes to a module
    it reads from a global or closure variable): each submodule's attributes (and the contents
    of its list/dict attributes), and its registries."""
    modules = _reached_modules(fn, instance)
    if not modules:
        return None
    snap = []
    for m in modules:
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
            if before is v and not _is_module(m):
                continue  # a plain object's list grown in place: refused (see _refuse_changed_outside)
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


_STATE_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})


def _layout(v, depth=0):
    """What a build can read of ``v`` as Python: scalars by type and value, tensors by shape and
    dtype, containers item by item (four levels deep), other objects by identity."""
    if type(v) in _PY_STATE_TYPES:
        return type(v), v
    if isinstance(v, Tensor):
        return "tensor", tuple(v.shape), str(v.dtype)
    if depth < 4:
        if isinstance(v, (list, tuple)):
            return type(v), tuple(_layout(x, depth + 1) for x in v)
        if isinstance(v, dict):
            return type(v), tuple((k, _layout(x, depth + 1)) for k, x in v.items())
        if isinstance(v, (set, frozenset)):
            return type(v), frozenset(_layout(x, depth + 1) for x in v)
    return "object", id(v)


class _Held:
    """A container attribute of the module tree as a build found it (globals and closure
    variables read as containers are object_guards' entries). A forward that rebinds it
    (``self.seen = self.seen + [n]``) has a program only for the container it started from: a
    later call finding another object of another layout builds again, as eager code would read
    the new one; a new object of the same layout (``self.maps = [y]`` at every call) does not."""
    __slots__ = ("obj", "layout")

    def __init__(self, obj):
        self.obj, self.layout = obj, _layout(obj)

    def same(self, cur):
        return cur is self.obj or (cur is not _MISSING and _layout(cur) == self.layout)


def _state_entry(d, k, v):
    # a scalar, or a tuple of scalars (a layer's kernel_size), is its own record: the per-call
    # check compares it by identity, else by value, with no _Held in between
    if type(v) in _PY_STATE_TYPES or (type(v) is tuple and all(type(x) in _PY_STATE_TYPES for x in v)):
        return (d, k, v)
    return (d, k, _Held(v))


def _python_state(instance, fn=None):
    """``[(attribute dict, name, value)]`` of the Python scalar and container attributes of a
    module tree (containers as ``_Held``), and the ``training`` flag of each module the function
    reaches (see ``_reached_modules``) but the converted module's own, which is part of every
    signature already: a submodule put in eval mode alone (``model.drop.eval()``), or a model
    a function reads from a global switched by ``MODEL.eval()``, must not run the program built
    with its dropout on."""
    out = []
    if _is_module(instance):
        out = [_state_entry(m.__dict__, k, v) for m in instance.modules() for k, v in m.__dict__.items()
               if (type(v) in _PY_STATE_TYPES or type(v) in _STATE_CONTAINERS) and k not in _MODULE_INTERNALS]
    out += [(m.__dict__, "training", m.__dict__.get("training", _MISSING)) for m in _reached_modules(fn, instance)
            if m is not instance and _is_module(m)]
    return out


def _global_state(fn):
    """``[(namespace, name, value)]`` of the Python scalars (int, float, bool, str, None) that
    ``fn``'s code reads as globals or from its closure (``x * SCALE`` with ``SCALE = 2.0`` at
    module level): a program holds them as constants, so it is valid only while they keep
    these values, as a module's scalar attributes (see _python_state)."""
    fn, names = _code_names(fn)
    if fn is None:
        return []
    code = fn.__code__
    g = getattr(fn, "__globals__", {})
    out = [(g, n, g[n]) for n in sorted(names) if n in g and type(g[n]) in _PY_STATE_TYPES]
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if type(v) in _PY_STATE_TYPES:
            out.append((_Cell(cell), name, v))
    return out


def _module_structure(instance):
    """``(submodule entries, hook dicts)`` of a module tree: ``[(its _modules dict, name,
    module)]`` and ``[(a submodule's hook dict, its hook ids)]``. A program calls the submodules
    the build found, with their hooks, so it is valid only while they stay: a layer replaced
    (``model[2] = nn.Linear(...)``) or a hook added to a submodule after the first call must
    build a new program. (The converted module's own hooks run around the program, eagerly.)
    None for a function."""
    if not _is_module(instance):
        return None
    entries, dicts = [], []
    for m in instance.modules():
        d = m.__dict__
        mods = d.get("_modules")
        if mods is not None:
            entries.extend((mods, k, v) for k, v in mods.items())
            dicts.append((mods, tuple(mods)))
        if m is not instance:
            for name in ("_forward_hooks", "_forward_pre_hooks"):
                h = d.get(name)
                if h is not None:
                    dicts.append((h, tuple(h)))
    return entries, dicts


def _structure_holds(structure):
    """Whether the module tree still has the submodules and hooks of ``structure``."""
    entries, dicts = structure
    for d, k, v in entries:
        if d.get(k) is not v:
            return False
    for d, keys in dicts:
        if len(d) != len(keys) or (keys and tuple(d) != keys):
            return False
    return True


def _with_new_attrs(before, after):
    """``before`` plus, as missing, the attributes that only ``after`` has (created by the
    trace: a later call finding them set is not the state the program was built from)."""
    seen = {(id(d), k) for d, k, _ in before}
    return before + [(d, k, _MISSING) for d, k, _ in after if (id(d), k) not in seen]


def _restore_python_state(before, after):
    """Put back the Python attributes listed in ``before``; drop those only ``after`` has."""
    for d, k, v in before:
        if type(v) is _Held:
            v = v.obj
        if d.get(k, _MISSING) is not v:
            d[k] = v
    seen = {(id(d), k) for d, k, _ in before}
    for d, k, _ in after:
        if (id(d), k) not in seen:
            d.pop(k, None)


def _same_python_value(a, b):
    """Whether ``a`` (found now) is ``b`` (recorded by a build; a container as ``_Held``)."""
    if type(b) is _Held:
        return b.same(a)
    if a is b:
        return True
    if type(a) is not type(b) or a != b:
        return False
    # (a tuple of scalars: (2, 2) and (2.0, 2.0) are equal but build different programs)
    return type(a) is not tuple or all(type(x) is type(y) for x, y in zip(a, b))


def _python_state_holds(state):
    for d, k, v in state:
        cur = d.get(k, _MISSING)
        if cur is not v and not _same_python_value(cur, v):
            return False
    return True


def _contained_tensors(v, path=(), depth=0):
    """``(path, tensor)`` of the tensors held in list, tuple and dict ``v`` (four levels deep)."""
    if depth >= 4:
        return
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, (list, tuple)) else ()
    for k, x in items:
        if isinstance(x, Tensor):
            yield path + (k,), x
        elif isinstance(x, (list, tuple, dict)):
            yield from _contained_tensors(x, path + (k,), depth + 1)


class _Path:
    """Where a tensor held in a container attribute is (``self.prev[0]``, ``self.cache["h"]``),
    read as a dict is (``get``), so the parameter checks of a call find the one there now."""
    __slots__ = ("root", "name", "path")

    def __init__(self, root, name, path):
        self.root, self.name, self.path = root, name, path

    def get(self, _key=None, default=None):
        try:
            v = self.root[self.name]
            for p in self.path:
                v = v[p]
        except (KeyError, IndexError, TypeError):
            return default
        return v


def _function_tensors(fn, cells=True):
    """``{id: tensor}`` of the concrete tensors ``fn`` names as globals or closure variables
    (``cells``), or holds as default arguments: a program reads them as params, so a tensor
    changed in place (``W.mul_(2)``) or rebound (``W = ...``, see ``_param_refs``) between calls
    is read as eager code reads it, instead of being frozen into a constant."""
    fn, names = _code_names(fn)
    if fn is None:
        return {}
    g = getattr(fn, "__globals__", None) or {}
    values = [g[n] for n in names if n in g]
    for cell in (getattr(fn, "__closure__", None) or ()) if cells else ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    values.extend(getattr(fn, "__defaults__", None) or ())
    values.extend((getattr(fn, "__kwdefaults__", None) or {}).values())
    return {id(v): v for v in values if isinstance(v, Tensor) and not v.is_symbolic}


def _state_tensors(instance, fn=None):
    """``{id: tensor}`` of the plain (unregistered) tensor attributes of a module tree, and of
    the tensors held in its list, tuple and dict attributes: a program reads them as params, so
    a forward that replaces one (``self.running = ...``, ``self.prev = [h]``) is read afresh on
    the next call instead of being frozen into a constant; and those of ``fn`` (see
    ``_function_tensors``)."""
    out = _function_tensors(fn) if fn is not None else {}
    for m in _reached_modules(fn, instance):
        for k, v in m.__dict__.items():
            if k in _REGISTRIES:
                continue
            if isinstance(v, Tensor) and not v.is_symbolic:
                out[id(v)] = v
            elif type(v) in _STATE_CONTAINERS:
                out.update((id(t), t) for _, t in _contained_tensors(v) if not t.is_symbolic)
    return out


def _param_refs(fn, instance, tensors, helpers=()):
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
                if k in _REGISTRIES:
                    continue
                if isinstance(v, Tensor):
                    where.setdefault(id(v), (d, k))
                elif type(v) in _STATE_CONTAINERS:  # (self.prev = [h]: see _state_tensors)
                    for path, t in _contained_tensors(v):
                        where.setdefault(id(t), (_Path(d, k, path), path[-1]))

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
    # (the plain objects the code reaches, whose tensor attributes it may rebind: see _state_tensors)
    for obj in _reached_modules(fn, instance):
        if not _is_module(obj):
            for k, v in list(obj.__dict__.items()):
                if isinstance(v, Tensor):
                    where.setdefault(id(v), (obj.__dict__, k))
    # (``helpers``: the functions the converted code called while building, whose global and
    # closure tensors it read as params too)
    for f in (fn,) + tuple(helpers):
        f, names = _code_names(f)
        g = getattr(f, "__globals__", None)
        if f is not None and isinstance(g, dict):
            for name in sorted(names):
                if name in g:
                    add_value(g, name, g[name])
        for cell in getattr(f, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            add_value(cell, _CELL, v)
    return [(*where[id(t)], t) for t in tensors if id(t) in where]


def _is_module(obj):
    if obj is None:
        return False
    return isinstance(obj, Module)
