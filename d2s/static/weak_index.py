"""A loop counter that promotes like the Python int it stands for (JAX calls this weak typing).

In eager code ``for i in range(n)`` gives Python ints, and ``x * i`` keeps ``x``'s float32,
``z + i`` keeps an int32 ``z`` int32. When the loop becomes a ``while`` op, ``i`` is an int64
tensor, and NumPy's rules would make ``x * i`` float64 and ``z + i`` int64. ``WeakIndex`` is a
Tensor whose arithmetic with another tensor first casts the index to that tensor's dtype (as
a Python int meeting a tensor does), and whose arithmetic with Python ints (``i + 1``, ``-i``)
stays weak, so converted code keeps eager dtypes.
"""
import builtins

from .. import ops
from ..dispatch import apply
from ..tensor import WEAK_DIM, Tensor
from ..user_errors import at_user_line, user_frame

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
        if isinstance(other, NumberOrTensor):
            return NotImplemented  # (a number on some runs only: its own operator decides)
        if _stays_weak(other):
            return number_stand_in(python_arith(op, _plain(self), _plain(other)))
        return apply(op, _as_plain(self, other), _plain(other))
    return method


def _rev(op):
    def method(self, other):
        if isinstance(other, NumberOrTensor):
            return NotImplemented  # (a number on some runs only: its own operator decides)
        if _stays_weak(other):
            return number_stand_in(python_arith(op, _plain(other), _plain(self)))
        return apply(op, _plain(other), _as_plain(self, other))
    return method


def _number_fwd(op):
    def method(self, other):
        if isinstance(other, NumberOrTensor):
            return NotImplemented  # (a number on some runs only: its own operator decides)
        if _stays_weak(other):
            return number_stand_in(python_arith(op, self, other))
        return apply(op, self, other)
    return method


def _number_rev(op):
    def method(self, other):
        if isinstance(other, NumberOrTensor):
            return NotImplemented  # (a number on some runs only: its own operator decides)
        if _stays_weak(other):
            return number_stand_in(python_arith(op, other, self))
        return apply(op, other, self)
    return method


_PY_OPS = {"add": lambda u, v: u + v, "sub": lambda u, v: u - v, "mul": lambda u, v: u * v,
           "div": lambda u, v: u / v, "floordiv": lambda u, v: u // v, "mod": lambda u, v: u % v,
           "pow": lambda u, v: u ** v}


def _zero_message(op, ta, tb):
    """Python's own ZeroDivisionError message for ``ta op tb`` (types) at a zero divisor."""
    try:
        _PY_OPS[op](ta(0), tb(-1)) if op == "pow" else _PY_OPS[op](ta(1), tb(0))
    except ZeroDivisionError as e:
        return str(e)
    return "division by zero"


def python_arith(op, a, b, is_number=None):
    """``a op b`` as Python computes it, where ``a`` and ``b`` are Python numbers or tensors
    standing for them (on the runs where bool tensor ``is_number`` holds; None: every run).

    Python raises ZeroDivisionError for ``/``, ``//``, ``%`` by zero and ``0 ** -n``, where a
    tensor op gives inf or nan: the program checks it (an ``assert`` op raising
    ZeroDivisionError with Python's message, at the user's line) and computes with a divisor of
    1 there, so an integer kernel never fails on a run whose number is not used. ``int / int``
    is a float (a double) in Python: computed in float64."""
    ta, tb = _kind(a), _kind(b)
    zero = None
    if op in ("div", "floordiv", "mod"):
        zero = b == 0
    elif op == "pow":
        zero = (a == 0) & (b < 0) if isinstance(a, Tensor) or isinstance(b, Tensor) else a == 0 and b < 0
    if zero is not None:
        zero = _plain(plain_tensor(zero)) if isinstance(zero, Tensor) else bool(zero)
        if isinstance(zero, Tensor) and not zero.is_symbolic:
            zero = bool(zero.numpy())
        if zero is not False:
            _check_nonzero(zero, is_number, _zero_message(op, ta, tb))
            if op == "pow":
                pass  # (0.0 ** -1 is inf in a kernel, and an int one never sees a negative exponent)
            elif isinstance(zero, Tensor):
                b = ops.where(zero, ops.ones([], dtype=NUMBER_DTYPES[tb]),
                              _as_dtype(b, NUMBER_DTYPES[tb]) if isinstance(b, Tensor) else
                              ops.full([], b, dtype=NUMBER_DTYPES[tb]))
            else:
                b = tb(1)  # never used: the number runs raise
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        return _PY_OPS[op](a, b)
    # the dtype Python's result has: a double for a float operand or int / int, else an int
    # (a float tensor operand keeps its own dtype: a loop variable of the other side's dtype)
    floats = [str(v.dtype) for v in (a, b) if isinstance(v, Tensor) and v.dtype.is_floating_point]
    negative_power = op == "pow" and not isinstance(b, Tensor) and b < 0  # (2 ** -1: a float)
    target = floats[0] if floats else "float64" if float in (ta, tb) or op == "div" or negative_power else "int64"
    if op == "pow" and target == "int64" and isinstance(b, Tensor):
        # int ** int is an int for an exponent >= 0 and a float below: the program computes the
        # int, and refuses a negative exponent where eager code would get a float
        _check_nonzero(_plain(plain_tensor(b < 0)), is_number,
                       "an int raised to a negative int power is a float in Python, but this program computes "
                       "ints here (the exponent is known only when it runs): write 2.0 ** n for a float",
                       error="ValueError")
        b = ops.where(b < 0, ops.zeros([], dtype="int64"), _as_dtype(b, "int64"))
    a, b = (_as_dtype(v, target) for v in (a, b))
    return apply(op, a, b)


