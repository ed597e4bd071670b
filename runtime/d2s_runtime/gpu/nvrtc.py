"""CUDA C compiled with NVRTC (cuda-bindings' ``cuda.bindings.nvrtc`` over the
``nvidia-cuda-nvrtc`` wheel), to PTX or cubin, cached on disk. Needs no GPU: the test suite
compiles every kernel source this package writes on CPU machines.

The cache is ``$D2S_CACHE_DIR/cuda`` (default ``~/.cache/d2s/cuda``); an entry's name is the
SHA-256 of the source, the options, the target and NVRTC's version, so a changed kernel or
compiler never reads a stale entry. Entries are written to a temporary name and renamed.
"""
import ctypes
import glob
import hashlib
import os
import sys

_LOADED = []


class NvrtcUnavailable(RuntimeError):
    """cuda-bindings or the NVRTC library is missing (the message says what to install)."""


class CompileError(RuntimeError):
    """NVRTC refused a source; the message holds its log."""


def _preload():
    """Load libnvrtc from an ``nvidia/cu*/lib`` folder on ``sys.path`` (a wheel installed with
    ``--target`` or a path entry, which cuda-pathfinder's search does not look in)."""
    if _LOADED:
        return
    _LOADED.append(True)
    for base in sys.path:
        for path in sorted(glob.glob(os.path.join(base or ".", "nvidia", "cu*", "lib", "libnvrtc.so.*"))):
            if "builtins" not in os.path.basename(path):
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                    return
                except OSError:
                    continue


def nvrtc_module():
    """``cuda.bindings.nvrtc``, with its library found (else NvrtcUnavailable)."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise NvrtcUnavailable("compiling CUDA C needs cuda-bindings and nvidia-cuda-nvrtc "
                               f"(pip install 'd2s[gpu-cuda13]' or 'd2s[nvrtc]'): {e}") from None
    _preload()
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception as e:  # noqa: BLE001 - the library is not found
        raise NvrtcUnavailable(f"the NVRTC library cannot be loaded (pip install nvidia-cuda-nvrtc): "
                               f"{str(e).splitlines()[0]}") from None
    return nvrtc


def version():
    """NVRTC's ``(major, minor)``."""
    nvrtc = nvrtc_module()
    _, major, minor = nvrtc.nvrtcVersion()
    return int(major), int(minor)


def default_cache_dir():
    root = os.environ.get("D2S_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "d2s")
    return os.path.join(root, "cuda")


def _check(nvrtc, result, prog=None):
    err = result[0] if isinstance(result, tuple) else result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        log = ""
        if prog is not None:
            _, n = nvrtc.nvrtcGetProgramLogSize(prog)
            buf = b" " * n
            nvrtc.nvrtcGetProgramLog(prog, buf)
            log = buf.decode(errors="replace").strip("\x00 \n")
        raise CompileError(f"NVRTC: {err.name if hasattr(err, 'name') else err}\n{log}")
    return result


def compile_source(source, arch="sm_90", target="cubin", options=(), name="d2s_kernels.cu", cache_dir=None):
    """``source`` (CUDA C) compiled for ``arch`` to ``target`` (``"cubin"`` or ``"ptx"``):
    the bytes, from the disk cache when an equal compile was stored."""
    if target not in ("cubin", "ptx"):
        raise ValueError(f"target must be 'cubin' or 'ptx', got {target!r}")
    nvrtc = nvrtc_module()
    opts = [f"--gpu-architecture={arch if target == 'cubin' else arch.replace('sm_', 'compute_')}",
            "-default-device", "--std=c++17", *options]
    key = hashlib.sha256(repr((source, opts, target, version())).encode()).hexdigest()[:40]
    cache_dir = cache_dir or default_cache_dir()
    path = os.path.join(cache_dir, f"{key}.{target}")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        pass
    _, prog = _check(nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []))
    try:
        _check(nvrtc, nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts]), prog)
        if target == "cubin":
            _, n = _check(nvrtc, nvrtc.nvrtcGetCUBINSize(prog))
            out = b" " * n
            _check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, out))
        else:
            _, n = _check(nvrtc, nvrtc.nvrtcGetPTXSize(prog))
            out = b" " * n
            _check(nvrtc, nvrtc.nvrtcGetPTX(prog, out))
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    try:
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(out)
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache: compiled again next time
    return out
