"""to_static under threads: builds never mix, every call equals eager, cached programs stay
what a single-threaded build makes; grad mode, builders, tracers and random replay are per thread."""
import threading

import numpy as np
import pytest

import d2s
from d2s import nn

N_THREADS = 16
N_CALLS = 2000  # per thread: 32,000 converted calls, each compared with eager


def gated(x, y):
    h = x * 2.0 + y.sum()
    if h.mean() > 0:
        h = d2s.tanh(h) + 1.0
    else:
        h = h - 1.0
    s = d2s.zeros([])
    while s < x.abs().mean() * 3.0:  # a data-dependent trip count, a few iterations
        s = s + 1.5
    return h * s, s


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            h = d2s.relu(h)
        else:
            h = h * -0.5
        return h.mean(axis=1)


def _count_ops(program):
    return sum(len(b.ops) for b in program.blocks)


def _inputs(rng, i):
    # the range of sizes grows with the call number: new shapes keep arriving until the end
    n = int(rng.integers(1, 3 + i // 40))
    m = 3 if rng.random() < 0.8 else 2
    x = rng.standard_normal((n, m)).astype(np.float32)
    y = rng.standard_normal((n,)).astype(np.float32)
    return x, y


def _run_threads(target, n):
    errors = []

    def guarded(t):
        try:
            target(t)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=guarded, args=(t,)) for t in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors


def test_sixteen_threads_with_new_shapes_match_eager_and_single_threaded_builds(monkeypatch):
    monkeypatch.setattr(d2s.jit.config, "cache_size_limit", None)  # keep every program to compare
    d2s.manual_seed(0)
    net = Net()
    eager_net = Net()
    eager_net.load_state_dict(net.state_dict())
    static_net = d2s.jit.to_static(net)
    f = d2s.jit.to_static(gated)
    wrong, calls = [], [0] * N_THREADS

    def worker(t):
        rng = np.random.default_rng(1000 + t)
        no_grad = t % 2 == 1  # half the threads run under no_grad: grad mode is per thread
        for i in range(N_CALLS):
            xa, ya = _inputs(rng, i)
            if no_grad:
                with d2s.no_grad():
                    got, s = f(d2s.tensor(xa), d2s.tensor(ya))
                    if got.requires_grad:
                        wrong.append((t, i, "requires_grad under no_grad"))
            else:
                x = d2s.tensor(xa, requires_grad=True)
                got, s = f(x, d2s.tensor(ya))
                if not d2s.is_grad_enabled():
                    wrong.append((t, i, "grad mode switched off by another thread"))
            want, ws = gated(d2s.tensor(xa), d2s.tensor(ya))
            if not (np.allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5) and s.item() == ws.item()):
                wrong.append((t, i, "gated"))
            if not no_grad and i % 50 == 0:  # gradients too, through the backward program
                got.sum().backward()
                xe = d2s.tensor(xa, requires_grad=True)
                gated(xe, d2s.tensor(ya))[0].sum().backward()
                if not np.allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-5):
                    wrong.append((t, i, "gated grad"))
            if xa.shape[1] == 3:
                with d2s.no_grad():
                    got_net = static_net(d2s.tensor(xa))
                    want_net = eager_net(d2s.tensor(xa))
                if not np.allclose(got_net.numpy(), want_net.numpy(), rtol=1e-5, atol=1e-6):
                    wrong.append((t, i, "Net"))
            calls[t] += 1

    errors = _run_threads(worker, N_THREADS)
    assert errors == []
    assert wrong == []
    assert sum(calls) == N_THREADS * N_CALLS

    # every cached program is exactly what a single-threaded build of its signature makes
    for sf, fn in ((f, gated), (static_net.forward, None)):
        entries = sf.concrete_programs
        assert len(entries) > 20  # new shapes kept arriving
        # each signature (shapes, grad mode, requires_grad) was built once, however many threads
        # asked for it at the same time
        assert len({e.cache_key for e in entries}) == len(entries)
        for entry in entries:
            if fn is not None:
                ref = d2s.jit.to_static(fn)
            else:
                ref_net = Net()
                ref_net.load_state_dict(net.state_dict())
                ref = d2s.jit.to_static(ref_net).forward
            specs = [d2s.jit.InputSpec(shape, dtype) for shape, dtype, _ in entry.leaf_types]
            ref_program = ref.get_program(*specs)
            assert _count_ops(entry.raw_program) == _count_ops(ref_program)
            assert str(entry.raw_program) == str(ref_program)
        info = sf.cache_info()
        assert info.size == len(entries) and info.misses == len(entries) and info.evictions == 0


def test_one_uncached_signature_asked_by_many_threads_is_built_once():
    builds = []
    record = builds.append  # (the list itself, changed by the function, would be refused)
    barrier = threading.Barrier(8)

    def f(x):
        record(tuple(x.shape))
        return x * 3.0 + 1.0

    sf = d2s.jit.to_static(f)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    results = [None] * 8

    def worker(t):
        barrier.wait()
        results[t] = sf(d2s.tensor(x)).numpy()

    assert _run_threads(worker, 8) == []
    assert builds == [(2, 3)]
    assert len(sf.programs) == 1
    for r in results:
        np.testing.assert_array_equal(r, x * 3.0 + 1.0)


