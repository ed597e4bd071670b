"""Element-wise primitives with NumPy broadcasting and promotion."""
import numpy as np

from ..dtypes import checked_int, float_of, int_exponent, is_floating, promote, wrap_int
from ..errors import IntegerDivisionByZero
from .registry import ShapeError, TensorType, deflowering, defop
from .rules import elementwise


def _float_result(op, t):
    return float_of(t.dtype)


def _unary(name, fn, doc, float_only=False, **traits):
    def infer(x):
        return TensorType(x.shape, _float_result(name, x) if float_only else x.dtype)

    if float_only:
        # bool/int inputs compute in float32, as the shape rule says (numpy alone would give
        # float16 for bool, and sigmoid's cast back would truncate to ints)
        inner = fn

        def fn(xp, x):
            return inner(xp, x if x.dtype.kind == "f" else x.astype("float32"))

    defop(name, infer, doc=doc, elementwise=True, float_inputs=float_only, **traits)(fn)


def _ufunc(uname):
    """``fn(xp, a, b)`` calling ufunc ``uname`` (numpy's looked up once, cupy's by name)."""
    np_fn = getattr(np, uname)

    def fn(xp, a, b):
        return np_fn(a, b) if xp is np else getattr(xp, uname)(a, b)

    return fn


_BOOL_SUB = ("subtraction, the `-` operator, with a bool tensor or a Python bool is not supported (PyTorch's "
             "neither); to invert a mask use `~` or logical_not(), else cast to an integer first")


def _binary(name, fn, doc, dtype=None, **traits):
    refuses_bool = traits.get("refuses_bool", False)

    def infer(a, b):
        if refuses_bool and (a.dtype == "bool" or b.dtype == "bool"):
            raise ShapeError(f"{name}: {_BOOL_SUB}")
        return elementwise(name, a, b, dtype=dtype)

    # a Python int meeting an integer array: converted to its dtype as PyTorch does (pow's
    # scalar base is wrapped, its exponent checked)
    convert = wrap_int if traits.get("wraps_ints") or name == "pow" else checked_int
    convert_b = int_exponent if name == "pow" else convert

    def kernel(xp, a, b):
        # the common cases skip promotion: same-dtype arrays, and a Python scalar that NumPy
        # already treats as d2s does (all but a float meeting an integer or bool array)
        da, db = getattr(a, "dtype", None), getattr(b, "dtype", None)
        if refuses_bool and (type(a) is bool or type(b) is bool or (da is not None and da.kind == "b")
                             or (db is not None and db.kind == "b")):
            raise TypeError(_BOOL_SUB)
        if da is db:
            return fn(xp, a, b)
        if db is None:
            if type(b) is int and da.kind in "iu":
                # as PyTorch converts it to a's dtype (0..127 fits every integer dtype as it is)
                return fn(xp, a, b if 0 <= b <= 127 else convert_b(b, da))
            if da.kind == "f" or type(b) is not float:
                return fn(xp, a, b)
        elif da is None:
            if type(a) is int and db.kind in "iu":
                return fn(xp, a if 0 <= a <= 127 else convert(a, db), b)
            if db.kind == "f" or type(a) is not float:
                return fn(xp, a, b)
        a, b = promote((a, b))
        return fn(xp, a, b)

    defop(name, infer, doc=doc, elementwise=True, promotes=None, fresh=True, **traits)(kernel)


_unary("neg", lambda xp, x: xp.negative(x), "Negation, ``-x``.", ufunc="negative", out_ok=True, fresh=True)
_unary("abs", lambda xp, x: xp.abs(x), "Absolute value.", ufunc="absolute", out_ok=True, fresh=True)
def _sign(xp, x):
    if x.dtype == bool:
        return xp.array(x, copy=True)
    if x.dtype.kind == "f":
        return xp.where(xp.isnan(x), 0, xp.sign(x))  # PyTorch's sign of NaN is 0
    return xp.sign(x)


