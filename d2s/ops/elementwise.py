"""Element-wise ops (runtime: ``d2s_runtime/ops/elementwise.py``): for each op its public
wrapper, its gradient rule and its ONNX converter, side by side."""
import math
import sys

import numpy as np

from d2s_runtime.dtypes import checked_int

from ..autograd.registry import grad_rule, non_differentiable, sample_call, shape_only
from ..dispatch import apply
from ..dtypes import as_dtype
from ..onnx.registry import elementwise as onnx_elementwise, onnx_converter, promoted
from ..tensor import Tensor, number_dtype, tensor_method
from .creation import zeros_like
from ._util import _as_tensor, _is_diff, _pair, _shape, unbroadcast


_COMPARISON = "a comparison's bool result carries no gradient"
_PIECEWISE_CONSTANT = "piecewise constant: its gradient is zero almost everywhere, so none flows"
_LOGICAL = "logic on bools and integers carries no gradient"


# ------------------------------------------------------------------ arithmetic
def _scaled(other, alpha):
    # PyTorch's alpha: ``other * alpha`` (skipped when 1, so no rounding is added)
    return other if alpha == 1 else mul(other, alpha)


@tensor_method()
def add(input, other, *, alpha=1):
    """``input + alpha * other`` with broadcasting and PyTorch's promotion."""
    return apply("add", input, _scaled(other, alpha))


@grad_rule("add")
def _add_grad(ctx, g):
    return _pair(ctx, g, g)


shape_only("add", 0, 1)
onnx_elementwise("add", "Add", bool_form="Or")  # NumPy's bool + bool is logical or


@tensor_method("sub", "subtract")
def sub(input, other, *, alpha=1):
    """``input - alpha * other`` with broadcasting and PyTorch's promotion."""
    if _dtype_of(input) == "bool" and _dtype_of(other) == "bool":
        raise TypeError("sub: subtracting bool tensors is not supported (PyTorch's neither); use logical_xor, "
                        "or cast to an integer first")
    return apply("sub", input, _scaled(other, alpha))


subtract = sub


@grad_rule("sub")
def _sub_grad(ctx, g):
    return _pair(ctx, g, -g if _is_diff(ctx.inputs[1]) else None)


shape_only("sub", 0, 1)
onnx_elementwise("sub", "Sub")


@tensor_method("mul", "multiply")
def mul(input, other):
    """``input * other`` with broadcasting and PyTorch's promotion."""
    return apply("mul", input, other)


multiply = mul


@grad_rule("mul")
def _mul_grad(ctx, g):
    a, b = ctx.inputs
    return _pair(ctx, g * b if _is_diff(a) else None, g * a if _is_diff(b) else None)


onnx_elementwise("mul", "Mul", bool_form="And")  # NumPy's bool * bool is logical and


_ROUNDING = {None: "div", "trunc": "truncdiv", "floor": "floordiv"}


@tensor_method("div", "divide")
def div(input, other, *, rounding_mode=None):
    """``input / other``: true division (integers give float32) with ``rounding_mode=None``;
    the quotient rounded toward zero (``'trunc'``) or down (``'floor'``) in the operands'
    promoted dtype otherwise. Integer division by zero with a rounding mode raises
    ZeroDivisionError, as in PyTorch."""
    if rounding_mode not in _ROUNDING:
        raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    return apply(_ROUNDING[rounding_mode], input, other)


divide = div


@tensor_method()
def true_divide(input, other):
    """True division ``input / other`` (integers give float32)."""
    return apply("div", input, other)


@grad_rule("div")
def _div_grad(ctx, g):
    a, b = ctx.inputs
    # (a / b) / b, as PyTorch's: b * b overflows or underflows long before a / b / b does (float32
    # |b| > 1.8e19 gave a zero gradient, |b| < 1e-23 an infinite one)
    return _pair(ctx, g / b if _is_diff(a) else None, -g * ((a / b) / b) if _is_diff(b) else None)


