"""A loop index that promotes like the Python int it stands for.

In eager code ``for i in range(n)`` gives Python ints, and ``x * i`` keeps ``x``'s float32.
When the loop becomes a ``while`` op, ``i`` is an int64 tensor, and NumPy's rules would make
``x * i`` float64. ``WeakIndex`` is a Tensor whose arithmetic with a floating tensor first
casts the index to that tensor's dtype, so converted code keeps eager dtypes.
"""
from ..dispatch import apply
from ..tensor import Tensor

_ARITH = (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"), ("floordiv", "floordiv"),
          ("mod", "mod"), ("pow", "pow"))


class WeakIndex(Tensor):
    __slots__ = ()


def _other_float_dtype(other):
    if isinstance(other, Tensor) and not isinstance(other, WeakIndex) and other.dtype.is_floating_point:
        return str(other.dtype)
    return None


def _as_plain(self, other):
    dt = _other_float_dtype(other)
    if dt is not None:
        return apply("cast", self, dtype=dt)
    return Tensor._make(self._data, self._var) if self._data is None else Tensor._make(self._data)


def _fwd(op):
    return lambda self, other: apply(op, _as_plain(self, other), other)


def _rev(op):
    return lambda self, other: apply(op, other, _as_plain(self, other))


for _dunder, _op in _ARITH:
    setattr(WeakIndex, f"__{_dunder}__", _fwd(_op))
    setattr(WeakIndex, f"__r{_dunder}__", _rev(_op))


def weak(t):
    """``t`` (an integer tensor) as a WeakIndex sharing its value."""
    if not isinstance(t, Tensor) or isinstance(t, WeakIndex) or t.dtype.is_floating_point:
        return t
    return WeakIndex._make(t._data, t._var)
