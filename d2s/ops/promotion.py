"""PyTorch's dtype-promotion queries: ``result_type``, ``promote_types``, ``can_cast`` and
``scalar_tensor``. They answer with the rules every d2s op computes by
(``d2s_runtime.dtypes``): dimensioned tensors over 0-d tensors over Python numbers, a lower
priority operand counting only when of a higher category (bool < integer < float).
"""
from d2s_runtime.dtypes import operand_result_type, result_type as _promoted, scalar_result

from ..dtypes import as_dtype, default_float
from ..tensor import Tensor, tensor

_KIND = {"bool": 0, "uint8": 1, "int8": 1, "int16": 1, "int32": 1, "int64": 1, "float16": 2, "bfloat16": 2,
         "float32": 2, "float64": 2}


def _name(dtype):
    return str(as_dtype(dtype))


def promote_types(type1, type2):
    """The dtype two dtypes promote to, as ``torch.promote_types`` (integers meeting floats give
    the float dtype: int64 and float16 give float16)."""
    return as_dtype(_promoted(_name(type1), _name(type2)))


def result_type(tensor, other):
    """The dtype an arithmetic op on ``tensor`` and ``other`` (tensors or Python numbers) gives, as
    ``torch.result_type``: a 0-d tensor does not widen a dimensioned one of its category, a Python
    number widens neither (a float meeting integers gives the default float dtype)."""
    a, b = tensor, other
    if not isinstance(a, Tensor) and isinstance(b, Tensor):
        a, b = b, a
    if not isinstance(a, Tensor):  # two Python numbers
        kinds = [bool if isinstance(v, bool) else int if isinstance(v, int) else float for v in (a, b)]
        return as_dtype(default_float() if float in kinds else "int64" if int in kinds else "bool")
    if not isinstance(b, Tensor):
        return as_dtype(scalar_result(str(a.dtype), b))
    return as_dtype(operand_result_type([str(a.dtype), str(b.dtype)], [a.ndim, b.ndim]))


def can_cast(from_, to):
    """Whether ``from_`` converts to ``to`` under PyTorch's casting rule, as ``torch.can_cast``:
    never to a lower category (float to integer, integer to bool); any width within one."""
    return _KIND[_name(from_)] <= _KIND[_name(to)]


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=None):
    """A 0-d tensor holding the number ``s``, of the default float dtype unless ``dtype`` is given
    (``torch.scalar_tensor``: an int gives a float tensor too)."""
    dt = _name(dtype) if dtype is not None else str(as_dtype(default_float()))
    return tensor(s, dtype=dt, device=device, requires_grad=requires_grad)