onnx_elementwise("div", "Div")


def _tmp_node(g, op_type, *inputs):
    out = g.tmp()
    g.node(op_type, list(inputs), [out])
    return out


@tensor_method()
def pow(input, exponent):
    """``input ** exponent`` (either may be a Python number) with broadcasting and PyTorch's
    promotion. A float tensor to the number 3, -0.5 or -2 is PyTorch's ``x * x * x``,
    ``1 / sqrt(x)`` and ``1 / (x * x)``: its pow special-cases those exponents (``powf`` differs
    by an ulp in a quarter of them), composed here so that converted programs compute the same."""
    if isinstance(input, Tensor) and type(exponent) in (int, float) and exponent in (3, -0.5, -2) \
            and str(input.dtype).startswith(("float", "bfloat")):
        if exponent == 3:
            return apply("mul", apply("mul", input, input), input)
        if exponent == -0.5:
            return apply("div", 1.0, apply("sqrt", input))
        return apply("div", 1.0, apply("mul", input, input))
    return apply("pow", input, exponent)


Tensor.__pow__ = pow


@grad_rule("pow")
def _pow_grad(ctx, g):
    # PyTorch's pow_backward and pow_backward_exponent, grouped as they are
    a, b = ctx.inputs
    ga = gb = None
    if _is_diff(a):
        # 0 where the exponent is 0, also at a == 0 (where b a^(b-1) would be 0 * inf)
        if not isinstance(b, Tensor):
            ga = g * (b * a ** (b - 1)) if b != 0 else zeros_like(g * a)
        else:
            ga = g * where(b == 0, 0, b * a ** (b - 1))
    if _is_diff(b):
        # d(a^b)/db = a^b log a, 0 where a == 0 and b >= 0 (the limit); log of a negative base
        # is NaN, as in PyTorch
        out = ctx.outputs[0]
        if not isinstance(a, Tensor):  # a Python number: its log in double precision
            log_a = math.log(a) if a > 0 else -math.inf if a == 0 else math.nan
            gb = g * (where(b >= 0, 0, out * log_a) if a == 0 else out * log_a)
        else:
            gb = g * where((a == 0) & (b >= 0), 0, out * log(a))
    return _pair(ctx, ga, gb)


@onnx_converter("pow")
def _pow_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    a, b = promoted(g, op.inputs, dt)
    if dt == "bool":  # a or not b, as the kernel
        nb = g.tmp()
        g.node("Not", [b], [nb])
        g.node("Or", [a, nb], op.outputs)
        return
    if not dt.startswith("int"):  # (an unsigned exponent is never negative)
        g.node("Pow", [a, b], op.outputs)
        return
    # a negative integer exponent: 1 for base 1, +-1 for base -1, else 0 (the kernel's, PyTorch's)
    zero, one, two = (g.const(np.asarray(v, dtype=dt)) for v in (0, 1, 2))
    neg, b0, p, is1, ism1, rem, odd, sgn, at_neg, m1 = (g.tmp() for _ in range(10))
    g.node("Less", [b, zero], [neg])
    g.node("Max", [b, zero], [b0])
    g.node("Pow", [a, b0], [p])
    g.node("Equal", [a, one], [is1])
    g.node("Equal", [a, g.const(np.asarray(-1, dtype=dt))], [ism1])
    g.node("Mod", [b, two], [rem], fmod=0)
    g.node("Equal", [rem, one], [odd])
    g.node("Where", [odd, g.const(np.asarray(-1, dtype=dt)), one], [sgn])
    g.node("Where", [ism1, sgn, zero], [m1])
    g.node("Where", [is1, one, m1], [at_neg])
    g.node("Where", [neg, at_neg, p], op.outputs)


@tensor_method()
def float_power(input, exponent):
    """``input ** exponent`` computed in float64 (PyTorch's ``float_power``)."""
    return pow(_as_float64(input), _as_float64(exponent))


