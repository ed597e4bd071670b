"""Random draws in graph mode (d2s_runtime/gpu/rng.py) on the strict device's fake capture: a
captured program draws from the device generators' counter-based streams with their offsets
in device buffers, so each replay draws new numbers, and the very numbers the Python backend
draws from the same seed; the host writes a stream's state to the device only when something
else drew from it since the last replay."""
import numpy as np
import pytest

import d2s
import strict_device as sd
from d2s_runtime.device import to_host

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _on_strict():
    prev = d2s.set_default_device("strict")
    yield
    d2s.set_default_device(prev)


def _noisy(x):
    keep = d2s.rand(x.shape) < 0.5
    return x * keep + d2s.randn(3, 4) * 0.1 + d2s.randint(0, 5, (3, 4))


def _with_own_generator(x, g):
    return x + d2s.rand(3, 4, generator=g) + d2s.rand(3, 4)


def _in_a_loop(x):
    i = d2s.zeros([], dtype="int64")
    while i < 2:
        x = x + d2s.rand(3, 4)
        i = i + 1
    return x


def _x():
    return d2s.tensor(RNG.standard_normal((3, 4)).astype("float32"))


def _calls(f, xs, seed=5, between=None):
    """Outputs of f on xs after manual_seed(seed), and each call's (syncs, host-to-device copies)."""
    d2s.manual_seed(seed)
    outs, costs = [], []
    for k, x in enumerate(xs):
        with sd.counting() as c:
            out = f(x)
        costs.append((c.syncs, c.to_device))
        outs.append(to_host(out._data))
        if between is not None:
            between(k)
    return outs, costs


def test_graph_mode_draws_what_the_python_backend_draws():
    xs = [_x() for _ in range(6)]
    g = d2s.jit.to_static(_noisy, backend="graph")
    got, costs = _calls(g, xs)
    assert g.backend_report() == "graph"
    want, _ = _calls(d2s.jit.to_static(_noisy), xs)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(got[3] - to_host(xs[3]._data), got[4] - to_host(xs[4]._data))  # new draws
    # replays after the first one write nothing to the device and read nothing back
    assert costs[4:] == [(0, 0), (0, 0)]
    again, _ = _calls(g, xs)  # reseeding: the graph's streams start over
    for a, b in zip(again, want):
        np.testing.assert_array_equal(a, b)


def test_an_eager_draw_between_calls_moves_the_graph_stream_too():
    xs = [_x() for _ in range(6)]

    def draw(k):
        d2s.rand(2)  # the shared stream moves: the next replay must start after it

    g = d2s.jit.to_static(_noisy, backend="graph")
    got, costs = _calls(g, xs, between=draw)
    want, _ = _calls(d2s.jit.to_static(_noisy), xs, between=draw)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert costs[4][1] == 2  # the stream's key and offset, written to the device


def test_a_generator_of_its_own_is_a_stream_of_its_own():
    xs = [_x() for _ in range(5)]
    outs = []
    for backend in ("graph", "python"):
        gen = d2s.Generator(11)
        f = d2s.jit.to_static(lambda x: _with_own_generator(x, gen), backend=backend)
        outs.append(_calls(f, xs)[0])
        assert backend == "python" or f.backend_report() == "graph"
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_draws_inside_a_loop_stay_on_python_and_say_why():
    f = d2s.jit.to_static(_in_a_loop, backend="graph")
    xs = [_x() for _ in range(3)]
    got, _ = _calls(f, xs)
    assert "inside a loop or branch" in f.backend_report()
    want, _ = _calls(d2s.jit.to_static(_in_a_loop), xs)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
