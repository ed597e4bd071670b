"""The native backend: a prepared Program compiled to ONE machine-code function with numba.

``lower_program(program)`` decides whether the program is supported and writes the source of
one Python function (pure Python and fast: numba is neither imported nor run); ``compile_lowered``
compiles it with ``numba.njit(cache=True)`` through a disk cache, so a second process loads the
machine code instead of compiling. How ops lower is declared beside each op's kernel with
``@deflowering(op, "native")`` (see ``lower.py`` for the hook contract, the fusion of
element-wise chains, and the SAFETY rules: no program text reaches the source).

numba is optional: ``d2s_runtime`` never imports it; this package imports it only to compile.
Float32 ``tanh`` runs through ``_lib.tanh32``, a rational approximation LLVM vectorizes (at most
1 ulp from float64 tanh rounded to float32 over every float32; numpy's own float32 tanh is
within a few ulp of it: tests/runtime/native/test_native_math.py). numba's SVML path is not
used: the llvmlite wheels from the package index are built without Intel's SVML patch
(``numba -s`` reports "llvmlite Using SVML Patched LLVM: False"), so installing
``intel-cmplr-lib-rt`` would not vectorize anything.
"""
import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import threading
import types

try:
    import fcntl
except ImportError:  # not POSIX: no lock between processes (the in-process one remains)
    fcntl = None

import numpy as np

from .lower import NativeUnsupported, StackPool, lower, source_key

__all__ = ["NativeUnsupported", "Lowered", "available", "lower_program", "compile_lowered", "compile_program",
           "is_cached", "default_cache_dir"]

_LOCK = threading.Lock()
_MANIFEST_FORMAT = 1


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
    """(numba, numpy, Python) versions, part of every cache key; read once per process, from
    numba's dist-info folder (importing numba or scanning every installed distribution would
    cost a large part of a second)."""
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
        _VERSIONS.append((nb, np.__version__, tuple(sys.version_info[:2])))
    return _VERSIONS[0]


class Lowered:
    """A program lowered to native source.

    Attributes:
        key: hash of the source (the program's structure, dtypes and static dims), the feed
            signature and the numba/numpy/Python versions: the disk-cache key.
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


def default_cache_dir():
    base = os.environ.get("D2S_CACHE_DIR")
    if base:
        return os.path.join(base, "native")
    return os.path.join(os.path.expanduser("~"), ".cache", "d2s", "native")


def _path(lowered, cache_dir):
    return os.path.join(cache_dir or default_cache_dir(), f"d2s_native_{lowered.key}.py")


def is_cached(lowered, cache_dir=None):
    """Whether compiled machine code for ``lowered`` is on disk: d2s's manifest of the entry
    (see :func:`compile_lowered`) and the files it lists, of the sizes it lists. Cheap (no
    hashing, no numba): :func:`compile_lowered` checks the digests before numba reads them."""
    manifest = _read_manifest(_manifest_path(lowered, cache_dir))
    if manifest is None:
        return False
    try:
        cache_dir = cache_dir or default_cache_dir()
        if _untrusted(cache_dir, create=False) or _untrusted(manifest["numba_dir"], create=False):
            return False  # (compile_lowered would not use it: it compiles, so not at once)
        return all(os.path.getsize(os.path.join(manifest["numba_dir"], name)) == size
                   for name, (size, _) in manifest["files"].items())
    except OSError:
        return False


# ------------------------------------------------------------------ the cache's trust model
# numba's cache files (beside the generated module, in __pycache__) are pickles, which run code
# when loaded, and the generated module is imported: so the cache is only used in a directory
# this user owns that no one else can write (as ssh treats ~/.ssh), and numba reads an entry
# only when every file of it has the SHA-256 that d2s recorded in the entry's manifest (JSON,
# never executed) when it compiled the entry. A torn, truncated, foreign or tampered entry
# (any file that d2s did not write through this function) is deleted and compiled again; a
# directory that fails the check is not used at all (the program is compiled in memory).

def _manifest_path(lowered, cache_dir):
    return os.path.join(cache_dir or default_cache_dir(), f"d2s_native_{lowered.key}.json")


def _read_manifest(path):
    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
        if (m.get("format") != _MANIFEST_FORMAT or not isinstance(m.get("files"), dict)
                or not isinstance(m.get("numba_dir"), str) or not m["files"]):
            return None
        return m
    except (OSError, ValueError, AttributeError):
        return None


def _untrusted(path, create=True):
    """Why ``path`` (a directory, created private if missing and ``create``) must not hold
    executable cache entries, or None."""
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    if os.name != "posix":
        return None
    st = os.stat(path)
    if st.st_uid != os.getuid():
        return f"{path} belongs to another user"
    if st.st_mode & 0o022:
        return f"{path} is writable by other users"
    return None


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _entry_files(numba_dir, stem):
    """numba's files of the module ``stem`` (its index ``.nbi`` and data ``.nbc`` files)."""
    try:
        names = os.listdir(numba_dir)
    except OSError:
        return []
    return sorted(n for n in names if n.startswith(stem + ".") and n.endswith((".nbi", ".nbc")))


