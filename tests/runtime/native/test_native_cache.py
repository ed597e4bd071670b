"""The native backend's disk cache (runtime/d2s_runtime/native/__init__.py): a second process
loads the compiled machine code instead of compiling (numba's own counters say so), and
processes compiling the same program at once do not break each other."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SCRIPT = r"""
import json, sys
import numpy as np
import d2s
from d2s.static import InputSpec, build_program
from d2s_runtime import native

def f(x, n):
    def body(i, x):
        return i + 1, d2s.tanh(x) * 0.5 + x.sum() * 0.01
    return d2s.while_loop(lambda i, x: i < n, body, (d2s.tensor(0), x))[1]

prog = build_program(f, InputSpec([8]), InputSpec([], "int64"))
low = native.lower_program(prog)
cached = native.is_cached(low, cache_dir=sys.argv[1])
fn = native.compile_lowered(low, cache_dir=sys.argv[1])
out = fn(np.linspace(-1, 1, 8).astype("float32"), np.array(5))[0]
st = fn.dispatcher.stats
print(json.dumps({"cached_before": cached, "hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values()),
                  "out": out.tolist(), "key": low.key}))
"""


def _run(cache_dir, n=1):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(cache_dir)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(n)]
    out = []
    for p in procs:
        so, se = p.communicate(timeout=300)
        assert p.returncode == 0, se
        out.append(json.loads(so.strip().splitlines()[-1]))
    return out


def test_a_second_process_loads_the_machine_code_from_disk(tmp_path):
    # two processes compile at once into an empty cache: both work, with the same result
    first = _run(tmp_path, n=2)
    assert not first[0]["cached_before"] and first[0]["out"] == first[1]["out"]
    (again,) = _run(tmp_path)
    assert again["cached_before"] and again["hits"] == 1 and again["misses"] == 0
    assert again["out"] == first[0]["out"] and again["key"] == first[0]["key"]
    assert os.path.exists(tmp_path / f"d2s_native_{again['key']}.py")


# ------------------------------------------------------------------ the trust rule (cache.py)
class _Payload:
    """A pickle that runs code when loaded (makes a directory): what a foreign cache file holds."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def _lowered():
    import numpy as np
    import d2s
    from d2s.static import build_program
    from d2s_runtime import native

    def g(x):
        return d2s.tanh(x) * 0.5 - x
    return native.lower_program(build_program(g, d2s.tensor(np.zeros(6, "float32"))))


def _forge(entry_dir, marker):
    """What an attacker who can write ``entry_dir`` leaves there: the entry's index replaced by a
    payload, and a manifest whose digests match (anyone can compute them)."""
    import hashlib
    import pickle
    pycache = entry_dir / "__pycache__"
    index = next(p for p in pycache.iterdir() if p.name.endswith(".nbi"))
    index.write_bytes(pickle.dumps(_Payload(str(marker))))
    manifest = next(p for p in entry_dir.iterdir() if p.name.endswith(".json"))
    files = {p.name: [p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest()]
             for p in pycache.iterdir() if p.name.endswith((".nbi", ".nbc"))}
    manifest.write_text(json.dumps({"format": 2, "files": files}))


def test_a_cache_swapped_after_its_check_is_never_read(tmp_path, monkeypatch):
    """The race of a writable parent, made deterministic: right after the cache directory is
    checked, it is renamed away and a forged one (payload index, consistent manifest) put at its
    path. numba reads through the descriptor opened at the check: the payload never runs."""
    import shutil
    from d2s_runtime import native
    low = _lowered()
    cache = tmp_path / "native"
    assert native.compile_lowered(low, cache_dir=str(cache)).origin == "compiled"
    forged = tmp_path / "forged"
    shutil.copytree(cache, forged)
    marker = tmp_path / "payload-ran"
    _forge(forged, marker)

    real = native._module_from_source

    def swap_then_load(*args):
        os.rename(cache, tmp_path / "moved")
        os.rename(forged, cache)
        return real(*args)

    monkeypatch.setattr(native, "_module_from_source", swap_then_load)
    fn = native.compile_lowered(low, cache_dir=str(cache))
    assert fn.origin == "disk cache" and not marker.exists()
    import numpy as np
    x = np.linspace(-2, 2, 6).astype("float32")
    np.testing.assert_allclose(fn(x)[0], np.tanh(x) * 0.5 - x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("parent_mode, owner, refused", [
    (0o777, None, "writable by other users"),         # a shared directory without the sticky bit
    (0o1777, None, None),                              # sticky, like /tmp, and ours: fine
    (0o1777, 4321, "belongs to another user"),         # sticky but someone else's (their /tmp/x)
    (0o755, 4321, "belongs to another user"),
])
def test_a_cache_whose_ancestors_others_can_write_is_refused(tmp_path, parent_mode, owner, refused):
    from d2s_runtime import native
    low = _lowered()
    parent = tmp_path / "shared"
    cache = parent / "mine" / "native"
    os.makedirs(cache, mode=0o700)
    os.chmod(cache.parent, 0o700)
    os.chmod(parent, parent_mode)
    if owner is not None:
        if os.getuid() != 0:
            pytest.skip("changing a directory's owner needs root")
        os.chown(parent, owner, -1)
    marker = tmp_path / "payload-ran"
    try:
        with pytest.warns(RuntimeWarning, match="is not used") if refused else _no_warning():
            fn = native.compile_lowered(low, cache_dir=str(cache))
        if refused:
            assert fn.origin.startswith("compiled (disk cache not used: ") and refused in fn.origin
            assert str(parent) in fn.origin
            assert not native.is_cached(low, cache_dir=str(cache)) and not (cache / "__pycache__").exists()
        else:
            assert fn.origin == "compiled" and native.is_cached(low, cache_dir=str(cache))
        assert not marker.exists()
    finally:
        os.chmod(parent, 0o700)


class _no_warning:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("error", RuntimeWarning)

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def test_a_refused_cache_is_warned_about_once(tmp_path):
    import warnings
    from d2s_runtime import native
    cache = tmp_path / "open"
    cache.mkdir()
    os.chmod(cache, 0o777)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(3):
            native.compile_lowered(_lowered(), cache_dir=str(cache))
    assert [str(w.message).count("is not used") for w in seen] == [1]


def test_the_key_covers_the_runtime_helpers_generated_code_calls(monkeypatch):
    """A fixed helper in ``_lib.py`` must not be shadowed by machine code cached before the fix:
    the key covers the runtime's version and the helpers' source."""
    import hashlib
    from d2s_runtime import native
    from d2s_runtime.native import cache
    from d2s_runtime.version import __version__
    here = os.path.dirname(os.path.abspath(native.__file__))
    h = hashlib.sha256(__version__.encode())
    for name in ("_lib.py", "mkl.py"):
        with open(os.path.join(here, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    assert cache.helpers_digest() == h.hexdigest()[:16]
    before = _lowered().key
    monkeypatch.setattr(cache, "_HELPERS_DIGEST", ["a-changed-helper"])
    monkeypatch.setattr(native, "_VERSIONS", [])
    assert _lowered().key != before
