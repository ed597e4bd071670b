"""The graph backend (``backend="graph"``, d2s_runtime/gpu) on the strict device's fake
capture (tests/strict_graph.py): graph-mode results against the Python backend on new inputs,
the host synchronizations each replay makes, recapture on new shapes and moved params, the
error word, and what stays on the Python backend (with the reason)."""
import numpy as np
import pytest

import d2s
import strict_device as sd
from d2s.static import build_program
from d2s_runtime import Executor
from d2s_runtime.device import to_host
from d2s_runtime.errors import LoopLimitError
from strict_graph import StrictGraphs

RNG = np.random.default_rng(31)


@pytest.fixture(autouse=True)
def _on_strict():
    prev = d2s.set_default_device("strict")
    yield
    d2s.set_default_device(prev)


def _t(*shape, scale=1.0, dtype="float32"):
    return d2s.tensor((RNG.standard_normal(shape) * scale).astype(dtype))


def _host(out):
    outs = out if isinstance(out, (tuple, list)) else [out]
    flat = []
    for o in outs:
        if isinstance(o, (tuple, list)):
            flat.extend(_host(o))
        else:
            flat.append(to_host(o._data))
    return flat


def _graph_and_python(fn):
    return d2s.jit.to_static(fn, backend="graph"), d2s.jit.to_static(fn)


def _replaying(f, *args):
    """Calls ``f`` until its graph runs (quick rung, optimized rung's warm-up, capture)."""
    for _ in range(3):
        f(*args)
    assert f.backend_report() == "graph", f.backend_report()


def _same(a, b, rtol=1e-6, atol=1e-7):
    ha, hb = _host(a), _host(b)
    assert len(ha) == len(hb)
    for x, y in zip(ha, hb):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def _halve(x):
    while x.abs().max() > 1.0:
        x = x * 0.5
    return x


def test_a_while_replays_with_no_sync_and_matches_python_on_new_inputs():
    g, p = _graph_and_python(_halve)
    _replaying(g, _t(2, 3))
    captures = StrictGraphs.stats["captures"]
    for scale in (0.3, 3.0, 100.0, 1e4):  # 0, 2, 7, 14 halvings: one graph for all
        x = _t(2, 3, scale=scale)
        with sd.counting() as c:
            out = g(x)
        assert c.syncs == 0 and c.to_device == 0, c.sync_kinds
        _same(out, p(x))
    assert StrictGraphs.stats["captures"] == captures


def _control(x, n):
    s = d2s.zeros_like(x)
    i = d2s.zeros([], dtype="int64")
    while i < n:
        if x.sum() > 0:
            s = s + x * 0.5
        else:
            s = s - x
        x = d2s.tanh(x) - 0.1
        i = i + 1
    return s


def test_the_control_loop_runs_on_the_device():
    # its `if` becomes a where (passes/if_convert.py), its while a WHILE node: no host read
    g, p = _graph_and_python(_control)
    x = d2s.tensor(np.linspace(-1, 1, 16).astype("float32"))
    _replaying(g, x, d2s.tensor(3))
    for n in (0, 1, 17, 40):
        xn = x * float(n % 3 - 1)
        with sd.counting() as c:
            out = g(xn, d2s.tensor(n))
        assert c.syncs == 0, c.sync_kinds
        _same(out, p(xn, d2s.tensor(n)), rtol=1e-5, atol=1e-6)


def _branchy(x, w):
    # a branch with a matrix product is not if-converted: an IF/ELSE node
    if x.sum() > 0:
        y = (x @ w).relu()
    else:
        y = x.exp() - 1.0
    return y * 2.0


def test_a_cond_becomes_an_if_else_node():
    g, p = _graph_and_python(_branchy)
    w = _t(3, 3)
    _replaying(g, _t(4, 3), w)
    for sign in (1.0, -1.0, 1.0):
        x = _t(4, 3).abs() * sign + 0.01 * sign
        with sd.counting() as c:
            out = g(x, w)
        assert c.syncs == 0, c.sync_kinds
        _same(out, p(x, w), rtol=1e-5)


