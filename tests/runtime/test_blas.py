"""BLAS threads (d2s_runtime/blas.py): enter/leave set numpy's OpenBLAS to one thread and restore
its count, nested and from several threads at once; generated code runs a loop of small matrix
products on one thread, restoring the count
after it, also when the loop raises, with the values of the unwrapped program."""
import threading

import numpy as np
import pytest

import d2s
from d2s_runtime import Executor, blas

pytestmark = pytest.mark.skipif(not blas.available(), reason="numpy's BLAS is not an OpenBLAS whose threads can be set")


@pytest.fixture
def two_threads():
    before = blas.threads()
    blas._functions()[1](2)
    yield
    blas._functions()[1](before)


def test_enter_and_leave_nest_and_restore(two_threads):
    blas.enter()
    blas.enter()
    assert blas.threads() == 1
    blas.leave()
    assert blas.threads() == 1
    blas.leave()
    assert blas.threads() == 2
    blas.leave()  # an unmatched leave changes nothing
    assert blas.threads() == 2


def test_threads_entering_at_once_restore_once(two_threads):
    inside = threading.Barrier(4)

    def work():
        blas.enter()
        inside.wait()
        assert blas.threads() == 1
        inside.wait()
        blas.leave()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert blas.threads() == 2


def _loop(x, w, n):
    i = d2s.zeros([], dtype="int64")
    while i < n:
        x = d2s.tanh(x @ w)
        i = i + 1
    return x


def _program():
    x, w = d2s.tensor(np.ones((4, 8))), d2s.tensor(np.ones((8, 8)))
    return d2s.jit.to_static(_loop).get_program(x, w, d2s.tensor(np.array(3)))


def test_a_loop_of_small_products_runs_on_one_thread(two_threads, monkeypatch):
    seen = []
    real_enter = blas.enter

    def enter():
        real_enter()
        seen.append(blas.threads())

    monkeypatch.setattr(blas, "enter", enter)
    ex = Executor(_program())
    assert "_blas_enter()" in ex.source
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 8)), rng.standard_normal((8, 8)) * 0.3
    for n in (0, 1, 5):
        (got,) = ex.run(x, w, np.array(n))
        want = x
        for _ in range(n):
            want = np.tanh(want @ w)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert seen == [1, 1, 1] and blas.threads() == 2


def test_the_count_is_restored_when_the_loop_raises(two_threads):
    def bad(x, w, n):
        i = d2s.zeros([], dtype="int64")
        while i < n:
            x = x @ w
            i = i + 1
        return x

    p = d2s.jit.to_static(bad).get_program(d2s.tensor(np.ones((4, 8))), d2s.tensor(np.ones((8, 8))),
                                           d2s.tensor(np.array(3)))
    ex = Executor(p, max_loop_iterations=2)
    with pytest.raises(Exception, match="max_loop_iterations"):
        ex.run(np.ones((4, 8)), np.ones((8, 8)), np.array(5))
    assert blas.threads() == 2


def test_a_program_without_loops_keeps_the_thread_count(two_threads):
    """d2s does not react to the machine's load: a product outside a loop runs as numpy's does."""
    def f(x, w):
        return (x @ w).sum()

    p = d2s.jit.to_static(f).get_program(d2s.tensor(np.ones((4, 8))), d2s.tensor(np.ones((8, 8))))
    ex = Executor(p)
    assert "_blas_" not in ex.source
    (v,) = ex.run(np.ones((4, 8)), np.ones((8, 8)))
    assert float(v) == 256.0 and blas.threads() == 2


def test_disabled_leaves_generated_code_unwrapped(monkeypatch):
    monkeypatch.setattr(blas, "enabled", False)
    assert "_blas" not in Executor(_program()).source
