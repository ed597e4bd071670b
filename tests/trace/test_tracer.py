"""d2s.jit.trace over a corpus with data-dependent control flow: right on the traced input,
silently wrong on another path without guards, TraceGuardError with guards; to_static right
everywhere; functions without data-dependent control flow trace silently and stay right."""
import warnings

import numpy as np
import pytest

import d2s
from d2s.trace import TracedFunction, TraceGuardError, TracerWarning, trace
from d2s.trace.compare import outputs_match

from trace_corpus import CORPUS, STATIC, VALUE_READS, GatedLayer, t


def _trace(fn, args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tf = trace(fn, args, **kw)
    return tf, [w for w in caught if issubclass(w.category, TracerWarning)]


def _assert_same(expected, got):
    ok, detail = outputs_match(expected, got)
    assert ok, detail


def test_corpus_is_big_enough():
    assert len(CORPUS) >= 25
    assert len({c.name for c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", CORPUS + VALUE_READS, ids=repr)
def test_trace_is_right_on_its_example(case):
    tf, warned = _trace(case.fn, case.example)
    assert isinstance(tf, TracedFunction)
    tf.program.verify()
    _assert_same(case.fn(case.example), tf(case.example))
    assert warned, "a data-dependent decision must warn"
    assert tf.n_guards >= 1


@pytest.mark.parametrize("case", CORPUS + VALUE_READS, ids=repr)
def test_other_path_is_wrong_without_guards_and_caught_with_them(case):
    classic, _ = _trace(case.fn, case.example, guards=False)
    guarded, _ = _trace(case.fn, case.example)
    assert classic.n_guards == 0
    for x in case.others:
        expected = case.fn(x)
        with np.errstate(all="ignore"):
            ok, _ = outputs_match(expected, classic(x))
        assert not ok, f"{case.name}: input {x} should take another path than the traced one"
        with pytest.raises(TraceGuardError) as info:
            guarded(x)
        assert info.value.filename.endswith("trace_corpus.py")
        assert info.value.lineno is not None


@pytest.mark.parametrize("case", STATIC, ids=repr)
def test_no_data_dependent_control_flow_traces_silently(case):
    tf, warned = _trace(case.fn, case.example)
    assert warned == []
    assert tf.n_guards == 0
    for x in case.inputs():
        _assert_same(case.fn(x), tf(x))


def _to_static():
    try:
        from d2s.jit import to_static
    except ImportError as e:
        pytest.skip(f"d2s.jit.to_static is not importable yet ({e})")
    return to_static


@pytest.mark.parametrize("case", CORPUS, ids=repr)
def test_to_static_is_right_on_every_input(case):
    to_static = _to_static()
    sf = to_static(case.fn)
    for x in case.inputs():
        _assert_same(case.fn(x), sf(x))


# ------------------------------------------------------------------ programs, params, structure
def test_module_parameters_are_program_params_read_at_each_call():
    m = GatedLayer()
    x = t(1, 2, 3)
    tf, _ = _trace(m, x)
    assert len(tf.program.params) == 2
    with d2s.no_grad():
        _assert_same(m(x), tf(x))
        m.lin.bias._data[...] += 1.0  # an optimizer step: the trace must see it
        _assert_same(m(x), tf(x))


def test_outputs_keep_their_structure_and_python_values():
    def f(x):
        s = x.sum()
        return {"y": x * 2, "pair": (s, 7)}

    x = t(1, 2, 3)
    out = trace(f, x)(t(4, 5, 6))
    assert set(out) == {"y", "pair"}
    np.testing.assert_allclose(out["y"].numpy(), [8, 10, 12])
    assert float(out["pair"][0]) == 15.0 and out["pair"][1] == 7


def test_outputs_are_differentiable():
    def f(x, w):
        y = x * w
        if y.sum() > 0:
            y = y * y
        return y.sum()

    x, w = t(1, 2, 3), t(0.5, 0.5, 0.5)
    tf, _ = _trace(f, (x, w))
    w1 = t(1, -1, 2).requires_grad_()
    tf(x, w1).backward()
    w2 = t(1, -1, 2).requires_grad_()
    f(x, w2).backward()
    np.testing.assert_allclose(w1.grad.numpy(), w2.grad.numpy(), rtol=1e-6)
    with pytest.raises(TraceGuardError):
        tf(x, t(-1, -1, -1).requires_grad_())  # the replay through dispatch keeps its guards


def test_program_runs_on_the_runtime_executor_alone():
    from d2s_runtime import Executor, GuardError
    tf, _ = _trace(CORPUS[0].fn, t(1, 2, 3))
    exe = Executor(tf.program)
    np.testing.assert_allclose(exe.run(np.array([1, 1, 1], np.float32))[0], [2, 2, 2])
    with pytest.raises(Exception) as info:
        exe.run(np.array([-1, -1, -1], np.float32))
    from d2s.guards import find_guard_error
    assert isinstance(find_guard_error(info.value), GuardError)


def test_random_draws_are_redrawn_on_each_call():
    def f(x):
        return x + d2s.randn(3)

    tf, warned = _trace(f, t(0, 0, 0))
    assert warned == []
    a, b = tf(t(0, 0, 0)).numpy(), tf(t(0, 0, 0)).numpy()
    assert not np.allclose(a, b)


def test_tensor_index_is_recorded_not_baked():
    def f(x):
        return x[x.argmax()]

    tf, warned = _trace(f, t(1, 5, 2))
    assert warned == [] and tf.n_guards == 0
    assert float(tf(t(7, 1, 2))) == 7.0


def test_setitem_inside_a_trace():
    def f(x):
        y = x * 1
        y[0] = x.sum()
        return y

    tf, _ = _trace(f, t(1, 2, 3))
    for x in (t(1, 2, 3), t(-4, 0, 9)):
        _assert_same(f(x), tf(x))
