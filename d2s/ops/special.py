"""Gamma functions, integer divisors and sign functions with PyTorch's names (runtime:
``d2s_runtime/ops/gamma.py``): lgamma, digamma, polygamma, gcd, lcm, signbit, and the
compositions xlogy, logit, heaviside, deg2rad, rad2deg, isposinf, isneginf, logaddexp2, copysign,
sgn, positive, sinc, is_signed, rsub, ldexp (and ``Tensor.fix``); nextafter and frexp (runtime ops
beside signbit).

``lgamma``'s gradient is ``digamma``, ``polygamma(n)``'s is ``polygamma(n + 1)``, as PyTorch's.
The compositions are written as PyTorch defines them (``xlogy``: 0 where ``x == 0`` unless ``y``
is NaN; ``logit`` with ``eps`` clamps first, so the gradient is 0 outside ``[eps, 1 - eps]``), so
their values and gradients are PyTorch's.
"""
import math

from d2s_runtime.dtypes import result_type

from ..autograd.registry import grad_rule, non_differentiable
from ..dispatch import apply
from ..onnx.registry import onnx_unsupported
from .. import return_types
from ..tensor import Tensor, tensor, tensor_method
from .elementwise import _dtype_of, abs, cast, clamp, cos, eq, gt, log, logaddexp, lt, sign, sin, where
from .pointwise import exp2, isinf, isnan, trunc
from .elementwise import logical_and, logical_not, logical_or
from .creation import ones_like, zeros_like
from ._util import _as_tensor, with_slope

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _float_dtype(*values):
    """PyTorch's result dtype of a float function of ``values``: their promoted dtype, float32
    for integers and bools."""
    dt = _dtype_of(values[0])
    for v in values[1:]:
        dt = result_type(dt, _dtype_of(v))
    return dt if dt in _FLOATS else "float32"


def _floated(x, dt):
    if isinstance(x, Tensor):
        return x if str(x.dtype) == dt else cast(x, dt)
    return float(x)


# ------------------------------------------------------------------ gamma functions
@tensor_method()
def lgamma(input):
    """``log|Gamma(x)|`` (+inf at 0 and the negative integers), as ``torch.lgamma``; integer
    and bool inputs give float32. Its gradient is :func:`digamma`."""
    return apply("lgamma", input)


@tensor_method()
def digamma(input):
    """The logarithmic derivative of Gamma, as ``torch.digamma`` (-inf at +0, +inf at -0, NaN at
    the negative integers); integer and bool inputs give float32."""
    return apply("polygamma", input, n=0)


@tensor_method()
def polygamma(n, input=None):
    """The ``n``-th derivative of :func:`digamma`, as ``torch.polygamma(n, input)`` (the method
    is ``x.polygamma(n)``), computed by PyTorch's algorithms in ``input``'s dtype, so with its
    values at and near the poles (0, -1, -2, ...): for ``n = 1`` +inf at 0 and huge finite values
    (PyTorch's ``sin(pi x)`` of a rounded product) at the negative integers; for ``n >= 2``
    ``(-1)^(n+1) inf`` there. Arguments below -100000 raise (for ``n >= 2``).

    Args:
        n: a non-negative int.
        input: a tensor.

    Returns:
        a float tensor of ``input``'s shape.
    """
    if isinstance(n, Tensor) and not isinstance(input, Tensor):  # the method: x.polygamma(n)
        n, input = input, n
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise TypeError(f"polygamma: n must be a non-negative int, got {n!r}")
    return apply("polygamma", input, n=n)


@grad_rule("lgamma")
def _lgamma_grad(ctx, g):
    return (g * apply("polygamma", ctx.inputs[0], n=0),)


@grad_rule("polygamma")
def _polygamma_grad(ctx, g):
    return (g * apply("polygamma", ctx.inputs[0], n=ctx.attrs.get("n", 0) + 1),)


onnx_unsupported("lgamma", "polygamma", reason="ONNX has no gamma functions")