def _as_dtype(v, dtype):
    if not isinstance(v, Tensor):
        return v
    v = _plain(plain_tensor(v))
    return v if str(v.dtype) == dtype or (v.dtype.is_floating_point and dtype.startswith("float")) else \
        apply("cast", v, dtype=dtype)


def _kind(v):
    """The Python type of number ``v`` (or of a tensor holding one, by its dtype)."""
    py = number_type(v)
    if py is not None or not isinstance(v, Tensor):
        return py or float
    return bool if v.dtype == "bool" else float if v.dtype.is_floating_point else int


def _check_nonzero(zero, is_number, message, error="ZeroDivisionError"):
    """Raise ``error`` at the user's line (now, or as an ``assert`` op when the program runs)
    where ``zero`` holds on a run where ``is_number`` does (None: every run)."""
    if isinstance(zero, Tensor) and not zero.is_symbolic:
        zero = bool(zero.numpy())
    if zero is False:
        return
    if is_number is None and zero is True:
        raise at_user_line(message, getattr(builtins, error))
    if is_number is not None and not is_number.is_symbolic:
        if bool(is_number.numpy()) and (zero is True or bool(zero.numpy())):
            raise at_user_line(message, getattr(builtins, error))
        return
    bad = ops.full([], zero, dtype="bool") if zero is True else zero
    if is_number is not None:
        bad = ops.logical_and(bad, is_number)
    loc = user_frame()
    apply("assert", ops.logical_not(bad), message=message, where=f"{loc[0]}:{loc[1]}" if loc else "",
          error=error)


# a Python float (or bool) op a Python number is a Python number: the result stays weak, so a
# program returning it gives the caller the Python number eager code returns
for _dunder, _op in _ARITH:
    setattr(WeakNumber, f"__{_dunder}__", _number_fwd(_op))
    setattr(WeakNumber, f"__r{_dunder}__", _number_rev(_op))


def _number_compare(op):
    # a Python number compared with a Python number is a Python bool: the result stands for one
    tensor_method = getattr(Tensor, f"__{op}__")

    def method(self, other):
        if isinstance(other, NumberOrTensor):
            return NotImplemented  # (a number on some runs only: its reflected comparison decides)
        out = tensor_method(self, other)
        return number_stand_in(out) if _stays_weak(other) and isinstance(out, Tensor) else out
    return method


def _divmod(self, other):
    return self // other, self % other


def _rdivmod(self, other):
    return other // self, other % self


# divmod(n, k) of a Python number: (n // k, n % k), each as Python computes it
WeakNumber.__divmod__, WeakNumber.__rdivmod__ = _divmod, _rdivmod
for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(WeakNumber, f"__{_op}__", _number_compare(_op))
WeakNumber.__hash__ = Tensor.__hash__
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
    if else_type is pytype:  # a number of one type on every run (``v * 0.5`` of an int or a float)
        dtype, plain = NUMBER_DTYPES[pytype], plain_tensor(t)
        return number_stand_in(plain if str(plain.dtype) == dtype else apply("cast", plain, dtype=dtype))
    flag = pred if str(pred.dtype) == "bool" else ops.cast(pred, "bool")
    flag = flag if on_true else ops.logical_not(flag)
    out = NumberOrTensor._make(None, t._var)
    out.requires_grad, out.grad_fn, out._out_idx = t.requires_grad, t.grad_fn, t._out_idx
    out.is_number, out.pytype, out.else_type = flag, pytype, else_type
    out.number = number if else_type is None else None
    return out


NUMBER_DTYPES = {float: "float64", int: "int64", bool: "bool"}


def exact_number(t):
    """The exact number a NumberOrTensor stands for on its number runs: a Python constant or
    a float64/int64/bool tensor."""
    n = getattr(t, "number", None)
    if n is not None:
        return n
    plain = plain_tensor(t)
    dtype = NUMBER_DTYPES[t.pytype]
    return plain if str(plain.dtype) == dtype else apply("cast", plain, dtype=dtype)


