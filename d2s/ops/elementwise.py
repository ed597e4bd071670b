"""Element-wise ops (runtime: ``d2s_runtime/ops/elementwise.py``): for each op its public
wrapper, its gradient rule and its ONNX converter, side by side."""
import numpy as np

from ..autograd.registry import grad_rule, non_differentiable, sample_call, shape_only
from ..dispatch import apply
from ..dtypes import as_dtype
from ..onnx.registry import elementwise as onnx_elementwise, onnx_converter, promoted
from ..tensor import Tensor, tensor_method
from .creation import zeros_like
from ._util import _is_diff, _pair, _shape, unbroadcast


_COMPARISON = "a comparison's bool result carries no gradient"
_PIECEWISE_CONSTANT = "piecewise constant: its gradient is zero almost everywhere, so none flows"
_LOGICAL = "logic on bools and integers carries no gradient"


# ------------------------------------------------------------------ arithmetic
@tensor_method()
def add(a, b):
    """``a + b`` with NumPy broadcasting and promotion."""
    return apply("add", a, b)


@grad_rule("add")
def _add_grad(ctx, g):
    return _pair(ctx, g, g)


shape_only("add", 0, 1)
onnx_elementwise("add", "Add", bool_form="Or")  # NumPy's bool + bool is logical or


@tensor_method()
def sub(a, b):
    """``a - b`` with NumPy broadcasting and promotion."""
    return apply("sub", a, b)


@grad_rule("sub")
def _sub_grad(ctx, g):
    return _pair(ctx, g, -g if _is_diff(ctx.inputs[1]) else None)


shape_only("sub", 0, 1)
onnx_elementwise("sub", "Sub")


@tensor_method()
def mul(a, b):
    """``a * b`` with NumPy broadcasting and promotion."""
    return apply("mul", a, b)


@grad_rule("mul")
def _mul_grad(ctx, g):
    a, b = ctx.inputs
    return _pair(ctx, g * b if _is_diff(a) else None, g * a if _is_diff(b) else None)


onnx_elementwise("mul", "Mul", bool_form="And")  # NumPy's bool * bool is logical and


@tensor_method()
def div(a, b):
    """True division ``a / b``; integer inputs give float32."""
    return apply("div", a, b)


@grad_rule("div")
def _div_grad(ctx, g):
    a, b = ctx.inputs
    return _pair(ctx, g / b if _is_diff(a) else None, -g * a / (b * b) if _is_diff(b) else None)


onnx_elementwise("div", "Div")


def floordiv(a, b):
    """``a // b``, rounding toward minus infinity (as NumPy and Python do)."""
    return apply("floordiv", a, b)


non_differentiable("floordiv", reason=_PIECEWISE_CONSTANT)


@onnx_converter("floordiv")
def _floordiv_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    a, b = promoted(g, op.inputs, dt)
    if dt.startswith("float"):
        t = g.tmp()
        g.node("Div", [a, b], [t])
        g.node("Floor", [t], op.outputs)
        return
    # ONNX integer Div truncates toward zero; (a - a mod b) / b is exact and floors, as NumPy does
    r, d = g.tmp(), g.tmp()
    g.node("Mod", [a, b], [r], fmod=0)
    g.node("Sub", [a, r], [d])
    g.node("Div", [d, b], op.outputs)


def mod(a, b):
    """``a % b``, with the divisor's sign (as NumPy and Python do)."""
    return apply("mod", a, b)


@grad_rule("mod")
def _mod_grad(ctx, g):
    # a % b = a - floor(a / b) * b, and floor is flat almost everywhere
    a, b = ctx.inputs
    return _pair(ctx, g if _is_diff(a) else None, -g * floor(a / b) if _is_diff(b) else None)


@onnx_converter("mod")
def _mod_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    a, b = promoted(g, op.inputs, dt)
    if not dt.startswith("float"):
        g.node("Mod", [a, b], op.outputs, fmod=0)  # integer Mod takes the divisor's sign, like NumPy
        return
    # ONNX float Mod is C's fmod (the dividend's sign); NumPy's takes the divisor's: add b
    # where the remainder is non-zero and its sign differs from b's
    r, zero = g.tmp(), g.const(np.zeros((), dtype=dt))
    g.node("Mod", [a, b], [r], fmod=1)
    r_neg, b_neg, differ, is_zero, nonzero, fix, shifted = (g.tmp() for _ in range(7))
    g.node("Less", [r, zero], [r_neg])
    g.node("Less", [b, zero], [b_neg])
    g.node("Xor", [r_neg, b_neg], [differ])
    g.node("Equal", [r, zero], [is_zero])
    g.node("Not", [is_zero], [nonzero])
    g.node("And", [differ, nonzero], [fix])
    g.node("Add", [r, b], [shifted])
    g.node("Where", [fix, shifted, r], op.outputs)


