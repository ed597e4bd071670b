"""Division with PyTorch's semantics (runtime: ``floordiv``/``mod`` in
``d2s_runtime/ops/elementwise.py``, ``truncdiv``/``fmod`` in ``pointwise.py``): floor and
truncating division, ``remainder`` (the divisor's sign) and ``fmod`` (the dividend's), each with
its gradient rule and ONNX form. Integer division by zero raises PyTorch's ZeroDivisionError
(eagerly and when a program runs); ONNX cannot raise, so an exported model gives 0 there.

True division (``div`` without a rounding mode) is in ``elementwise.py``.
"""
import numpy as np

from ..autograd.registry import grad_rule, non_differentiable
from ..dispatch import apply
from ..onnx.registry import onnx_converter, promoted
from ..tensor import tensor_method
from .elementwise import _PIECEWISE_CONSTANT, _tmp_node
from ._util import _is_diff, _pair


@tensor_method("floor_divide")
def floordiv(input, other):
    """``input // other``, rounding toward minus infinity (PyTorch's ``floor_divide``); integer
    division by zero raises ZeroDivisionError."""
    return apply("floordiv", input, other)


floor_divide = floordiv
non_differentiable("floordiv", reason=_PIECEWISE_CONSTANT)
non_differentiable("truncdiv", reason=_PIECEWISE_CONSTANT)


@onnx_converter("floordiv", "truncdiv", "mod", "fmod")
def _division_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    a, b = promoted(g, op.inputs, dt)
    if dt.startswith("float"):
        _float_division_onnx(g, op.type, a, b, dt, op.outputs[0])
    else:
        _int_division_onnx(g, op.type, a, b, dt, op.outputs[0])


def _float_division_onnx(g, kind, a, b, dt, out):
    if kind == "truncdiv":
        trunc_of(g, _tmp_node(g, "Div", a, b), out)
        return
    if kind == "floordiv":
        _float_floordiv_onnx(g, a, b, dt, out)
        return
    if kind == "fmod":
        g.node("Mod", [a, b], [out], fmod=1)
        return
    # ONNX float Mod is C's fmod (the dividend's sign); PyTorch's remainder adds b where the
    # remainder is non-zero and its sign differs from b's
    r, zero = g.tmp(), g.const(np.zeros((), dtype=dt))
    g.node("Mod", [a, b], [r], fmod=1)
    g.node("Where", [_sign_fix(g, r, b, zero), _tmp_node(g, "Add", r, b), r], [out])


def _float_floordiv_onnx(g, a, b, dt, out):
    """PyTorch's (and Python's) float floor division: ``(a - fmod(a, b)) / b``, less one where
    the remainder and b differ in sign, rounded to the nearest integer; ``a / b`` where b is 0;
    a zero with the sign of ``a / b``. (``floor(a / b)`` differs: it rounds the quotient first,
    and gives inf where a is infinite.)"""
    zero, half = g.const(np.zeros((), dt)), g.const(np.asarray(0.5, dt))
    mod = g.tmp()
    g.node("Mod", [a, b], [mod], fmod=1)
    div = _tmp_node(g, "Div", _tmp_node(g, "Sub", a, mod), b)
    fix = g.tmp()
    g.node("Cast", [_sign_fix(g, mod, b, zero)], [fix], to=g.onnx_dtype(dt))
    div = _tmp_node(g, "Sub", div, fix)
    fl = _tmp_node(g, "Floor", div)
    up = g.tmp()
    g.node("Cast", [_tmp_node(g, "Greater", _tmp_node(g, "Sub", div, fl), half)], [up], to=g.onnx_dtype(dt))
    rounded = _tmp_node(g, "Add", fl, up)
    quotient = _tmp_node(g, "Div", a, b)
    signed_zero = _tmp_node(g, "Mul", quotient, zero)
    nonzero = _tmp_node(g, "Where", _tmp_node(g, "Equal", div, zero), signed_zero, rounded)
    g.node("Where", [_tmp_node(g, "Equal", b, zero), quotient, nonzero], [out])


