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
import importlib.util
import os
import sys
import tempfile
import threading

import numpy as np

from .lower import NativeUnsupported, lower, source_key

__all__ = ["NativeUnsupported", "Lowered", "available", "lower_program", "compile_lowered", "compile_program",
           "is_cached", "default_cache_dir"]

_LOCK = threading.Lock()


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
        constants: values of the extra trailing arguments (literals of the program).
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
    """Whether compiled machine code for ``lowered`` is on disk (numba's index beside the source)."""
    path = _path(lowered, cache_dir)
    if not os.path.exists(path):
        return False
    pycache = os.path.join(os.path.dirname(path), "__pycache__")
    stem = os.path.splitext(os.path.basename(path))[0]
    try:
        return any(f.startswith(stem + ".") and f.endswith(".nbi") for f in os.listdir(pycache))
    except OSError:
        return False


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
    return typeof(value)


def compile_lowered(lowered, cache_dir=None):
    """Compile ``lowered`` (slow the first time: numba; later processes load the machine code
    from ``cache_dir``, default ``$D2S_CACHE_DIR/native`` or ``~/.cache/d2s/native``).

    Returns ``fn(*feeds) -> list of arrays`` with the calling convention of the Python code
    generator's function: feeds are the program's inputs, params and constants in order.
    Raises :class:`NativeUnsupported` if numba cannot compile the lowered source (a gap of
    this backend: the caller falls back to the Python backend).

    Errors a program raises while running natively are ValueError/IndexError with a generic
    message (numba's exceptions carry no op names): callers wrap them as the Python backend
    does, or re-run on it to name the op."""
    import numba

    path = _path(lowered, cache_dir)
    with _LOCK:
        _write_source(path, lowered.source)
        name = f"d2s_native_{lowered.key}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = sys.modules.get(name)
        if module is None or getattr(module, "__file__", None) != path:
            module = importlib.util.module_from_spec(spec)
            # numba's disk cache finds the function's globals again by module name
            sys.modules[name] = module
            spec.loader.exec_module(module)
        arg_types = [_numba_type(dt, nd) for dt, nd in lowered.signature]
        arg_types += [_const_type(v) for v in lowered.constants]
        try:
            core = numba.njit(tuple(arg_types), cache=True, error_model="numpy", nogil=True)(module.program)
        except numba.core.errors.NumbaError as e:  # a lowering numba cannot type: a reason, not a crash
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise NativeUnsupported(f"numba could not compile the lowered program: {first}") from e
        except ImportError as e:  # numba's np.dot needs scipy's BLAS (part of d2s[native])
            raise NativeUnsupported(f"numba could not compile the lowered program: {e} "
                                    "(pip install 'd2s[native]' installs scipy)") from e
    consts = tuple(lowered.constants)
    expect = [(np.dtype(dt), nd) for dt, nd in lowered.signature]

    def run(*feeds):
        try:
            return list(core(*feeds, *consts))
        except TypeError:
            # a feed of another layout or dtype than the compiled signature: numpy's copy first
            if len(feeds) != len(expect):
                raise
            fixed = [np.ascontiguousarray(np.asarray(f, dtype=dt)).reshape(np.shape(f)) for f, (dt, nd) in zip(feeds, expect)]
            return list(core(*fixed, *consts))

    run.source = lowered.source
    run.key = lowered.key
    run.dispatcher = core  # numba's dispatcher (its ``stats`` count disk-cache hits)
    return run


def compile_program(program, cache_dir=None):
    """``compile_lowered(lower_program(program), cache_dir)`` (for tests and scripts)."""
    return compile_lowered(lower_program(program), cache_dir)