def _as_float64(v):
    if isinstance(v, (bool, int, float)):
        return float(v)
    return cast(v, "float64")


@tensor_method()
def square(input):
    """``input * input`` (integer tensors stay integers)."""
    if _dtype_of(input) == "bool":
        input = cast(input, "int64")  # PyTorch squares a bool tensor as an int64 one
    return apply("mul", input, input)


@tensor_method()
def reciprocal(input):
    """``1 / input``; integer and bool inputs give float32."""
    return apply("div", 1.0, input)


def _rtruediv(self, other):
    """``other / self`` with ``other`` a number, as PyTorch's ``Tensor.__rtruediv__`` computes it:
    ``self.reciprocal() * other``, two roundings (``5 / x`` is not the correctly rounded quotient:
    a quarter of float32 results differ by an ulp), the dtype of ``other * (1 / self)``."""
    if isinstance(other, (bool, int, float, np.number)):
        inv = apply("div", 1.0, self)
        return inv if other == 1 else apply("mul", inv, other)  # (times 1 changes nothing)
    return apply("div", other, self)


Tensor.__rtruediv__ = Tensor.__rdiv__ = _rtruediv


@tensor_method()
def maximum(input, other):
    """The element-wise larger of ``input`` and ``other`` (NaN wins)."""
    return apply("maximum", input, other)


@tensor_method()
def minimum(input, other):
    """The element-wise smaller of ``input`` and ``other`` (NaN wins)."""
    return apply("minimum", input, other)


@grad_rule("maximum", "minimum")
def _maxmin_grad(ctx, g):
    # PyTorch's rule: ties split the gradient evenly, the losing operand gets 0 (selected, not
    # multiplied by a mask: an inf gradient, as sqrt's of maximum(x, 0) at 0, gives the loser 0,
    # not NaN), and where an operand is NaN both get the whole gradient
    a, b = ctx.inputs
    split = where(eq(a, b), g / 2, g)
    a_loses, b_loses = (lt(a, b), gt(a, b)) if ctx.op == "maximum" else (gt(a, b), lt(a, b))
    return _pair(ctx, where(a_loses, 0, split) if _is_diff(a) else None,
                 where(b_loses, 0, split) if _is_diff(b) else None)


onnx_elementwise("maximum", "Max", bool_form="Or")
onnx_elementwise("minimum", "Min", bool_form="And")


@tensor_method()
def fmax(input, other):
    """The element-wise larger of the two, ignoring NaN (NaN only where both are)."""
    return apply("fmax", input, other)


@tensor_method()
def fmin(input, other):
    """The element-wise smaller of the two, ignoring NaN (NaN only where both are)."""
    return apply("fmin", input, other)


@grad_rule("fmax", "fmin")
def _fmaxmin_grad(ctx, g):
    # PyTorch's rule: a tie goes to the first operand, and a NaN operand gets nothing
    a, b = ctx.inputs
    wins = (a >= b) if ctx.op == "fmax" else (a <= b)
    pick_a = logical_or(wins, apply("isnan", b))
    zero = zeros_like(g)
    return _pair(ctx, where(pick_a, g, zero) if _is_diff(a) else None,
                 where(pick_a, zero, g) if _is_diff(b) else None)


@onnx_converter("fmax", "fmin")
def _fmaxmin_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    a, b = promoted(g, op.inputs, dt)
    m = _tmp_node(g, "Max" if op.type == "fmax" else "Min", a, b)
    if not dt.startswith("float"):
        g.node("Identity", [m], op.outputs)
        return
    # ONNX's Max and Min propagate NaN: take the other operand where one is NaN
    t = _tmp_node(g, "Where", _tmp_node(g, "IsNaN", b), a, m)
    g.node("Where", [_tmp_node(g, "IsNaN", a), b, t], op.outputs)


sample_call("fmax", fmax, (3, 4), (4,))


