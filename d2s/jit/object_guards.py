"""Guards on the Python values a program reads through objects.

A program holds every Python value its build read as a constant: ``x * CFG.scale`` with a
module-level ``class CFG: scale = 2.0`` bakes in 2.0. Eager Python reads ``CFG.scale`` afresh
on each call, so after ``CFG.scale = 3.0`` the program must be built again. The same holds for
a dataclass instance or ``SimpleNamespace`` (``cfg.scale``), a dict (``cfg["scale"]``,
``cfg.get("scale")``), an imported module's attribute (``config.dropout``), an object held by
the converted module (``self.cfg.scale``), an object passed as an argument (``c.scale``) and
a local name bound to one of those (``c = self.cfg``).

What is checked is decided once, when the program is built: the bytecode of the converted
function, and of every user function it calls while building (``note_call``, from
``convert_call``), is scanned for attribute/subscript chains rooted at a global, a closure
variable, ``self`` or a parameter (``chains_of``, cached per code object). Each chain is
followed as Python would read it, without running any code (no property, no ``__getattr__``),
up to the first Python scalar, enum member, numpy scalar or array, or small container of
scalars; the links on the way become ``(holder, key, value)`` entries of the program's
``py_state``, which each call compares with a ``.get`` per entry (see
``side_effects._python_state_holds``): an intermediate object by identity, a scalar by type and
value, a list/dict/tuple of scalars by its contents, an array by identity and (up to
``_SMALL_ARRAY`` elements) its bytes. A chain that reaches none of these (a tensor: the program
reads it as a param; a function; a library module) adds nothing, so a function reading no
settings pays nothing per call.

A called function's chains rooted at its parameters (``cfg.scale`` in ``def block(x, cfg)``
called as ``block(x, self.cfg)``) are followed from the arguments of each call while building
(``watch_arguments``).

Not followed (not checked): a value read through a property, ``__getattr__`` or a slot, a
container of more than ``_MAX_ITEMS`` scalars, a chain through a local bound to something other
than a chain (``c = make_cfg()``), ``getattr`` with a computed name.
"""
import dis
import enum
import functools
import sys
import types

import numpy as np

from ..nn.module import Module
from ..tensor import Tensor
from .state_values import _MISSING, _PY_STATE_TYPES, _Cell

_ATTR_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
_ROOT_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_FAST",
                       "LOAD_FAST_CHECK"})
_SKIP_OPS = frozenset({"CACHE", "EXTENDED_ARG", "NOP", "PRECALL", "PUSH_NULL"})
_LIBRARY_ROOTS = frozenset({"d2s", "d2s_runtime", "numpy", "torch", "math", "cmath", "builtins", "operator",
                            "functools", "itertools", "collections", "typing", "abc", "copy", "enum", "types",
                            "dataclasses", "os", "sys", "random", "time", "warnings", "inspect", "gast"})
# types whose attribute reads are Python's plain ones (SimpleNamespace's slot is the generic one)
_PLAIN_GETATTRIBUTE = (object.__getattribute__, types.SimpleNamespace.__getattribute__)
_MAX_ITEMS = 64  # a container of more scalars is not compared per call (a table, not a setting)
# elements: an array up to this size is compared by its bytes on each call (about 0.2 us at
# 1024 float32s), since the program may hold it, or values computed from it (a slice, a sum),
# as copied constants; a larger one only by identity (see _Array)
_SMALL_ARRAY = 1024
# the methods of a list/dict/tuple that read it (a chain ending in another one writes it)
_READS = frozenset({"items", "keys", "values", "get", "copy", "index", "count", "__len__", "__contains__",
                    "__getitem__", "__iter__"})


# ------------------------------------------------------------------ finding chains in bytecode
_CHAINS = {}