_unary("sign", _sign, "Sign: -1, 0 or 1 (0 for NaN, as PyTorch; a bool tensor unchanged).", fresh=True)
_unary("exp", lambda xp, x: xp.exp(x), "Exponential; integer inputs give float32.", float_only=True, ufunc="exp", out_ok=True, fresh=True)
_unary("log", lambda xp, x: xp.log(x), "Natural logarithm; integer inputs give float32.", float_only=True, ufunc="log", out_ok=True, fresh=True)
_unary("sqrt", lambda xp, x: xp.sqrt(x), "Square root; integer inputs give float32.", float_only=True, ufunc="sqrt", out_ok=True, fresh=True)
_unary("sin", lambda xp, x: xp.sin(x), "Sine; integer inputs give float32.", float_only=True, ufunc="sin", out_ok=True, fresh=True)
_unary("cos", lambda xp, x: xp.cos(x), "Cosine; integer inputs give float32.", float_only=True, ufunc="cos", out_ok=True, fresh=True)
_unary("tanh", lambda xp, x: xp.tanh(x), "Hyperbolic tangent; integer inputs give float32.", float_only=True, ufunc="tanh", out_ok=True, fresh=True)


def _sigmoid(xp, x):
    # 1 / (1 + e) for x >= 0 and e / (1 + e) below, e = exp(-|x|): exp of a negative magnitude
    # only, so large |x| neither overflows nor loses precision. The numerator is max(e, x >= 0)
    # (e <= 1; NaN propagates), not a select: `where` on a mask that changes at random (the
    # gates of an LSTM) mispredicts a branch per element, 4x the time of the whole rest.
    # Four passes write into the buffers of the first two.
    if x.ndim == 0:  # numpy's ufuncs give scalars for 0-d arrays (no buffer to write into)
        e = xp.exp(-xp.abs(x))
        return xp.asarray(xp.maximum(e, x >= 0) / (1 + e))
    e = xp.abs(x)
    xp.negative(e, out=e)
    xp.exp(e, out=e)
    num = xp.maximum(e, x >= 0)
    e += 1
    return xp.divide(num, e, out=num)


_unary("sigmoid", _sigmoid, "Logistic sigmoid ``1 / (1 + exp(-x))``, stable for large ``|x|``.", float_only=True, fresh=True)
_unary("relu", lambda xp, x: xp.maximum(x, 0).astype(x.dtype, copy=False), "``max(x, 0)`` in x's dtype.")
_unary("logical_not", lambda xp, x: xp.logical_not(x) if x.dtype == bool else xp.invert(x),
       "Logical not of a bool tensor (bitwise not of an integer one).")

_binary("add", _ufunc("add"), "Sum ``a + b``.", ufunc="add", infix="+", commutative=True, associative=True,
        identity=0, out_ok=True, wraps_ints=True)
_binary("sub", _ufunc("subtract"), "Difference ``a - b`` (bool operands refused, as in PyTorch).", ufunc="subtract", infix="-",
        identity=0, out_ok=True, wraps_ints=True, refuses_bool=True)
_binary("mul", _ufunc("multiply"), "Product ``a * b``.", ufunc="multiply", infix="*", commutative=True,
        associative=True, identity=1, out_ok=True, wraps_ints=True)
def check_int_divisor(op, xp, b, a=None):
    """Raise PyTorch's ZeroDivisionError where integer divisor ``b`` (array or Python int) holds
    a zero: NumPy would answer 0 with a warning, a number PyTorch never gives. Dividend ``a``
    with no elements divides nothing (an empty result), so nothing is raised, as in PyTorch."""
    if getattr(a, "size", None) == 0:
        return
    if getattr(b, "dtype", None) is not None:
        zero = b.dtype.kind in "iub" and bool((b == 0).any())
    else:
        zero = b == 0
    if zero:
        raise IntegerDivisionByZero(f"ZeroDivisionError: integer {op} by zero")