@tensor_method()
def logaddexp(input, other):
    """``log(exp(a) + exp(b))``, computed without overflow (NumPy's ``logaddexp``); integer
    and bool inputs give float32."""
    return apply("logaddexp", input, other)


@grad_rule("logaddexp")
def _logaddexp_grad(ctx, g):
    # d/da log(e^a + e^b) = e^a / (e^a + e^b) = exp(a - y), with y the output
    a, b = ctx.inputs
    y = ctx.outputs[0]
    return _pair(ctx, g * exp(a - y) if _is_diff(a) else None, g * exp(b - y) if _is_diff(b) else None)


@onnx_converter("logaddexp")
def _logaddexp_onnx(g, op):
    # max(a, b) + log(1 + exp(-|a - b|)); where a == b (both infinities included) a + log 2
    dt = g.dtype(op.outputs[0])
    a, b = promoted(g, op.inputs, dt)
    m, diff, mag, neg, e, one_e, lg, general, same, tied = (g.tmp() for _ in range(10))
    g.node("Max", [a, b], [m])
    g.node("Sub", [a, b], [diff])
    g.node("Abs", [diff], [mag])
    g.node("Neg", [mag], [neg])
    g.node("Exp", [neg], [e])
    g.node("Add", [e, g.const(np.ones((), dtype=dt))], [one_e])
    g.node("Log", [one_e], [lg])
    g.node("Add", [m, lg], [general])
    g.node("Equal", [a, b], [same])
    g.node("Add", [a, g.const(np.asarray(np.log(2.0), dtype=dt))], [tied])
    g.node("Where", [same, tied, general], op.outputs)


sample_call("logaddexp", logaddexp, (3, 1), (1, 4))


# ------------------------------------------------------------------ unary math
@tensor_method("neg", "negative")
def neg(input):
    """``-input``."""
    if _dtype_of(input) == "bool":
        raise TypeError("neg: negating a bool tensor is not supported (PyTorch's neither); use ~ or "
                        "logical_not instead")
    return apply("neg", input)


negative = neg


@grad_rule("neg")
def _neg_grad(ctx, g):
    return (-g,)


shape_only("neg", 0)
onnx_elementwise("neg", "Neg")


@tensor_method()
def exp(input):
    """``e ** x``; integer and bool inputs compute in float32."""
    return apply("exp", input)


@grad_rule("exp")
def _exp_grad(ctx, g):
    return (g * ctx.outputs[0],)


shape_only("exp", 0)  # the rule reads the output (dx = g * y), not the input
onnx_elementwise("exp", "Exp")


@tensor_method()
def log(input):
    """Natural logarithm; integer and bool inputs compute in float32."""
    return apply("log", input)


@grad_rule("log")
def _log_grad(ctx, g):
    return (g / ctx.inputs[0],)


onnx_elementwise("log", "Log")


@tensor_method()
def sqrt(input):
    """Square root; integer and bool inputs compute in float32."""
    return apply("sqrt", input)


@grad_rule("sqrt")
def _sqrt_grad(ctx, g):
    return (g / (2 * ctx.outputs[0]),)


shape_only("sqrt", 0)
onnx_elementwise("sqrt", "Sqrt")


@tensor_method()
def sin(input):
    """Sine (radians); integer and bool inputs compute in float32."""
    return apply("sin", input)


@grad_rule("sin")
def _sin_grad(ctx, g):
    return (g * cos(ctx.inputs[0]),)


onnx_elementwise("sin", "Sin")


@tensor_method()
def cos(input):
    """Cosine (radians); integer and bool inputs compute in float32."""
    return apply("cos", input)


@grad_rule("cos")
def _cos_grad(ctx, g):
    return (-g * sin(ctx.inputs[0]),)


onnx_elementwise("cos", "Cos")


@tensor_method()
def tanh(input):
    """Hyperbolic tangent; integer and bool inputs compute in float32."""
    return apply("tanh", input)