def chains_of(code):
    """``[(root kind, root name, steps)]`` read by ``code`` and the code nested in it (lambdas,
    comprehensions); kind is ``'global'``, ``'deref'`` or ``'fast'``, ``steps`` a tuple of
    ``('attr', name)`` / ``('item', constant)``. A local bound to a chain (``c = self.cfg``)
    extends it where it is read (``c.scale`` is ``self.cfg.scale``)."""
    try:
        return _CHAINS[code]
    except KeyError:
        pass
    out, stack, seen = [], [code], set()
    while stack:
        c = stack.pop()
        _scan(c, out)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    chains = [ch for ch in out if not (ch in seen or seen.add(ch))]
    if len(_CHAINS) > 4096:
        _CHAINS.clear()
    _CHAINS[code] = chains
    return chains


def _scan(code, out):
    ins = [i for i in dis.get_instructions(code) if i.opname not in _SKIP_OPS]
    aliases = {}
    cur = None
    getattr_at = -1  # where getattr(<chain>, "name") began: its chain's root is the next op
    i, n = 0, len(ins)
    while i < n:
        op, arg = ins[i].opname, ins[i].argval
        if op in ("LOAD_GLOBAL", "LOAD_NAME") and arg == "getattr":
            if cur is not None:
                out.append(cur)
            cur, getattr_at = None, i + 1
        elif op in _ROOT_OPS and isinstance(arg, str):
            if cur is not None:
                out.append(cur)
            kind = "global" if op in ("LOAD_GLOBAL", "LOAD_NAME") else "deref" if "DEREF" in op else "fast"
            cur = aliases[arg] if kind == "fast" and arg in aliases else (kind, arg, ())
            if getattr_at != i:
                getattr_at = -1
        elif cur is not None and getattr_at >= 0 and op == "LOAD_CONST" and isinstance(arg, str) and \
                i + 1 < n and _is_call(ins[i + 1], 2):
            cur = (cur[0], cur[1], cur[2] + (("attr", arg),))  # getattr(obj, "name")
            getattr_at = -1
            i += 2
            continue
        elif cur is not None and op in _ATTR_OPS:
            if arg == "get" and i + 2 < n and ins[i + 1].opname == "LOAD_CONST" and \
                    _is_call(ins[i + 2], 1) and _const_key(ins[i + 1].argval):
                cur = (cur[0], cur[1], cur[2] + (("item", ins[i + 1].argval),))  # d.get("key")
                i += 3
                continue
            cur = (cur[0], cur[1], cur[2] + (("attr", arg),))
        elif cur is not None and op == "LOAD_CONST" and i + 1 < n and _is_subscript(ins[i + 1]) and _const_key(arg):
            cur = (cur[0], cur[1], cur[2] + (("item", arg),))
            i += 2
            continue
        elif cur is not None and op == "STORE_FAST":
            out.append(cur)
            aliases[arg] = cur
            cur = None
        else:
            if cur is not None:
                out.append(cur)
                cur = None
            if op in ("STORE_FAST", "DELETE_FAST"):
                aliases.pop(arg, None)
        i += 1
    if cur is not None:
        out.append(cur)


def _is_call(ins, nargs):
    # CALL from Python 3.11, CALL_METHOD / CALL_FUNCTION before
    return ins.opname in ("CALL", "CALL_METHOD", "CALL_FUNCTION") and ins.arg == nargs


def _is_subscript(ins):
    # BINARY_SUBSCR up to Python 3.13, BINARY_OP [] after
    return ins.opname == "BINARY_SUBSCR" or (ins.opname == "BINARY_OP" and ins.argrepr == "[]")


def _const_key(k):
    return type(k) in (str, int, bool)


# ------------------------------------------------------------------ following a chain
class _Same:
    """A link checked by identity: ``get`` gives True while ``holder[key]`` is still the object
    the build followed (another object, even an equal one, is another state)."""
    __slots__ = ("holder", "obj")

    def __init__(self, holder, obj):
        self.holder, self.obj = holder, obj

    def get(self, key, default=None):
        return self.holder.get(key, _MISSING) is self.obj