@tensor_method()
def pow(a, b):
    """``a ** b`` with NumPy broadcasting and promotion."""
    return apply("pow", a, b)


@grad_rule("pow")
def _pow_grad(ctx, g):
    a, b = ctx.inputs
    ga = g * b * a ** (b - 1) if _is_diff(a) else None
    gb = None
    if _is_diff(b):
        # d(a^b)/db = a^b log a, taken as 0 where a == 0 (the limit used by PyTorch and JAX)
        safe = where(a > 0, a, 1)
        gb = g * ctx.outputs[0] * log(safe)
    return _pair(ctx, ga, gb)


@onnx_converter("pow")
def _pow_onnx(g, op):
    g.node("Pow", promoted(g, op.inputs, g.dtype(op.outputs[0])), op.outputs)


@tensor_method()
def maximum(a, b):
    """The element-wise larger of ``a`` and ``b``."""
    return apply("maximum", a, b)


@tensor_method()
def minimum(a, b):
    """The element-wise smaller of ``a`` and ``b``."""
    return apply("minimum", a, b)


@grad_rule("maximum", "minimum")
def _maxmin_grad(ctx, g):
    a, b = ctx.inputs
    pick_a = (a >= b) if ctx.op == "maximum" else (a <= b)
    pick_a = cast(pick_a, g.dtype)
    # ties split the gradient evenly, as PyTorch does
    tie = cast(eq(a, b), g.dtype)
    wa = pick_a - tie * 0.5
    return _pair(ctx, g * wa if _is_diff(a) else None, g * (1 - wa) if _is_diff(b) else None)


onnx_elementwise("maximum", "Max", bool_form="Or")
onnx_elementwise("minimum", "Min", bool_form="And")


@tensor_method()
def logaddexp(a, b):
    """``log(exp(a) + exp(b))``, computed without overflow (NumPy's ``logaddexp``); integer
    and bool inputs give float32."""
    return apply("logaddexp", a, b)


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
@tensor_method()
def neg(x):
    """``-x``."""
    return apply("neg", x)


@grad_rule("neg")
def _neg_grad(ctx, g):
    return (-g,)


shape_only("neg", 0)
onnx_elementwise("neg", "Neg")


@tensor_method()
def exp(x):
    """``e ** x``; integer and bool inputs compute in float32."""
    return apply("exp", x)


@grad_rule("exp")
def _exp_grad(ctx, g):
    return (g * ctx.outputs[0],)


shape_only("exp", 0)  # the rule reads the output (dx = g * y), not the input
onnx_elementwise("exp", "Exp")


@tensor_method()
def log(x):
    """Natural logarithm; integer and bool inputs compute in float32."""
    return apply("log", x)


@grad_rule("log")
def _log_grad(ctx, g):
    return (g / ctx.inputs[0],)


onnx_elementwise("log", "Log")


@tensor_method()
def sqrt(x):
    """Square root; integer and bool inputs compute in float32."""
    return apply("sqrt", x)


@grad_rule("sqrt")
def _sqrt_grad(ctx, g):
    return (g / (2 * ctx.outputs[0]),)


shape_only("sqrt", 0)
onnx_elementwise("sqrt", "Sqrt")


@tensor_method()
def sin(x):
    """Sine (radians); integer and bool inputs compute in float32."""
    return apply("sin", x)


@grad_rule("sin")
def _sin_grad(ctx, g):
    return (g * cos(ctx.inputs[0]),)


onnx_elementwise("sin", "Sin")


@tensor_method()
def cos(x):
    """Cosine (radians); integer and bool inputs compute in float32."""
    return apply("cos", x)


@grad_rule("cos")
def _cos_grad(ctx, g):
    return (-g * sin(ctx.inputs[0]),)


onnx_elementwise("cos", "Cos")


@tensor_method()
def tanh(x):
    """Hyperbolic tangent; integer and bool inputs compute in float32."""
    return apply("tanh", x)


