"""Element-wise math with PyTorch's semantics: transcendental functions, rounding, predicates,
``nan_to_num``, and the binary ``fmod``/``atan2``/``hypot``/``fmax``/``fmin``/``truncdiv``
(arithmetic and comparisons are in ``elementwise.py``).

Float functions of integer and bool inputs compute in float32, as PyTorch's do; rounding
functions keep an integer tensor as it is (and refuse bools, as PyTorch does); integer
``fmod`` and ``truncdiv`` by zero raise PyTorch's ``ZeroDivisionError`` (a RuntimeError).
"""
import numpy as np

from ..dtypes import convert_ints, promote

from . import special
from .elementwise import NATIVE, _float_result, _unary, check_int_divisor, integral
from .registry import ShapeError, TensorType, deflowering, defop
from .rules import elementwise

# ------------------------------------------------------------------ float functions
# name -> (numpy function, numba lowering: the numpy function numba compiles, or None)
_FLOAT_FUNCS = {
    "expm1": ("expm1", "expm1", "``exp(x) - 1``, accurate near 0."),
    "log1p": ("log1p", "log1p", "``log(1 + x)``, accurate near 0."),
    "log2": ("log2", "log2", "Base-2 logarithm."),
    "log10": ("log10", "log10", "Base-10 logarithm."),
    "exp2": ("exp2", "exp2", "``2 ** x``."),
    "tan": ("tan", "tan", "Tangent (radians)."),
    "asin": ("arcsin", "arcsin", "Inverse sine."),
    "acos": ("arccos", "arccos", "Inverse cosine."),
    "atan": ("arctan", "arctan", "Inverse tangent."),
    "sinh": ("sinh", "sinh", "Hyperbolic sine."),
    "cosh": ("cosh", "cosh", "Hyperbolic cosine."),
    "asinh": ("arcsinh", "arcsinh", "Inverse hyperbolic sine."),
    "acosh": ("arccosh", "arccosh", "Inverse hyperbolic cosine."),
    "atanh": ("arctanh", "arctanh", "Inverse hyperbolic tangent."),
}


def _numpy_unary(fn):
    np_fn = getattr(np, fn)

    def kernel(xp, x):
        return np_fn(x) if xp is np else getattr(xp, fn)(x)

    return kernel


def _native_float(fn):
    def hook(e, x):
        if fn in _WIDENED and e.dtype == "float32":
            return f"{e.np(fn)}(np.float64({x}))"
        return f"{e.np(fn)}({x})"
    return hook


# numba 0.68 declares libm's exp2/log2 once per module: a function with both float32 and float64
# calls fails in LLVM ("arg mismatch: float != double"), so float32 computes these in float64
# (the result rounded once: within an ulp of numpy's float32 loop)
_WIDENED = ("exp2", "log2")

for _name, (_fn, _native, _doc) in _FLOAT_FUNCS.items():
    _unary(_name, _numpy_unary(_fn), _doc + " Integer and bool inputs give float32.", float_only=True, ufunc=_fn,
           out_ok=True, fresh=True)
    deflowering(_name, NATIVE)(_native_float(_native))


def _rsqrt(xp, x):
    # 1 / sqrt(x), rounded twice, as PyTorch computes it (not a fused reciprocal square root)
    return 1 / xp.sqrt(x)


_unary("rsqrt", _rsqrt, "``1 / sqrt(x)``. Integer and bool inputs give float32.", float_only=True, fresh=True)


@deflowering("rsqrt", NATIVE)
def _rsqrt_native(e, x):
    return f"({e.const(1)} / np.sqrt({x}))"


_unary("erf", lambda xp, x: special.erf(xp, x), "The error function. Integer and bool inputs give float32.",
       float_only=True, fresh=True)
_unary("erfc", lambda xp, x: special.erfc(xp, x), "``1 - erf(x)``, accurate in the tail. Integer and bool "
       "inputs give float32.", float_only=True, fresh=True)
_unary("erfinv", lambda xp, x: special.erfinv(xp, x), "The inverse error function on [-1, 1]. Integer and bool "
       "inputs give float32.", float_only=True, fresh=True)


# float32: the kernels' float32 fits (native/_lib.py: erf32, erfc32; erf32 vectorizes), within 1 ulp
# of the exact value; float64: libm's erf and erfc (numba's math.erf), within a few ulp of the series
deflowering("erf", NATIVE)(lambda e, x: f"{e.lib('erf32' if e.dtype == 'float32' else 'erf')}({x})")
deflowering("erfc", NATIVE)(lambda e, x: f"{e.lib('erfc32' if e.dtype == 'float32' else 'erfc')}({x})")