class _Contents:
    """A link to a list/dict/tuple of scalars, compared by its contents (an in-place change to
    the same list counts), types included (``[2]`` is not ``[2.0]``): ``get`` gives True while
    they are the same. A flat container is compared by C-level ``==`` on a copy and on its
    items' types (cheap per call); a nested one through ``_frozen``."""
    __slots__ = ("holder", "type", "copy", "types", "frozen")

    def __init__(self, holder, value):
        self.holder, self.type = holder, type(value)
        items = value.values() if self.type is dict else value
        if all(type(x) in _PY_STATE_TYPES for x in items):
            self.copy, self.types, self.frozen = self.type(value), list(map(type, items)), None
        else:
            self.copy, self.types, self.frozen = None, None, _frozen(value)

    def get(self, key, default=None):
        cur = self.holder.get(key, _MISSING)
        if type(cur) is not self.type:
            return False
        if self.frozen is not None:
            return _frozen(cur) == self.frozen
        try:
            if not cur == self.copy:
                return False
        except Exception:  # noqa: BLE001 - an item that cannot be compared (an array put in): changed
            return False
        return list(map(type, cur.values() if self.type is dict else cur)) == self.types


class _Array:
    """A link to a numpy array the program read: True while ``holder[key]`` is still that array
    and, for one of up to ``_SMALL_ARRAY`` elements, still holds the same bytes (an in-place
    ``W[:] = 3.0`` counts). A larger array is checked by identity only: a program reads it in
    place when it uses it whole, but a value computed from it while building (``W[:2]``,
    ``W.sum()``) stays as it was after an in-place change (a known limit: keep such state in
    a tensor)."""
    __slots__ = ("holder", "array", "bytes")

    def __init__(self, holder, array):
        self.holder, self.array = holder, array
        self.bytes = array.tobytes() if array.size <= _SMALL_ARRAY else None

    def get(self, key, default=None):
        cur = self.holder.get(key, _MISSING)
        return cur is self.array and (self.bytes is None or cur.tobytes() == self.bytes)


class _Partial:
    """A link to a ``functools.partial`` the program calls: its function, arguments and
    keywords were baked in when the program was built. True while ``holder[key]`` is a partial
    of the same function with the same arguments: scalars (and small containers of them) by
    type and value, anything else by identity (``p.keywords['scale'] = 3`` and a new partial
    bound to the name both count as changes)."""
    __slots__ = ("holder", "state")

    def __init__(self, holder, p):
        self.holder, self.state = holder, _partial_state(p)

    def get(self, key, default=None):
        cur = self.holder.get(key, _MISSING)
        return isinstance(cur, functools.partial) and _partial_state(cur) == self.state