@tensor_method()
def mvlgamma(input, p):
    """The multivariate log-gamma of dimension ``p``, as ``torch.mvlgamma``:
    ``p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(x - j / 2)`` (every element must exceed
    ``(p - 1) / 2``, else PyTorch raises, and so does this, eagerly)."""
    if isinstance(input, Tensor) and not input.is_symbolic and input.numel() and \
            bool((input <= (p - 1) / 2).any()):
        raise RuntimeError(f"mvlgamma: all elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    out = lgamma(input)
    for j in range(1, p):
        out = out + lgamma(input - j / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)


# ------------------------------------------------------------------ integer divisors
@tensor_method()
def gcd(input, other):
    """The greatest common divisor of integer tensors (non-negative; ``gcd(0, 0) = 0``)."""
    return apply("gcd", input, other)


@tensor_method()
def lcm(input, other):
    """The least common multiple of integer tensors (non-negative; 0 where either is 0)."""
    return apply("lcm", input, other)


non_differentiable("gcd", "lcm")
onnx_unsupported("gcd", "lcm", reason="ONNX has no greatest common divisor")


# ------------------------------------------------------------------ signs
@tensor_method()
def signbit(input):
    """Whether each element's sign bit is set (True for -0.0 and negative NaNs), as
    ``torch.signbit``: a bool tensor."""
    return apply("signbit", input)


non_differentiable("signbit", reason="its output is a bool tensor")
onnx_unsupported("signbit", reason="ONNX cannot read a float's sign bit (-0.0)")


@tensor_method()
def copysign(input, other):
    """``|input|`` with ``other``'s sign (its sign bit: -0.0 counts as negative), as
    ``torch.copysign``; integer inputs give float32. The gradient reaches ``input`` only (0 where
    it is 0, as PyTorch's)."""
    dt = _float_dtype(input, other)
    a = abs(_floated(input, dt) if isinstance(input, Tensor) else _as_float_tensor(input, dt))
    neg = signbit(other) if isinstance(other, Tensor) else math.copysign(1.0, other) < 0
    if isinstance(neg, bool):
        return -a if neg else a
    out = where(neg, -a, a)
    if str(other.dtype) in _FLOATS:  # other's gradient is zeros (not None), as PyTorch's
        out = where(zeros_like(out, dtype="bool"), other, out)
    return out


def _as_float_tensor(x, dt):
    return tensor(float(x), dtype=dt)


@tensor_method()
def sgn(input):
    """The sign of each element (``sign`` for real tensors, as ``torch.sgn``)."""
    return sign(input)


@tensor_method()
def positive(input):
    """``input`` itself, as ``torch.positive`` (refused for bool tensors, as PyTorch's)."""
    if str(input.dtype) == "bool":
        raise TypeError("positive: the `+` operator on a bool tensor is not supported (PyTorch's neither)")
    return input


@tensor_method()
def is_signed(input):
    """Whether ``input``'s dtype holds negative numbers (False for bool and uint8), as
    ``torch.is_signed``: a Python bool."""
    return str(input.dtype) not in ("bool", "uint8", "uint16", "uint32", "uint64")


@tensor_method()
def heaviside(input, values):
    """The Heaviside step, as ``torch.heaviside``: 0 where ``input < 0``, ``values`` where it is
    0, 1 where it is positive (NaN stays NaN); ``input`` and ``values`` of one dtype. Not
    differentiable (PyTorch's neither): the result carries no gradient."""
    if isinstance(values, Tensor) and str(values.dtype) != str(input.dtype):
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes "
                           f"({input.dtype} and {values.dtype}), as in PyTorch; cast one first")
    x = input.detach()
    v = values.detach() if isinstance(values, Tensor) else values
    step = cast(gt(x, 0), str(x.dtype))  # (NaN is neither 0 nor positive: 0, as PyTorch's)
    out = where(eq(x, 0), v, step)
    return out if str(out.dtype) == str(x.dtype) else cast(out, str(x.dtype))


# ------------------------------------------------------------------ compositions
@tensor_method()
def xlogy(input, other):
    """``input * log(other)``, 0 where ``input == 0`` (unless ``other`` is NaN), as
    ``torch.xlogy``; either may be a Python number; integer inputs give float32."""
    dt = _float_dtype(input, other)
    x = _floated(input, dt) if isinstance(input, Tensor) else _as_float_tensor(input, dt)
    y = _floated(other, dt) if isinstance(other, Tensor) else _as_float_tensor(other, dt)
    # 0 where x == 0 (unless y is NaN), and there the gradient reaching x is log(y), as
    # PyTorch's: log(y) is kept where finite (0 * log(y) is 0) and replaced by 0 where infinite
    ly = log(y)
    # (a negative y's NaN log too: xlogy(0, -1) is 0, and its gradient to x 0, as PyTorch's)
    zero = logical_and(eq(x, 0), logical_or(isinf(ly), lt(y, 0)))
    return x * where(zero, 0.0, ly)


@tensor_method()
def logit(input, eps=None):
    """``log(p / (1 - p))``, as ``torch.logit``; with ``eps``, ``p`` is first clamped to
    ``[eps, 1 - eps]`` (the gradient is then 0 outside it). Integer inputs give float32."""
    x = _floated(input, _float_dtype(input))
    if eps is not None:
        x = clamp(x, eps, 1 - eps)
    return log(x / (1 - x))


@tensor_method()
def logaddexp2(input, other):
    """``log2(2**a + 2**b)``, computed without overflow, as ``torch.logaddexp2``."""
    ln2 = math.log(2.0)
    return logaddexp(input * ln2, other * ln2) / ln2


