"""Window functions, logspace and range (d2s/ops/windows.py) against PyTorch: hann, hamming,
blackman, bartlett and kaiser windows (periodic and symmetric, lengths 0 to 8, alpha/beta,
float64), logspace (bases, dtypes, integer truncation, one step, none) and the deprecated range
(end included, negative steps, dtypes): values and dtypes, then converted (tests/torch_parity.py)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

CONSTANT = "a constant of Python arguments: no array input to convert with"


def _windows(t, n, periodic):
    return (t.hann_window(n, periodic), t.hamming_window(n, periodic=periodic), t.blackman_window(n, periodic),
            t.bartlett_window(n, periodic), t.kaiser_window(n, periodic), t.kaiser_window(n, periodic, beta=3.5),
            t.hamming_window(n, periodic, alpha=0.5, beta=0.5), t.hann_window(n, periodic, dtype=t.float64))


TORCH_CASES = [Case(f"windows_{n}_{periodic}", _windows, n, periodic, dynamic=CONSTANT)
               for n in (0, 1, 2, 5, 8) for periodic in (True, False)]
TORCH_CASES += [
    Case("logspace", lambda t: (t.logspace(0, 3, 4), t.logspace(-2.0, 2.0, steps=9), t.logspace(0, 1, 5, base=2),
                                t.logspace(1, 0, 3, 3.0, dtype=t.float64), t.logspace(0, 1, 1), t.logspace(0, 1, 0),
                                t.logspace(0, 3, 4, dtype=t.int64), t.logspace(0, 1, 5, base=2, dtype=t.int32))),
    Case("range", lambda t: (t.range(0, 1, 0.1), t.range(1, 4), t.range(0, 1, 0.3), t.range(5, 1, -2),
                             t.range(1, 4, dtype=t.int64), t.range(-1.5, 2.5, 0.5, dtype=t.float64))),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_window_in_a_converted_function():
    @d2s.jit.to_static
    def windowed(x):
        return x * d2s.hann_window(x.shape[-1])

    x = d2s.ones(2, 6)
    np.testing.assert_allclose(windowed(x).numpy(), (x * d2s.hann_window(6)).numpy())


@pytest.mark.parametrize("call, msg", [
    (lambda: d2s.hann_window(-1), "non-negative"),
    (lambda: d2s.kaiser_window(4, dtype=d2s.int64), "floating point"),
    (lambda: d2s.logspace(0, 1, -2), "non-negative"),
    (lambda: d2s.range(0, 1, 0), "nonzero"),
    (lambda: d2s.range(0, 1, -1), "inconsistent"),
])
def test_errors_name_the_op_and_the_problem(call, msg):
    with pytest.raises(Exception, match=msg):
        call()