def _sign_fix(g, r, b, zero):
    """Where a truncated remainder ``r`` is non-zero and its sign differs from divisor ``b``'s
    (the places where floor and truncation disagree)."""
    r_neg, b_neg, differ, is_zero, nonzero, fix = (g.tmp() for _ in range(6))
    g.node("Less", [r, zero], [r_neg])
    g.node("Less", [b, zero], [b_neg])
    g.node("Xor", [r_neg, b_neg], [differ])
    g.node("Equal", [r, zero], [is_zero])
    g.node("Not", [is_zero], [nonzero])
    g.node("And", [differ, nonzero], [fix])
    return fix


def _int_division_onnx(g, kind, a, b, dt, out):
    """Integer division without overflow or a trap: onnxruntime's integer Div and Mod are C's,
    whose INT_MIN / -1 and x / 0 kill the process (SIGFPE), and ``(a - a mod b) / b`` overflows
    near INT_MIN. So divide by ``b`` with -1 and 0 replaced by 1: the truncated quotient ``q``
    and remainder ``r = a - q b`` (which cannot overflow), floored where ``r`` and ``b`` differ
    in sign; ``-a`` and 0 where ``b`` is -1 (NumPy's and PyTorch's wrapping -INT_MIN). ONNX has
    no way to raise: where ``b`` is 0 the model gives 0, while d2s raises ZeroDivisionError."""
    zero, one = (g.const(np.asarray(v, dtype=dt)) for v in (0, 1))
    is_zero = _tmp_node(g, "Equal", b, zero)
    if np.dtype(dt).kind == "u":  # no -1, no sign to fix: C's division is floor division here
        q = _tmp_node(g, "Div", a, _tmp_node(g, "Where", is_zero, one, b))
        general = q if kind in ("truncdiv", "floordiv") else _tmp_node(g, "Sub", a, _tmp_node(g, "Mul", q, b))
        g.node("Where", [is_zero, zero, general], [out])
        return
    minus_one = g.const(np.asarray(-1, dtype=dt))
    is_m1, special = _tmp_node(g, "Equal", b, minus_one), g.tmp()
    g.node("Or", [is_zero, is_m1], [special])
    safe = _tmp_node(g, "Where", special, one, b)
    q = _tmp_node(g, "Div", a, safe)
    r = _tmp_node(g, "Sub", a, _tmp_node(g, "Mul", q, safe))
    if kind == "truncdiv":
        general, on_m1 = q, _tmp_node(g, "Neg", a)
    elif kind == "fmod":
        general, on_m1 = r, zero
    elif kind == "floordiv":
        fix = g.tmp()
        g.node("Cast", [_sign_fix(g, r, safe, zero)], [fix], to=g.onnx_dtype(dt))
        general, on_m1 = _tmp_node(g, "Sub", q, fix), _tmp_node(g, "Neg", a)
    else:  # mod: the divisor's sign
        fix = _sign_fix(g, r, safe, zero)
        general, on_m1 = _tmp_node(g, "Where", fix, _tmp_node(g, "Add", r, safe), r), zero
    picked = _tmp_node(g, "Where", is_m1, on_m1, general)
    g.node("Where", [is_zero, zero, picked], [out])


def trunc_of(g, x, out):
    """ONNX nodes writing ``trunc(x)`` (float ``x``) to ``out``: ONNX has no Trunc;
    ``sign(x) * floor(|x|)`` keeps -0.0 for small negatives, NaN and infinities."""
    g.node("Mul", [_tmp_node(g, "Sign", x), _tmp_node(g, "Floor", _tmp_node(g, "Abs", x))], [out])


@tensor_method("remainder")
def mod(input, other):
    """``input % other``, with the divisor's sign (PyTorch's ``remainder``; a zero result keeps
    the dividend's sign); integer division by zero raises ZeroDivisionError."""
    return apply("mod", input, other)


remainder = mod


@grad_rule("mod")
def _mod_grad(ctx, g):
    # a % b = a - floor(a / b) * b, and floor is flat almost everywhere
    a, b = ctx.inputs
    return _pair(ctx, g if _is_diff(a) else None, -g * apply("floordiv", a, b) if _is_diff(b) else None)


@tensor_method()
def fmod(input, other):
    """C's remainder ``input - trunc(input / other) * other``, with the dividend's sign;
    integer division by zero raises ZeroDivisionError."""
    return apply("fmod", input, other)


@grad_rule("fmod")
def _fmod_grad(ctx, g):
    a, b = ctx.inputs
    return _pair(ctx, g if _is_diff(a) else None, -g * apply("truncdiv", a, b) if _is_diff(b) else None)