def integral(a, b):
    """Whether a binary op on ``a`` and ``b`` (arrays or Python numbers, promoted) computes in
    integers (or bools)."""
    for v in (a, b):
        dt = getattr(v, "dtype", None)
        if (dt.kind == "f") if dt is not None else isinstance(v, float):
            return False
    return True


def _floordiv(xp, a, b):
    if integral(a, b):
        check_int_divisor("division", xp, b, a)
    return xp.floor_divide(a, b)


def _remainder(xp, a, b):
    if integral(a, b):
        check_int_divisor("modulo", xp, b, a)
        return xp.remainder(a, b)
    # PyTorch's remainder: fmod, plus b where the signs differ; unlike NumPy's, a zero result
    # keeps a's sign (NumPy gives b's)
    r = xp.fmod(a, b)
    fix = (r != 0) & ((r < 0) != (b < 0))
    return xp.where(fix, r + b, r)


# no ufunc trait: the kernels are not the bare ufuncs (the integer zero check, PyTorch's
# remainder), so generated code and the passes call them, never np.floor_divide directly; the
# Tensor operators // and % are bound by d2s.tensor (_MORE_OPERATORS)
_binary("floordiv", _floordiv, "Floor division ``a // b``; integer division by zero raises ZeroDivisionError.",
        wraps_ints=True)
_binary("mod", _remainder, "Remainder ``a % b`` with the sign of b (PyTorch's ``remainder``); integer division by "
        "zero raises ZeroDivisionError.", wraps_ints=True)
def _power(xp, a, b):
    """``a ** b``; an integer base to a negative integer exponent (an array's: a Python int one
    is refused before, as PyTorch's) is PyTorch's 1 for base 1, +-1 for base -1 and 0 otherwise,
    where NumPy raises. A bool tensor to a bool power stays bool (``a or not b``), as PyTorch's."""
    if getattr(a, "dtype", None) is not None and a.dtype.kind == "b" and \
            (type(b) is bool or (getattr(b, "dtype", None) is not None and b.dtype.kind == "b")):
        return xp.logical_or(a, xp.logical_not(b))
    if getattr(b, "dtype", None) is not None and b.dtype.kind == "i" and \
            (getattr(a, "dtype", None) is None or a.dtype.kind in "iu") and type(a) is not float:
        neg = b < 0
        if neg.any():
            out = xp.power(a, xp.where(neg, 0, b).astype(b.dtype, copy=False))
            odd = (b % 2).astype(bool)
            at_neg = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0)).astype(out.dtype)
            return xp.where(neg, at_neg, out)
    return xp.power(a, b)


_binary("pow", _power, "Power ``a ** b`` (integer powers as PyTorch's: see ``_power``).", ufunc="power", out_ok=True)
_binary("maximum", _ufunc("maximum"), "Element-wise maximum (NaN wins).", ufunc="maximum", commutative=True, out_ok=True)
_binary("minimum", _ufunc("minimum"), "Element-wise minimum (NaN wins).", ufunc="minimum", commutative=True, out_ok=True)
for _name, _fn, _symbol in (("eq", "equal", "=="), ("ne", "not_equal", "!="), ("lt", "less", "<"),
                            ("le", "less_equal", "<="), ("gt", "greater", ">"), ("ge", "greater_equal", ">=")):
    _binary(_name, (lambda f: lambda xp, a, b: getattr(xp, f)(a, b))(_fn), f"Comparison ``a {_symbol} b`` (bool).",
            dtype="bool", comparison=True, wraps_ints=True,
            ufunc=_fn, infix=_symbol, commutative=_name in ("eq", "ne"))


@deflowering("neg", "python_scalar")
def _neg_python_scalar(x):
    """Generated code negates a numpy scalar with Python's unary minus (see codegen.py)."""
    return f"-{x}"


def _div_infer(a, b):
    t = elementwise("div", a, b)
    return TensorType(t.shape, float_of(t.dtype))


@defop("div", _div_infer, elementwise=True, promotes=None, float_inputs=True, ufunc="true_divide",
       out_ok=True, fresh=True, infix="/", identity=1)
