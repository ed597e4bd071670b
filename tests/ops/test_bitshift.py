"""Bitwise shifts (d2s/ops/bitshift.py) against PyTorch: functions, methods, ``<<``/``>>`` with
tensors and Python ints on either side, in-place forms, every integer width, counts that are
negative or reach the width, and promotion; then converted, with dynamic dims and saved
(tests/torch_parity.py)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

A = np.array([[-8, 8, -1, 5], [3, -100, 7, 0]])
COUNTS = np.array([[-1, 63, 64, 2], [1, 3, 70, 0]])
NO_ONNX = "ONNX's BitShift cannot shift signed integers arithmetically"


def _inplace(t, a, b):
    a = a.clone()
    a <<= 2
    c = a.clone()
    c.bitwise_right_shift_(b.abs() % 4)
    c >>= 1
    d = a.clone()
    d.bitwise_left_shift_(1)
    return a, c, d


TORCH_CASES = [
    Case("shift_functions", lambda t, a, b: (t.bitwise_left_shift(a, b), t.bitwise_right_shift(a, b),
                                             a.bitwise_left_shift(b), a.bitwise_right_shift(b)),
         A, COUNTS, onnx=NO_ONNX),
    Case("shift_operators", lambda t, a, b: (a << b, a >> b, a << 3, a >> 1, 5 << b.abs() % 8, 1000 >> b.abs() % 8),
         A, COUNTS, onnx=NO_ONNX),
    Case("shift_widths", lambda t, a8, u8, a16, a32, b: (a8 << b, a8 >> b, u8 << b.to(t.uint8), u8 >> b.to(t.uint8),
                                                          a16 << b, a32 >> b, a8 << 3, u8 >> 7),
         np.array([1, -2, 64, 127, -128], np.int8), np.array([1, 2, 128, 255, 3], np.uint8),
         np.array([1, -2, 300, 5, 9], np.int16), np.array([1, -2, 300, 5, -9], np.int32),
         np.array([1, 7, 8, 9, 2], np.int8), onnx=NO_ONNX),
    Case("shift_promotes", lambda t, a16, b32, b64: (a16 << b32, a16 >> b64, b32 << a16, t.bitwise_left_shift(3, b32)),
         np.array([1, 2, 3], np.int16), np.array([1, 2, 3], np.int32), np.array([0, 1, 2]), onnx=NO_ONNX),
    Case("shift_inplace", _inplace, A, COUNTS, onnx=NO_ONNX),
    # a Python int count wraps into the tensor's dtype (uint8 << -1 shifts by 255); a bool tensor
    # beside an integer one promotes to it
    Case("shift_wrapped_int_and_bool_counts", lambda t, u, i, m: (u << -1, u >> -2, u << 300, i << m, t.bitwise_right_shift(u, m),
                                                                  i >> True, m << 1, t.bitwise_left_shift(m, i.abs())),
         np.array([4, 2, 200], np.uint8), np.array([5, -3, 1]), np.array([True, False, True]), onnx=NO_ONNX),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_augmented_shifts_write_the_tensor_in_place():
    x = d2s.tensor([1, 2])
    y = x
    y <<= 3
    y >>= 1
    assert x.tolist() == [4, 8]


@pytest.mark.parametrize("call", [
    lambda: d2s.tensor([1.5]) << 1,
    lambda: d2s.bitwise_left_shift(d2s.tensor([True]), d2s.tensor([True])),  # (bool beside an int promotes)
    lambda: d2s.bitwise_right_shift(d2s.tensor([1]), d2s.tensor([1.0])),
])
def test_floats_and_bools_are_refused(call):
    with pytest.raises(Exception, match="integer"):
        call()