@grad_rule("tanh")
def _tanh_grad(ctx, g):
    y = ctx.outputs[0]
    return (g * (1 - y * y),)


shape_only("tanh", 0)
onnx_elementwise("tanh", "Tanh")


@tensor_method()
def sigmoid(x):
    """``1 / (1 + exp(-x))``, computed without overflow."""
    return apply("sigmoid", x)


@grad_rule("sigmoid")
def _sigmoid_grad(ctx, g):
    y = ctx.outputs[0]
    return (g * y * (1 - y),)


shape_only("sigmoid", 0)
onnx_elementwise("sigmoid", "Sigmoid")


@tensor_method()
def relu(x):
    """``max(x, 0)``."""
    return apply("relu", x)


@grad_rule("relu")
def _relu_grad(ctx, g):
    # the mask from the output (relu(x) > 0 exactly where x > 0), as PyTorch saves relu's
    # result: a converted forward keeps the output its next matmul's gradient needs anyway,
    # not the input as well
    return (g * cast(ctx.outputs[0] > 0, g.dtype),)


shape_only("relu", 0)


onnx_elementwise("relu", "Relu")


@tensor_method()
def abs(x):
    """``|x|``."""
    return apply("abs", x)


@grad_rule("abs")
def _abs_grad(ctx, g):
    return (g * sign(ctx.inputs[0]),)


onnx_elementwise("abs", "Abs")


@tensor_method()
def sign(x):
    """-1, 0 or 1 by the sign of each element."""
    return apply("sign", x)


non_differentiable("sign", reason=_PIECEWISE_CONSTANT)
onnx_elementwise("sign", "Sign")


@tensor_method()
def floor(x):
    """The largest integer not above each element (same dtype)."""
    return apply("floor", x)


non_differentiable("floor", reason=_PIECEWISE_CONSTANT)
onnx_elementwise("floor", "Floor")


@tensor_method()
def clip(x, min=None, max=None):
    """Limit x to [min, max]; either bound may be None, a number, or a tensor (broadcast)."""
    if isinstance(min, (Tensor, np.ndarray, list)) or isinstance(max, (Tensor, np.ndarray, list)):
        # where, not maximum/minimum: at x == bound the gradient goes to x alone (as in
        # torch.clamp), where maximum would split it between x and the bound
        out = x if min is None else where(lt(x, min), min, x)
        return out if max is None else where(gt(out, max), max, out)
    return apply("clip", x, lo=min, hi=max)


@grad_rule("clip")
def _clip_grad(ctx, g):
    x = ctx.inputs[0]
    lo, hi = ctx.attrs.get("lo"), ctx.attrs.get("hi")
    keep = None
    if lo is not None:
        keep = x >= lo
    if hi is not None:
        keep = (x <= hi) if keep is None else keep & (x <= hi)
    return (g if keep is None else g * cast(keep, g.dtype),)


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


def where(cond, a, b):
    """``a`` where ``cond`` holds, else ``b`` (all three broadcast together)."""
    return apply("where", cond, a, b)


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
    g.node("Where", [c] + promoted(g, op.inputs[1:], g.dtype(op.outputs[0])), op.outputs)


# ------------------------------------------------------------------ comparisons
def eq(a, b):
    """``a == b`` element-wise (bool)."""
    return apply("eq", a, b)


def ne(a, b):
    """``a != b`` element-wise (bool)."""
    return apply("ne", a, b)


def lt(a, b):
    """``a < b`` element-wise (bool)."""
    return apply("lt", a, b)


def le(a, b):
    """``a <= b`` element-wise (bool)."""
    return apply("le", a, b)


def gt(a, b):
    """``a > b`` element-wise (bool)."""
    return apply("gt", a, b)


def ge(a, b):
    """``a >= b`` element-wise (bool)."""
    return apply("ge", a, b)


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
def logical_and(a, b):
    """Element-wise and of bools (bitwise and of integers)."""
    return apply("bitwise_and", a, b)


def logical_or(a, b):
    """Element-wise or of bools (bitwise or of integers)."""
    return apply("bitwise_or", a, b)


def logical_xor(a, b):
    """Element-wise xor of bools (bitwise xor of integers)."""
    return apply("bitwise_xor", a, b)


@tensor_method()
def logical_not(x):
    """Element-wise not of bools (bitwise not of integers)."""
    return apply("logical_not", x)


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