def _div(xp, a, b):
    """True division; integer inputs give float32."""
    da, db = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if da is not None and da is db and da.kind == "f":
        return xp.true_divide(a, b)
    a, b = promote((a, b), floating=True)
    return xp.true_divide(a, b)


def _logaddexp_infer(a, b):
    t = elementwise("logaddexp", a, b)
    return TensorType(t.shape, float_of(t.dtype))


@defop("logaddexp", _logaddexp_infer, elementwise=True, promotes=None, float_inputs=True, ufunc="logaddexp",
       out_ok=True, fresh=True, commutative=True)
def _logaddexp(xp, a, b):
    """log(exp(a) + exp(b)) without overflow; integer and bool inputs give float32."""
    da, db = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if da is not None and da is db and da.kind == "f":
        return xp.logaddexp(a, b)
    a, b = promote((a, b), floating=True)
    return xp.logaddexp(a, b)


def _bitwise(name, fn, doc, **traits):
    def infer(a, b):
        t = elementwise(name, a, b)
        if t.dtype.startswith("float"):
            raise ShapeError(f"{name}: needs bool or integer tensors, got {a.dtype} and {b.dtype}")
        return t

    def kernel(xp, a, b):
        # a Python int meeting an integer array is wrapped into its dtype, as PyTorch casts it
        if type(b) is int and getattr(a, "dtype", None) is not None and a.dtype.kind in "iu":
            b = wrap_int(b, a.dtype)
        elif type(a) is int and getattr(b, "dtype", None) is not None and b.dtype.kind in "iu":
            a = wrap_int(a, b.dtype)
        else:
            da, db = getattr(a, "dtype", None), getattr(b, "dtype", None)
            if da is not None and db is not None and da != db:
                # PyTorch's promotion, not NumPy's: a 0-d int64 tensor does not widen an int32
                # one (int32 & tensor(-4) is int32), and its value wraps into the result's dtype
                a, b = promote((a, b))
        return fn(xp, a, b)

    defop(name, infer, doc=doc, elementwise=True, commutative=True, fresh=True, wraps_ints=True, **traits)(kernel)


_bitwise("bitwise_and", lambda xp, a, b: xp.bitwise_and(a, b), "Bitwise (logical, for bool) and.",
         ufunc="bitwise_and")
_bitwise("bitwise_or", lambda xp, a, b: xp.bitwise_or(a, b), "Bitwise (logical, for bool) or.",
         ufunc="bitwise_or")
_bitwise("bitwise_xor", lambda xp, a, b: xp.bitwise_xor(a, b), "Bitwise (logical, for bool) exclusive or.",
         ufunc="bitwise_xor")


def integer_elementwise(name):
    """The shape rule of a binary element-wise op defined for integer tensors only (the bit
    shifts, gcd, lcm; PyTorch's too)."""
    def infer(a, b):
        t = elementwise(name, a, b)
        if t.dtype.startswith("float") or t.dtype == "bool":
            raise ShapeError(f"{name}: needs integer tensors (PyTorch's too), got {a.dtype} and {b.dtype}")
        return t
    return infer


def _shift_operands(xp, a, b):
    """(a, b) as arrays of their promoted integer dtype, the dtype's width in bits, and where the
    shift is outside [0, bits) (PyTorch defines those results: see the kernels)."""
    a, b = promote((a, b))
    dtype = a.dtype if hasattr(a, "dtype") else b.dtype  # (a Python int takes the tensor's dtype)
    if dtype.kind not in "iu":
        raise ShapeError(f"bitwise shift: needs integer tensors, got {dtype}")
    # a Python int wraps into the dtype, as PyTorch converts it (uint8 << -1 shifts by 255: 0)
    a = wrap_int(a, dtype) if type(a) is int else a
    b = wrap_int(b, dtype) if type(b) is int else b
    a, b = xp.asarray(a, dtype=dtype), xp.asarray(b, dtype=dtype)
    bits = a.dtype.itemsize * 8
    out_of_range = (b < 0) | (b >= bits)
    return a, xp.where(out_of_range, 0, b).astype(b.dtype, copy=False), bits, out_of_range


