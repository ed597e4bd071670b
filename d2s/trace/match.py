"""Whether two output structures (tensors and Python values) agree, within tolerances: what
trace checking and ``d2s compare`` report per input."""
import numpy as np

from d2s_runtime.device import to_host

from ..static.builder import flatten_outputs


def outputs_match(expected, got, rtol=1e-4, atol=1e-5):
    """(equal?, detail) for two output structures of tensors / Python values."""
    a, _ = flatten_outputs(expected)
    b, _ = flatten_outputs(got)
    if len(a) != len(b):
        return False, f"{len(a)} tensor outputs vs {len(b)}"
    worst = 0.0
    for x, y in zip(a, b):
        x, y = np.asarray(to_host(x.array)), np.asarray(to_host(y.array))
        if x.shape != y.shape:
            return False, f"shape {x.shape} vs {y.shape}"
        if x.size == 0:
            continue
        diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
        if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            return False, f"max |diff| = {float(np.nanmax(diff)):.3g}"
        worst = max(worst, float(np.nanmax(diff)) if not np.all(np.isnan(diff)) else 0.0)
    return True, f"max |diff| = {worst:.2g}" if worst else ""
