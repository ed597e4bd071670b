"""Element-wise math with PyTorch's semantics (runtime: ``d2s_runtime/ops/pointwise.py``):
transcendental functions, rounding, predicates and ``nan_to_num``, each with its gradient
rule and ONNX converter beside its public wrapper. Arithmetic, comparisons, logic, clamp and
the binary functions are in ``elementwise.py``.

Float functions of integer and bool tensors give float32, as in PyTorch; rounding functions
keep integer tensors as they are and have a zero gradient (PyTorch's), not none.
"""
import builtins
import math

import numpy as np

from ..autograd.registry import grad_rule, non_differentiable, sample_call, shape_only
from ..dispatch import apply
from ..onnx.registry import elementwise as onnx_elementwise, onnx_converter, onnx_unsupported, promoted
from ..tensor import Tensor, tensor_method
from .creation import zeros_like
from .division import trunc_of
from .elementwise import _dtype_of, cast, eq, exp, logical_and, logical_or, sqrt, where
from ._util import _is_diff, _pair

_LN2, _LN10 = math.log(2.0), math.log(10.0)


# ------------------------------------------------------------------ exponentials and logarithms
@tensor_method()
def expm1(input):
    """``exp(x) - 1``, accurate for small ``x``; integer and bool inputs give float32."""
    return apply("expm1", input)


@grad_rule("expm1")
def _expm1_grad(ctx, g):
    return (g * (ctx.outputs[0] + 1),)


shape_only("expm1", 0)


@onnx_converter("expm1")
def _expm1_onnx(g, op):
    (x,) = promoted(g, op.inputs, g.dtype(op.outputs[0]))
    e = g.tmp()
    g.node("Exp", [x], [e])
    g.node("Sub", [e, g.const(np.ones((), g.dtype(op.outputs[0])))], op.outputs)


@tensor_method()
def log1p(input):
    """``log(1 + x)``, accurate for small ``x``; integer and bool inputs give float32."""
    return apply("log1p", input)


@grad_rule("log1p")
def _log1p_grad(ctx, g):
    return (g / (ctx.inputs[0] + 1),)


@onnx_converter("log1p")
def _log1p_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    (x,) = promoted(g, op.inputs, dt)
    s = g.tmp()
    g.node("Add", [x, g.const(np.ones((), dt))], [s])
    g.node("Log", [s], op.outputs)


def _scaled_log_onnx(factor):
    def conv(g, op):
        dt = g.dtype(op.outputs[0])
        (x,) = promoted(g, op.inputs, dt)
        t = g.tmp()
        g.node("Log", [x], [t])
        g.node("Div", [t, g.const(np.asarray(factor, dt))], op.outputs)
    return conv


@tensor_method()
def log2(input):
    """Base-2 logarithm; integer and bool inputs give float32."""
    return apply("log2", input)


@tensor_method()
def log10(input):
    """Base-10 logarithm; integer and bool inputs give float32."""
    return apply("log10", input)


@grad_rule("log2", "log10")
def _log_base_grad(ctx, g):
    return (g / (ctx.inputs[0] * (_LN2 if ctx.op == "log2" else _LN10)),)


onnx_converter("log2")(_scaled_log_onnx(_LN2))
onnx_converter("log10")(_scaled_log_onnx(_LN10))


@tensor_method()
def exp2(input):
    """``2 ** x``; integer and bool inputs give float32."""
    return apply("exp2", input)


@grad_rule("exp2")
def _exp2_grad(ctx, g):
    return (g * ctx.outputs[0] * _LN2,)


shape_only("exp2", 0)


@onnx_converter("exp2")
def _exp2_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    (x,) = promoted(g, op.inputs, dt)
    g.node("Pow", [g.const(np.asarray(2.0, dt)), x], op.outputs)


@tensor_method()
def rsqrt(input):
    """``1 / sqrt(x)``; integer and bool inputs give float32."""
    return apply("rsqrt", input)


@grad_rule("rsqrt")
def _rsqrt_grad(ctx, g):
    y = ctx.outputs[0]
    return (-0.5 * g * y * y * y,)


shape_only("rsqrt", 0)