@defop("bitwise_left_shift", integer_elementwise("bitwise_left_shift"), elementwise=True, fresh=True,
       wraps_ints=True)
def _bitwise_left_shift(xp, a, b):
    """``a << b`` of integers, wrapping as C does; a shift by a negative count or by the width or
    more gives 0, as PyTorch's."""
    a, b, bits, out_of_range = _shift_operands(xp, a, b)
    return xp.where(out_of_range, xp.zeros((), a.dtype), xp.left_shift(a, b))


@defop("bitwise_right_shift", integer_elementwise("bitwise_right_shift"), elementwise=True, fresh=True,
       wraps_ints=True)
def _bitwise_right_shift(xp, a, b):
    """``a >> b`` of integers (arithmetic for signed ones); a shift by a negative count or by the
    width or more shifts by width - 1 (signed: 0 or -1) or gives 0 (unsigned), as PyTorch's."""
    a, b, bits, out_of_range = _shift_operands(xp, a, b)
    far = xp.zeros((), a.dtype) if a.dtype.kind == "u" else xp.right_shift(a, bits - 1)
    return xp.where(out_of_range, far, xp.right_shift(a, b))


# Generated code computes these on 0-d operands (numpy scalars of one dtype) with Python's
# operators, as numpy's scalar math does: the per-call bool flags of to_static training are
# chains of them (codegen.py, "python_scalar"). Not ``infix`` traits, which would also bind
# Tensor's ``&``/``|``/``^``.
for _name, _symbol in (("bitwise_and", "&"), ("bitwise_or", "|"), ("bitwise_xor", "^")):
    deflowering(_name, "python_scalar")(lambda a, b, _s=_symbol: f"{a} {_s} {b}")


def _where_infer(c, a, b):
    t = elementwise("where", c, a, b)
    return TensorType(t.shape, elementwise("where", a, b).dtype)


@defop("where", _where_infer, elementwise=True, promotes=(1, 2), fresh=True)
def _where(xp, c, a, b):
    """``a`` where ``c`` holds, else ``b`` (a and b promoted to one dtype)."""
    da, db = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if da is None and db is None:
        # two Python scalars take d2s's defaults (a float gives float32, not numpy's float64)
        a = xp.asarray(a, dtype=_scalar_dtype(a, b))
    elif da is None or da is not db:
        # a Python int meeting an integer array: checked into its dtype, as PyTorch converts it
        if da is None and type(a) is int and db.kind in "iu":
            a = checked_int(a, db)
        elif db is None and type(b) is int and da.kind in "iu":
            b = checked_int(b, da)
        a, b = promote((a, b))
    return xp.where(c, a, b)


def _scalar_dtype(*values):
    if any(isinstance(v, float) for v in values):
        return "float32"
    return "bool" if all(isinstance(v, bool) for v in values) else "int64"



def _clip_dtype(dtype, lo, hi):
    # an integer tensor clipped to float bounds gives float32, as int_tensor * 0.5 does; a bool
    # one clipped to int bounds gives int64, as PyTorch's (bool + int promotes so)
    if not is_floating(dtype) and any(isinstance(v, float) for v in (lo, hi)):
        return "float32"
    if dtype == "bool":
        if any(type(v) is bool for v in (lo, hi)):
            raise ShapeError("clamp: not defined for a bool tensor with bool bounds (PyTorch's neither); cast it "
                             "to an integer first")
        if any(type(v) is int for v in (lo, hi)):
            return "int64"
    return dtype


def _clip_infer(x, lo=None, hi=None):
    return TensorType(x.shape, _clip_dtype(x.dtype, lo, hi))