# ------------------------------------------------------------------ rounding
def _rounding(name, fn, doc, **traits):
    """A rounding op: floats rounded in their dtype, integers returned as they are (a copy),
    bools refused (PyTorch has no rounding of bools)."""
    def infer(x, **attrs):
        if x.dtype == "bool":
            raise ShapeError(f"{name}: not defined for bool tensors (PyTorch's neither); cast to a number first")
        return TensorType(x.shape, x.dtype)

    def kernel(xp, x, **attrs):
        if x.dtype.kind != "f":
            if x.dtype == bool:
                raise ValueError(f"{name} of a bool tensor")  # the shape rule words the error
            return xp.array(x, copy=True)
        return fn(xp, x, **attrs)

    defop(name, infer, doc=doc, elementwise=True, fresh=True, **traits)(kernel)


_rounding("floor", lambda xp, x: xp.floor(x), "Largest integer not above x, in x's dtype (integers unchanged).")
_rounding("ceil", lambda xp, x: xp.ceil(x), "Smallest integer not below x, in x's dtype (integers unchanged).")
_rounding("trunc", lambda xp, x: xp.trunc(x), "x rounded toward zero, in x's dtype (integers unchanged).")


def _round(xp, x, decimals=0):
    if decimals == 0:
        return xp.rint(x)  # half to even, as PyTorch
    # PyTorch's formula: rint(x * 10^d) / 10^d (d > 0), rint(x / 10^-d) * 10^-d (d < 0), in x's dtype
    scale = x.dtype.type(10.0 ** abs(decimals))  # a numpy scalar: cupy takes it as a Python one
    if decimals > 0:
        return xp.rint(x * scale) / scale
    return xp.rint(x / scale) * scale


_rounding("round", _round, "x rounded half to even (to ``decimals`` decimal places), in x's dtype (integers "
          "unchanged).")

for _name, _fn in (("floor", "floor"), ("ceil", "ceil"), ("trunc", "trunc")):
    deflowering(_name, NATIVE)((lambda fn: lambda e, x: f"np.{fn}({x})")(_fn))


@deflowering("round", NATIVE)
def _round_native(e, x, decimals=0):
    if decimals != 0:
        e.unsupported("round with decimals")
    return f"np.rint({x})"


# ------------------------------------------------------------------ predicates
def _predicate(name, fn, int_value, doc):
    def infer(x):
        return TensorType(x.shape, "bool")

    def kernel(xp, x):
        if x.dtype.kind != "f":
            return xp.full(x.shape, int_value, dtype=bool)
        return fn(xp, x)

    # a comparison's traits: a bool result computed from the input in its own dtype
    defop(name, infer, doc=doc, elementwise=True, comparison=True, fresh=True)(kernel)


_predicate("isnan", lambda xp, x: xp.isnan(x), False, "Whether each element is NaN (bool).")
_predicate("isinf", lambda xp, x: xp.isinf(x), False, "Whether each element is +-inf (bool).")
_predicate("isfinite", lambda xp, x: xp.isfinite(x), True, "Whether each element is finite (bool).")

for _name in ("isnan", "isinf", "isfinite"):
    # integers are never NaN or infinite: a constant
    deflowering(_name, NATIVE)((lambda fn: lambda e, x: f"np.{fn}({x})" if e.in_dtypes[0].startswith("float")
                                else e.const(fn == "isfinite", "bool"))(_name))


def _nan_to_num_infer(x, nan=0.0, posinf=None, neginf=None):
    return TensorType(x.shape, x.dtype)


