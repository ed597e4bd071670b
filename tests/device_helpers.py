"""Running the parametrized suites on a device (the ``device`` fixture of conftest.py).

Tests written for numpy compare the executor's outputs with numpy arrays; on a device the
outputs are device arrays, so :class:`Executor` here copies them to the host explicitly
(``d2s_runtime.device.to_host``, counted as a copy by the strict device), after the program
ran on the device.
"""
import d2s
from d2s_runtime import Executor as _Executor
from d2s_runtime.device import to_host


def host(x):
    """``x`` (an array of any device, or None) as numpy."""
    return None if x is None else to_host(x)


class Executor(_Executor):
    """``d2s_runtime.Executor`` on d2s's default device (the test's ``device``), whose
    ``run`` returns numpy arrays."""

    def __init__(self, program, device=None, **kwargs):
        super().__init__(program, device=device or d2s.get_default_device(), **kwargs)

    def run(self, *inputs, params=None):
        return [host(o) for o in super().run(*inputs, params=params)]