@grad_rule("tanh")
def _tanh_grad(ctx, g):
    y = ctx.outputs[0]
    return (g * (1 - y * y),)


shape_only("tanh", 0)
onnx_elementwise("tanh", "Tanh")


@tensor_method()
def sigmoid(input):
    """``1 / (1 + exp(-x))``, computed without overflow."""
    return apply("sigmoid", input)


@grad_rule("sigmoid")
def _sigmoid_grad(ctx, g):
    y = ctx.outputs[0]
    return (g * y * (1 - y),)


shape_only("sigmoid", 0)
onnx_elementwise("sigmoid", "Sigmoid")


@tensor_method()
def relu(input):
    """``max(x, 0)``."""
    return apply("relu", input)


@grad_rule("relu")
def _relu_grad(ctx, g):
    # the mask from the output (relu(x) > 0 exactly where x > 0), as PyTorch saves relu's
    # result: a converted forward keeps the output its next matmul's gradient needs anyway,
    # not the input as well
    # (selected, not multiplied by the mask: an inf or NaN gradient where relu is 0 stays out, as
    # in PyTorch's threshold_backward, e.g. sqrt(relu(x)) at x <= 0)
    return (where(ctx.outputs[0] > 0, g, 0),)


shape_only("relu", 0)


onnx_elementwise("relu", "Relu")


@tensor_method("abs", "absolute")
def abs(input):
    """``|input|``."""
    return apply("abs", input)


absolute = abs


@grad_rule("abs")
def _abs_grad(ctx, g):
    return (g * sign(ctx.inputs[0]),)


onnx_elementwise("abs", "Abs")


@tensor_method()
def sign(input):
    """-1, 0 or 1 by the sign of each element (0 for NaN, as PyTorch; a bool tensor unchanged)."""
    return apply("sign", input)


@grad_rule("sign")
def _sign_grad(ctx, g):
    return (zeros_like(g),)  # PyTorch's: zero, not none


shape_only("sign", 0)


@onnx_converter("sign")
def _sign_onnx(g, op):
    x = op.inputs[0]
    if g.dtype(x) == "bool":
        g.node("Identity", [x], op.outputs)
        return
    s = _tmp_node(g, "Sign", x)
    if not g.dtype(x).startswith("float"):
        g.node("Identity", [s], op.outputs)
        return
    g.node("Where", [_tmp_node(g, "IsNaN", x), g.const(np.zeros((), g.dtype(x))), s], op.outputs)


def _is_tensor_bound(v):
    return isinstance(v, (Tensor, np.ndarray, list, tuple))