def _result_type(pytype, op, other, reverse):
    """The Python type of ``pytype op other`` (a sample of each type; division by one; a
    Python exponent as it is: ``n ** -1`` is a float)."""
    other_type = python_type(other) or type(other)
    a, b = pytype(1), other_type(1)
    if op == "pow" and not reverse and type(other) in (int, float) and other < 0:
        b = other
    fn = _PY_OPS[op]
    return type(fn(b, a) if reverse else fn(a, b))


def _either_fwd(op, reverse=False):
    # NumberOrTensor op a Python number is, run by run, a Python number (number op number) or
    # a tensor (tensor op number): the result stays a NumberOrTensor, its exact number computed
    # as Python computes it (in float64 / int64); op a tensor is a tensor either way
    def method(self, other):
        plain = plain_tensor(self)
        args = (other, plain) if reverse else (plain, other)
        if self.else_type is not None:
            if not _stays_weak(other):
                return apply(op, *args)
            # a number on every run (of type pytype, or else_type): the result is one too
            out = python_arith(op, *args)
            return number_or_tensor(out, self.is_number, True, _result_type(self.pytype, op, other, reverse),
                                    _result_type(self.else_type, op, other, reverse))
        if isinstance(other, NumberOrTensor) and other.else_type is None:
            return _both_mixed(op, self, other, reverse)
        out = apply(op, *args)
        if not _stays_weak(other):
            return out
        rtype = _result_type(self.pytype, op, other, reverse)
        exact = exact_number(self)
        if isinstance(exact, Tensor) and rtype is float and str(exact.dtype) != "float64":
            exact = apply("cast", exact, dtype="float64")  # int / int, int * 0.5: a double in Python
        # (as Python computes it on the number runs: a zero divisor raises there)
        number = python_arith(op, *((other, exact) if reverse else (exact, other)), is_number=self.is_number)
        result = number_or_tensor(out, self.is_number, True, rtype)
        result.number = number
        return result
    return method


def _both_mixed(op, a, b, reverse):
    """``a op b`` (``b op a``) for two values that are each a number on some runs and a tensor
    on others: a number where both are, else a tensor."""
    if reverse:
        a, b = b, a
    out = apply(op, plain_tensor(a), plain_tensor(b))
    both = ops.logical_and(a.is_number, b.is_number)
    rtype = _result_type(a.pytype, op, b.pytype(1), False)
    ea, eb = exact_number(a), exact_number(b)
    number = python_arith(op, number_stand_in(_exact_tensor(ea)), number_stand_in(_exact_tensor(eb)),
                          is_number=both)
    result = number_or_tensor(out, both, True, rtype)
    result.number = number
    return result


def _exact_tensor(n):
    return ops.full([], n, dtype=NUMBER_DTYPES[type(n)]) if not isinstance(n, Tensor) else n


for _dunder, _op in _ARITH:
    setattr(NumberOrTensor, f"__{_dunder}__", _either_fwd(_op))
    setattr(NumberOrTensor, f"__r{_dunder}__", _either_fwd(_op, reverse=True))


def _either_compare(op):
    # a comparison with a Python number is, run by run, a Python bool or a bool tensor
    tensor_method = getattr(Tensor, f"__{op}__")

    def method(self, other):
        out = tensor_method(plain_tensor(self), other)
        if self.else_type is not None and _stays_weak(other) and isinstance(out, Tensor):
            return number_stand_in(out)  # a number on every run: a Python bool
        if other is None or not _stays_weak(other) or self.else_type is not None or not isinstance(out, Tensor):
            return out
        n = self.number
        if n is not None and not isinstance(n, Tensor) and not isinstance(other, Tensor):
            number = bool(getattr(n, f"__{op}__")(other))
        else:
            exact = exact_number(self)
            number = tensor_method(ops.full([], exact, dtype=NUMBER_DTYPES[type(exact)])
                                   if not isinstance(exact, Tensor) else exact, other)
        result = number_or_tensor(out, self.is_number, True, bool)
        result.number = number
        return result
    return method


def _either_unary(op, pyfn):
    def method(self):
        out = apply(op, plain_tensor(self))
        if self.else_type is not None:
            return number_or_tensor(out, self.is_number, True, self.pytype, self.else_type)
        n = self.number
        number = pyfn(n) if n is not None and not isinstance(n, Tensor) else apply(op, exact_number(self))
        result = number_or_tensor(out, self.is_number, True, self.pytype)
        result.number = number
        return result
    return method


for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(NumberOrTensor, f"__{_op}__", _either_compare(_op))
NumberOrTensor.__hash__ = Tensor.__hash__
NumberOrTensor.__divmod__, NumberOrTensor.__rdivmod__ = _divmod, _rdivmod


def _round_either(self, ndigits=None):
    raise at_user_line(f"round() of a value that is a Python {self.pytype.__name__} on some runs and a tensor on "
                       "others (chosen by tensor data): eager code rounds the number but raises TypeError for the "
                       "tensor; make it a number first (float(v)) or use d2s.round", TypeError)


NumberOrTensor.__round__ = _round_either
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