def _scanned(xs, h):
    def step(carry, x):
        carry = d2s.tanh(carry + x)
        return carry, carry * 2.0

    return d2s.scan(step, h, xs)


@pytest.mark.parametrize("reverse", [False, True])
def test_a_scan_is_a_counted_while(reverse):
    def f(xs, h):
        def step(carry, x):
            carry = d2s.tanh(carry * 0.9 + x)
            return carry, carry * 2.0
        return d2s.lax.scan(step, h, xs, reverse=reverse)

    g, p = _graph_and_python(f)
    _replaying(g, _t(5, 3), _t(3))
    xs, h = _t(5, 3), _t(3)
    with sd.counting() as c:
        out = g(xs, h)
    assert c.syncs == 0, c.sync_kinds
    _same(out, p(xs, h), rtol=1e-5)


def _rnn_loss(params, xs, h0, n):
    W, U = params
    h, loss = h0, (h0 * 0.0).sum()
    t = d2s.zeros([], dtype="int64")
    while t < n:
        h = d2s.tanh(xs[t] @ W + h @ U)
        loss = loss + (h * h).sum()
        t = t + 1
    return loss


def test_a_while_gradient_keeps_its_stacks_on_the_device():
    """The gradient's stacks are device buffers sized from the calls before: one sync per call
    (the error word, which also says a stack outgrew its capacity), a call whose trip count
    needs other capacities runs on Python and the next one is captured for them."""
    g, p = _graph_and_python(d2s.func.value_and_grad(_rnn_loss))
    params = [_t(3, 5, scale=0.3), _t(5, 5, scale=0.3)]

    def args(steps):
        return params, _t(6, 2, 3), _t(2, 5), d2s.tensor(steps)

    _replaying(g, *args(4))
    for steps in (4, 4, 2, 2, 6, 0, 0):
        a = args(steps)
        with sd.counting() as c:
            out = g(*a)
        _same(out, p(*a), rtol=1e-5, atol=1e-6)
    a = args(0)
    with sd.counting() as c:
        g(*a)
    assert c.sync_kinds == ["int"]  # the error word, once
    assert g.backend_report() == "graph"


def test_an_assert_reads_the_error_word_once_and_python_raises_its_error():
    def checked(x):
        assert x.sum() > 0, "the sum must be positive"
        return x * 2.0

    g = d2s.jit.to_static(checked, backend="graph")
    _replaying(g, _t(3).abs())
    x = _t(3).abs()
    with sd.counting() as c:
        out = g(x)
    assert c.sync_kinds == ["int"]
    np.testing.assert_allclose(_host(out)[0], 2.0 * to_host(x._data))
    with pytest.raises(AssertionError, match="the sum must be positive"):
        g(-x)
    assert g.backend_report() == "graph"  # the graph stays: the program raised, as it should


def _program(fn, *args):
    return build_program(fn, *args)


def _halve_lax(x):
    return d2s.lax.while_loop(lambda v: v.abs().max() > 1.0, lambda v: v * 0.5, x)


def test_the_loop_limit_is_checked_on_the_device():
    x = _t(2, 2, scale=100.0)
    prog = _program(_halve_lax, x)
    ex = Executor(prog, device="strict", backend="graph", max_loop_iterations=4)
    small = _t(2, 2, scale=0.1)._data
    ex.run(small)
    ex.run(small)
    assert ex.backend_report() == "graph"
    with sd.counting() as c:
        ex.run(_t(2, 2, scale=3.0)._data)
    assert c.sync_kinds == ["int"]
    with pytest.raises(LoopLimitError, match="max_loop_iterations=4"):
        ex.run(x._data * 100.0)