@tensor_method("clamp", "clip")
def clamp(input, min=None, max=None):
    """``input`` limited to [min, max], as PyTorch's ``clamp``: either bound may be None, a
    number or a tensor (broadcast); ``minimum(maximum(x, min), max)``, so max wins where
    min > max and a NaN bound gives NaN. At a bound the gradient goes to ``input``."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must not be None")
    if not _is_tensor_bound(min) and not _is_tensor_bound(max):
        for v in (min, max):
            if v is not None and not isinstance(v, (bool, int, float, np.generic)):
                raise TypeError(f"clamp: a bound must be a number, a tensor or None, got {type(v).__name__}")
        lo, hi = _number(min), _number(max)
        dt = str(getattr(input, "dtype", ""))
        if dt in ("uint8", "int8", "int16", "int32", "int64") and not any(isinstance(v, float) for v in (lo, hi)):
            # as PyTorch converts them: checked (a float bound makes the result float32, where an
            # int bound keeps its value: uint8 clamp(2.0, -3) is -3.0)
            lo = checked_int(lo, dt) if type(lo) is int else lo   # (uint8's clamp(min=-1) is 255)
            hi = checked_int(hi, dt) if type(hi) is int else hi
        return apply("clip", input, lo=lo, hi=hi)
    if min is None:
        return apply("clamp", input, max, which="max")
    if max is None:
        return apply("clamp", input, min, which="min")
    return apply("clamp", input, min, max, which="both")


clip = clamp


def _number(v):
    return v.item() if isinstance(v, np.generic) else v


@tensor_method()
def clamp_min(input, min):
    """``input`` limited from below by ``min`` (a number or a tensor)."""
    return clamp(input, min=min)


@tensor_method()
def clamp_max(input, max):
    """``input`` limited from above by ``max`` (a number or a tensor)."""
    return clamp(input, max=max)


@grad_rule("clip")
def _clip_grad(ctx, g):
    x = ctx.inputs[0]
    lo, hi = ctx.attrs.get("lo"), ctx.attrs.get("hi")
    keep = None
    if lo is not None:
        keep = x >= lo
    if hi is not None:
        keep = (x <= hi) if keep is None else keep & (x <= hi)
    # (selected, not multiplied by the mask, as PyTorch's clamp_backward: g * mask gave -0.0 for a
    # negative g outside the bounds, and NaN for an infinite one, sqrt(x.clamp(min=0)) where x is
    # clamped, where PyTorch gives 0)
    return (g if keep is None else where(keep, g, 0),)


@onnx_converter("clip")
def _clip_onnx(g, op):
    x, dt = op.inputs[0], g.dtype(op.outputs[0])
    if g.dtype(x) != dt:  # an integer tensor clipped to float bounds computes in float32
        c = g.tmp()
        g.node("Cast", [x], [c], to=g.onnx_dtype(dt))
        x = c
    lo, hi = op.attrs.get("lo"), op.attrs.get("hi")
    ins = [x, g.const(np.asarray(lo, dtype=dt)) if lo is not None else "",
           g.const(np.asarray(hi, dtype=dt)) if hi is not None else ""]
    while ins[-1] == "":
        ins.pop()
    g.node("Clip", ins, op.outputs)


@grad_rule("clamp")
def _clamp_grad(ctx, g):
    # PyTorch's clamp_backward and clamp_backward_min_max: x keeps the gradient inside [lo, hi]
    # (bounds included); lo takes it below (when lo < hi), hi above (or wherever hi < lo)
    x, *bounds = ctx.inputs
    which = ctx.attrs.get("which", "both")
    zero = zeros_like(g)
    if which == "min":
        (lo,) = bounds
        return (_grad_to(x, where(x >= lo, g, zero)), _grad_to(lo, where(x < lo, g, zero)))
    if which == "max":
        (hi,) = bounds
        return (_grad_to(x, where(x <= hi, g, zero)), _grad_to(hi, where(x > hi, g, zero)))
    lo, hi = bounds
    inside = logical_and(x >= lo, x <= hi)
    below = logical_and(x < lo, lo < hi)
    above = logical_or(x > hi, hi < lo)
    return (_grad_to(x, where(inside, g, zero)), _grad_to(lo, where(below, g, zero)),
            _grad_to(hi, where(above, g, zero)))


def _grad_to(v, g):
    return unbroadcast(g, _shape(v)) if _is_diff(v) else None


@onnx_converter("clamp")
def _clamp_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    x, *bounds = promoted(g, op.inputs, dt)
    which = op.attrs.get("which", "both")
    if dt == "bool":
        raise g.unsupported(op, "clamp of bool tensors")
    if which == "max":
        g.node("Min", [x, bounds[0]], op.outputs)
    elif which == "min":
        g.node("Max", [x, bounds[0]], op.outputs)
    else:
        g.node("Min", [_tmp_node(g, "Max", x, bounds[0]), bounds[1]], op.outputs)


def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (all three broadcast together;
    ``input`` and ``other`` promoted as PyTorch does, either may be a Python number).
    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``, as in PyTorch."""
    if input is None and other is None:
        nonzero = getattr(sys.modules[__package__], "nonzero", None)
        if nonzero is None:
            raise TypeError("where(condition) with one argument is PyTorch's nonzero(condition, as_tuple=True), "
                            "which d2s does not have yet; give where an input and an other")
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where: give both input and other (or neither: where(condition) is nonzero)")
    if not _plain_tensor(input) and not _plain_tensor(other):
        # two numbers (Python's, or a program's stand-ins for them): the dtype eager code gets
        input, other = _number_as_tensor(input), _number_as_tensor(other)
    return apply("where", condition, input, other)


