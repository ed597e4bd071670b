"""A stand-in for ``d2s_runtime.native`` with its contract (lower_program, compile_lowered,
is_cached, NativeUnsupported), to test the executor's tiers without numba: "compiling" builds
a Python-backend executor of the program, after an optional delay, and records the program's
key in the cache directory; ops listed in ``refuse`` are unsupported."""
import hashlib
import os
import tempfile
import threading

from d2s_runtime import tiers
from d2s_runtime.errors import LoweringUnsupported


class NativeUnsupported(LoweringUnsupported):
    pass


class Lowered:
    def __init__(self, program, key):
        self.program, self.key, self.source = program, key, f"# fake lowering of {program.name}"


class FakeNative:
    def __init__(self, delay=0.0, refuse=(), fail=None, outputs=None):
        self.delay, self.refuse, self.fail, self.outputs = delay, set(refuse), fail, outputs
        self.compiles = 0
        self.compile_threads = []
        self.release = threading.Event()  # set() to let a compile that waits on it finish
        self.release.set()
        self.calls = 0

    def available(self):
        return True, None

    def lower_program(self, program, order=None):
        for b in program.blocks:
            for op in b.ops:
                if op.type in self.refuse:
                    raise NativeUnsupported(f"op {op.type!r} has no native lowering")
        return Lowered(program, hashlib.sha256(str(program).encode()).hexdigest()[:16])

    def _marker(self, lowered, cache_dir):
        where = cache_dir or os.environ.get("D2S_CACHE_DIR") or tempfile.gettempdir()
        return os.path.join(where, f"fake-{lowered.key}")

    def is_cached(self, lowered, cache_dir=None):
        return os.path.exists(self._marker(lowered, cache_dir))

    def compile_lowered(self, lowered, cache_dir=None):
        from d2s_runtime import Executor
        self.compile_threads.append(threading.current_thread().name)
        self.release.wait(30)
        if self.delay:
            threading.Event().wait(self.delay)
        if self.fail:
            raise RuntimeError(self.fail)
        self.compiles += 1
        ex = Executor(lowered.program, backend="python")
        with open(self._marker(lowered, cache_dir), "w") as f:
            f.write(lowered.key)
        call = ex.runner._python_call

        def fn(*feeds):
            self.calls += 1
            out = call(list(feeds))
            return self.outputs(out) if self.outputs is not None else out
        return fn


def install(monkeypatch, fake, cache_dir):
    """Make ``fake`` the native compiler of this test, with ``cache_dir`` as its disk cache."""
    monkeypatch.setattr(tiers, "_AVAILABLE", [(fake, None)])
    monkeypatch.setenv("D2S_CACHE_DIR", str(cache_dir))
    return fake