class _Identity:
    """Compares equal to a wrapper of the same object only (never runs the object's ``==``)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is _Identity and other.obj is self.obj

    __hash__ = None


def _partial_state(p, depth=0):
    """What a call of partial ``p`` depends on, comparable with ``==``."""
    def value(v):
        if isinstance(v, functools.partial) and depth < 4:
            return ("partial", _partial_state(v, depth + 1))
        f = _frozen(v)
        return ("value", f) if f is not None else ("is", _Identity(v))
    return (_Identity(type(p)), value(p.func), tuple(value(a) for a in p.args),
            tuple(sorted((k, value(v)) for k, v in (p.keywords or {}).items())))


class _Items:
    """A list read by index (``sizes[0]``), with the ``.get`` of a dict."""
    __slots__ = ("seq",)

    def __init__(self, seq):
        self.seq = seq

    def get(self, i, default=None):
        try:
            return self.seq[i]
        except IndexError:
            return default


def _frozen(v, depth=0):
    """A hashable, type-exact copy of a scalar or a small container of scalars; None if ``v``
    is not one."""
    t = type(v)
    if t in _PY_STATE_TYPES:
        return (t, v)
    if depth > 3 or t not in (list, tuple, dict) or len(v) > _MAX_ITEMS:
        return None
    items = v.items() if t is dict else enumerate(v)
    out = []
    for k, x in items:
        f = _frozen(x, depth + 1)
        if f is None:
            return None
        out.append((k, f))
    return (t, tuple(out))


def _plain_attr(obj, name):
    """``([(holder, key, value)], value)``: where ``obj.name`` comes from, read without running
    code (properties, ``__getattr__``, descriptors and slots are not followed: None)."""
    if isinstance(obj, types.ModuleType):
        d = obj.__dict__
        return ([(d, name, d[name])], d[name]) if name in d else None
    if isinstance(obj, type):
        if type(obj).__getattribute__ is not type.__getattribute__:
            return None
        return _class_attr(obj, name, [])
    tp = type(obj)
    if tp.__getattribute__ not in _PLAIN_GETATTRIBUTE:
        return None
    for klass in tp.__mro__:
        cv = klass.__dict__.get(name, _MISSING)
        if cv is not _MISSING:
            if hasattr(type(cv), "__set__") or hasattr(type(cv), "__delete__"):
                return None  # a property or slot: code runs to read it
            break
    d = getattr(obj, "__dict__", None)
    if type(d) is not dict:
        return None
    if name in d:
        return [(d, name, d[name])], d[name]
    if isinstance(obj, Module):
        mods = d.get("_modules") or {}
        if name in mods:
            return [(d, name, _MISSING), (mods, name, mods[name])], mods[name]
        if name in (d.get("_parameters") or {}) or name in (d.get("_buffers") or {}):
            return None  # a tensor: the program reads it as a param
    return _class_attr(tp, name, [(d, name, _MISSING)])


def _class_attr(cls, name, links):
    for klass in cls.__mro__:
        d = klass.__dict__
        v = d.get(name, _MISSING)
        if v is _MISSING:
            links.append((d, name, _MISSING))  # set on the subclass later, it would shadow
            continue
        if hasattr(type(v), "__get__"):
            return None  # a method, property, classmethod...: not a plain value
        links.append((d, name, v))
        return links, v
    return None


def _item(obj, key):
    t = type(obj)
    if isinstance(obj, dict) and t.__getitem__ is dict.__getitem__:
        return ([(obj, key, obj[key])], obj[key]) if key in obj else None
    if t in (list, tuple) and type(key) is int and -len(obj) <= key < len(obj):
        return ([(_Items(obj), key, obj[key])] if t is list else []), obj[key]
    return None


def _library_module(obj):
    if not isinstance(obj, types.ModuleType):
        return False
    name = getattr(obj, "__name__", "") or ""
    if name.split(".")[0] in _LIBRARY_ROOTS or name in sys.builtin_module_names:
        return True
    path = getattr(obj, "__file__", None) or ""
    return "site-packages" in path or path.startswith(sys.prefix) or path.startswith(sys.base_prefix)


def _is_callee(v):
    """A function, class or nn.Module: what the program inlined when the build called it."""
    return isinstance(v, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, Module,
                          staticmethod, classmethod))


def _class_callee(cls, name):
    """``(links, value)`` of a function, staticmethod or classmethod ``cls.name`` found in the
    class dicts of ``cls``'s MRO (the dicts before it: absent, so a later one would shadow it)."""
    if type(cls).__getattribute__ is not type.__getattribute__:
        return None
    links = []
    for klass in cls.__mro__:
        d = klass.__dict__
        v = d.get(name, _MISSING)
        if v is _MISSING:
            links.append((d, name, _MISSING))
            continue
        if isinstance(v, (types.FunctionType, staticmethod, classmethod)):
            links.append((d, name, v))
            return links, v
        return None
    return None


def _callees(v):
    """Whether ``v`` is a small list, tuple or dict of callees (``layers = [nn.Linear(...)]``)."""
    if type(v) not in (list, tuple, dict) or not v or len(v) > _MAX_ITEMS:
        return False
    return all(_is_callee(x) for x in (v.values() if type(v) is dict else v))