def _plain_tensor(a):
    return isinstance(a, Tensor) and number_dtype(a) is None


def _number_as_tensor(a):
    dt = number_dtype(a) if isinstance(a, Tensor) else None
    return a if dt is None or dt == str(a.dtype) else apply("cast", a, dtype=dt)


@grad_rule("where")
def _where_grad(ctx, g):
    c, a, b = ctx.inputs
    zero = zeros_like(g)
    ga = unbroadcast(where(c, g, zero), _shape(a)) if _is_diff(a) else None
    gb = unbroadcast(where(c, zero, g), _shape(b)) if _is_diff(b) else None
    return (None, ga, gb)


@onnx_converter("where")
def _where_onnx(g, op):
    c = g.cast(op.inputs[0], "bool")
    dt = g.dtype(op.outputs[0])
    if dt == "bool":  # onnxruntime's Where has no bool kernel: select int32s and cast back
        t = g.tmp()
        g.node("Where", [c] + promoted(g, op.inputs[1:], "int32"), [t])
        g.node("Cast", [t], op.outputs, to=g.onnx_dtype("bool"))
        return
    g.node("Where", [c] + promoted(g, op.inputs[1:], dt), op.outputs)


# ------------------------------------------------------------------ comparisons
@tensor_method("eq")
def eq(input, other):
    """``a == b`` element-wise (bool)."""
    return apply("eq", input, other)


@tensor_method("ne", "not_equal")
def ne(input, other):
    """``a != b`` element-wise (bool)."""
    return apply("ne", input, other)


@tensor_method("lt", "less")
def lt(input, other):
    """``a < b`` element-wise (bool)."""
    return apply("lt", input, other)


@tensor_method("le", "less_equal")
def le(input, other):
    """``a <= b`` element-wise (bool)."""
    return apply("le", input, other)


@tensor_method("gt", "greater")
def gt(input, other):
    """``a > b`` element-wise (bool)."""
    return apply("gt", input, other)


@tensor_method("ge", "greater_equal")
def ge(input, other):
    """``a >= b`` element-wise (bool)."""
    return apply("ge", input, other)


# PyTorch's spellings of the same functions
not_equal, less, less_equal, greater, greater_equal = ne, lt, le, gt, ge


@tensor_method()
def equal(input, other):
    """Whether ``input`` and ``other`` have the same shape and the same elements (a Python bool,
    as ``torch.equal``; eager only, since the answer steers Python)."""
    a, b = _as_tensor(input), _as_tensor(other)
    if tuple(a.shape) != tuple(b.shape):
        return False
    return bool(apply("reduce_all", apply("eq", a, b)))


non_differentiable("eq", "ne", "lt", "le", "gt", "ge", reason=_COMPARISON)
onnx_elementwise("eq", "Equal", compute_in_output_dtype=False)
onnx_elementwise("lt", "Less", compute_in_output_dtype=False)
onnx_elementwise("le", "LessOrEqual", compute_in_output_dtype=False)
onnx_elementwise("gt", "Greater", compute_in_output_dtype=False)
onnx_elementwise("ge", "GreaterOrEqual", compute_in_output_dtype=False)


@onnx_converter("ne")
def _ne_onnx(g, op):
    t = g.tmp()
    g.node("Equal", promoted(g, op.inputs), [t])
    g.node("Not", [t], op.outputs)


# ------------------------------------------------------------------ logic
def _dtype_of(v):
    """The d2s dtype name of an op operand (tensor, array or Python scalar)."""
    if isinstance(v, Tensor):
        return str(v.dtype)
    if hasattr(v, "dtype"):
        return np.dtype(v.dtype).name
    return {bool: "bool", int: "int64", float: "float32"}.get(type(v), "float32")