@onnx_converter("rsqrt")
def _rsqrt_onnx(g, op):
    (x,) = promoted(g, op.inputs, g.dtype(op.outputs[0]))
    s = g.tmp()
    g.node("Sqrt", [x], [s])
    g.node("Reciprocal", [s], op.outputs)


# ------------------------------------------------------------------ trigonometric and hyperbolic
@tensor_method()
def tan(input):
    """Tangent (radians); integer and bool inputs give float32."""
    return apply("tan", input)


@grad_rule("tan")
def _tan_grad(ctx, g):
    y = ctx.outputs[0]
    return (g * (1 + y * y),)


shape_only("tan", 0)


@tensor_method("asin", "arcsin")
def asin(input):
    """Inverse sine, in [-pi/2, pi/2] (NaN outside [-1, 1]); integer and bool inputs give float32."""
    return apply("asin", input)


@tensor_method("acos", "arccos")
def acos(input):
    """Inverse cosine, in [0, pi] (NaN outside [-1, 1]); integer and bool inputs give float32."""
    return apply("acos", input)


@grad_rule("asin", "acos")
def _asin_acos_grad(ctx, g):
    x = ctx.inputs[0]
    d = g / sqrt(1 - x * x)
    return (d if ctx.op == "asin" else -d,)


@tensor_method("atan", "arctan")
def atan(input):
    """Inverse tangent, in (-pi/2, pi/2); integer and bool inputs give float32."""
    return apply("atan", input)


@grad_rule("atan")
def _atan_grad(ctx, g):
    x = ctx.inputs[0]
    return (g / (1 + x * x),)


@tensor_method()
def sinh(input):
    """Hyperbolic sine; integer and bool inputs give float32."""
    return apply("sinh", input)


@tensor_method()
def cosh(input):
    """Hyperbolic cosine; integer and bool inputs give float32."""
    return apply("cosh", input)


@grad_rule("sinh")
def _sinh_grad(ctx, g):
    return (g * cosh(ctx.inputs[0]),)


@grad_rule("cosh")
def _cosh_grad(ctx, g):
    return (g * sinh(ctx.inputs[0]),)


@tensor_method("asinh", "arcsinh")
def asinh(input):
    """Inverse hyperbolic sine; integer and bool inputs give float32."""
    return apply("asinh", input)


@tensor_method("acosh", "arccosh")
def acosh(input):
    """Inverse hyperbolic cosine (NaN below 1); integer and bool inputs give float32."""
    return apply("acosh", input)


@tensor_method("atanh", "arctanh")
def atanh(input):
    """Inverse hyperbolic tangent (+-inf at +-1, NaN outside); integer and bool inputs give float32."""
    return apply("atanh", input)


@grad_rule("asinh", "acosh")
def _asinh_acosh_grad(ctx, g):
    x = ctx.inputs[0]
    return (g / sqrt(x * x + (1 if ctx.op == "asinh" else -1)),)


@grad_rule("atanh")
def _atanh_grad(ctx, g):
    x = ctx.inputs[0]
    return (g / (1 - x * x),)


arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh

# ONNX has each of these; onnxruntime computes them in float32 only (a float64 export is a valid
# model that onnxruntime refuses to load, naming the op)
for _name, _onnx in (("tan", "Tan"), ("asin", "Asin"), ("acos", "Acos"), ("atan", "Atan"), ("sinh", "Sinh"),
                     ("cosh", "Cosh"), ("asinh", "Asinh"), ("acosh", "Acosh"), ("atanh", "Atanh")):
    onnx_elementwise(_name, _onnx)


