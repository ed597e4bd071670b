"""Python values that change from call to call are never frozen in silence (issue 27, family 5).
Converted code runs a Python call once, while the program is built; for ``random``,
``numpy.random``, ``secrets`` and clocks that would make every later call reuse one draw, as
the PyTorch tutorial's dynamic net (``for exp in range(4, random.randint(4, 6))``) silently
did. Such calls are refused at the user's line with the way out: d2s's random ops, which draw
on every call inside the program, or passing the value in."""
import random
import time

import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.convert.call import varies_per_call
from d2s.user_errors import ConvertError


class DynamicNet(nn.Module):
    """The tutorial's model: a cubic, plus a random number of higher-order terms per call."""

    def __init__(self, draw):
        super().__init__()
        self.a, self.b, self.c, self.d, self.e = (nn.Parameter(d2s.tensor(v)) for v in (0.1, 0.2, 0.3, 0.4, 0.05))
        self.draw = draw

    def forward(self, x):
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, self.draw()):
            y = y + self.e * x ** exp
        return y


class TutorialNet(DynamicNet):
    """Exactly the tutorial's forward."""

    def forward(self, x):
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x ** exp
        return y


def test_the_tutorial_model_is_refused_at_its_line():
    model = TutorialNet(None)
    x = d2s.tensor([0.5, -1.0, 2.0])
    model(x)  # eagerly: fine, a new count each call
    with pytest.raises(ConvertError, match=r"(?s)`random.randint\(...\)` gives a new value on each eager call.*"
                                           r"d2s.randint\(a, b \+ 1, \(\)\).*test_per_call_values.py") as info:
        d2s.jit.to_static(model)(x)
    assert "for exp in range(4, random.randint(4, 6)):" in str(info.value)


def test_a_draw_the_converter_does_not_see_is_refused_too(monkeypatch):
    # a lambda runs as Python while the program is built: the generator's state gives it away.
    # With another thread alive the draw might be that thread's, and it is only a warning: an
    # earlier test's background thread (a native compile) must not decide which this test sees
    monkeypatch.setattr(d2s.convert.call.threading, "active_count", lambda: 1)
    model = DynamicNet(lambda: random.randint(4, 6))
    with pytest.raises(ConvertError, match="drew from Python's `random` or numpy's global"):
        d2s.jit.to_static(model)(d2s.tensor([0.5, -1.0, 2.0]))


def test_the_way_out_draws_on_every_call_as_eager_does():
    model = DynamicNet(lambda: d2s.randint(4, 7, ()))
    static = d2s.jit.to_static(model)
    x = d2s.tensor([0.5, -1.0, 2.0])
    d2s.manual_seed(11)
    want = [model(x).numpy() for _ in range(8)]
    d2s.manual_seed(11)
    got = [static(x).numpy() for _ in range(8)]
    np.testing.assert_allclose(np.stack(got), np.stack(want), rtol=1e-6)
    assert len({round(float(w.sum()), 4) for w in want}) > 1  # the count did change between calls
    # training: the gradient of each call follows that call's own draw
    d2s.manual_seed(5)
    static(x).sum().backward()
    g_static = model.e.grad.numpy().copy()
    model.e.grad = None
    d2s.manual_seed(5)
    model(x).sum().backward()
    np.testing.assert_allclose(g_static, model.e.grad.numpy(), rtol=1e-5)


def noisy(x):
    return x + np.random.normal()


def timed(x):
    return x * time.time()


def seeded(x):
    rng = np.random.default_rng(0)
    return x + rng.normal()


@pytest.mark.parametrize("fn,name", [(noisy, "numpy.random.normal"), (timed, "time"),
                                     (seeded, "default_rng")])
def test_numpy_random_and_clocks_are_refused(fn, name):
    with pytest.raises(ConvertError, match=f"`{name}"):
        d2s.jit.to_static(fn)(d2s.ones([2]))


def test_which_calls_vary():
    assert all(varies_per_call(f) for f in (random.random, random.randint, random.Random(0).random,
                                             np.random.rand, np.random.default_rng().normal, time.perf_counter))
    assert not any(varies_per_call(f) for f in (np.sin, time.sleep, len, d2s.randint, d2s.randn, print))