def _truth(v):
    """``v`` as bools (non-zero is true, NaN too), as PyTorch's logical ops read their inputs."""
    if isinstance(v, (bool, int, float)):
        return bool(v)
    return v if _dtype_of(v) == "bool" else ne(v, 0)


@tensor_method()
def logical_and(input, other):
    """Element-wise ``input and other`` of the operands' truth values (non-zero is true); bool."""
    return apply("bitwise_and", _truth(input), _truth(other))


@tensor_method()
def logical_or(input, other):
    """Element-wise ``input or other`` of the operands' truth values (non-zero is true); bool."""
    return apply("bitwise_or", _truth(input), _truth(other))


@tensor_method()
def logical_xor(input, other):
    """Element-wise exclusive or of the operands' truth values (non-zero is true); bool."""
    return apply("bitwise_xor", _truth(input), _truth(other))


@tensor_method()
def logical_not(input):
    """Element-wise not of the input's truth value (zero is false); bool, whatever its dtype."""
    if _dtype_of(input) == "bool":
        return apply("logical_not", input)
    return eq(input, 0)


def _bitwise_operands(name, *operands):
    for v in operands:
        if _dtype_of(v).startswith("float"):
            raise TypeError(f"{name}: defined for integer and bool tensors only (PyTorch's too), got {_dtype_of(v)}")
    return operands


@tensor_method()
def bitwise_and(input, other):
    """Bitwise and of integer tensors (logical and of bool ones)."""
    return apply("bitwise_and", *_bitwise_operands("bitwise_and", input, other))


@tensor_method()
def bitwise_or(input, other):
    """Bitwise or of integer tensors (logical or of bool ones)."""
    return apply("bitwise_or", *_bitwise_operands("bitwise_or", input, other))


@tensor_method()
def bitwise_xor(input, other):
    """Bitwise exclusive or of integer tensors (logical xor of bool ones)."""
    return apply("bitwise_xor", *_bitwise_operands("bitwise_xor", input, other))


@tensor_method()
def bitwise_not(input):
    """Bitwise not of an integer tensor (logical not of a bool one), the ``~`` operator."""
    return apply("logical_not", *_bitwise_operands("bitwise_not", input))


non_differentiable("bitwise_and", "bitwise_or", "bitwise_xor", "logical_not", reason=_LOGICAL)


def _bitwise_onnx(bool_name, int_name):
    def conv(g, op):
        dt = g.dtype(op.outputs[0])
        g.node(bool_name if dt == "bool" else int_name, promoted(g, op.inputs, dt), op.outputs)
    return conv


onnx_converter("bitwise_and")(_bitwise_onnx("And", "BitwiseAnd"))
onnx_converter("bitwise_or")(_bitwise_onnx("Or", "BitwiseOr"))
onnx_converter("bitwise_xor")(_bitwise_onnx("Xor", "BitwiseXor"))


@onnx_converter("logical_not")
def _logical_not_onnx(g, op):
    g.node("Not" if g.dtype(op.inputs[0]) == "bool" else "BitwiseNot", op.inputs, op.outputs)


# ------------------------------------------------------------------ dtype conversion
@tensor_method("cast", "astype")
def cast(x, dtype):
    """``x`` converted to ``dtype`` (``t.astype(dtype)`` too)."""
    return apply("cast", x, dtype=str(as_dtype(dtype)))


@grad_rule("cast")
def _cast_grad(ctx, g):
    x = ctx.inputs[0]
    return (cast(g, x.dtype) if _is_diff(x) else None,)


shape_only("cast", 0)


@onnx_converter("cast")
def _cast_onnx(g, op):
    g.node("Cast", op.inputs, op.outputs, to=g.onnx_dtype(op.attrs["dtype"]))