# ------------------------------------------------------------------ the error function
@tensor_method()
def erf(input):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``; integer and bool inputs give
    float32."""
    return apply("erf", input)


@tensor_method()
def erfc(input):
    """``1 - erf(x)``, accurate where erf(x) is near 1; integer and bool inputs give float32."""
    return apply("erfc", input)


@grad_rule("erf", "erfc")
def _erf_grad(ctx, g):
    x = ctx.inputs[0]
    d = g * exp(-(x * x)) * (2.0 / math.sqrt(math.pi))
    return (d if ctx.op == "erf" else -d,)


@tensor_method()
def erfinv(input):
    """The inverse of :func:`erf` on [-1, 1] (+-inf at +-1, NaN outside); integer and bool inputs
    give float32."""
    return apply("erfinv", input)


@grad_rule("erfinv")
def _erfinv_grad(ctx, g):
    y = ctx.outputs[0]
    return (g * exp(y * y) * (math.sqrt(math.pi) / 2.0),)


shape_only("erfinv", 0)
onnx_elementwise("erf", "Erf")


@onnx_converter("erfc")
def _erfc_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    (x,) = promoted(g, op.inputs, dt)
    e = g.tmp()
    g.node("Erf", [x], [e])
    g.node("Sub", [g.const(np.ones((), dt)), e], op.outputs)


onnx_unsupported("erfinv", reason="ONNX has no inverse error function")


# ------------------------------------------------------------------ GELU
# the exact GELU is ``erf`` and one op taking x and erf(x / sqrt(2)), whose gradient rule gives
# the whole derivative in x (erf's part included), so none flows through the erf (the runtime
# computes both a block at a time); the public form is ``F.gelu`` (d2s/nn/_f_activation.py)
_GELU_BETA = 1.0 / math.sqrt(2.0 * math.pi)  # pdf(x) = _GELU_BETA * exp(-x^2 / 2)


@grad_rule("gelu_from_erf")
def _gelu_grad(ctx, g):
    x, e = ctx.inputs
    return (apply("gelu_from_erf_grad", x, e, g), None)


@grad_rule("gelu_from_erf_grad")
def _gelu_grad_grad(ctx, h):
    # gelu_from_erf_grad(x, e, g) = g (cdf + x pdf), e = erf(x / sqrt(2)); d/dx (cdf + x pdf) =
    # pdf (2 - x^2) (erf's part included: none flows through e); d/dg = cdf + x pdf
    x, e, g = ctx.inputs
    pdf = exp(x * x * -0.5) * _GELU_BETA
    return (h * g * pdf * (2.0 - x * x), None, apply("gelu_from_erf_grad", x, e, h))


@onnx_converter("gelu_from_erf")
def _gelu_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    x, e = promoted(g, op.inputs, dt)
    one_plus, half = g.tmp(), g.tmp()
    g.node("Add", [e, g.const(np.ones((), dt))], [one_plus])
    g.node("Mul", [x, g.const(np.asarray(0.5, dt))], [half])
    g.node("Mul", [half, one_plus], op.outputs)


onnx_unsupported("gelu_from_erf_grad", reason="gradient ops belong to backward programs; export the forward program")
sample_call("gelu_from_erf", lambda x: apply("gelu_from_erf", x, erf(x * (1.0 / math.sqrt(2.0)))), (3, 4))


# ------------------------------------------------------------------ rounding
def _zero_grad(ctx, g):
    return (zeros_like(g),)


@tensor_method()
def ceil(input):
    """The smallest integer not below each element, in its dtype (integer tensors unchanged)."""
    return apply("ceil", input)


@tensor_method()
def floor(input):
    """The largest integer not above each element, in its dtype (integer tensors unchanged)."""
    return apply("floor", input)


@tensor_method()
def trunc(input):
    """Each element rounded toward zero, in its dtype (integer tensors unchanged)."""
    return apply("trunc", input)


fix = trunc


@tensor_method()
def round(input, decimals=0):
    """Each element rounded half to even (``decimals`` places after the point; negative: before
    it), in its dtype, as PyTorch rounds (integer tensors unchanged)."""
    if type(decimals) is not int:
        raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    return apply("round", input, decimals=decimals) if decimals else apply("round", input)


@tensor_method()
def frac(input):
    """The fractional part ``x - trunc(x)``, with x's sign (float tensors only, as in PyTorch)."""
    if not getattr(input, "dtype", "float32").startswith("float"):
        raise TypeError(f"frac: defined for float tensors only (PyTorch's too), got {input.dtype}")
    return input - trunc(input)