@defop("clip", _clip_infer, elementwise=True)
def _clip(xp, x, lo=None, hi=None):
    """Clip to [lo, hi]; either bound may be None. Bounds are attrs (Python numbers)."""
    if x.dtype.kind != "f" and (isinstance(lo, float) or isinstance(hi, float)):
        x = x.astype("float32")
    elif x.dtype.kind == "b" and (lo is not None or hi is not None):
        x = x.astype(_clip_dtype("bool", lo, hi))  # int64 (bool bounds refused)
    elif x.dtype.kind in "iu":  # (d2s.clamp has converted them as PyTorch does; a saved program too)
        lo = checked_int(lo, x.dtype) if type(lo) is int else lo
        hi = checked_int(hi, x.dtype) if type(hi) is int else hi
    return xp.clip(x, lo, hi).astype(x.dtype, copy=False)


def _clamp_infer(x, *bounds, which="both"):
    if which not in ("both", "min", "max") or len(bounds) != (2 if which == "both" else 1):
        raise ShapeError(f"clamp: which={which!r} with {len(bounds)} bounds; expected 'both' with two, "
                         "'min' or 'max' with one")
    return elementwise("clamp", x, *bounds)


@defop("clamp", _clamp_infer, elementwise=True, promotes=None, fresh=True)
def _clamp(xp, x, *bounds, which="both"):
    """x limited by tensor bounds (``which``: 'both' (lo, hi), 'min' (lo) or 'max' (hi)):
    PyTorch's ``minimum(maximum(x, lo), hi)``, so NaN in x or a bound gives NaN and hi wins
    where lo > hi; operands promoted together."""
    x, *bounds = promote((x, *bounds))
    if which == "max":
        return xp.minimum(x, bounds[0])
    out = xp.maximum(x, bounds[0])
    return xp.minimum(out, bounds[1]) if which == "both" else out


# ---------------------------------------------------------------- native lowerings
# Element-wise hooks of the native backend (see native/plan.py and native/emit.py): ``hook(e, *args, **attrs)``
# gets the operands as scalar expressions already converted to ``e.dtype`` and returns the
# expression of the result (converted to the op's dtype by the caller).
NATIVE = "native"
CUDA = "cuda"  # the CUDA C emitter's hooks (see "CUDA C lowerings" below)


def _native_binary(name, symbol, bool_symbol=None):
    def hook(e, a, b):
        if e.dtype == "bool":
            if bool_symbol is None:
                e.unsupported("bool operands")
            return f"({a} {bool_symbol} {b})"
        return f"({a} {symbol} {b})"

    deflowering(name, NATIVE)(hook)


for _name, _symbol, _bool in (("add", "+", "|"), ("sub", "-", None), ("mul", "*", "&"), ("div", "/", None),
                              ("eq", "==", "=="), ("ne", "!=", "!="),
                              ("lt", "<", "<"), ("le", "<=", "<="), ("gt", ">", ">"), ("ge", ">=", ">="),
                              ("bitwise_and", "&", "&"), ("bitwise_or", "|", "|"), ("bitwise_xor", "^", "^")):
    _native_binary(_name, _symbol, _bool)


@deflowering("floordiv", NATIVE)
def _floordiv_native(e, a, b):
    if e.dtype == "bool":
        e.unsupported("bool operands")
    if e.dtype.startswith("float"):
        return f"({a} // {b})"
    return f"{e.lib('floordiv_int')}({a}, {b})"


@deflowering("mod", NATIVE)
def _mod_native(e, a, b):
    if e.dtype == "bool":
        e.unsupported("bool operands")
    if e.dtype.startswith("float"):
        return f"{e.lib('remainder')}({a}, {b}, {e.const(0)})"
    return f"{e.lib('mod_int')}({a}, {b})"


@deflowering("pow", NATIVE)
def _pow_native(e, a, b):
    if e.dtype not in ("float32", "float64"):
        e.unsupported("integer power (numpy's overflow and negative-exponent rules)")
    return f"({a} ** {b})"


def _native_lib2(name, fn):
    def hook(e, a, b):
        if e.dtype == "bool":
            e.unsupported("bool operands")
        return f"{e.lib(fn)}({a}, {b})"

    deflowering(name, NATIVE)(hook)


