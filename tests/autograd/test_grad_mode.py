"""Grad modes (d2s/autograd/grad_mode.py): no_grad, enable_grad, set_grad_enabled and
inference_mode as PyTorch's, as context managers and decorators, eagerly and converted."""
import threading

import numpy as np
import pytest

import d2s
from d2s import nn


def _x():
    return d2s.tensor([1.0, 2.0], requires_grad=True)


def test_set_grad_enabled_as_a_plain_call_switches_at_once():
    x = _x()
    try:
        d2s.set_grad_enabled(False)
        assert not d2s.is_grad_enabled() and not (x * 2).requires_grad
        d2s.set_grad_enabled(True)
        assert d2s.is_grad_enabled() and (x * 2).requires_grad
    finally:
        d2s.set_grad_enabled(True)


def test_set_grad_enabled_as_context_manager_and_decorator():
    x = _x()
    with d2s.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert d2s.is_grad_enabled()
    with d2s.no_grad():
        with d2s.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not d2s.is_grad_enabled()

    @d2s.set_grad_enabled(False)
    def f(v):
        return v * 2

    assert d2s.is_grad_enabled()  # decorating changes nothing by itself
    assert not f(x).requires_grad and d2s.is_grad_enabled()


# (made in the test: set_grad_enabled(False) switches grad off until it decorates something)
@pytest.mark.parametrize("make", [lambda: d2s.no_grad, lambda: d2s.no_grad(), lambda: d2s.inference_mode,
                                  lambda: d2s.inference_mode(), lambda: d2s.set_grad_enabled(False)],
                         ids=["no_grad", "no_grad()", "inference_mode", "inference_mode()", "set_grad_enabled"])
def test_decorators_with_and_without_parentheses(make):
    @make()
    def f(v):
        """doc"""
        return v * 2

    assert not f(_x()).requires_grad and f.__name__ == "f" and f.__doc__ == "doc"
    assert d2s.is_grad_enabled()


def test_enable_grad_inside_no_grad_as_a_decorator():
    @d2s.enable_grad
    def f(v):
        return v * 2

    with d2s.no_grad():
        assert f(_x()).requires_grad


def test_inference_mode_marks_the_tensors_made_inside():
    x = _x()
    with d2s.inference_mode():
        a, b, c = x * 2, d2s.zeros(2), d2s.tensor([1.0])
        assert d2s.is_inference_mode_enabled() and not d2s.is_grad_enabled()
    assert all(t.is_inference() for t in (a, b, c)) and not a.requires_grad
    assert not x.is_inference() and not (x * 2).is_inference() and not d2s.is_inference_mode_enabled()
    with d2s.inference_mode(mode=False):
        assert d2s.is_grad_enabled() and not (x * 2).is_inference()


def test_inference_mode_is_per_thread():
    seen = []
    with d2s.inference_mode():
        t = threading.Thread(target=lambda: seen.append((d2s.is_grad_enabled(), (_x() * 2).is_inference())))
        t.start()
        t.join()
    assert seen == [(True, False)]


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        return self.lin(x)

    @d2s.no_grad()
    def generate(self, x):
        if x.sum() > 0:
            x = self.lin(x)
        return x * 2

    @d2s.inference_mode()
    def score(self, x):
        return self.lin(x).sum(-1)


@pytest.mark.parametrize("method", ["generate", "score"])
def test_a_decorated_method_converts_and_keeps_its_mode(method):
    d2s.manual_seed(0)
    m = Generator()
    static = d2s.jit.to_static(getattr(m, method))
    assert static.is_static and f"def {method}(self, x)" in static.code and "wrapper" not in static.code
    for v in ([[1.0, 2.0]], [[-3.0, 1.0]]):
        x = d2s.tensor(v, requires_grad=True)
        want, got = getattr(m, method)(x), static(x)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        assert not got.requires_grad and got.is_inference() == want.is_inference()
    assert d2s.is_grad_enabled()


@d2s.no_grad()
def _no_grad_helper(x):
    return x * 3


def calls_a_no_grad_helper(x):
    return _no_grad_helper(x) + x


def test_converted_code_calling_a_decorated_function_keeps_its_mode():
    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    d2s.jit.to_static(calls_a_no_grad_helper)(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])  # no gradient through the no_grad part