# PyTorch gives these a zero gradient, not none: a loss through them still reaches the inputs
grad_rule("ceil", "floor", "trunc", "round")(_zero_grad)
for _name in ("ceil", "floor", "trunc", "round"):
    shape_only(_name, 0)


def _rounding_onnx(onnx_name):
    def conv(g, op):
        x = op.inputs[0]
        if not g.dtype(x).startswith("float"):
            g.node("Identity", [x], op.outputs)
            return
        g.node(onnx_name, [x], op.outputs)
    return conv


onnx_converter("ceil")(_rounding_onnx("Ceil"))
onnx_converter("floor")(_rounding_onnx("Floor"))


@onnx_converter("trunc")
def _trunc_onnx(g, op):
    x = op.inputs[0]
    if not g.dtype(x).startswith("float"):
        g.node("Identity", [x], op.outputs)
        return
    trunc_of(g, x, op.outputs[0])


@onnx_converter("round")
def _round_onnx(g, op):
    x, dt = op.inputs[0], g.dtype(op.inputs[0])
    decimals = op.attrs.get("decimals", 0)
    if not dt.startswith("float"):
        g.node("Identity", [x], op.outputs)
        return
    if not decimals:
        g.node("Round", [x], op.outputs)  # ONNX's Round is half to even too
        return
    scale = g.const(np.asarray(10.0 ** abs(decimals), dt))
    t, r = g.tmp(), g.tmp()
    g.node("Mul" if decimals > 0 else "Div", [x, scale], [t])
    g.node("Round", [t], [r])
    g.node("Div" if decimals > 0 else "Mul", [r, scale], op.outputs)


# ------------------------------------------------------------------ predicates
@tensor_method()
def isnan(input):
    """Whether each element is NaN (bool; False for integer tensors)."""
    return apply("isnan", input)


@tensor_method()
def isinf(input):
    """Whether each element is +inf or -inf (bool; False for integer tensors)."""
    return apply("isinf", input)


@tensor_method()
def isfinite(input):
    """Whether each element is finite (bool; True for integer tensors)."""
    return apply("isfinite", input)


non_differentiable("isnan", "isinf", "isfinite", reason="a predicate's bool result carries no gradient")


def _predicate_onnx(g, op):
    x, kind = op.inputs[0], op.type
    if not g.dtype(x).startswith("float"):
        # integers are never NaN or infinite: x == x is True everywhere, of x's shape
        same = g.tmp()
        g.node("Equal", [x, x], [same])
        g.node("Identity" if kind == "isfinite" else "Not", [same], op.outputs)
        return
    if kind == "isnan":
        g.node("IsNaN", [x], op.outputs)
    elif kind == "isinf":
        g.node("IsInf", [x], op.outputs)
    else:
        n, i, bad = g.tmp(), g.tmp(), g.tmp()
        g.node("IsNaN", [x], [n])
        g.node("IsInf", [x], [i])
        g.node("Or", [n, i], [bad])
        g.node("Not", [bad], op.outputs)


onnx_converter("isnan", "isinf", "isfinite")(_predicate_onnx)


