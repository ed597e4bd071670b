"""A loop counter that promotes like the Python int it stands for (JAX calls this weak typing).

In eager code ``for i in range(n)`` gives Python ints, and ``x * i`` keeps ``x``'s float32,
``z + i`` keeps an int32 ``z`` int32. When the loop becomes a ``while`` op, ``i`` is an int64
tensor, and NumPy's rules would make ``x * i`` float64 and ``z + i`` int64. ``WeakIndex`` is a
Tensor whose arithmetic with another tensor first casts the index to that tensor's dtype (as
a Python int meeting a tensor does), and whose arithmetic with Python ints (``i + 1``, ``-i``)
stays weak, so converted code keeps eager dtypes.
"""
from .. import ops
from ..dispatch import apply
from ..tensor import WEAK_DIM, Tensor

_ARITH = (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"), ("floordiv", "floordiv"),
          ("mod", "mod"), ("pow", "pow"))


class WeakNumber(Tensor):
    """A tensor standing for a Python number in tensor control flow (a loop variable that
    started as ``0.0`` or ``False``): a tensor `if` may turn it into the other branch's dtype
    and shape, as it would a Python number."""
    __slots__ = ()
    _d2s_stands_for_number = True  # augmented assignment rebinds instead of mutating (d2s.inplace)
    _d2s_weak_float = True  # a float one takes the other operands' dtype, as a Python float (d2s.dispatch)


class WeakIndex(WeakNumber):
    __slots__ = ()
    _d2s_weak = True  # dispatch casts it to the other operands' dtype in element-wise ops


def _other_dtype(other):
    """The dtype a Python int adopts against ``other`` (None: keep int64): any other
    tensor's dtype but bool, which a Python int widens to int64."""
    if isinstance(other, Tensor) and not isinstance(other, WeakIndex) and other.dtype != "bool":
        return str(other.dtype)
    return None


def _stays_weak(other):
    """Python int op Python number is a Python number: the result stays weak."""
    return isinstance(other, WeakNumber) or (isinstance(other, (int, bool, float)) and not isinstance(other, Tensor))


def _as_plain(self, other):
    dt = _other_dtype(other)
    if dt is not None and dt != str(self.dtype):
        return apply("cast", self, dtype=dt)
    return Tensor._make(self.array, self._var) if self.is_symbolic else Tensor._make(self.array)


def _plain(other):
    if isinstance(other, WeakIndex):
        return Tensor._make(other.array, other._var) if other.is_symbolic else Tensor._make(other.array)
    return other


def _fwd(op):
    def method(self, other):
        out = apply(op, _as_plain(self, other), _plain(other))
        return number_stand_in(out) if _stays_weak(other) else out
    return method


def _rev(op):
    def method(self, other):
        out = apply(op, _plain(other), _as_plain(self, other))
        return number_stand_in(out) if _stays_weak(other) else out
    return method


def _number_fwd(op):
    def method(self, other):
        out = apply(op, self, other)
        return number_stand_in(out) if _stays_weak(other) else out
    return method


def _number_rev(op):
    def method(self, other):
        out = apply(op, other, self)
        return number_stand_in(out) if _stays_weak(other) else out
    return method


# a Python float (or bool) op a Python number is a Python number: the result stays weak, so a
# program returning it gives the caller the Python number eager code returns
for _dunder, _op in _ARITH:
    setattr(WeakNumber, f"__{_dunder}__", _number_fwd(_op))
    setattr(WeakNumber, f"__r{_dunder}__", _number_rev(_op))
WeakNumber.__neg__ = lambda self: number_stand_in(apply("neg", self))
WeakNumber.__abs__ = lambda self: number_stand_in(apply("abs", self))

for _dunder, _op in _ARITH:
    setattr(WeakIndex, f"__{_dunder}__", _fwd(_op))
    setattr(WeakIndex, f"__r{_dunder}__", _rev(_op))
WeakIndex.__neg__ = lambda self: weak(apply("neg", _as_plain(self, None)))
WeakIndex.__abs__ = lambda self: weak(apply("abs", _as_plain(self, None)))


