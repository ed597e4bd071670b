"""The ulp distance of two float32 values, shared by the scripts that check a float32 function
over every float32 (``native_tanh_ulp.py``, ``erf32_ulp.py``)."""
import numba
import numpy as np


@numba.njit(cache=True)
def ulp_distance(a_bits, b_bits):
    """How many float32 values apart two floats are, given their int32 bit patterns: a negative
    float's pattern is mapped below zero so that the integers are ordered as the floats are
    (+0.0 and -0.0 are then 0 apart)."""
    a = np.int64(a_bits)
    b = np.int64(b_bits)
    if a < 0:
        a = -2147483648 - a
    if b < 0:
        b = -2147483648 - b
    return abs(a - b)
