"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode``, each a
context manager and a decorator (with or without parentheses), as in PyTorch.

``set_grad_enabled(mode)`` switches the mode as soon as it is called (a plain call is a global
switch, ``torch.set_grad_enabled(False)``); used in ``with`` it restores the previous mode on
exit, and as a decorator it leaves the mode as it was and switches it around each call.
``inference_mode`` records no graph either (d2s's no_grad), and the tensors made inside it
answer ``is_inference()`` with True.

A function decorated with any of them, converted by ``to_static`` (itself, or as a method, or
called from converted code), keeps the mode inside the program: the decorator's wrapper is
marked as a d2s transform of the user's function (``__d2s_transform__``), so the user's
function is what is converted (``.code`` shows it) and the mode is entered around it.
"""
import functools

from .._state import STATE

# how many threads are inside inference_mode now (a plain global, read on hot paths first)
INFERENCE_THREADS = [0]


class _GradMode:
    _enabled = True

    def __new__(cls, fn=None):
        # PyTorch also accepts the bare form: ``@no_grad`` without parentheses
        self = super().__new__(cls)
        if fn is not None and callable(fn):
            self.__init__()
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

    def _fresh(self):
        """A new object of this mode (one per call of a decorated function)."""
        return self.__class__()

    def __call__(self, fn):
        fresh = self._fresh

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with fresh():
                return fn(*args, **kwargs)

        return _mark(wrapper, fn, fresh)

    def clone(self):
        return self._fresh()


def _mark(wrapper, fn, fresh):
    """Tag ``wrapper`` (a grad-mode decorator's) for to_static: convert ``fn`` and enter the mode
    around it (see ``d2s.convert.call.convert_transform``)."""

    def again(converted):
        @functools.wraps(converted)
        def moded(*args, **kwargs):
            with fresh():
                return converted(*args, **kwargs)
        return moded

    wrapper.__d2s_transform__ = again
    wrapper.__d2s_transform_of__ = fn
    wrapper.__d2s_grad_mode__ = fresh
    wrapper.__dict__.pop("__d2s_converted__", None)  # copied from fn by functools.wraps
    return wrapper


class no_grad(_GradMode):
    """Context manager and decorator: ops inside record no autograd graph."""
    _enabled = False


class enable_grad(_GradMode):
    """Context manager and decorator: turn recording back on inside ``no_grad``."""
    _enabled = True


class set_grad_enabled(_GradMode):
    """Switch gradient recording on or off: at once as a plain call; restored on exit as a
    context manager (``with d2s.set_grad_enabled(training):``); around each call (the mode
    left as it was) as a decorator.

    Args:
        mode: whether ops record autograd.
    """

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode):
        self._enabled = bool(mode)
        self._prev = STATE.grad_enabled
        STATE.grad_enabled = self._enabled

    def __enter__(self):
        STATE.grad_stack.append(self._prev)
        STATE.grad_enabled = self._enabled

    def _fresh(self):
        return _Mode(self._enabled)

    def __call__(self, fn):
        STATE.grad_enabled = self._prev  # (the decorator itself changes nothing)
        return super().__call__(fn)

    def clone(self):
        return set_grad_enabled(self._enabled)


class _Mode(_GradMode):
    """The grad mode ``mode`` as a context manager with no side effect when made."""

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode):
        self._enabled = mode


class inference_mode(_GradMode):
    """Context manager and decorator (``@d2s.inference_mode()``, ``@d2s.inference_mode``):
    no autograd graph is recorded inside (``mode=False``: nothing changes), and the tensors
    made inside answer ``t.is_inference()`` with True."""

    _enabled = False

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):
            self = object.__new__(cls)
            self.__init__()
            return self(mode)
        return object.__new__(cls)

    def __init__(self, mode=True):
        self._mode = bool(mode)

    def __enter__(self):
        STATE.grad_stack.append(STATE.grad_enabled)
        STATE.inference_stack.append(STATE.inference)
        if self._mode:
            STATE.grad_enabled = False
            if not STATE.inference:
                INFERENCE_THREADS[0] += 1
            STATE.inference = True

    def __exit__(self, *exc):
        STATE.grad_enabled = STATE.grad_stack.pop()
        prev = STATE.inference_stack.pop()
        if STATE.inference and not prev:
            INFERENCE_THREADS[0] -= 1
        STATE.inference = prev
        return False

    def _fresh(self):
        return inference_mode(self._mode)

    def clone(self):
        return inference_mode(self._mode)


def is_grad_enabled():
    """Whether ops on this thread record an autograd graph now (``False`` inside ``no_grad()``)."""
    return STATE.grad_enabled


def is_inference_mode_enabled():
    """Whether this thread is inside ``inference_mode()``."""
    return STATE.inference


def mark_inference(tensors):
    """Mark tensors made inside ``inference_mode`` (dispatch calls it while any thread is in it)."""
    if STATE.inference:
        for t in tensors:
            t._inference = True
