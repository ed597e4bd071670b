"""The thread governor (d2s_runtime/threads.py): the products of a native program run on as
many threads as the other processes leave cores free, re-decided at most every INTERVAL; MKL
(whose products do not depend on the thread count) is governed whole, numpy's OpenBLAS product
by product through ``free`` (tests/runtime/test_blas.py)."""
import numpy as np
import pytest

from d2s_runtime import threads


def test_one_busy_process_on_two_cores_leaves_one_thread():
    assert threads.choose(1.0, ceiling=2, ncpu=2) == 1
    assert threads.choose(0.0, ceiling=2, ncpu=2) == 2
    assert threads.choose(0.1, ceiling=2, ncpu=2) == 2
    assert threads.choose(0.6, ceiling=2, ncpu=2) == 1   # a thread comes back only with more than half a core free
    assert threads.choose(5.0, ceiling=2, ncpu=2) == 1   # never fewer than one
    assert threads.choose(0.0, ceiling=4, ncpu=16) == 4  # never more than the library had
    assert threads.choose(13.0, ceiling=8, ncpu=16) == 3


def test_the_others_are_the_machine_minus_this_process():
    # (wall, machine busy CPU seconds, own CPU seconds)
    assert threads.others_busy((0.0, 10.0, 1.0), (1.0, 12.0, 2.0)) == pytest.approx(1.0)
    assert threads.others_busy((0.0, 10.0, 1.0), (0.5, 10.4, 1.4)) == pytest.approx(0.0, abs=1e-9)
    assert threads.others_busy((1.0, 10.0, 1.0), (1.0, 12.0, 2.0)) == 0.0  # no time passed


def _fake_machine(monkeypatch, per_second_others):
    """A machine where the other processes keep ``per_second_others`` cores busy."""
    clock = {"t": 100.0}
    monkeypatch.setattr(threads.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(threads.time, "process_time", lambda: 0.0)
    monkeypatch.setattr(threads, "_machine_cpu", lambda: clock["t"] * per_second_others)
    monkeypatch.setattr(threads, "cores", lambda: 2)
    return clock


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(threads, "_state", {"next": 0.0, "look": None, "others": None, "threads": None})
    monkeypatch.setattr(threads, "_setters", [])
    monkeypatch.setattr(threads, "enabled", True)


def test_govern_sets_the_registered_library_at_most_every_interval(monkeypatch, fresh):
    clock = _fake_machine(monkeypatch, 1.0)
    calls = []
    threads.register(lambda: 2, calls.append)
    assert threads.govern() is None and calls == []  # the first look only records
    clock["t"] += threads.INTERVAL / 2
    assert threads.govern() is None and calls == []  # too early to look again
    clock["t"] += threads.INTERVAL
    assert threads.govern() == 1 and calls == [1]
    monkeypatch.setattr(threads, "_machine_cpu", lambda: 0.0 + 5.0)  # the others stop
    clock["t"] += threads.INTERVAL
    assert threads.govern() == 2 and calls == [1, 2]


def test_free_gives_the_ceiling_until_two_looks_then_what_the_others_leave(monkeypatch, fresh):
    clock = _fake_machine(monkeypatch, 1.0)
    assert threads.free(2) == 2  # one look: nothing measured yet
    clock["t"] += threads.INTERVAL
    assert threads.free(2) == 1 and threads.free(1) == 1
    monkeypatch.setattr(threads, "_machine_cpu", lambda: 0.0 + 5.0)  # the others stop
    clock["t"] += threads.INTERVAL
    assert threads.free(2) == 2
    monkeypatch.setattr(threads, "enabled", False)
    monkeypatch.setattr(threads, "_state", {"next": 0.0, "look": None, "others": 1.5, "threads": None})
    assert threads.free(2) == 2


def test_after_a_pause_the_others_are_the_threads_runnable_now(monkeypatch, fresh):
    """A look long after the last one: the average over the pause would count what other
    processes did while this one waited (bench_models.py's other columns), so the threads
    runnable at that instant count instead."""
    clock = _fake_machine(monkeypatch, 1.0)
    running = {"n": 1}
    monkeypatch.setattr(threads, "_running_now", lambda: running["n"])
    threads.free(2)
    clock["t"] += threads.INTERVAL
    assert threads.free(2) == 1  # the others' average: one core
    clock["t"] += 2 * threads.STALE
    assert threads.free(2) == 2  # only this thread runnable now
    running["n"] = 3
    clock["t"] += 2 * threads.STALE
    assert threads.free(2) == 1  # two other threads runnable now


def test_disabled_or_without_proc_stat_it_does_nothing(monkeypatch, fresh):
    calls = []
    threads.register(lambda: 2, calls.append)
    monkeypatch.setattr(threads, "enabled", False)
    assert threads.govern() is None
    monkeypatch.setattr(threads, "enabled", True)
    monkeypatch.setattr(threads, "_machine_cpu", lambda: None)
    assert threads.govern() is None and threads.govern() is None and calls == []


def test_mkl_products_do_not_depend_on_the_thread_count():
    """What makes governing MKL safe: the workloads' products give the same bits on 1 and 2
    threads (numpy's OpenBLAS does not always: the Python backend is not governed)."""
    from d2s_runtime.native import mkl
    lib = mkl.library()
    if lib is None:
        pytest.skip("MKL is not installed (d2s[mkl])")
    import ctypes
    gemm = lib.cblas_sgemm
    gemm.restype = None
    gemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                                          ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
    set_num = lib.MKL_Set_Num_Threads
    set_num.argtypes = [ctypes.c_int]
    get_max = lib.MKL_Get_Max_Threads
    get_max.restype = ctypes.c_int
    before = get_max()
    rng = np.random.default_rng(0)
    try:
        for m, k, n in [(128, 784, 512), (128, 512, 10), (16, 256, 1024), (1024, 256, 1024), (256, 1024, 1024)]:
            a, b = (rng.standard_normal(s).astype("float32") for s in ((m, k), (k, n)))
            outs = []
            for t in (1, 2):
                set_num(t)
                c = np.empty((m, n), "float32")
                gemm(101, 111, 111, m, n, k, 1.0, a.ctypes.data, k, b.ctypes.data, n, 0.0, c.ctypes.data, n)
                outs.append(c)
            np.testing.assert_array_equal(outs[0], outs[1])
    finally:
        set_num(before)
