"""The trapezoidal rule (d2s/ops/integrals.py) against PyTorch: trapezoid, trapz and
cumulative_trapezoid with spacings, sample points (1-d and full), dims, integers and empty dims:
values, dtypes, float64 gradients in y and x, then converted, dynamic, saved and ONNX
(tests/torch_parity.py)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(91)
Y = R.standard_normal((3, 5))
XS = np.sort(R.standard_normal(5))
STATIC_SHAPES = "the rule slices with the size of dim, read while building"
NO_CUMSUM_GRAD = "ONNX's CumSum runs here; its gradient is not exported"

TORCH_CASES = [
    Case("trapezoid", lambda t, y, x: (t.trapezoid(y), t.trapezoid(y, x), t.trapezoid(y, dx=0.5, dim=0), t.trapz(y, x),
                                       t.trapz(y, dx=2.0), t.trapezoid(y, y * 1.5 + 1, dim=0)),
         Y, XS, dynamic=STATIC_SHAPES),
    Case("cumulative_trapezoid", lambda t, y, x: (t.cumulative_trapezoid(y), t.cumulative_trapezoid(y, x),
                                                  t.cumulative_trapezoid(y, dx=2.0, dim=0),
                                                  t.cumulative_trapezoid(y, y * 2, dim=-1)),
         Y, XS, dynamic=STATIC_SHAPES),
    Case("trapezoid_ints", lambda t, i: (t.trapezoid(i), t.cumulative_trapezoid(i), t.trapezoid(i, dx=2)),
         np.array([[1, 4, 9, 16], [2, 3, 5, 7]]), dynamic=STATIC_SHAPES),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_both_x_and_dx_are_refused():
    with pytest.raises(TypeError, match="not both"):
        d2s.trapezoid(d2s.ones(3), d2s.arange(3.0), dx=1.0)