def _entry_is_intact(manifest, numba_dir, stem):
    """Every numba file of the entry is listed in the manifest with its digest (and the
    manifest names this directory)."""
    if manifest is None or os.path.abspath(manifest["numba_dir"]) != os.path.abspath(numba_dir):
        return False
    files = _entry_files(numba_dir, stem)
    if not files or set(files) != set(manifest["files"]):
        return False
    try:
        return all(_sha256(os.path.join(numba_dir, n)) == manifest["files"][n][1] for n in files)
    except (OSError, TypeError, IndexError):
        return False


def _purge_entry(numba_dir, stem, manifest_path):
    for name in _entry_files(numba_dir, stem) + [None]:
        try:
            os.unlink(manifest_path if name is None else os.path.join(numba_dir, name))
        except OSError:
            pass


def _write_manifest(manifest_path, numba_dir, stem):
    files = {}
    for n in _entry_files(numba_dir, stem):
        full = os.path.join(numba_dir, n)
        files[n] = (os.path.getsize(full), _sha256(full))
    data = json.dumps({"format": _MANIFEST_FORMAT, "numba_dir": os.path.abspath(numba_dir), "files": files})
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(manifest_path), prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(data)
    os.replace(tmp, manifest_path)


@contextlib.contextmanager
def _entry_lock(cache_dir, key):
    """Other processes compiling the same program wait for this one (then load its entry)
    instead of compiling it too and rewriting the files under each other's manifests."""
    if fcntl is None:
        yield
        return
    fd = os.open(os.path.join(cache_dir, f"d2s_native_{key}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write_source(path, source):
    """Write ``source`` at ``path`` once, atomically: concurrent processes write the same text,
    and the first complete file wins (rewriting it would change its stamp and make numba
    discard the machine code cached beside it)."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == source:
                return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        try:
            os.link(tmp, path)  # fails if another process got there first
        except FileExistsError:
            with open(path, encoding="utf-8") as f:
                if f.read() != source:  # a torn or foreign file: replace it
                    os.replace(tmp, path)
                    tmp = None
        except OSError:  # no hard links on this file system
            os.replace(tmp, path)
            tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


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
    ``"compiled (disk cache not used: <why>)"`` (see the trust model above ``_untrusted``: an
    entry d2s did not write is deleted and compiled again, never loaded).

    Errors a program raises while running natively are ValueError/IndexError with a generic
    message (numba's exceptions carry no op names): callers wrap them as the Python backend
    does, or re-run on it to name the op."""
    import numba

    cache_dir = cache_dir or default_cache_dir()
    arg_types = [_numba_type(dt, nd) for dt, nd in lowered.signature]
    arg_types += [_const_type(v) for v in lowered.constants]
    with _LOCK:
        untrusted = _untrusted(cache_dir)
        if untrusted is None:
            numba_dir = os.path.join(cache_dir, "__pycache__")
            untrusted = _untrusted(numba_dir)  # (created private here, not by numba's umask)
        if untrusted is not None:
            module = types.ModuleType("d2s_native_uncached")
            exec(compile(lowered.source, f"<d2s native {lowered.key}>", "exec"), module.__dict__)  # noqa: S102
            core = _compile(numba, module.program, arg_types, cache=False)
            origin = f"compiled (disk cache not used: {untrusted})"
        else:
            with _entry_lock(cache_dir, lowered.key):
                core, origin = _compile_cached(numba, lowered, cache_dir, numba_dir, arg_types)
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


def _compile_cached(numba, lowered, cache_dir, numba_dir, arg_types):
    """Compile through the disk cache: numba loads the entry only if its manifest vouches for
    every file (else the entry is deleted first); a fresh compile records a new manifest."""
    path = _path(lowered, cache_dir)
    stem = f"d2s_native_{lowered.key}"
    manifest_path = _manifest_path(lowered, cache_dir)
    _write_source(path, lowered.source)
    module = _module_from_source(stem, path, lowered.source)
    core = numba.njit(cache=True, error_model="numpy", nogil=True)(module.program)
    cache_path = getattr(getattr(core, "_cache", None), "_cache_path", numba_dir)
    if os.path.abspath(cache_path) != os.path.abspath(numba_dir):
        # NUMBA_CACHE_DIR points numba elsewhere: that directory is not checked, so not used
        core = _compile(numba, module.program, arg_types, cache=False)
        return core, f"compiled (disk cache not used: NUMBA_CACHE_DIR={cache_path} is set)"
    if not _entry_is_intact(_read_manifest(manifest_path), numba_dir, stem):
        _purge_entry(numba_dir, stem, manifest_path)
    loads = bool(_entry_files(numba_dir, stem))
    try:
        _compile(numba, core, arg_types)
    except NativeUnsupported:
        raise
    except Exception:  # noqa: BLE001 - an entry numba cannot read (changed between check and load)
        if not loads:
            raise
        _purge_entry(numba_dir, stem, manifest_path)
        core = numba.njit(cache=True, error_model="numpy", nogil=True)(module.program)
        _compile(numba, core, arg_types)
    if sum(core.stats.cache_hits.values()):
        return core, "disk cache"
    _write_manifest(manifest_path, numba_dir, stem)
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
