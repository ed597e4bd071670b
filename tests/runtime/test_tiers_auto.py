"""backend="auto" never keeps the slower backend (runtime/d2s_runtime/tiers.py): once the
native function is ready, the next calls time a block on each backend, and the faster one
is kept, with the reason in backend_report() (a matmul-heavy program whose native form is
slower keeps Python; the control loop goes native). The compiler is the stand-in of
tests/native_fake.py and the clock a deterministic stub, so no test depends on timing."""
import numpy as np
import pytest

import d2s
from d2s.static import build_program
from d2s_runtime import Executor, tiers

from native_fake import FakeNative, install

RNG = np.random.default_rng(1)
# the calls a trial takes: the untimed native check, then a block on Python and one on native,
# each one untimed call and the timed ones
TRIAL = 3 + 2 * tiers.AUTO_TRIAL_CALLS


class Clock:
    """A stub of tiers.timer that only moves when a stubbed backend 'runs'."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def spend(self, seconds, result):
        self.now += seconds
        return result


def _mlp(x, w):
    return d2s.tanh(x @ w).sum(axis=1)


def _loop(x, n):
    # while i < n: x = x * 0.5 if x.sum() > 0 else tanh(x) - 0.1
    def body(i, x):
        return i + 1, d2s.cond(x.sum() > 0, lambda x: x * 0.5, lambda x: d2s.tanh(x) - 0.1, x)
    return d2s.while_loop(lambda i, x: i < n, body, (d2s.tensor(0), x))[1]


def _mlp_inputs():
    return RNG.standard_normal((4, 8)).astype("float32"), RNG.standard_normal((8, 3)).astype("float32")


def _auto_executor(monkeypatch, tmp_path, native_cost, python_cost):
    clock = Clock()
    monkeypatch.setattr(tiers, "timer", clock)
    fake = install(monkeypatch, FakeNative(outputs=lambda outs: clock.spend(native_cost, outs)), tmp_path)
    x, w = _mlp_inputs()
    ex = Executor(build_program(_mlp, d2s.tensor(x), d2s.tensor(w)), backend="auto")
    ex.run(x, w)  # the first call runs on Python and starts the compile
    assert ex.wait_native(30) is False  # ready, but not chosen yet
    assert ex.backend == "python"
    assert ex.backend_report() == "python (auto: native ready, timing both backends on the next calls)"
    python_call = ex.runner._python_call
    monkeypatch.setattr(ex.runner, "_python_call", lambda feeds: clock.spend(python_cost, python_call(feeds)))
    return ex, fake


def _run_checked(ex, n):
    for _ in range(n):
        x, w = _mlp_inputs()
        (out,) = ex.run(x, w)
        np.testing.assert_allclose(out, _mlp(d2s.tensor(x), d2s.tensor(w)).numpy(), rtol=1e-6)


def test_auto_keeps_python_where_native_is_slower(monkeypatch, tmp_path):
    ex, fake = _auto_executor(monkeypatch, tmp_path, native_cost=0.010, python_cost=0.004)
    _run_checked(ex, TRIAL)
    assert ex.backend == "python"
    assert ex.backend_report() == ("python (auto: measured native 2.50x slower than python "
                                   "(median of 5 calls each: native 10 ms, python 4 ms))")
    calls = fake.calls
    _run_checked(ex, 3)
    assert fake.calls == calls  # decided: native no longer runs
    assert ex.wait_native(0) is False


def test_auto_picks_native_where_it_is_faster(monkeypatch, tmp_path):
    ex, fake = _auto_executor(monkeypatch, tmp_path, native_cost=0.002, python_cost=0.005)
    _run_checked(ex, TRIAL)
    assert ex.backend == "native"
    assert ex.backend_report() == ("native (auto: measured 2.50x faster than python "
                                   "(median of 5 calls each: native 2 ms, python 5 ms))")
    calls = fake.calls
    _run_checked(ex, 3)
    assert fake.calls == calls + 3


def test_a_program_with_products_needs_the_margin_to_go_native(monkeypatch, tmp_path):
    # 1.2x faster natively is under the margin asked of a program with matrix products
    ex, fake = _auto_executor(monkeypatch, tmp_path, native_cost=0.004, python_cost=0.0048)
    _run_checked(ex, TRIAL)
    assert tiers.computes_products(ex.program)
    assert ex.backend == "python"
    assert ex.backend_report() == (
        "python (auto: measured native 1.20x faster than python, under the 1.25x asked of a program with "
        "matrix products (median of 5 calls each: native 4 ms, python 4.8 ms))")


def test_the_trial_times_a_block_on_each_backend(monkeypatch, tmp_path):
    """The native check, then Python's block, then native's (each an untimed call and the timed
    ones): a timed call never follows the other backend's."""
    ex, fake = _auto_executor(monkeypatch, tmp_path, native_cost=0.004, python_cost=0.005)
    seen = []
    for k in range(TRIAL):
        before = fake.calls
        _run_checked(ex, 1)
        seen.append("native" if fake.calls > before else "python")
    calls = tiers.AUTO_TRIAL_CALLS
    assert seen == ["native"] + ["python"] * (1 + calls) + ["native"] * (1 + calls)