@tensor_method()
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf``; None means the largest
    (smallest) finite value of the dtype. Integer tensors are returned unchanged."""
    attrs = {k: float(v) for k, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)) if v is not None}
    if attrs.get("nan") == 0.0:
        del attrs["nan"]
    return apply("nan_to_num", input, **attrs)


@grad_rule("nan_to_num")
def _nan_to_num_grad(ctx, g):
    return (where(isfinite(ctx.inputs[0]), g, 0.0),)


@onnx_converter("nan_to_num")
def _nan_to_num_onnx(g, op):
    x, dt = op.inputs[0], g.dtype(op.inputs[0])
    if not dt.startswith("float"):
        g.node("Identity", [x], op.outputs)
        return
    info = np.finfo(dt)
    a = op.attrs
    posinf = info.max if a.get("posinf") is None else a["posinf"]
    neginf = info.min if a.get("neginf") is None else a["neginf"]
    n, pos, neg, t1, t2 = (g.tmp() for _ in range(5))
    g.node("IsNaN", [x], [n])
    g.node("IsInf", [x], [pos], detect_negative=0)
    g.node("IsInf", [x], [neg], detect_positive=0)
    g.node("Where", [n, g.const(np.asarray(a.get("nan", 0.0), dt)), x], [t1])
    g.node("Where", [pos, g.const(np.asarray(posinf, dt)), t1], [t2])
    g.node("Where", [neg, g.const(np.asarray(neginf, dt)), t2], op.outputs)


for _name in ("expm1", "exp2", "tan", "atan", "sinh", "cosh", "asinh", "erf", "erfc", "ceil",
              "trunc", "round", "nan_to_num", "isnan", "isinf", "isfinite"):
    sample_call(_name, globals()[_name], (3, 4))
del _name, _onnx


# ------------------------------------------------------------------ binary functions
@tensor_method("atan2", "arctan2")
def atan2(input, other):
    """The angle of the point (other, input): ``atan(input / other)`` in the right quadrant, in
    [-pi, pi]; integer and bool inputs give float32."""
    return apply("atan2", input, other)


arctan2 = atan2


@grad_rule("atan2")
def _atan2_grad(ctx, g):
    # PyTorch's atan2_backward: d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2), both 0 at the
    # origin (where the quotients would be 0 / 0)
    a, b = ctx.inputs
    denom = a * a + b * b
    zero = denom == 0
    r = where(zero, 0.0, g / where(zero, 1.0, denom))
    return _pair(ctx, r * b if _is_diff(a) else None, -r * a if _is_diff(b) else None)


@onnx_converter("atan2")
def _atan2_onnx(g, op):
    # ONNX has no Atan2: atan(a / b), moved by +-pi where b < 0 (the sign of a, +pi for a == 0);
    # +-pi/2 (or 0) where b == 0; both infinite: +-pi/4 or +-3pi/4
    dt = g.dtype(op.outputs[0])
    a, b = promoted(g, op.inputs, dt)

    def c(v):
        return g.const(np.asarray(v, dt))

    def node(kind, *ins, **attrs):
        out = g.tmp()
        g.node(kind, list(ins), [out], **attrs)
        return out

    zero = c(0.0)
    a_neg = node("Less", a, zero)
    base = node("Atan", node("Div", a, b))
    shift = node("Where", a_neg, c(-np.pi), c(np.pi))
    general = node("Where", node("Less", b, zero), node("Add", base, shift), base)
    on_axis = node("Where", node("Greater", a, zero), c(np.pi / 2),
                   node("Where", a_neg, c(-np.pi / 2), node("Where", node("Less", b, zero), c(np.pi), zero)))
    both_inf = node("And", node("IsInf", a), node("IsInf", b))
    corner = node("Mul", node("Sign", a), node("Where", node("Less", b, zero), c(3 * np.pi / 4), c(np.pi / 4)))
    out = node("Where", node("Equal", b, zero), on_axis, general)
    g.node("Where", [both_inf, corner, out], op.outputs)


@tensor_method()
def hypot(input, other):
    """``sqrt(input^2 + other^2)`` without overflow or underflow (float tensors)."""
    return apply("hypot", input, other)


@grad_rule("hypot")
def _hypot_grad(ctx, g):
    a, b = ctx.inputs
    r = g / ctx.outputs[0]
    return _pair(ctx, r * a if _is_diff(a) else None, r * b if _is_diff(b) else None)


@onnx_converter("hypot")
def _hypot_onnx(g, op):
    # m * sqrt(1 + (n / m)^2) with m = max(|a|, |b|), n = min: no overflow; 0 where m is 0,
    # inf where either is infinite (even with a NaN, as C's hypot)
    dt = g.dtype(op.outputs[0])
    a, b = promoted(g, op.inputs, dt)

    def node(kind, *ins):
        out = g.tmp()
        g.node(kind, list(ins), [out])
        return out

    one, zero = g.const(np.ones((), dt)), g.const(np.zeros((), dt))
    aa, ab = node("Abs", a), node("Abs", b)
    m, n = node("Max", aa, ab), node("Min", aa, ab)
    safe = node("Where", node("Equal", m, zero), one, m)
    q = node("Div", n, safe)
    r = node("Mul", m, node("Sqrt", node("Add", one, node("Mul", q, q))))
    inf = node("Or", node("IsInf", a), node("IsInf", b))
    g.node("Where", [inf, g.const(np.asarray(np.inf, dt)), r], op.outputs)


sample_call("atan2", atan2, (3, 4), (4,))
sample_call("hypot", hypot, (3, 4), (3, 1))


# ------------------------------------------------------------------ compositions
@tensor_method()
def lerp(input, end, weight):
    """``input + weight * (end - input)``, as PyTorch computes it: that form where
    ``|weight| < 0.5``, ``end - (end - input) * (1 - weight)`` elsewhere (exact at both ends).
    ``weight`` is a number or a tensor."""
    diff = end - input
    fused = _narrow_float(input, end, weight)
    if isinstance(weight, (bool, int, float)):
        if builtins.abs(weight) < 0.5:
            return _fma(weight, diff, input, fused)
        return _fma(-(1 - np.float32(weight)) if fused else -(1 - weight), diff, end, fused)
    small = apply("abs", weight) < 0.5
    return where(small, _fma(weight, diff, input, fused), _fma(-(1 - weight), diff, end, fused))


def _narrow_float(*operands):
    """The float32 / float16 dtype all tensor ``operands`` share (numbers aside), else None:
    where PyTorch's fused multiply-adds can be reproduced exactly through float64."""
    dts = {str(v.dtype) for v in operands if isinstance(v, Tensor)}
    return dts.pop() if len(dts) == 1 and dts <= {"float32", "float16"} else None


