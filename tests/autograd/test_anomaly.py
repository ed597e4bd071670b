"""detect_anomaly names the op and line whose backward first made NaN/inf (eager and
to_static); to_static(check_numerics=True) names the forward op and line."""
import threading
import warnings

import numpy as np
import pytest

import d2s
from d2s.autograd import NumericsError, detect_anomaly


def sqrt_chain(x):
    y = x * 2.0
    z = d2s.sqrt(y)  # LINE-SQRT
    return (z * 3.0).sum()


def branchy(x):
    h = x + 1.0
    if h.sum() > 0:
        h = d2s.log(h - 1.0)  # LINE-LOG
    return h * 2.0


def loop_sqrt(x):
    y = x * 1.0
    while y.sum() < 10.0:
        y = y + d2s.sqrt(x)  # LINE-LOOP
    return y.sum()


def _line(tag):
    src = open(__file__).read().splitlines()
    return next(i + 1 for i, s in enumerate(src) if s.strip().endswith(f"# {tag}") and "def " not in s)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@pytest.mark.parametrize("static", [False, True])
def test_detect_anomaly_names_the_backward_op_and_the_users_line(static):
    fn = d2s.jit.to_static(sqrt_chain) if static else sqrt_chain
    x = d2s.tensor([0.0, 1.0], requires_grad=True)  # sqrt'(0) is inf
    with detect_anomaly():
        loss = fn(x)
        with pytest.raises(NumericsError) as e:
            loss.backward()
    msg = str(e.value)
    assert "SqrtBackward0" in msg and "'sqrt'" in msg
    assert f"test_anomaly.py:{_line('LINE-SQRT')}" in msg


@pytest.mark.parametrize("static", [False, True])
def test_finite_gradients_pass_and_equal_those_without_the_mode(static):
    fn = d2s.jit.to_static(sqrt_chain) if static else sqrt_chain
    x1 = d2s.tensor([0.5, 1.0], requires_grad=True)
    x2 = d2s.tensor([0.5, 1.0], requires_grad=True)
    with detect_anomaly():
        fn(x1).backward()
    fn(x2).backward()
    np.testing.assert_array_equal(x1.grad.numpy(), x2.grad.numpy())


def test_detect_anomaly_finds_the_op_inside_a_converted_while_loop():
    sf = d2s.jit.to_static(loop_sqrt)
    x = d2s.tensor([0.0, 4.0], requires_grad=True)
    np.testing.assert_allclose(sf(x).item(), loop_sqrt(x).item())
    with detect_anomaly():
        loss = sf(x)
        with pytest.raises(NumericsError) as e:
            loss.backward()
    assert "SqrtBackward0" in str(e.value) and f"test_anomaly.py:{_line('LINE-LOOP')}" in str(e.value)


def test_without_the_mode_nan_gradients_are_silent():
    x = d2s.tensor([0.0, 1.0], requires_grad=True)
    sqrt_chain(x).backward()
    assert np.isinf(x.grad.numpy()[0])


def test_detect_anomaly_is_per_thread():
    seen = []

    def other():
        x = d2s.tensor([0.0], requires_grad=True)
        sqrt_chain(x).backward()  # not under the mode: no error here
        seen.append(np.isinf(x.grad.numpy()[0]))

    with detect_anomaly():
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == [True]


def test_check_numerics_names_the_forward_op_and_line_in_converted_code():
    sf = d2s.jit.to_static(branchy, check_numerics=True)
    ok = d2s.tensor([1.0, 2.0])
    np.testing.assert_allclose(sf(ok).numpy(), branchy(ok).numpy(), rtol=1e-6)
    with pytest.raises(NumericsError) as e:
        sf(d2s.tensor([-1.0, 2.0]))  # log of a negative number, inside the converted if
    msg = str(e.value)
    assert "'log'" in msg and f"test_anomaly.py:{_line('LINE-LOG')}" in msg
    with pytest.raises(NumericsError, match="input"):
        sf(d2s.tensor([np.nan, 2.0]))
    plain = d2s.jit.to_static(branchy)  # off by default: the NaN comes back
    assert np.isnan(plain(d2s.tensor([-1.0, 2.0])).numpy()[0])


def test_check_numerics_ignores_nan_that_never_reaches_an_output():
    def safe_log(x):
        y = d2s.log(x)  # NaN for negative x, masked below
        return d2s.where(x > 0, y, d2s.zeros_like(x))

    sf = d2s.jit.to_static(safe_log, check_numerics=True)
    x = d2s.tensor([-1.0, 2.0])
    np.testing.assert_allclose(sf(x).numpy(), [0.0, np.log(2.0)], rtol=1e-6)


def test_clip_after_anomaly_free_step_keeps_training_finite():
    # one NaN sample: without care it poisons the parameters; error_if_nonfinite stops it
    from d2s import nn
    model = nn.Linear(2, 1)
    x = d2s.tensor([[np.nan, 1.0]])
    (model(x) ** 2).sum().backward()
    with pytest.raises(RuntimeError):
        d2s.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
