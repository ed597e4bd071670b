"""dtype queries and conversions of tensors, as PyTorch names them: ``t.type()``,
``t.type(dtype)``, ``type_as``, ``half()``/``short()``/``byte()``/``char()``,
``is_floating_point()``, ``element_size()``, ``d2s.is_tensor`` and the legacy
``d2s.FloatTensor(...)``-style constructors. Every conversion is a ``cast`` (its gradient and
ONNX form are the cast's). (``float()``, ``double()``, ``long()``, ``int()``, ``bool()``
are Tensor's own.)
"""
import numpy as np

from ..dtypes import BFLOAT16_WHY, as_dtype
from ..tensor import Tensor, tensor, tensor_method
from .elementwise import cast

# PyTorch's legacy tensor type names, d2s's dtype for each
_TYPE_NAMES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16", "LongTensor": "int64",
               "IntTensor": "int32", "ShortTensor": "int16", "CharTensor": "int8", "ByteTensor": "uint8",
               "BoolTensor": "bool"}
_NAME_OF = {v: k for k, v in _TYPE_NAMES.items()}


def _type_name_dtype(name):
    """'torch.FloatTensor', 'd2s.cuda.LongTensor', 'FloatTensor' -> its dtype (None: not a type name)."""
    last = name.rsplit(".", 1)[-1]
    if last == "BFloat16Tensor":
        raise TypeError(BFLOAT16_WHY)
    return _TYPE_NAMES.get(last)


@tensor_method("type")
def _type(self, dtype=None, non_blocking=False, **kwargs):
    """With no argument, the tensor's type name ('d2s.FloatTensor'; 'd2s.gpu.FloatTensor' on a
    GPU), as ``torch.Tensor.type()``; with a dtype (or a type name such as
    'torch.LongTensor'), the tensor converted to it."""
    if dtype is None:
        prefix = "d2s." if self.device == "cpu" else f"d2s.{self.device}."
        return prefix + _NAME_OF[str(self.dtype)]
    if isinstance(dtype, str) and not isinstance(dtype, type(self.dtype)):
        by_name = _type_name_dtype(dtype)
        if by_name is not None:
            dtype = by_name
    return self if as_dtype(dtype) == self.dtype else cast(self, dtype)


@tensor_method("type_as")
def _type_as(self, other):
    """The tensor converted to ``other``'s dtype."""
    return self if other.dtype == self.dtype else cast(self, other.dtype)


@tensor_method("half")
def _half(self, memory_format=None):
    """The tensor as float16."""
    return cast(self, "float16")


@tensor_method("short")
def _short(self, memory_format=None):
    """The tensor as int16."""
    return cast(self, "int16")


@tensor_method("char")
def _char(self, memory_format=None):
    """The tensor as int8."""
    return cast(self, "int8")


@tensor_method("byte")
def _byte(self, memory_format=None):
    """The tensor as uint8."""
    return cast(self, "uint8")


@tensor_method("bfloat16")
def _bfloat16(self, memory_format=None):
    """Refused: numpy has no bfloat16."""
    raise TypeError(BFLOAT16_WHY)


@tensor_method("is_floating_point")
def _is_floating_point(self):
    """Whether the tensor's dtype is a floating point one."""
    return self.dtype.is_floating_point


@tensor_method("is_complex")
def _is_complex(self):
    """False: d2s has no complex dtypes."""
    return False


@tensor_method("element_size")
def _element_size(self):
    """Bytes per element."""
    return self.dtype.itemsize


Tensor.itemsize = property(_element_size, doc="Bytes per element (``element_size()``), as ``Tensor.itemsize``.")
Tensor.nbytes = property(lambda self: self.numel() * self.dtype.itemsize,
                         doc="Bytes of the tensor's elements (``numel() * element_size()``), as ``Tensor.nbytes``.")


def is_tensor(obj):
    """Whether ``obj`` is a d2s tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(input):
    """Whether ``input``'s dtype is a floating point one."""
    return input.dtype.is_floating_point


def is_complex(input):
    """False: d2s has no complex dtypes."""
    return False


def _legacy(dtype):
    def make(*data, device=None):
        if not data or all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in data):
            return tensor(np.zeros(tuple(int(d) for d in data) or (0,), dtype=dtype), device=device)
        if len(data) != 1:
            raise TypeError(f"{_NAME_OF[dtype]}: expected sizes (ints) or one data argument")
        return tensor(data[0], dtype=dtype, device=device)
    make.__name__ = make.__qualname__ = _NAME_OF[dtype]  # its public name (docs, reprs), not ``make``
    make.__doc__ = (f"PyTorch's legacy constructor of {dtype} tensors: ``{_NAME_OF[dtype]}(2, 3)`` (zeros of "
                    f"that size) or ``{_NAME_OF[dtype]}(data)`` (a copy of data).")
    return make


FloatTensor, DoubleTensor, HalfTensor, LongTensor, IntTensor, ShortTensor, CharTensor, ByteTensor, BoolTensor = (
    _legacy(_TYPE_NAMES[n]) for n in ("FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor",
                                      "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"))