def test_new_shapes_capture_again_and_each_shape_keeps_its_graph():
    g, p = _graph_and_python(_halve)
    _replaying(g, _t(2, 3))
    first = StrictGraphs.stats["captures"]
    for shape in ((4, 1), (2, 3), (4, 1), (7,)):
        x = _t(*shape, scale=5.0)
        _same(g(x), p(x))
    assert StrictGraphs.stats["captures"] - first <= 2  # (4, 1) once; (7,) is another program


def test_outputs_are_copies_a_later_replay_does_not_change():
    g, _ = _graph_and_python(_halve)
    _replaying(g, _t(2, 3))
    x1, x2 = _t(2, 3, scale=5.0), _t(2, 3, scale=9.0)
    o1 = g(x1)
    keep = to_host(o1._data).copy()
    g(x2)
    np.testing.assert_array_equal(to_host(o1._data), keep)


def test_params_are_read_at_their_address_and_a_moved_param_is_captured_again():
    def f(x, w):
        return d2s.tanh(x @ w) + 1.0

    x, w = _t(4, 3), _t(3, 2)
    prog = _program(f, x, w)
    names = list(prog.inputs)
    ex = Executor(prog, device="strict", backend="graph")
    py = Executor(prog, device="strict")
    w_arr = w._data
    ex.run(x._data, w_arr)
    before = StrictGraphs.stats["captures"]
    for _ in range(2):
        xn = _t(4, 3)._data
        np.testing.assert_allclose(to_host(ex.run(xn, w_arr)[0]), to_host(py.run(xn, w_arr)[0]), rtol=1e-6)
    assert StrictGraphs.stats["captures"] == before + 1 and ex.backend_report() == "graph"
    w2 = _t(3, 2)._data
    xn = _t(4, 3)._data
    np.testing.assert_allclose(to_host(ex.run(xn, w2)[0]), to_host(py.run(xn, w2)[0]), rtol=1e-6)
    assert len(names) == 2


def test_what_cannot_be_captured_stays_on_python_and_says_why():
    def draws(x):
        while x.sum() < 10.0:  # (a draw at the top level is captured: tests/runtime/gpu/test_rng.py)
            x = x + d2s.rand(3)
        return x

    def prints(x):
        print(x)
        return x * 2.0

    for fn, why in ((draws, "random numbers inside a loop"), (prints, "host synchronization")):
        g, p = _graph_and_python(fn)
        for _ in range(3):
            out = g(_t(3))
        report = g.backend_report()
        assert report.startswith("python (graph unsupported:") and why in report, report
        assert _host(out)[0].shape == (3,)


def test_the_fake_capture_refuses_what_cupy_refuses():
    from strict_graph import StrictGraphs as G
    a = sd.xp.asarray(np.ones((2, 2), "float32"))
    for bad in (lambda r: a @ a, lambda r: sd.xp.matmul(a, a), lambda r: bool(a.sum() > 0),
                lambda r: sd.xp.asarray(np.ones(2)), lambda r: sd.xp.random.RandomState(0).standard_normal(2),
                lambda r: sd.xp.linalg.inv(a)):
        with pytest.raises(sd.CaptureViolation):
            G().capture(bad)
    graph, out = G().capture(lambda r: r.op(lambda m: r.gemm(m, m) + 1.0, a))
    a[...] = 2.0
    G().launch(graph)
    np.testing.assert_array_equal(out._a, np.full((2, 2), 9.0, "float32"))


def test_graph_is_a_backend_name_and_a_cpu_program_says_why_it_stays_on_python():
    f = d2s.jit.to_static(_halve, backend="graph")
    x = d2s.tensor(np.ones((2, 2), "float32"), device="cpu")
    for _ in range(3):
        f(x)
    assert "device 'cpu' has no graph backend" in f.backend_report()
    with pytest.raises(ValueError, match="'graph'"):
        d2s.jit.to_static(_halve, backend="graphs")