def weak(t):
    """``t`` (an integer tensor) as a WeakIndex sharing its value."""
    if not isinstance(t, Tensor) or isinstance(t, WeakIndex) or t.dtype.is_floating_point or t.dtype == "bool":
        return t
    return WeakIndex._make(t.array, t._var)


def number_stand_in(t):
    """``t``, a tensor carrying what eager code holds as a Python number: a WeakIndex for an
    integer, a WeakNumber otherwise."""
    if not isinstance(t, Tensor) or isinstance(t, WeakNumber):
        return t
    if t.dtype.is_floating_point or t.dtype == "bool":
        return WeakNumber._make(t.array, t._var)
    return weak(t)


def python_type(t):
    """The Python type (int, float, bool) of the number that weak tensor ``t`` stands for,
    else None (``t`` is a plain tensor, or not a tensor)."""
    if not isinstance(t, WeakNumber):
        return None
    if t.dtype == "bool":
        return bool
    return float if t.dtype.is_floating_point else int


def plain_tensor(t):
    """``t`` as a plain Tensor (no longer standing for a Python number)."""
    if not isinstance(t, WeakNumber):
        return t
    return Tensor._make(t.array, t._var) if t.is_symbolic else Tensor._make(t.array)


def number_type(v):
    """The Python type of the number ``v`` is or stands for (int, float, bool), else None."""
    if isinstance(v, (bool, int, float)) and not isinstance(v, Tensor):
        return type(v)
    return python_type(v)


class NumberOrTensor(Tensor):
    """The output of a tensor ``if`` where one branch gives a Python number and the other a
    tensor: used as the tensor in the program; a program returning it gives the caller the
    Python number (of type ``pytype``) on runs where ``is_number`` holds, else the tensor.
    ``number``, when set, is that number exactly (a Python constant, or a float64/int64/bool
    tensor): the tensor holds it in the other side's dtype, which may round it (0.1 in
    float32)."""
    __slots__ = ("is_number", "pytype", "else_type", "number")


def number_or_tensor(t, pred, on_true, pytype, else_type=None, number=None):
    """``t`` (a merged cond or loop output) as a Python number of type ``pytype`` where
    ``pred`` is ``on_true``, else a number of type ``else_type`` (None: the tensor).
    ``number``: the exact number (see NumberOrTensor), or None (``t`` holds it exactly)."""
    if not isinstance(t, Tensor) or not t.is_symbolic:
        return t
    flag = pred if str(pred.dtype) == "bool" else ops.cast(pred, "bool")
    flag = flag if on_true else ops.logical_not(flag)
    out = NumberOrTensor._make(None, t._var)
    out.requires_grad, out.grad_fn, out._out_idx = t.requires_grad, t.grad_fn, t._out_idx
    out.is_number, out.pytype, out.else_type = flag, pytype, else_type
    out.number = number if else_type is None else None
    return out


_NUMBER_DTYPES = {float: "float64", int: "int64", bool: "bool"}


def exact_number(t):
    """The exact number a NumberOrTensor stands for on its number runs: a Python constant or
    a float64/int64/bool tensor."""
    n = getattr(t, "number", None)
    if n is not None:
        return n
    plain = plain_tensor(t)
    dtype = _NUMBER_DTYPES[t.pytype]
    return plain if str(plain.dtype) == dtype else apply("cast", plain, dtype=dtype)


def _result_type(pytype, op, other, reverse):
    """The Python type of ``pytype op other`` (a sample of each type; division by one)."""
    other_type = python_type(other) or type(other)
    a, b = pytype(1), other_type(1)
    fn = {"add": lambda u, v: u + v, "sub": lambda u, v: u - v, "mul": lambda u, v: u * v,
          "div": lambda u, v: u / v, "floordiv": lambda u, v: u // v, "mod": lambda u, v: u % v,
          "pow": lambda u, v: u ** v}[op]
    return type(fn(b, a) if reverse else fn(a, b))