_native_lib2("maximum", "maximum")
_native_lib2("minimum", "minimum")
_native_lib2("logaddexp", "logaddexp")


@deflowering("neg", NATIVE)
def _neg_native(e, x):
    if e.dtype == "bool":
        e.unsupported("bool operand")
    return f"(-{x})"


@deflowering("abs", NATIVE)
def _abs_native(e, x):
    if e.dtype == "bool":
        e.unsupported("bool operand")
    return f"abs({x})"


@deflowering("sign", NATIVE)
def _sign_native(e, x):
    if e.dtype == "bool":
        return x
    return f"{e.lib('sign')}({x}, {e.const(0)}, {e.const(1)})"


def _native_float_fn(name, fn):
    def hook(e, x):
        return f"{e.np(fn)}({x})"

    deflowering(name, NATIVE)(hook)


for _name in ("exp", "log", "sqrt", "sin", "cos"):
    _native_float_fn(_name, _name)


@deflowering("tanh", NATIVE)
def _tanh_native(e, x):
    # float32: a vectorizable rational form (native/_lib.py: within 1 ulp of the exact value)
    return f"{e.lib('tanh32')}({x})" if e.dtype == "float32" else f"np.tanh({x})"


@deflowering("sigmoid", NATIVE)
def _sigmoid_native(e, x):
    return f"{e.lib('sigmoid')}({x}, {e.const(1)})"


@deflowering("relu", NATIVE)
def _relu_native(e, x):
    if e.dtype == "bool":
        e.unsupported("bool operand")
    return f"{e.lib('relu')}({x}, {e.const(0)})"


@deflowering("logical_not", NATIVE)
def _logical_not_native(e, x):
    return f"(not {x})" if e.dtype == "bool" else f"(~{x})"


@deflowering("where", NATIVE)
def _where_native(e, c, a, b):
    return f"({a} if {c} else {b})"


@deflowering("clamp", NATIVE)
@deflowering("clamp", CUDA)  # (both emitters name their maximum/minimum helpers alike)
def _clamp_lowering(e, x, *bounds, which="both"):
    if e.dtype == "bool":
        e.unsupported("bool operands")
    if which == "max":
        return f"{e.lib('minimum')}({x}, {bounds[0]})"
    out = f"{e.lib('maximum')}({x}, {bounds[0]})"
    return f"{e.lib('minimum')}({out}, {bounds[1]})" if which == "both" else out


def _check_clip(e, lo, hi):
    """What the native and CUDA emitters' clip lowerings take: numeric operands, number bounds."""
    if e.dtype == "bool":
        e.unsupported("bool operand")
    for v in (lo, hi):
        if v is not None and (type(v) is bool or not isinstance(v, (int, float))):
            e.unsupported("clip bounds must be numbers")


@deflowering("clip", NATIVE)
def _clip_native(e, x, lo=None, hi=None):
    _check_clip(e, lo, hi)
    if lo is not None:
        x = f"{e.lib('clip_lo')}({x}, {e.const(lo)})"
    if hi is not None:
        x = f"{e.lib('clip_hi')}({x}, {e.const(hi)})"
    return x


# ---------------------------------------------------------------- CUDA C lowerings
# Element-wise hooks of the CUDA C emitter (gpu/cuda_lower.py): ``hook(e, *args, **attrs)`` gets
# the operands as C expressions already converted to ``e.dtype`` and returns the C expression of
# the result, with numpy's semantics (NaN wins in maximum/minimum, floor division and PyTorch's
# remainder for floats); ``e.fn("exp")`` is the math function of the compute dtype (``expf`` for
# float32), ``e.lit(v)`` a literal of it, ``e.lib(name)`` a helper of gpu/cuda_lower.py's prelude
# (the backend name ``CUDA`` is defined beside ``NATIVE`` above).


