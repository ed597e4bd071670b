"""Bitwise shifts with PyTorch's names (runtime: ``bitwise_left_shift``/``bitwise_right_shift`` in
``d2s_runtime/ops/elementwise.py``): ``torch.bitwise_left_shift``/``bitwise_right_shift``, the
methods, their in-place forms and Tensor's ``<<``, ``>>``, ``<<=``, ``>>=`` (bound with the other
operators in ``d2s/tensor.py``; in-place in ``d2s/inplace.py``).

Integers only, as PyTorch's (bool and float raise). A shift by a negative count or by the dtype's
width or more has PyTorch's result: 0 for ``<<``; 0 or -1 (the sign) for ``>>``.
"""
from ..autograd.registry import non_differentiable
from ..dispatch import apply
from ..onnx.registry import onnx_unsupported
from ..tensor import tensor_method
from .elementwise import _dtype_of


def _shift_operands(name, input, other):
    dts = [_dtype_of(v) for v in (input, other)]
    for dt in dts:
        # (a bool operand beside an integer one promotes to the integer dtype, as in PyTorch)
        if dt.startswith("float") or dts == ["bool", "bool"]:
            raise TypeError(f"{name}: defined for integer tensors only (PyTorch's too), got {dt}")
    return input, other


@tensor_method()
def bitwise_left_shift(input, other):
    """``input << other`` element-wise on integers (wrapping); a negative or too-large count gives 0.

    Args:
        input: an integer tensor or int.
        other: the shift counts (an integer tensor or int), broadcast against ``input``.

    Returns:
        A tensor of the operands' promoted integer dtype.
    """
    return apply("bitwise_left_shift", *_shift_operands("bitwise_left_shift", input, other))


@tensor_method()
def bitwise_right_shift(input, other):
    """``input >> other`` element-wise on integers (arithmetic: the sign is kept); a negative or
    too-large count gives 0 or -1 (unsigned: 0).

    Args:
        input: an integer tensor or int.
        other: the shift counts (an integer tensor or int), broadcast against ``input``.

    Returns:
        A tensor of the operands' promoted integer dtype.
    """
    return apply("bitwise_right_shift", *_shift_operands("bitwise_right_shift", input, other))


non_differentiable("bitwise_left_shift", "bitwise_right_shift", reason="integer results carry no gradient")

onnx_unsupported("bitwise_left_shift", "bitwise_right_shift",
                 reason="ONNX's BitShift shifts unsigned integers only (no arithmetic shift of signed ones, no "
                        "PyTorch results for counts outside the width)")
