"""The native disk cache across processes and its trust model (runtime/d2s_runtime/native/):
a second process runs natively from its first call with the machine code loaded from disk, and
an entry d2s did not write (corrupted, or foreign) is deleted and compiled again, never loaded.
No timings: the tests assert on where the code came from (``Executor.native_origin``)."""
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

import d2s  # noqa: E402
from d2s.static import build_program  # noqa: E402
from d2s_runtime import native  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SCRIPT = r"""
import json, sys
import numpy as np
import d2s
from d2s.static import build_program
from d2s_runtime import Executor

def f(x):
    return d2s.exp(x) * 0.5 + x.sum()

x = np.linspace(-1, 1, 8).astype("float32")
prog = build_program(f, d2s.tensor(x))
seen = {}
for backend in sys.argv[1:]:
    ex = Executor(prog, backend=backend)
    at_start = ex.backend  # before the first call: native only if loaded from disk now
    (out,) = ex.run(x)
    ex.wait_native(300)
    seen[backend] = {"at_start": at_start, "origin": ex.native_origin, "report": ex.backend_report(),
                     "out": out.tolist()}
print(json.dumps(seen))
"""


def _process(cache_dir, *backends):
    env = dict(os.environ, D2S_CACHE_DIR=str(cache_dir),
               PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    p = subprocess.run([sys.executable, "-c", SCRIPT, *backends], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_warm_second_process_runs_natively_from_its_first_call(tmp_path):
    first = _process(tmp_path, "native")["native"]
    assert first["at_start"] == "python" and first["origin"] == "compiled" and first["report"] == "native"
    second = _process(tmp_path, "auto", "native")
    # "auto" does not make its first call wait for numba: it loads the entry in the background
    assert second["auto"]["at_start"] == "python" and second["auto"]["origin"] == "disk cache"
    assert second["auto"]["report"] == "python (auto: native ready, timing both backends on the next calls)"
    # "native" loads it before the first call, which runs natively
    assert second["native"]["at_start"] == "native" and second["native"]["origin"] == "disk cache"
    want = np.exp(np.linspace(-1, 1, 8).astype("float32")) * 0.5 + np.linspace(-1, 1, 8).astype("float32").sum()
    for got in (first["out"], second["native"]["out"], second["auto"]["out"]):
        np.testing.assert_allclose(got, want, rtol=1e-5)


class _Payload:
    """A pickle that runs code when loaded (makes a directory): what a foreign cache file
    could hold."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def _lowered():
    def g(x):
        return d2s.tanh(x) - x * 0.25
    return native.lower_program(build_program(g, d2s.tensor(np.zeros(5, "float32"))))


def _check(fn):
    x = np.linspace(-2, 2, 5).astype("float32")
    np.testing.assert_allclose(fn(x)[0], np.tanh(x) - x * 0.25, rtol=1e-5, atol=1e-6)


def test_a_bad_cache_entry_is_compiled_again_never_loaded(tmp_path):
    cache = tmp_path / "native"
    low = _lowered()
    fn = native.compile_lowered(low, cache_dir=str(cache))
    assert fn.origin == "compiled" and native.is_cached(low, cache_dir=str(cache))
    _check(fn)
    assert native.compile_lowered(low, cache_dir=str(cache)).origin == "disk cache"
    pycache = cache / "__pycache__"
    index = next(p for p in pycache.iterdir() if p.name.endswith(".nbi"))
    data = next(p for p in pycache.iterdir() if p.name.endswith(".nbc"))

    # a foreign index whose unpickling would run code: deleted unread, the program recompiled
    marker = tmp_path / "payload-ran"
    index.write_bytes(pickle.dumps(_Payload(str(marker))))
    assert not native.is_cached(low, cache_dir=str(cache))
    fn = native.compile_lowered(low, cache_dir=str(cache))
    assert fn.origin == "compiled" and not marker.exists()
    _check(fn)

    # a truncated data file: the same
    data.write_bytes(data.read_bytes()[:100])
    fn = native.compile_lowered(low, cache_dir=str(cache))
    assert fn.origin == "compiled"
    _check(fn)
    assert native.compile_lowered(low, cache_dir=str(cache)).origin == "disk cache"

    # a cache directory other users can write is not used at all
    os.chmod(cache, 0o777)
    assert not native.is_cached(low, cache_dir=str(cache))
    fn = native.compile_lowered(low, cache_dir=str(cache))
    assert fn.origin == f"compiled (disk cache not used: {cache} is writable by other users)"
    _check(fn)