def _either_fwd(op, reverse=False):
    # NumberOrTensor op a Python number is, run by run, a Python number (number op number) or
    # a tensor (tensor op number): the result stays a NumberOrTensor, its exact number computed
    # as Python computes it (in float64 / int64); op a tensor is a tensor either way
    def method(self, other):
        plain = plain_tensor(self)
        args = (other, plain) if reverse else (plain, other)
        out = apply(op, *args)
        if not _stays_weak(other) or self.else_type is not None:
            return out
        rtype = _result_type(self.pytype, op, other, reverse)
        n = self.number
        if n is not None and not isinstance(n, Tensor) and not isinstance(other, Tensor):
            number = getattr(n, f"__{'r' if reverse else ''}{_PY_DUNDER[op]}__")(other)  # Python computes it
        else:
            exact = exact_number(self)
            if not isinstance(exact, Tensor):
                exact = ops.full([], exact, dtype=_NUMBER_DTYPES[type(exact)])
            if rtype is float and str(exact.dtype) != "float64":
                exact = apply("cast", exact, dtype="float64")  # int / int, int * 0.5: a double in Python
            number = apply(op, *((other, exact) if reverse else (exact, other)))
        result = number_or_tensor(out, self.is_number, True, rtype)
        result.number = number
        return result
    return method


_PY_DUNDER = {"add": "add", "sub": "sub", "mul": "mul", "div": "truediv", "floordiv": "floordiv", "mod": "mod",
              "pow": "pow"}
for _dunder, _op in _ARITH:
    setattr(NumberOrTensor, f"__{_dunder}__", _either_fwd(_op))
    setattr(NumberOrTensor, f"__r{_dunder}__", _either_fwd(_op, reverse=True))


def _either_compare(op):
    # a comparison with a Python number is, run by run, a Python bool or a bool tensor
    tensor_method = getattr(Tensor, f"__{op}__")

    def method(self, other):
        out = tensor_method(plain_tensor(self), other)
        if other is None or not _stays_weak(other) or self.else_type is not None or not isinstance(out, Tensor):
            return out
        n = self.number
        if n is not None and not isinstance(n, Tensor) and not isinstance(other, Tensor):
            number = bool(getattr(n, f"__{op}__")(other))
        else:
            exact = exact_number(self)
            number = tensor_method(ops.full([], exact, dtype=_NUMBER_DTYPES[type(exact)])
                                   if not isinstance(exact, Tensor) else exact, other)
        result = number_or_tensor(out, self.is_number, True, bool)
        result.number = number
        return result
    return method


def _either_unary(op, pyfn):
    def method(self):
        out = apply(op, plain_tensor(self))
        if self.else_type is not None:
            return out
        n = self.number
        number = pyfn(n) if n is not None and not isinstance(n, Tensor) else apply(op, exact_number(self))
        result = number_or_tensor(out, self.is_number, True, self.pytype)
        result.number = number
        return result
    return method


for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(NumberOrTensor, f"__{_op}__", _either_compare(_op))
NumberOrTensor.__hash__ = Tensor.__hash__
NumberOrTensor.__neg__ = _either_unary("neg", lambda n: -n)
NumberOrTensor.__abs__ = _either_unary("abs", abs)


def _round(self, ndigits=None):
    """``round(n)`` / ``round(n, k)`` of the Python number this stands for: half to even, as
    Python rounds (to ``k`` decimals via a scaled float, which float32 carries approximately);
    an int with no ``ndigits``, as Python gives."""
    if self.dtype == "bool" or not self.dtype.is_floating_point:
        return self if ndigits is None or ndigits >= 0 else number_stand_in(
            apply("mul", apply("floordiv", self, 10 ** -ndigits), 10 ** -ndigits))
    scale = 10.0 ** ndigits if ndigits is not None else 1.0
    x = apply("mul", self, scale) if ndigits is not None else self
    low = ops.floor(x)
    frac = apply("sub", x, low)
    odd = ops.eq(ops.mod(low, 2.0), 1.0)
    up = ops.logical_or(ops.gt(frac, 0.5), ops.logical_and(ops.eq(frac, 0.5), odd))
    r = ops.where(up, apply("add", low, 1.0), low)
    if ndigits is None:
        return number_stand_in(ops.cast(r, "int64"))
    return number_stand_in(apply("div", r, scale))


WeakNumber.__round__ = _round


WEAK_DIM[0] = weak  # Tensor.shape's unknown dims stand for Python ints (see Tensor.shape)
