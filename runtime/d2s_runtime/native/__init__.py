"""The native backend: a prepared Program compiled to ONE machine-code function with numba.

``lower_program(program)`` decides whether the program is supported and writes the source of
one Python function (pure Python and fast: numba is neither imported nor run); ``compile_lowered``
compiles it with ``numba.njit(cache=True)`` through a disk cache, so a second process loads the
machine code instead of compiling. How ops lower is declared beside each op's kernel with
``@deflowering(op, "native")``: the target-independent planner (``plan.py``: uses, fusion of
element-wise chains, in-place donors, carry ownership) lowers each op through its hook, and the
numba emitter (``lower.py``, with ``emit.py``'s facades for the hooks, ``builders.py`` and
``stacks.py``) writes the source, under its SAFETY rules: no program text reaches it.

numba is optional: ``d2s_runtime`` never imports it; this package imports it only to compile.
Float32 ``tanh`` runs through ``_lib.tanh32``, a rational approximation LLVM vectorizes (at most
1 ulp from float64 tanh rounded to float32 over every float32; numpy's own float32 tanh is
within a few ulp of it: tests/runtime/native/test_native_math.py); float32 ``erf`` through
``_lib.erf32`` likewise (the Python backend's float32 fit, within 1 ulp). numba's SVML path is not
used: the llvmlite wheels from the package index are built without Intel's SVML patch
(``numba -s`` reports "llvmlite Using SVML Patched LLVM: False"), so installing
``intel-cmplr-lib-rt`` would not vectorize anything.
"""
import contextlib
import importlib.util
import os
import sys
import types

import numpy as np

from .. import forksafe
from .cache import CacheDir, default_cache_dir, helpers_digest, warn_once
from .lower import NativeUnsupported, StackPool, lower, source_key

__all__ = ["NativeUnsupported", "Lowered", "available", "lower_program", "compile_lowered", "compile_program",
           "is_cached", "default_cache_dir"]  # default_cache_dir: from cache.py

_LOCK = forksafe.Lock()
_ACTIVE = [0]  # compiles in progress in this process
_FORKED_MID_COMPILE = False


@contextlib.contextmanager
def _compiling():
    _ACTIVE[0] += 1
    try:
        yield
    finally:
        _ACTIVE[0] -= 1


@forksafe.after_fork
def _after_fork():
    # a compile running in another thread holds numba's own compiler lock, which the child
    # inherits held: the child must not enter numba's compiler at all
    global _FORKED_MID_COMPILE
    if _ACTIVE[0]:
        _FORKED_MID_COMPILE = True
        _ACTIVE[0] = 0


def available():
    """``(True, "")`` when numba can be imported, else ``(False, reason)``."""
    try:
        spec = importlib.util.find_spec("numba")
    except (ImportError, ValueError) as e:
        return False, f"numba cannot be found: {e}"
    if spec is None:
        return False, "numba is not installed (pip install 'd2s[native]')"
    try:
        import numba  # noqa: F401
    except Exception as e:  # a broken install (e.g. llvmlite mismatch)
        return False, f"numba does not import: {type(e).__name__}: {e}"
    return True, ""


_VERSIONS = []


def _versions():
    """(numba, numpy, Python) versions and the digest of the runtime's native helpers
    (``cache.helpers_digest``), part of every cache key; read once per process, numba's from
    its dist-info folder (importing numba or scanning every installed distribution would cost
    a large part of a second)."""
    if not _VERSIONS:
        nb = "none"
        try:
            spec = importlib.util.find_spec("numba")
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            site = os.path.dirname(os.path.dirname(spec.origin))
            infos = sorted(f for f in os.listdir(site) if f.startswith("numba-") and f.endswith(".dist-info"))
            nb = infos[-1][len("numba-"):-len(".dist-info")] if infos else spec.origin
        _VERSIONS.append((nb, np.__version__, tuple(sys.version_info[:2]), helpers_digest()))
    return _VERSIONS[0]


class Lowered:
    """A program lowered to native source.

    Attributes:
        key: hash of the source (the program's structure, dtypes and static dims), the feed
            signature, the numba/numpy/Python versions and the runtime's native helpers: the
            disk-cache key.
        source: the generated Python module source (one function, ``program``).
        signature: ``[(dtype, ndim)]`` of the feeds (inputs, params, constants in order).
        out_types: ``[(dtype, ndim)]`` of the outputs.
        constants: values of the extra trailing arguments (literals of the program, and a
            ``StackPool`` per dtype of its stacks).
    """

    __slots__ = ("key", "source", "signature", "out_types", "constants")

    def __init__(self, key, source, signature, out_types, constants):
        self.key, self.source, self.signature, self.out_types, self.constants = (
            key, source, signature, out_types, constants)

    def __repr__(self):
        return f"<Lowered {self.key}: {len(self.signature)} feeds, {len(self.out_types)} outputs>"


