"""TracerWarning (file, line, what was baked in), guards and their errors, check_inputs."""
import inspect
import os
import warnings

import numpy as np
import pytest

import d2s
from d2s.trace import TraceCheckError, TraceGuardError, TracerWarning, trace
from d2s_runtime import GuardError, OPS

from trace_corpus import t

HERE = os.path.abspath(__file__)


def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


def _warnings_of(fn, args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tf = trace(fn, args, **kw)
    return tf, [w for w in caught if issubclass(w.category, TracerWarning)]


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return x


def looping(x):
    while x.max() > 1:
        x = x / 2
    return x


def reads(x):
    a = int((x > 0).sum())
    b = float(x.max())
    c = x.min().item()
    d = len(x[x > 0])
    e = x.numpy().sum()
    f = len(x.tolist())
    g = bool(x.mean() > 0)
    for _ in range(x.argmax()):
        pass
    return x * (a + b + c + d + e + f + g)


@pytest.mark.parametrize("fn, text, baked", [
    (branchy, "if x.sum() > 0", "branch taken: True"),
    (looping, "while x.max() > 1", "loop condition: True, True, False (trip count 2 baked in)"),
])
def test_warning_names_the_user_line_and_what_was_baked(fn, text, baked):
    _, warned = _warnings_of(fn, t(1, 2, 3))
    assert len(warned) == 1
    w = warned[0]
    assert os.path.abspath(w.filename) == HERE
    assert w.lineno == _line_of(fn, text)
    msg = str(w.message)
    assert f"test_guards.py:{w.lineno}" in msg and text in msg and baked in msg


def test_every_kind_of_value_read_warns_at_its_line():
    _, warned = _warnings_of(reads, t(1, -2, 3))
    got = {w.lineno: str(w.message) for w in warned}
    expected = {
        "a = int(": "int() = 2", "b = float(": "float() = 3.0", "c = x.min().item()": ".item() = -2.0",
        "d = len(": "len() = 2", "e = x.numpy()": ".numpy() = ", "f = len(x.tolist())": ".tolist() = ",
        "g = bool(": "bool() = True", "for _ in range(x.argmax())": "range() bound = 2",
    }
    for text, baked in expected.items():
        line = _line_of(reads, text)
        assert line in got, f"no warning at {text!r}"
        assert baked in got[line], got[line]
    assert len(got) == len(expected)


def test_each_value_read_keeps_a_guard_that_fires_at_its_line():
    tf, _ = _warnings_of(reads, t(1, -2, 3))
    assert tf.n_guards == 8
    np.testing.assert_allclose(tf(t(1, -2, 3)).numpy(), reads(t(1, -2, 3)).numpy())
    with pytest.raises(TraceGuardError) as info:
        tf(t(1, 2, 3))
    e = info.value
    assert os.path.abspath(e.filename) == HERE and e.lineno == _line_of(reads, "a = int(")
    assert (e.what, e.expected, e.actual) == ("int()", 2, 3)
    assert "a = int(" in str(e) and "to_static" in str(e)


def test_guard_error_message_says_which_branch():
    tf, _ = _warnings_of(branchy, t(1, 2, 3))
    with pytest.raises(TraceGuardError, match=r"branch taken: True; this input gives False") as info:
        tf(t(-1, -2, -3))
    assert f"line {_line_of(branchy, 'if x.sum()')}" in str(info.value)


def test_guards_off_warns_that_other_paths_are_silent():
    tf, warned = _warnings_of(branchy, t(1, 2, 3), guards=False)
    assert "silently" in str(warned[0].message)
    assert tf.n_guards == 0
    np.testing.assert_allclose(tf(t(-1, -1, -1)).numpy(), [-2, -2, -2])  # the baked-in path


def test_constant_values_need_no_guard():
    def f(x):
        n = int(d2s.tensor(3))
        return x * n

    tf, warned = _warnings_of(f, t(1, 2, 3))
    assert warned == [] and tf.n_guards == 0


def test_other_shapes_and_arguments_are_refused():
    def f(x, k):
        return x * k

    tf, _ = _warnings_of(f, (t(1, 2, 3), 2))
    np.testing.assert_allclose(tf(t(1, 1, 1), 2).numpy(), [2, 2, 2])
    with pytest.raises(TraceGuardError, match=r"traced for float32\[3\]"):
        tf(t(1, 2, 3, 4), 2)
    with pytest.raises(TraceGuardError, match="non-tensor arguments are baked"):
        tf(t(1, 2, 3), 3)
    np.testing.assert_allclose(tf(np.ones(3, np.float32), 2).numpy(), [2, 2, 2])


def test_guard_kernel_checks_and_errors():
    guard = OPS["guard"].kernel
    guard(np, np.array(True), check="bool", expected=True, where="f.py:3", code="if x:", what="bool()")
    guard(np, np.zeros((4, 2)), check="len", expected=4, where="f.py:3")
    guard(np, np.array([1.0, np.nan]), np.array([1.0, np.nan]), check="array", where="f.py:3")
    with pytest.raises(GuardError, match=r"guard failed at f.py:3 `if x:`: the trace recorded bool\(\) = True") as info:
        guard(np, np.array(False), check="bool", expected=True, where="f.py:3", code="if x:", what="bool()")
    assert (info.value.expected, info.value.actual, info.value.where) == (True, False, "f.py:3")
    with pytest.raises(GuardError):
        guard(np, np.array(2.5), check="float", expected=2.0, where="f.py:4")
    with pytest.raises(GuardError):
        guard(np, np.zeros((3,)), check="shape", expected=[4], where="f.py:5")
    with pytest.raises(GuardError):
        guard(np, np.array([1.0, 2.0]), np.array([1.0, 3.0]), check="array", where="f.py:6")


def test_guard_ops_survive_in_the_printed_program():
    tf, _ = _warnings_of(branchy, t(1, 2, 3))
    text = str(tf.program)
    assert "guard[check=bool expected=True" in text


# ------------------------------------------------------------------ check_inputs
def test_check_inputs_passes_on_inputs_taking_the_traced_path():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracerWarning)
        tf = trace(branchy, t(1, 2, 3), check_inputs=[(t(4, 5, 6),), t(0.5, 0, 0)])
    assert tf(t(2, 2, 2)).tolist() == [4, 4, 4]


def test_check_inputs_raises_with_a_table():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracerWarning)
        with pytest.raises(TraceCheckError) as info:
            trace(branchy, t(1, 2, 3), check_inputs=[t(4, 5, 6), t(-1, -2, -3)])
        table = info.value.table.splitlines()
    assert table[0].split() == ["#", "inputs", "trace", "vs", "eager", "detail"]
    assert table[2].split()[2] == "ok"
    assert "GUARD" in table[3] and f"test_guards.py:{_line_of(branchy, 'if x.sum()')}" in table[3]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracerWarning)
        with pytest.raises(TraceCheckError) as info:
            trace(branchy, t(1, 2, 3), check_inputs=[t(-1, -2, -3)], guards=False)
    assert "MISMATCH" in info.value.table and "max |diff| = 3" in info.value.table
    assert info.value.traced(t(1, 1, 1)).tolist() == [2, 2, 2]


def test_a_failing_function_leaves_no_tracer_behind():
    from d2s._state import STATE

    def bad(x):
        if x.sum() > 0:
            raise ValueError("boom")
        return x

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="boom"):
            trace(bad, t(1, 2, 3))
    assert STATE.tracer is None and not STATE.hooked
    assert any(issubclass(w.category, TracerWarning) for w in caught)  # what it read is still reported
