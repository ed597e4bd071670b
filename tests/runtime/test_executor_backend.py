"""Executor(backend=...): native lowering at preparation, the background compile and its swap,
fallbacks with a one-line reason, the disk cache's synchronous load. The tiers are tested with
a stand-in compiler (tests/native_fake.py) so they run without numba; the real one is tested
where it is installed (tests/runtime/native/ and the backend-parametrized suites)."""
import threading
import time

import numpy as np
import pytest

import d2s
from d2s.static import build_program
from d2s_runtime import ExecutionError, Executor, tiers

from native_fake import FakeNative, install
from thread_helpers import run_in_threads

RNG = np.random.default_rng(0)


def _f(x, y):
    return d2s.exp(x * y) + x.sum() - d2s.tanh(y) / 2.0


def _program():
    x, y = (RNG.standard_normal((3, 4)).astype("float32") for _ in range(2))
    return build_program(_f, d2s.tensor(x), d2s.tensor(y))


def _check(ex, n=3):
    for _ in range(n):
        x, y = (RNG.standard_normal((3, 4)).astype("float32") for _ in range(2))
        (out,) = ex.run(x, y)
        ref = _f(d2s.tensor(x), d2s.tensor(y)).numpy()
        np.testing.assert_allclose(out, ref, rtol=1e-6)
        assert out.dtype == np.float32
        (out2,) = ex.unchecked_runner()([x, y], [])
        np.testing.assert_allclose(out2, ref, rtol=1e-6)


def test_python_is_the_default_and_says_so():
    ex = Executor(_program())
    assert ex.backend == "python" and ex.backend_report() == "python"
    assert ex.wait_native(0) is False
    _check(ex)


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="backend must be"):
        Executor(_program(), backend="llvm")


def test_native_compiles_in_background_then_swaps(monkeypatch, tmp_path):
    fake = install(monkeypatch, FakeNative(), tmp_path)
    fake.release.clear()  # hold the compile: calls meanwhile run on the Python backend
    ex = Executor(_program(), backend="native")
    runner = ex.unchecked_runner()  # taken before the swap: must pick it up
    assert fake.compile_threads == []  # the compile starts after the first call, not during it
    assert ex.backend == "python"
    assert ex.backend_report() == "python (native pending: compiling in background)"
    _check(ex)
    assert fake.calls == 0
    fake.release.set()
    assert ex.wait_native(30) is True
    assert ex.backend == "native" and ex.backend_report() == "native"
    assert fake.compile_threads == ["d2s-native-compile"]
    x, y = (RNG.standard_normal((3, 4)).astype("float32") for _ in range(2))
    np.testing.assert_allclose(runner([x, y], [])[0], _f(d2s.tensor(x), d2s.tensor(y)).numpy(), rtol=1e-6)
    assert fake.calls == 1
    _check(ex)
    assert fake.calls == 7


def test_a_cached_program_runs_natively_from_the_first_call(monkeypatch, tmp_path):
    fake = install(monkeypatch, FakeNative(), tmp_path)
    prog = _program()
    Executor(prog, backend="native").wait_native(30)
    fake.compile_threads.clear()
    ex = Executor(prog, backend="native")  # as a second process would: the disk cache has it
    assert ex.backend == "native"
    assert fake.compile_threads == [threading.current_thread().name]
    _check(ex)


def test_unsupported_program_runs_on_python_with_the_reason(monkeypatch, tmp_path):
    install(monkeypatch, FakeNative(refuse={"tanh"}), tmp_path)
    for backend in ("native", "auto"):
        ex = Executor(_program(), backend=backend)
        assert ex.backend == "python"
        if backend == "auto":  # (lowered in the background, after the first call)
            assert ex.backend_report() == "python (native pending: compiling in background)"
            _check(ex)
            assert ex.wait_native(30) is False
        assert ex.backend_report() == "python (native unsupported: op 'tanh' has no native lowering)"
        _check(ex)


def test_failed_compile_leaves_python_running(monkeypatch, tmp_path):
    install(monkeypatch, FakeNative(fail="LLVM ran out of\nregisters"), tmp_path)
    ex = Executor(_program(), backend="native")
    assert ex.wait_native(30) is False
    assert ex.backend == "python"
    assert ex.backend_report() == "python (native failed: native compile failed: RuntimeError: LLVM ran out of registers)"
    _check(ex)