def lower_program(program, order=None):
    """Lower ``program`` (raises :class:`NativeUnsupported` with a one-line reason naming the
    first op, by type and output var, that has no native lowering). ``order``: the global
    block's op order (default: ``schedule.topo_order``)."""
    source, sig, out_types, consts = lower(program, order)
    return Lowered(source_key(source, sig, _versions()), source, sig, out_types, consts)


def _path_key(lowered):
    return f"d2s_native_{lowered.key}"


def is_cached(lowered, cache_dir=None):
    """Whether compiled machine code for ``lowered`` is on disk: d2s's manifest of the entry
    (see :func:`compile_lowered`) and the files it lists, of the sizes it lists, in a directory
    the cache's trust rule accepts. Cheap (no hashing, no numba): :func:`compile_lowered`
    checks the digests before numba reads them."""
    path = cache_dir or default_cache_dir()
    if not os.path.isdir(path):
        return False
    with CacheDir(path, create=False) as cache:
        return cache.refusal is None and cache.entry_is_listed(lowered.key, _path_key(lowered))


def _numba_type(dtype, ndim):
    from numba import types
    scalar = {"float32": types.float32, "float64": types.float64, "int32": types.int32, "int64": types.int64,
              "bool": types.boolean}[dtype]
    return types.Array(scalar, ndim, "C")


def _const_type(value):
    from numba import typeof
    if isinstance(value, StackPool):
        return _numba_type(value.dtype, 1) if value.part == "arena" else _numba_type("int64", 2)
    return typeof(value)


def compile_lowered(lowered, cache_dir=None):
    """Compile ``lowered`` (slow the first time: numba; later processes load the machine code
    from ``cache_dir``, default ``$D2S_CACHE_DIR/native`` or ``~/.cache/d2s/native``).

    Returns ``fn(*feeds) -> list of arrays`` with the calling convention of the Python code
    generator's function: feeds are the program's inputs, params and constants in order.
    Raises :class:`NativeUnsupported` if numba cannot compile the lowered source (a gap of
    this backend: the caller falls back to the Python backend). The function's ``origin`` says
    where its machine code came from: ``"disk cache"``, ``"compiled"`` (and stored), or
    ``"compiled (disk cache not used: <why>)"`` (see the trust rule in ``cache.py``: an entry
    d2s did not write is deleted and compiled again, never loaded).

    Errors a program raises while running natively are ValueError/IndexError with a generic
    message (numba's exceptions carry no op names): callers wrap them as the Python backend
    does, or re-run on it to name the op."""
    import numba

    if _FORKED_MID_COMPILE:
        raise NativeUnsupported("this process was forked while numba was compiling in another thread, whose locks "
                                "the child inherits held; numba cannot compile here (the Python backend runs)")
    cache_dir = cache_dir or default_cache_dir()
    arg_types = [_numba_type(dt, nd) for dt, nd in lowered.signature]
    arg_types += [_const_type(v) for v in lowered.constants]
    with _LOCK, _compiling(), CacheDir(cache_dir) as cache:
        if cache.refusal is not None:
            warn_once(cache_dir, cache.refusal)
            module = types.ModuleType("d2s_native_uncached")
            exec(compile(lowered.source, f"<d2s native {lowered.key}>", "exec"), module.__dict__)  # noqa: S102
            core = _compile(numba, module.program, arg_types, cache=False)
            origin = f"compiled (disk cache not used: {cache.refusal})"
        else:
            with cache.lock(lowered.key):
                core, origin = _compile_cached(numba, lowered, cache, arg_types)
    consts = tuple(lowered.constants)
    expect = [(np.dtype(dt), nd) for dt, nd in lowered.signature]

    def call(feeds, consts):
        try:
            return list(core(*feeds, *consts))
        except TypeError:
            # a feed of another layout or dtype than the compiled signature: numpy's copy first
            if len(feeds) != len(expect):
                raise
            fixed = [np.ascontiguousarray(np.asarray(f, dtype=dt)).reshape(np.shape(f)) for f, (dt, nd) in zip(feeds, expect)]
            return list(core(*fixed, *consts))

    pooled = [i for i, c in enumerate(consts) if isinstance(c, StackPool)]
    if not pooled:
        def run(*feeds):
            return call(feeds, consts)
    else:
        run = _pooled_runner(call, consts, pooled)

    run.source = lowered.source
    run.key = lowered.key
    run.dispatcher = core  # numba's dispatcher (its ``stats`` count disk-cache hits)
    run.origin = origin  # "disk cache", "compiled" or "compiled (disk cache not used: why)"
    return run


