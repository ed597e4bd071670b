"""The normalization primitive (runtime: ``d2s_runtime/ops/norm_ops.py``): ``normalize`` over
some axes, returning the normalized tensor, the mean and the biased variance, with its gradient
rule and ONNX converter. ``F.batch_norm``, ``F.layer_norm``, ``F.group_norm`` and
``F.instance_norm`` (``d2s/nn/_functional_norm.py``) are this plus their scale and shift.

``normalize_grad`` takes the gradients of all three outputs, so the common case (only the
normalized tensor is differentiated; the engine passes zeros for the statistics) costs one
kernel, and the statistics stay exactly differentiable. Its own rule (second derivatives) is
composed of d2s ops.
"""
import numpy as np

from ..autograd.registry import grad_rule
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter, onnx_unsupported
from .creation import ones_like
from .elementwise import sqrt
from .reduce import mean, sum
from ._util import _as_tensor, _shape

onnx_unsupported("normalize_grad", reason="gradient ops belong to backward programs; export the forward program")


def _normalize(x, axes, eps=1e-5):
    """``(y, mean, var)``: x normalized to zero mean and unit variance over ``axes``, with the
    mean and the biased variance (kept as size-1 dims)."""
    return apply("normalize", _as_tensor(x), axes=sorted(int(a) % len(_shape(x)) for a in axes), eps=float(eps))


def _count(t, axes):
    """The number of elements per statistic: an int, or a tensor when a dim is unknown."""
    shape = _shape(t)
    if all(shape[a] is not None for a in axes):
        n = 1
        for a in axes:
            n *= shape[a]
        return n
    return sum(ones_like(t), axis=list(axes), keepdims=True)


@grad_rule("normalize")
def _normalize_grad(ctx, gy, gmean, gvar):
    y, _, var = ctx.outputs
    return (apply("normalize_grad", gy, y, var, gmean, gvar, **ctx.attrs),)


@grad_rule("normalize_grad")
def _normalize_grad_grad(ctx, h):
    # dx = s (g - m(g) - y m(g y)) + gm / n + y * 2 gv / (n s), s = (var + eps)^-1/2, m = mean
    g, y, var, gm, gv = ctx.inputs
    axes, eps = ctx.attrs["axes"], ctx.attrs.get("eps", 1e-5)
    n = _count(y, axes)

    def m(t):
        return mean(t, axis=list(axes), keepdims=True)

    root = sqrt(var + eps)
    s = 1.0 / root
    mh, mhy, mg, mgy = m(h), m(h * y), m(g), m(g * y)
    zero = 0.0 * gm
    grad_g = apply("normalize_grad", h, y, var, zero, zero, **ctx.attrs)
    grad_y = -s * (h * mgy + g * mhy) + h * (gv * 2.0 * root / n)
    # d/dvar: s' = -s^3 / 2 on the first term, (1/s)' = s / 2 on the last
    grad_var = -0.5 * s * s * s * n * (m(h * g) - mh * mg - mhy * mgy) + gv * s * mhy
    return grad_g, grad_y, grad_var, mh, 2.0 * mhy * root


# ------------------------------------------------------------------ ONNX
@onnx_converter("normalize")
def _normalize_onnx(g, op):
    # the kernel's arithmetic: mean, centred squares' mean, division by sqrt(var + eps)
    x = op.inputs[0]
    y, mu, var = op.outputs
    dtype = g.dtype(y)
    axes = g.const(i64(op.attrs["axes"]))
    d, sq, shifted, root = g.tmp(), g.tmp(), g.tmp(), g.tmp()
    g.node("ReduceMean", [x, axes], [mu], keepdims=1)
    g.node("Sub", [x, mu], [d])
    g.node("Mul", [d, d], [sq])
    g.node("ReduceMean", [sq, axes], [var], keepdims=1)
    g.node("Add", [var, g.const(np.asarray(op.attrs.get("eps", 1e-5), dtype=dtype))], [shifted])
    g.node("Sqrt", [shifted], [root])
    g.node("Div", [d, root], [y])
