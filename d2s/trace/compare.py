"""Trace vs source conversion, side by side (``d2s compare FILE::FUNC``)."""
import numpy as np

from ..tensor import Tensor, _host


def outputs_match(expected, got, rtol=1e-4, atol=1e-5):
    """(equal?, detail) for two output structures of tensors / Python values."""
    from ..static.builder import _flatten
    a, _ = _flatten(expected)
    b, _ = _flatten(got)
    if len(a) != len(b):
        return False, f"{len(a)} tensor outputs vs {len(b)}"
    worst = 0.0
    for x, y in zip(a, b):
        x, y = _host(x._data), _host(y._data)
        if x.shape != y.shape:
            return False, f"shape {x.shape} vs {y.shape}"
        if x.size and not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
            return False, f"max |diff| = {float(np.nanmax(diff)):.3g}"
        if x.size and x.dtype.kind in "fc":
            worst = max(worst, float(np.nanmax(np.abs(x.astype(np.float64) - y.astype(np.float64)))))
    return True, f"max |diff| = {worst:.2g}" if worst else ""


def compare(fn, inputs=None, shapes=None):
    raise NotImplementedError


def run_compare(spec, shapes=None):
    raise NotImplementedError


def compare_main(argv=None):
    raise NotImplementedError