def _cuda_binary(name, symbol, bool_symbol=None):
    def hook(e, a, b):
        if e.dtype == "bool":
            if bool_symbol is None:
                e.unsupported("bool operands")
            return f"({a} {bool_symbol} {b})"
        return f"({a} {symbol} {b})"

    deflowering(name, CUDA)(hook)


for _name, _symbol, _bool in (("add", "+", "|"), ("sub", "-", None), ("mul", "*", "&"), ("div", "/", None),
                              ("eq", "==", "=="), ("ne", "!=", "!="),
                              ("lt", "<", "<"), ("le", "<=", "<="), ("gt", ">", ">"), ("ge", ">=", ">="),
                              ("bitwise_and", "&", "&"), ("bitwise_or", "|", "|"), ("bitwise_xor", "^", "^")):
    _cuda_binary(_name, _symbol, _bool)


def _cuda_float_only(name, helper):
    def hook(e, a, b):
        if not e.dtype.startswith("float"):
            # an integer // or % by zero raises in the kernel: no element-wise C form says so
            e.unsupported("integer operands (a zero divisor raises)")
        return f"{e.lib(helper)}({a}, {b})"

    deflowering(name, CUDA)(hook)


_cuda_float_only("floordiv", "floordiv")
_cuda_float_only("mod", "remainder")


@deflowering("pow", CUDA)
def _pow_cuda(e, a, b):
    if not e.dtype.startswith("float"):
        e.unsupported("integer power (numpy's overflow and negative-exponent rules)")
    return f"{e.fn('pow')}({a}, {b})"


def _cuda_lib2(name, helper):
    def hook(e, a, b):
        if e.dtype == "bool":
            e.unsupported("bool operands")
        return f"{e.lib(helper)}({a}, {b})"

    deflowering(name, CUDA)(hook)


_cuda_lib2("maximum", "maximum")
_cuda_lib2("minimum", "minimum")


@deflowering("logaddexp", CUDA)
def _logaddexp_cuda(e, a, b):
    return f"{e.lib('logaddexp')}({a}, {b})"


@deflowering("neg", CUDA)
def _neg_cuda(e, x):
    if e.dtype == "bool":
        e.unsupported("bool operand")
    return f"(-{x})"


@deflowering("abs", CUDA)
def _abs_cuda(e, x):
    if e.dtype == "bool":
        e.unsupported("bool operand")
    return f"{e.fn('fabs')}({x})" if e.dtype.startswith("float") else f"({x} < 0 ? -{x} : {x})"


@deflowering("sign", CUDA)
def _sign_cuda(e, x):
    if e.dtype == "bool":
        return x
    return f"(({x} > {e.lit(0)}) - ({x} < {e.lit(0)}))"  # 0 for NaN, as PyTorch


def _cuda_float_fn(name):
    def hook(e, x):
        return f"{e.fn(name)}({x})"

    deflowering(name, CUDA)(hook)


for _name in ("exp", "log", "sqrt", "sin", "cos", "tanh"):
    _cuda_float_fn(_name)


@deflowering("sigmoid", CUDA)
def _sigmoid_cuda(e, x):
    return f"{e.lib('sigmoid')}({x})"


@deflowering("relu", CUDA)
def _relu_cuda(e, x):
    if e.dtype == "bool":
        e.unsupported("bool operand")
    return f"{e.lib('maximum')}({x}, {e.lit(0)})"


@deflowering("logical_not", CUDA)
def _logical_not_cuda(e, x):
    return f"(!{x})" if e.dtype == "bool" else f"(~{x})"


@deflowering("where", CUDA)
def _where_cuda(e, c, a, b):
    return f"({c} ? {a} : {b})"


@deflowering("clip", CUDA)
def _clip_cuda(e, x, lo=None, hi=None):
    _check_clip(e, lo, hi)
    if lo is not None:
        x = f"{e.lib('maximum')}({x}, {e.lit(lo)})"
    if hi is not None:
        x = f"{e.lib('minimum')}({x}, {e.lit(hi)})"
    return x