def test_a_program_numba_cannot_type_is_unsupported(monkeypatch, tmp_path):
    from native_fake import NativeUnsupported

    class Untypable(FakeNative):
        def compile_lowered(self, lowered, cache_dir=None):
            raise NativeUnsupported("numba could not compile the lowered program: a typing error")

    install(monkeypatch, Untypable(), tmp_path)
    ex = Executor(_program(), backend="native")
    assert ex.wait_native(30) is False
    assert ex.backend_report() == ("python (native unsupported: numba could not compile the lowered program: "
                                   "a typing error)")
    _check(ex)


def test_without_numba_native_falls_back(monkeypatch):
    monkeypatch.setattr(tiers, "_AVAILABLE", [(None, "numba is not installed (pip install 'd2s[native]')")])
    for backend in ("native", "auto"):
        ex = Executor(_program(), backend=backend)
        assert ex.backend == "python"
        assert ex.backend_report() == "python (native unsupported: numba is not installed (pip install 'd2s[native]'))"
        _check(ex)


def test_parallel_and_wrong_outputs_fall_back(monkeypatch, tmp_path):
    install(monkeypatch, FakeNative(outputs=lambda outs: [o.astype("float64") for o in outs]), tmp_path)
    ex = Executor(_program(), backend="native", parallel=True)
    assert "parallel=True" in ex.backend_report()
    _check(ex)
    ex.close()
    ex = Executor(_program(), backend="native")
    assert ex.wait_native(30) is True
    _check(ex)  # the first native call finds float64 outputs: Python answers, native is dropped
    assert ex.backend == "python"
    assert "native outputs do not match the program" in ex.backend_report()


def test_a_native_run_error_is_reported_as_python_reports_it(monkeypatch, tmp_path):
    fake = install(monkeypatch, FakeNative(), tmp_path)
    w = d2s.tensor(np.ones((4, 2), "float32"))
    prog = build_program(lambda x: x @ w, d2s.tensor(np.zeros((3, 4), "float32")))
    ex = Executor(prog, backend="native")
    assert ex.wait_native(30)
    calls = fake.calls
    # an input of the wrong shape through the unchecked runner fails in the kernel: the error
    # is the Python backend's (naming the op), and native stays on, as Python failed too
    with pytest.raises(ExecutionError) as info:
        ex.unchecked_runner()([np.zeros((3, 5), "float32")], [])
    assert "matmul" in str(info.value)
    assert fake.calls == calls + 1 and ex.backend == "native"



def test_a_warm_second_process_runs_natively_from_the_start(tmp_path, native_cache_dir, monkeypatch):
    import os
    import subprocess
    import sys
    from d2s_runtime import load, save_program
    module, reason = tiers.native_module()
    if module is None:
        pytest.skip(f"native backend unavailable: {reason}")
    save_program(_program(), str(tmp_path / "model"))
    monkeypatch.setenv("D2S_CACHE_DIR", native_cache_dir)
    model = load(str(tmp_path / "model"), backend="native")  # (the session's cache may have it already)
    assert model.wait_native(120) and model.backend == "native"
    code = ("import sys, d2s_runtime; m = d2s_runtime.load(sys.argv[1], backend='native'); "
            "print(m.backend_report())")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.path.join(root, "runtime")]))
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "model")], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "native"  # loaded from the disk cache while preparing


def test_threads_calling_through_the_swap_all_get_right_answers(monkeypatch, tmp_path):
    fake = install(monkeypatch, FakeNative(delay=0.05), tmp_path)
    ex = Executor(_program(), backend="native")
    runner = ex.unchecked_runner()
    data = [tuple(RNG.standard_normal((3, 4)).astype("float32") for _ in range(2)) for _ in range(4)]
    refs = [_f(d2s.tensor(x), d2s.tensor(y)).numpy() for x, y in data]

    def work(k):
        # call through the swap: until the native backend runs, then 50 calls more
        i, after, deadline = 0, 0, time.monotonic() + 30
        while after < 50 and time.monotonic() < deadline:
            i += 1
            after += ex.backend == "native"
            x, y = data[(i + k) % 4]
            out = runner([x, y], [])[0] if i % 2 else ex.run(x, y)[0]
            np.testing.assert_allclose(out, refs[(i + k) % 4], rtol=1e-6)

    run_in_threads(work)  # raises what a thread raised
    assert ex.wait_native(30) and fake.compiles == 1 and fake.calls > 0