def test_grad_mode_and_builder_state_are_per_thread():
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def other():
        seen["grad"] = d2s.is_grad_enabled()
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        seen["recorded"] = (x * 2.0).requires_grad
        seen["concrete"] = (x + 1.0).numpy().tolist()
        inside.set()
        release.wait(10)

    from d2s.static.builder import ProgramBuilder
    with d2s.no_grad(), ProgramBuilder() as b:
        s = b.add_input((2,), "float32")
        th = threading.Thread(target=other)
        th.start()
        assert inside.wait(10)
        y = s * 2.0  # still this thread's build
        release.set()
        th.join()
    assert seen == {"grad": True, "recorded": True, "concrete": [2.0, 3.0]}
    assert "mul" in [op.type for op in b.program.block.ops]
    assert y._data is None and d2s.is_grad_enabled()


def test_one_no_grad_object_entered_by_many_threads_restores_each_threads_mode():
    shared = d2s.no_grad()
    barrier = threading.Barrier(8)
    after = []

    def worker(t):
        for i in range(200):
            if t % 2 and i % 2:
                d2s.set_grad_enabled(False).__enter__()  # this thread runs some calls with grad off
            before = d2s.is_grad_enabled()
            if i == 0:
                barrier.wait()
            with shared:
                assert not d2s.is_grad_enabled()
            assert d2s.is_grad_enabled() == before
            if t % 2 and i % 2:
                d2s.set_grad_enabled(True).__exit__(None, None, None)
        after.append(d2s.is_grad_enabled())

    assert _run_threads(worker, 8) == []
    assert after == [True] * 8


def test_trace_in_one_thread_records_nothing_from_another():
    def traced(x):
        return d2s.exp(x) * 2.0

    stop = threading.Event()

    def busy(t):
        a = d2s.tensor(np.ones(3, np.float32))
        while not stop.is_set():
            (a + 1.0).sum()

    workers = [threading.Thread(target=busy, args=(t,)) for t in range(3)]
    for w in workers:
        w.start()
    try:
        counts = set()
        for _ in range(20):
            tf = d2s.jit.trace(traced, (d2s.tensor(np.ones(3, np.float32)),))
            counts.add(len(tf.program.block.ops))
    finally:
        stop.set()
        for w in workers:
            w.join()
    single = d2s.jit.trace(traced, (d2s.tensor(np.ones(3, np.float32)),))
    assert counts == {len(single.program.block.ops)}


def test_dropout_backward_replays_its_own_draws_while_other_threads_draw():
    class Drop(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            return d2s.nn.functional.dropout(self.fc(x), 0.5, training=True)

    d2s.manual_seed(3)
    model = d2s.jit.to_static(Drop())
    stop = threading.Event()

    def drawer(t):
        while not stop.is_set():
            d2s.randn(16)

    workers = [threading.Thread(target=drawer, args=(t,)) for t in range(2)]
    for w in workers:
        w.start()
    try:
        for _ in range(30):
            x = d2s.tensor(np.ones((4, 8), np.float32), requires_grad=True)
            out = model(x)
            out.sum().backward()
            # d out / d x = mask-scaled W^T: zero exactly where every unit was dropped for that row
            kept = (out.numpy() != 0) | (model.fc(x).numpy() == 0)
            mask = kept.astype(np.float32) * 2.0
            want = mask @ model.fc.weight.numpy()
            np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5, atol=1e-5)
    finally:
        stop.set()
        for w in workers:
            w.join()


def test_a_prepared_executor_run_by_many_threads_keeps_its_buffers_apart():
    from d2s_runtime import Executor
    from d2s.static.builder import ProgramBuilder
    import d2s.passes

    with ProgramBuilder() as b:
        x = b.add_input((64,), "float32")
        h = x
        for _ in range(6):
            h = d2s.tanh(h * 1.5 + 0.25)
        b.program.outputs = [b.var_of(h)]
        b.program.block.outputs = list(b.program.outputs)
    program = d2s.passes.optimize(b.program)
    ex = Executor(program)

    def ref(a):
        for _ in range(6):
            a = np.tanh(a * 1.5 + 0.25)
        return a

    def worker(t):
        rng = np.random.default_rng(t)
        for _ in range(300):
            a = rng.standard_normal(64).astype(np.float32)
            np.testing.assert_allclose(ex.run(a)[0], ref(a), rtol=1e-5, atol=1e-6)

    assert _run_threads(worker, 8) == []


@pytest.mark.parametrize("n_threads", [4])
def test_eviction_under_threads_stays_correct(n_threads, monkeypatch):
    monkeypatch.setattr(d2s.jit.config, "cache_size_limit", 3)
    f = d2s.jit.to_static(gated)

    def worker(t):
        rng = np.random.default_rng(t)
        for i in range(150):
            xa, ya = _inputs(rng, 200 + i)
            got, s = f(d2s.tensor(xa), d2s.tensor(ya))
            want, ws = gated(d2s.tensor(xa), d2s.tensor(ya))
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)

    with pytest.warns(UserWarning, match="cache_size_limit"):
        assert _run_threads(worker, n_threads) == []
    assert len(f.programs) <= 3 and f.cache_info().evictions > 0