class _Pools:
    """One call's pooled stack memory (see the stack section of ``_lib.py``): per dtype, an arena
    and the ``[offset, capacity, needed]`` rows of its sites."""

    ALIGN = 16  # elements between parts (64 bytes and more)

    def __init__(self, specs):
        self.arenas, self.slots = {}, {}
        for i, spec in specs.items():  # i: the arena's argument position; i + 1: its slots'
            self.slots[i + 1] = np.zeros((spec.sites, 3), np.int64)
            self.arenas[i] = np.empty(0, spec.dtype)

    def regrow(self):
        """After a call: a bigger arena where a site's stack outgrew its part."""
        for i, arena in self.arenas.items():
            slots = self.slots[i + 1]
            if (slots[:, 2] > slots[:, 1]).any():
                caps = -(-np.maximum(slots[:, 1], slots[:, 2]) // self.ALIGN) * self.ALIGN
                slots[:, 0] = np.concatenate([[0], np.cumsum(caps)[:-1]])
                slots[:, 1] = caps
                self.arenas[i] = np.empty(int(caps.sum()), arena.dtype)

    def holds(self, out):
        """Whether the array ``out`` points into an arena (the next call writes there)."""
        p = out.__array_interface__["data"][0]
        for a in self.arenas.values():
            lo = a.__array_interface__["data"][0]
            if lo <= p < lo + a.nbytes:
                return True
        return False


def _pooled_runner(call, consts, pooled):
    """``run(*feeds)`` for a function with pooled stack memory (``_lib.py``): each call takes a
    pool set no other call in flight holds (calls run in parallel without the GIL), and an
    output that points into an arena is copied before the set is handed on."""
    specs = {i: consts[i] for i in pooled if consts[i].part == "arena"}
    free = [_Pools(specs)]

    def run(*feeds):
        try:
            pools = free.pop()
        except IndexError:
            pools = _Pools(specs)
        args = list(consts)
        for i, arena in pools.arenas.items():
            args[i], args[i + 1] = arena, pools.slots[i + 1]
        outs = call(feeds, args)
        for k, o in enumerate(outs):
            if type(o) is np.ndarray and o.size and pools.holds(o):
                outs[k] = o.copy()
        pools.regrow()
        free.append(pools)
        return outs

    return run


def _compile_cached(numba, lowered, cache, arg_types):
    """Compile through the disk cache (``cache``: the opened, trusted ``CacheDir``): numba loads
    the entry only if its manifest vouches for every file (else the entry is deleted first);
    a fresh compile records a new manifest. numba reaches the directory through the opened
    descriptor (``cache.module_dir``)."""
    stem = _path_key(lowered)
    cache.write_atomic(stem + ".py", lowered.source, exclusive=True)
    module = _module_from_source(stem, os.path.join(cache.module_dir, stem + ".py"), lowered.source)
    core = numba.njit(cache=True, error_model="numpy", nogil=True)(module.program)
    cache_path = getattr(getattr(core, "_cache", None), "_cache_path", cache.numba_dir)
    if os.path.abspath(cache_path) != os.path.abspath(cache.numba_dir):
        # NUMBA_CACHE_DIR points numba elsewhere: that directory is not checked, so not used
        core = _compile(numba, module.program, arg_types, cache=False)
        return core, f"compiled (disk cache not used: NUMBA_CACHE_DIR={cache_path} is set)"
    if not cache.entry_is_intact(lowered.key, stem):
        cache.purge(lowered.key, stem)
    loads = bool(cache.numba_files(stem))
    try:
        _compile(numba, core, arg_types)
    except NativeUnsupported:
        raise
    except Exception:  # noqa: BLE001 - an entry numba cannot read (changed between check and load)
        if not loads:
            raise
        cache.purge(lowered.key, stem)
        core = numba.njit(cache=True, error_model="numpy", nogil=True)(module.program)
        _compile(numba, core, arg_types)
    if sum(core.stats.cache_hits.values()):
        return core, "disk cache"
    cache.write_manifest(lowered.key, stem)
    return core, "compiled"


def _module_from_source(name, path, source):
    """The generated module, executed from ``source`` (d2s's own output, never the text read
    back from disk, nor a ``.pyc``); ``path`` (the file holding the same text) is only where
    numba's cache locates the function and stamps its entries."""
    module = sys.modules.get(name)
    if module is None or getattr(module, "__file__", None) != path:
        module = types.ModuleType(name)
        module.__file__ = path
        exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102
        # numba's disk cache finds the function's globals again by module name
        sys.modules[name] = module
    return module


def _compile(numba, target, arg_types, cache=True):
    """``target`` (a dispatcher, or with ``cache=False`` a Python function) compiled for
    ``arg_types`` only (a call with other types raises TypeError)."""
    if not cache:
        target = numba.njit(error_model="numpy", nogil=True)(target)
    try:
        target.compile(tuple(arg_types))
    except numba.core.errors.NumbaError as e:  # a lowering numba cannot type: a reason, not a crash
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise NativeUnsupported(f"numba could not compile the lowered program: {first}") from e
    except ImportError as e:  # numba's np.dot needs scipy's BLAS (part of d2s[native])
        raise NativeUnsupported(f"numba could not compile the lowered program: {e} "
                                "(pip install 'd2s[native]' installs scipy)") from e
    target.disable_compile()
    return target


def compile_program(program, cache_dir=None):
    """``compile_lowered(lower_program(program), cache_dir)`` (for tests and scripts)."""
    return compile_lowered(lower_program(program), cache_dir)