class _Members:
    """A link to a small list/tuple/dict of functions or modules the program inlined: True
    while ``holder[key]`` holds the same objects (by identity) in the same places."""
    __slots__ = ("holder", "type", "items")

    def __init__(self, holder, value):
        self.holder, self.type = holder, type(value)
        self.items = list(value.items()) if self.type is dict else list(value)

    def get(self, key, default=None):
        cur = self.holder.get(key, _MISSING)
        if type(cur) is not self.type or len(cur) != len(self.items):
            return False
        if self.type is dict:
            return all(cur.get(k, _MISSING) is v for k, v in self.items)
        return all(a is b for a, b in zip(cur, self.items))


def follow(holder, key, root, steps, callees=False):
    """The guard entries of one chain from ``holder[key]`` (= ``root``): the links up to the
    first scalar (or small container of scalars) it reaches, or ``[]`` when it reaches none
    (a tensor, a function, a module of a library, something only code can read). With
    ``callees`` (a chain from a global or closure variable), one that reaches a function, class
    or module, or a small container of them, is guarded by identity: the program inlined what
    the build called (``act = F.relu`` rebound to ``d2s.tanh``, a module or layer list
    replaced or grown, must build again)."""
    links, value = [(holder, key, root)], root
    if _library_module(root):
        return []
    for kind, name in steps:
        if type(value) in _PY_STATE_TYPES or isinstance(value, (Tensor, np.ndarray, np.generic, enum.Enum,
                                                                functools.partial)) or _library_module(value):
            break
        if kind == "attr" and type(value) in (list, tuple, dict):
            if name not in _READS:
                return []  # xs.append(...): the container is written, not read as a constant
            break
        got = _plain_attr(value, name) if kind == "attr" else _item(value, name)
        if got is None and callees and kind == "attr" and isinstance(value, type):
            got = _class_callee(value, name)  # (Cfg.act, a function or staticmethod on a class)
        if got is None:
            return []
        more, value = got
        links.extend(more)
    if isinstance(value, functools.partial):
        return _entries(links[:-1]) + [(_Partial(links[-1][0], value), links[-1][1], True)]
    if callees and _is_callee(value):
        return _entries(links)
    if callees and _callees(value):
        return _entries(links[:-1]) + [(_Members(links[-1][0], value), links[-1][1], True)]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return _entries(links[:-1]) + [(_Array(links[-1][0], value), links[-1][1], True)]
    if isinstance(value, (np.generic, enum.Enum)):
        return _entries(links)  # compared by type and value, as a Python scalar
    if _frozen(value) is None:
        return []
    return _entries(links[:-1]) + _last(links[-1])


def _entries(links):
    entries = []
    for h, k, v in links:
        entries.append((h, k, v) if v is _MISSING or isinstance(v, (np.generic, enum.Enum)) else (_Same(h, v), k, True))
    return entries


def _last(link):
    h, k, v = link
    return [(h, k, v) if type(v) in _PY_STATE_TYPES else (_Contents(h, v), k, True)]


