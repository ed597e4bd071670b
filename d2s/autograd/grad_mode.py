"""Grad mode switches: ``no_grad``, ``enable_grad`` and ``set_grad_enabled`` (also decorators)."""
import functools

from .._state import STATE


class _GradMode:
    _enabled = True

    def __new__(cls, fn=None):
        # PyTorch also accepts the bare form: ``@no_grad`` without parentheses
        self = super().__new__(cls)
        if fn is not None and callable(fn) and cls is not set_grad_enabled:
            return self(fn)
        return self

    def __init__(self, fn=None):
        pass

    def __enter__(self):
        # the previous mode goes on this thread's stack, not on the object: one no_grad()
        # object may be entered by several threads at once
        STATE.grad_stack.append(STATE.grad_enabled)
        STATE.grad_enabled = self._enabled

    def __exit__(self, *exc):
        STATE.grad_enabled = STATE.grad_stack.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Context manager and decorator: ops inside record no autograd graph."""
    _enabled = False


class enable_grad(_GradMode):
    """Context manager and decorator: turn recording back on inside ``no_grad``."""
    _enabled = True


class set_grad_enabled(_GradMode):
    """Context manager and decorator: record an autograd graph inside it if ``mode`` is true,
    none if it is false (``with d2s.set_grad_enabled(training):``).

    Args:
        mode: whether ops inside record autograd.
    """

    def __init__(self, mode):
        self._enabled = bool(mode)

    def __call__(self, fn):
        mode = self._enabled

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


def is_grad_enabled():
    """Whether ops on this thread record an autograd graph now (``False`` inside ``no_grad()``)."""
    return STATE.grad_enabled
