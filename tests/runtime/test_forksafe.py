"""A process forked while other threads of d2s hold locks or compile (runtime/d2s_runtime/forksafe.py):
the child never waits forever. Each case runs in a fresh interpreter in its own process group,
which is killed if it outlives its budget; the forked child reports through its exit status."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PRELUDE = """
import os, sys, signal, threading, time, tempfile
import numpy as np
import d2s

def in_child(fn):
    # fork now; the child runs fn (10 s at most: SIGALRM kills a hung child), the parent returns
    # the child's exit status
    pid = os.fork()
    if pid == 0:
        signal.alarm(10)
        try:
            fn()
            code = 0
        except BaseException as e:
            print("child raised", type(e).__name__, e, flush=True)
            code = 3
        os._exit(code)
    return os.waitpid(pid, 0)[1]
"""


def _run(body, tmp_path, budget=120):
    # a file, not ``-c``: to_static reads the source of the functions it converts
    script = tmp_path / "case.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=budget)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"the process group outlived {budget} s")
    assert p.returncode == 0, err
    return out


def test_a_fork_while_another_thread_builds_a_program(tmp_path):
    out = _run("""
        from d2s.jit import concrete
        @d2s.jit.to_static
        def f(x):
            if x.sum() > 0:
                return x * 2
            return x - 1
        f(d2s.tensor(np.ones(3, "float32")))
        held, release = threading.Event(), threading.Event()
        def builder():  # a build in progress in another thread
            with concrete.BUILD_LOCK:
                held.set()
                release.wait()
        t = threading.Thread(target=builder)
        t.start()
        held.wait()
        status = in_child(lambda: print("child", f(d2s.tensor(np.ones(5, "float32"))).numpy().tolist(), flush=True))
        release.set()
        t.join()
        print("status", status)
    """, tmp_path)
    assert "child [2.0, 2.0, 2.0, 2.0, 2.0]" in out and "status 0" in out


def test_a_fork_while_the_background_compile_runs(tmp_path):
    """The parent's compile thread is gone in the child: the child's executors say why they run
    on Python instead of waiting for it (numba's locks and half-imported modules came along)."""
    out = _run("""
        from d2s.static import build_program
        from d2s_runtime import Executor, tiers
        prog = build_program(lambda x: d2s.tanh(x) * 2.0 + 1.0, d2s.tensor(np.ones(4, "float32")))
        ex = Executor(prog, backend="auto")
        ex.run(np.ones(4, "float32"))  # submits the background compile
        while tiers.WORKER.current is None and ex.backend_report().startswith("python (native pending"):
            time.sleep(0.001)
        def child():
            prog2 = build_program(lambda x: d2s.exp(x) * 3.0, d2s.tensor(np.ones(4, "float32")))
            ex2 = Executor(prog2, backend="native")
            out = ex2.run(np.ones(4, "float32"))[0]
            ex2.wait_native(5)
            ex.wait_native(5)  # the parent's job, cancelled in the child
            print("child", out.tolist(), "|", ex2.backend_report(), "|", ex.backend_report(), flush=True)
        print("status", in_child(child))
    """, tmp_path)
    assert "status 0" in out, out
    line = next(l for l in out.splitlines() if l.startswith("child"))
    assert "forked while the native compiler ran" in line or "forked while it was pending" in line, line


def test_a_fork_during_a_native_compile_refuses_to_compile_in_the_child(tmp_path):
    out = _run("""
        from d2s.static import build_program
        from d2s_runtime import native
        low = native.lower_program(build_program(lambda x: d2s.tanh(x) * 2.0, d2s.tensor(np.ones(4, "float32"))))
        t = threading.Thread(target=native.compile_lowered, args=(low,), kwargs={"cache_dir": tempfile.mkdtemp()})
        t.start()
        while not native._ACTIVE[0]:
            time.sleep(0.0005)
        def child():
            low2 = native.lower_program(build_program(lambda x: d2s.exp(x), d2s.tensor(np.ones(4, "float32"))))
            try:
                native.compile_lowered(low2, cache_dir=tempfile.mkdtemp())
            except native.NativeUnsupported as e:
                print("child refused:", e, flush=True)
        print("status", in_child(child))
        t.join()
    """, tmp_path)
    assert "status 0" in out and "child refused: this process was forked while numba was compiling" in out, out


def test_a_fork_while_the_compile_thread_is_idle_compiles_in_the_child(tmp_path):
    out = _run("""
        from d2s.static import build_program
        from d2s_runtime import Executor
        os.environ["D2S_CACHE_DIR"] = tempfile.mkdtemp()
        prog = build_program(lambda x: d2s.tanh(x) * 2.0 + 1.0, d2s.tensor(np.ones(4, "float32")))
        ex = Executor(prog, backend="native")
        ex.run(np.ones(4, "float32"))
        ex.wait_native(120)  # done: the thread waits idle for the next job
        def child():
            prog2 = build_program(lambda x: d2s.exp(x) * 3.0, d2s.tensor(np.ones(4, "float32")))
            ex2 = Executor(prog2, backend="native")
            ex2.run(np.ones(4, "float32"))
            ex2.wait_native(8)
            print("child", ex2.backend_report(), flush=True)
        print("parent", ex.backend_report(), "status", in_child(child))
    """, tmp_path)
    assert "parent native status 0" in out and "child native" in out, out