# ------------------------------------------------------------------ collecting a build's guards
class ObjectGuards:
    """The guard entries of one build: the converted function's, then those of every user
    function it calls (``note_call``), each taken before that function first runs."""

    def __init__(self):
        self.entries = []
        self.keep = []  # the argument objects followed (alive, so an id-keyed signature stays theirs)
        self._seen_calls = set()
        self._seen_links = set()

    def add_function(self, fn, bound=None, args=None, skip_scalar_roots=False, params_only=False):
        """Guards of ``fn``'s chains. ``bound``: the instance a method is bound to; ``args``:
        ``{parameter name: value}`` of this call when known (the converted function's own, or a
        called one's with ``params_only``: then only the chains rooted at its parameters)."""
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None:
            return
        g = getattr(fn, "__globals__", None) or {}
        cells = dict(zip(code.co_freevars, getattr(fn, "__closure__", None) or ()))
        params = dict(args or {})
        if bound is not None and code.co_argcount:
            params.setdefault(code.co_varnames[0], bound)
        for kind, name, steps in chains_of(code):
            if params_only and kind != "fast":
                continue
            if kind == "global":
                if name not in g:
                    continue
                holder, root = g, g[name]
            elif kind == "deref":
                cell = cells.get(name)
                if cell is None:
                    continue
                try:
                    root = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                holder = _Cell(cell)
            else:
                if name not in params:
                    continue
                root = params[name]
                if not steps:
                    if isinstance(root, functools.partial):
                        # the call's signature holds the partial by identity, not what it binds
                        self.keep.append(root)
                        self._add([(_Partial({name: root}, root), name, True)])
                    continue  # an argument itself is in the call's signature
                got = _plain_attr(root, steps[0][1]) if steps[0][0] == "attr" else _item(root, steps[0][1])
                if got is None or not got[0]:
                    continue
                entries = follow(*got[0][-1], steps[1:])
                if entries:
                    self.keep.append(root)
                    self._add(got[0][:-1] + entries)
                continue
            if skip_scalar_roots and not steps and type(root) in _PY_STATE_TYPES:
                continue  # (already checked: see side_effects._global_state)
            self._add(follow(holder, name, root, steps, callees=True))

    def _add(self, entries):
        for h, k, v in entries:
            mark = (id(_underlying(h)), k, type(h))
            if mark not in self._seen_links:
                self._seen_links.add(mark)
                self.entries.append((h, k, v))

    def watch_arguments(self, f, g):
        """``g`` (what converted code calls for ``f``), wrapped to follow, at each call while
        the program is built, the chains ``f`` reads from its parameters (``cfg.scale`` in
        ``def block(x, cfg)`` called as ``block(x, self.cfg)``); ``g`` itself when it reads
        none."""
        func = getattr(f, "__func__", f)
        code = getattr(func, "__code__", None)
        if not isinstance(func, types.FunctionType) or code is None or g is f:
            return g
        first = 1 if isinstance(f, types.MethodType) else 0
        names = set(code.co_varnames[first:code.co_argcount + code.co_kwonlyargcount])
        if not any(kind == "fast" and steps and name in names for kind, name, steps in chains_of(code)):
            return g

        def call(*args, **kwargs):
            self.add_function(func, None, parameters(func, ((f.__self__,) if first else ()) + args, kwargs),
                              params_only=True)
            return g(*args, **kwargs)

        return call

    def note_call(self, f):
        """``f`` is about to be called by converted code while the program is built."""
        func = getattr(f, "__func__", f)
        if not isinstance(func, types.FunctionType):
            return
        bound = getattr(f, "__self__", None) if isinstance(f, types.MethodType) else None
        mark = (func.__code__, id(func.__globals__), id(bound))
        if mark in self._seen_calls:
            return
        self._seen_calls.add(mark)
        try:
            from ..convert.call import is_library  # (convert is a layer above jit's guards' users)
            if is_library(func):
                return
        except Exception:  # noqa: BLE001 - a callable that cannot be inspected reads nothing we follow
            return
        self.add_function(func, bound)


def _underlying(h):
    for name in ("holder", "cell", "seq"):
        u = getattr(h, name, _MISSING) if not isinstance(h, dict) else _MISSING
        if u is not _MISSING:
            return u
    return h


def parameters(fn, args, kwargs):
    """``{name: value}`` of the call's arguments (positional, then keyword), by ``fn``'s code."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return {}
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    out = dict(zip(names, args))
    out.update((k, v) for k, v in kwargs.items() if k in names)
    defaults = getattr(getattr(fn, "__func__", fn), "__defaults__", None) or ()
    for name, v in zip(names[code.co_argcount - len(defaults):code.co_argcount], defaults):
        out.setdefault(name, v)
    return out