@defop("nan_to_num", _nan_to_num_infer, elementwise=True, fresh=True)
def _nan_to_num(xp, x, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (None: the dtype's
    largest and smallest finite values); integer tensors unchanged."""
    if x.dtype.kind != "f":
        return xp.array(x, copy=True)
    info = np.finfo(x.dtype)
    out = xp.where(xp.isnan(x), xp.asarray(nan, dtype=x.dtype), x)
    out = xp.where(out == np.inf, xp.asarray(info.max if posinf is None else posinf, dtype=x.dtype), out)
    return xp.where(out == -np.inf, xp.asarray(info.min if neginf is None else neginf, dtype=x.dtype), out)


@deflowering("nan_to_num", NATIVE)
def _nan_to_num_native(e, x, nan=0.0, posinf=None, neginf=None):
    if not e.dtype.startswith("float"):
        return x  # integer tensors unchanged
    info = np.finfo(e.dtype)
    values = [float(info.max) if posinf is None else posinf, float(info.min) if neginf is None else neginf, nan]
    for v in values:
        if type(v) is bool or not isinstance(v, (int, float)):
            e.unsupported("nan_to_num values must be numbers")
    hi, lo, nv = (e.const(v) for v in values)
    return f"{e.lib('nan_to_num')}({x}, {nv}, {hi}, {lo})"


# ------------------------------------------------------------------ binary
def _binary_float(name, fn, doc, **traits):
    """A binary float function: operands promoted together, integers and bools in float32."""
    def infer(a, b):
        t = elementwise(name, a, b)
        return TensorType(t.shape, _float_result(name, t))

    def kernel(xp, a, b):
        a, b = promote((a, b), floating=True)
        return fn(xp, a, b)

    defop(name, infer, doc=doc, elementwise=True, promotes=None, float_inputs=True, fresh=True, **traits)(kernel)


_binary_float("atan2", lambda xp, a, b: xp.arctan2(a, b), "``atan(a / b)`` in the quadrant of (b, a).")
_binary_float("hypot", lambda xp, a, b: xp.hypot(a, b), "``sqrt(a^2 + b^2)`` without overflow.", commutative=True)
deflowering("atan2", NATIVE)(lambda e, a, b: f"np.arctan2({a}, {b})")
deflowering("hypot", NATIVE)(lambda e, a, b: f"np.hypot({a}, {b})")


def _binary_same(name, fn, doc, float_only=False, **traits):
    """A binary op computing in the operands' promoted dtype (bools refused)."""
    def infer(a, b):
        t = elementwise(name, a, b)
        if t.dtype == "bool":
            raise ShapeError(f"{name}: not defined for bool tensors; cast them to a number first")
        return t

    wraps = traits.get("wraps_ints", False)

    def kernel(xp, a, b):
        # a Python int meeting an integer array: converted to its dtype as PyTorch does
        if type(b) is int and getattr(a, "dtype", None) is not None and a.dtype.kind in "iu":
            a, b = convert_ints((a, b), a.dtype, wraps)
        elif type(a) is int and getattr(b, "dtype", None) is not None and b.dtype.kind in "iu":
            a, b = convert_ints((a, b), b.dtype, wraps)
        a, b = promote((a, b))
        return fn(xp, a, b)

    defop(name, infer, doc=doc, elementwise=True, promotes=None, fresh=True, **traits)(kernel)


def _fmod(xp, a, b):
    if integral(a, b):
        check_int_divisor("fmod", xp, b, a)
    return xp.fmod(a, b)


def _truncdiv(xp, a, b):
    if not integral(a, b):
        return xp.trunc(xp.true_divide(a, b))
    check_int_divisor("div(rounding_mode='trunc')", xp, b, a)
    q = xp.floor_divide(a, b)
    # floor and truncation differ where the quotient is negative and inexact
    return q + ((q < 0) & (q * b != a)).astype(q.dtype)


_binary_same("fmod", _fmod, "C's remainder: ``a - trunc(a / b) * b`` (the sign of a). Integer division by zero "
             "raises ZeroDivisionError.", wraps_ints=True)
_binary_same("truncdiv", _truncdiv, "``a / b`` rounded toward zero (``div(rounding_mode='trunc')``), in the "
             "operands' dtype. Integer division by zero raises ZeroDivisionError.", wraps_ints=True)
def _fmax(xp, a, b):
    # PyTorch's fmax: a NaN loses to a number; a is kept on ties (NumPy's fmax takes b, so
    # fmax(0.0, -0.0) would be -0.0)
    if integral(a, b):
        return xp.maximum(a, b)
    return xp.where((a >= b) | xp.isnan(b), a, b)


def _fmin(xp, a, b):
    if integral(a, b):
        return xp.minimum(a, b)
    return xp.where((a <= b) | xp.isnan(b), a, b)


_binary_same("fmax", _fmax, "Element-wise maximum ignoring NaN (NaN only where both are).")
_binary_same("fmin", _fmin, "Element-wise minimum ignoring NaN (NaN only where both are).")


@deflowering("fmod", NATIVE)
def _fmod_native(e, a, b):
    if e.dtype.startswith("float"):
        return f"np.fmod({a}, {b})"
    return f"{e.lib('fmod_int')}({a}, {b})"


@deflowering("truncdiv", NATIVE)
def _truncdiv_native(e, a, b):
    if e.dtype.startswith("float"):
        return f"np.trunc({a} / {b})"
    return f"{e.lib('truncdiv_int')}({a}, {b})"


deflowering("fmax", NATIVE)(lambda e, a, b: f"{e.lib('fmax')}({a}, {b})")
deflowering("fmin", NATIVE)(lambda e, a, b: f"{e.lib('fmin')}({a}, {b})")


# ------------------------------------------------------------------ GELU
# GELU's exact form, ``x * 0.5 * (1 + erf(x * M_SQRT1_2))`` as PyTorch's CPU kernel orders it, is
# ``erf`` (its own op, computed once) and ``gelu_from_erf(x, e)``; its gradient,
# ``dy * (cdf + x * pdf)`` with ``cdf = 0.5 * (1 + e)`` and
# ``pdf = exp(x * x * -0.5) * M_2_SQRTPI * M_SQRT1_2 * 0.5``, is ``gelu_from_erf_grad(x, e, dy)``.
# Composed of separate ops they made about a dozen passes over the activation, each a
# temporary the size of the MLP's hidden layer; these compute a block at a time, so the
# temporaries stay in cache.
_SQRT1_2 = 0.7071067811865476   # M_SQRT1_2
_GELU_BETA = 0.3989422804014327  # M_2_SQRTPI * M_SQRT1_2 * 0.5 = 1 / sqrt(2 pi)
_GELU_BLOCK = 65536  # in the shared cache; fewer blocks, less numpy per-call work than 16384 (GPT's
                     # (8, 128, 1024): forward 0.94 -> 0.76 ms, gradient 2.39 -> 1.99 ms, the same bits)


def _blockwise(xp, fn, *arrays):
    """``fn(*blocks)`` written into one output, a block of elements at a time (numpy, same-shape
    operands; otherwise, or on cupy, the whole arrays at once)."""
    if xp is not np:
        return fn(*arrays)
    # (inf * 0 is NaN at x = +-inf, as in PyTorch's kernels, which do not warn)
    with np.errstate(invalid="ignore", over="ignore"):
        # (row-major operands of one shape only: others keep numpy's order of the result, which
        # follows the inputs' layout, as d2s/layouts.py models it)
        if arrays[0].size <= _GELU_BLOCK or any(a.shape != arrays[0].shape or not a.flags.c_contiguous
                                                for a in arrays):
            return fn(*arrays)
        flat = [a.reshape(-1) for a in arrays]
        out = np.empty(flat[0].shape, np.result_type(*arrays))
        for lo in range(0, out.size, _GELU_BLOCK):
            out[lo:lo + _GELU_BLOCK] = fn(*(a[lo:lo + _GELU_BLOCK] for a in flat))
        return out.reshape(arrays[0].shape)


def _gelu_values(x, e):
    return (x * 0.5) * (e + 1)


def _gelu_grad_values(xp, x, e, g):
    cdf = e + 1
    cdf *= 0.5
    pdf = x * x
    pdf *= -0.5
    pdf = xp.exp(pdf, out=pdf)
    pdf *= _GELU_BETA
    pdf *= x
    pdf += cdf
    return g * pdf


def _gelu_infer(x, *rest):
    t = elementwise("gelu_from_erf", x, *rest)
    return TensorType(t.shape, _float_result("gelu_from_erf", t))


defop("gelu_from_erf", _gelu_infer, doc="GELU from ``x`` and ``e = erf(x / sqrt(2))``: ``x * 0.5 * (1 + e)``.",
      elementwise=True, promotes=None, float_inputs=True, fresh=True)(
    lambda xp, x, e: _blockwise(xp, _gelu_values, *promote((x, e), floating=True)))
defop("gelu_from_erf_grad", _gelu_infer, doc="GELU's gradient at ``x`` (``e = erf(x / sqrt(2))``) times "
      "``g``: ``g * (0.5 * (1 + e) + x * pdf(x))``.", elementwise=True, promotes=None, float_inputs=True,
      fresh=True)(lambda xp, x, e, g: _blockwise(xp, lambda *b: _gelu_grad_values(xp, *b),
                                                 *promote((x, e, g), floating=True)))


@deflowering("gelu_from_erf", NATIVE)
def _gelu_native(e, x, erf):
    return f"(({x} * {e.const(0.5)}) * ({erf} + {e.const(1)}))"


@deflowering("gelu_from_erf_grad", NATIVE)
def _gelu_grad_native(e, x, erf, g):
    cdf = f"(({erf} + {e.const(1)}) * {e.const(0.5)})"
    pdf = f"(np.exp(({x} * {x}) * {e.const(-0.5)}) * {e.const(_GELU_BETA)})"
    return f"({g} * ({cdf} + {x} * {pdf}))"