@tensor_method()
def deg2rad(input):
    """Degrees to radians (``x * pi / 180``); integer inputs give float32."""
    return _floated(input, _float_dtype(input)) * (math.pi / 180.0)


@tensor_method()
def rad2deg(input):
    """Radians to degrees (``x * 180 / pi``); integer inputs give float32."""
    return _floated(input, _float_dtype(input)) * (180.0 / math.pi)


@tensor_method()
def isposinf(input):
    """Whether each element is +inf (a bool tensor)."""
    return logical_and(isinf(input), gt(input, 0))


@tensor_method()
def isneginf(input):
    """Whether each element is -inf (a bool tensor)."""
    return logical_and(isinf(input), lt(input, 0))


@tensor_method()
def sinc(input):
    """The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0, as ``torch.sinc``; integer inputs
    give float32. (The division takes a safe operand at 0, so the gradient there is 0, not NaN.)"""
    x = _floated(input, _float_dtype(input))
    grad = isinstance(x, Tensor) and x.requires_grad
    xd = x.detach() if grad else x
    at0 = eq(xd, 0)
    px = where(at0, 1.0, xd) * math.pi
    out = where(at0, ones_like(xd), sin(px) / px)
    if not grad:
        return out
    # PyTorch's gradient expression, (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at 0: its rounding,
    # not the composite's (float32 sinc'(0.001) differed by 3.5%, both far from the exact value;
    # this one is what PyTorch code trained with)
    x_pi = xd * math.pi
    sq_pi = xd * xd * math.pi
    return with_slope(out, x, where(eq(sq_pi, 0), 0.0, (x_pi * cos(x_pi) - sin(x_pi)) / sq_pi))


# ------------------------------------------------------------------ arithmetic shorthands
def rsub(input, other, *, alpha=1):
    """``other - alpha * input``, as ``torch.rsub``."""
    return other - (input if alpha == 1 else input * alpha)


@tensor_method()
def ldexp(input, other):
    """``input * 2 ** other``, as ``torch.ldexp``; integer inputs give float32. (As PyTorch's, the
    gradient is 0 where an integer ``other`` is negative.)"""
    dt = _float_dtype(input, other)
    x = _floated(input, dt)
    scale = exp2(_floated(other, dt) if isinstance(other, Tensor) else _as_float_tensor(other, dt))
    if isinstance(other, Tensor) and str(other.dtype) not in _FLOATS:
        # PyTorch's gradient takes 2 ** other in integers, which is 0 for a negative exponent:
        # the value keeps the exact scale, the gradient PyTorch's
        grad_scale = where(lt(other, 0), 0.0, scale)
        return x * grad_scale + (x * (scale - grad_scale)).detach()
    return x * scale


tensor_method("fix")(trunc)  # Tensor.fix: PyTorch's alias of trunc (torch.fix is d2s.fix)


# ------------------------------------------------------------------ float bits: nextafter, frexp
@tensor_method()
def nextafter(input, other):
    """The next float after each element of ``input`` towards ``other`` (``other`` where they are
    equal), as ``torch.nextafter``: float tensors only; a 0-d operand takes the other's dtype
    (PyTorch's promotion). Not differentiable (PyTorch has no gradient for it either)."""
    a, b = _as_tensor(input), _as_tensor(other)
    fa, fb = (str(t.dtype).startswith("float") for t in (a, b))
    if fa != fb:  # an integer or bool operand takes the float one's dtype (PyTorch's promotion)
        a, b = (a, cast(b, a.dtype)) if fa else (cast(a, b.dtype), b)
    if a.dtype != b.dtype and (a.ndim == 0) != (b.ndim == 0):
        a, b = (cast(a, b.dtype), b) if a.ndim == 0 else (a, cast(b, a.dtype))
    return apply("nextafter", a, b)


non_differentiable("nextafter", reason="PyTorch has no gradient for it (its backward raises)")
onnx_unsupported("nextafter", reason="ONNX has no operator stepping to the next float")


@tensor_method()
def frexp(input):
    """Each element split into a mantissa in [0.5, 1) (by magnitude) and a power of two, as
    ``torch.frexp``: the named tuple ``(mantissa, exponent)``, ``exponent`` int32 (0, inf and NaN
    give themselves and 0). The mantissa's gradient is ``g / 2 ** exponent``, PyTorch's."""
    return return_types.frexp(*apply("frexp", _as_tensor(input)))


@grad_rule("frexp")
def _frexp_grad(ctx, g_mantissa, g_exponent):
    del g_exponent  # an int32 count
    if g_mantissa is None:
        return (None,)
    return (g_mantissa / exp2(cast(ctx.outputs[1], str(g_mantissa.dtype))),)


onnx_unsupported("frexp", reason="ONNX has no operator splitting a float into mantissa and exponent")
