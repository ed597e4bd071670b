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


def matches_cpu(fn, arrays, device, rtol=1e-5, atol=1e-6):
    """``fn(*tensors)`` on ``device`` gives cpu's outputs and float gradients (of the sum of the
    squared float outputs): the kernels and rules of an op family run there as on the host."""
    import numpy as np

    def on(dev):
        prev = d2s.set_default_device(dev)
        try:
            ts = [d2s.tensor(a, requires_grad=True) for a in arrays]
            out = fn(*ts)
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            loss = sum((o * o).sum() for o in outs if o.dtype.is_floating_point)
            return [host(o._data) for o in outs] + [host(g._data) for g in d2s.grad(loss, ts)]
        finally:
            d2s.set_default_device(prev)
    for k, (want, got) in enumerate(zip(on("cpu"), on(device))):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"output {k} on {device}")