def test_computes_products_looks_inside_loops():
    x = np.linspace(-1, 1, 16, dtype="float32")
    assert not tiers.computes_products(build_program(_loop, d2s.tensor(x), d2s.tensor(3)))

    def loop_of_products(w, n):
        return d2s.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, h @ w), (d2s.tensor(0), w))[1]
    w = np.eye(3, dtype="float32")
    assert tiers.computes_products(build_program(loop_of_products, d2s.tensor(w), d2s.tensor(3)))


def test_auto_picks_native_for_the_control_loop(monkeypatch, tmp_path):
    clock = Clock()
    monkeypatch.setattr(tiers, "timer", clock)
    fake = install(monkeypatch, FakeNative(outputs=lambda outs: clock.spend(10e-6, outs)), tmp_path)
    x = np.linspace(-1, 1, 16, dtype="float32")
    ex = Executor(build_program(_loop, d2s.tensor(x), d2s.tensor(20)), backend="auto")
    ex.run(x, np.array(20))
    assert ex.wait_native(30) is False
    python_call = ex.runner._python_call
    monkeypatch.setattr(ex.runner, "_python_call", lambda feeds: clock.spend(900e-6, python_call(feeds)))
    for k in range(TRIAL + 6):
        n, sign = (0, 3, 20)[k % 3], (1, -1)[k % 2]
        (out,) = ex.run(sign * x, np.array(n))
        np.testing.assert_allclose(out, _loop(d2s.tensor(sign * x), d2s.tensor(n)).numpy(), rtol=1e-6)
    assert ex.backend == "native"
    assert ex.backend_report() == ("native (auto: measured 90.00x faster than python "
                                   "(median of 5 calls each: native 0.01 ms, python 0.9 ms))")
    assert fake.calls == 2 + tiers.AUTO_TRIAL_CALLS + 6


@pytest.mark.parametrize("backend", ["native", "auto"])
def test_a_native_failure_while_measuring_keeps_python(monkeypatch, tmp_path, backend):
    # "native" never measures; "auto" stops measuring when a native run fails
    clock = Clock()
    monkeypatch.setattr(tiers, "timer", clock)

    def broken(outs):
        raise FloatingPointError("native kernel fault")

    install(monkeypatch, FakeNative(outputs=broken), tmp_path)
    x, w = _mlp_inputs()
    ex = Executor(build_program(_mlp, d2s.tensor(x), d2s.tensor(w)), backend=backend)
    ex.run(x, w)
    ex.wait_native(30)
    _run_checked(ex, 4)
    assert ex.backend == "python"
    assert ex.backend_report().startswith("python (native failed: native run failed where the Python backend did not")