def _fma(a, b, c, fused):
    """``a * b + c``, rounded once when ``fused`` (a float32/float16 dtype) as PyTorch's CPU
    kernels' fused multiply-adds (the float64 product of two float32 numbers is exact), else the
    plain two roundings."""
    if not fused:
        return a * b + c
    # (a number is first rounded to the dtype, as PyTorch's kernels take it)
    wide = [v.to("float64") if isinstance(v, Tensor) else float(np.dtype(fused).type(v)) for v in (a, b, c)]
    return (wide[0] * wide[1] + wide[2]).to(fused)


@tensor_method()
def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``, for float32 tensors rounded as PyTorch's kernel:
    ``fma(value * tensor1, tensor2, input)``."""
    fused = _narrow_float(input, tensor1, tensor2)
    if fused:
        return _fma(tensor1 if value == 1 else value * tensor1, tensor2, input, fused)
    prod = tensor1 * tensor2 if value == 1 else value * tensor1 * tensor2
    return input + prod


@tensor_method()
def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2`` (float tensors: PyTorch refuses integer ones)."""
    for t in (tensor1, tensor2):
        if not _dtype_of(t).startswith("float"):
            raise TypeError("addcdiv: integer division with addcdiv is not supported (PyTorch's neither); "
                            "use a float tensor1 or tensor2, or addcmul with the reciprocal")
    quot = tensor1 / tensor2 if value == 1 else value * tensor1 / tensor2
    return input + quot


@tensor_method()
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Where ``|input - other| <= atol + rtol * |other|`` (bool), equal infinities included; NaN
    equals NaN only with ``equal_nan``. The operands must have the same dtype, as in PyTorch."""
    da, db = _dtype_of(input), _dtype_of(other)
    if da != db and isinstance(input, Tensor) and isinstance(other, Tensor):
        raise TypeError(f"isclose: input and other must have the same dtype, got {da} and {db}")
    if da == "bool":
        return eq(input, other)
    a, b = input, other
    if not da.startswith("float"):
        a, b = cast(a, "float64"), cast(b, "float64")  # no integer overflow in a - b
    close = eq(a, b)
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    err = apply("abs", a - b)
    within = logical_and(isfinite(err), err <= atol + rtol * apply("abs", b))
    return logical_or(close, within)


@tensor_method()
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether :func:`isclose` holds everywhere: a Python bool (a 0-d bool tensor inside a
    program being built, which converted code can branch on)."""
    out = apply("reduce_all", isclose(input, other, rtol=rtol, atol=atol, equal_nan=equal_nan), axes=None,
                keepdims=False)
    return out if out.is_symbolic else builtins.bool(out.item())
