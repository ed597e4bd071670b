"""Activation functions and dropout of ``d2s.nn.functional`` (PyTorch's signatures).

Each is composed of d2s ops so that its value and its gradient equal PyTorch's, including
at the kinks, where PyTorch's backward picks a side: ``where`` with the comparison PyTorch's
kernel uses decides which branch a point on the kink belongs to (``hardtanh`` passes no
gradient at its bounds, ``leaky_relu`` passes the slope at 0, ``hardswish`` -0.5 at -3).
A branch that is computed but not taken never sees an input that would overflow (``exp`` is
taken of ``min(x, 0)``), so its zero gradient stays zero rather than ``0 * inf``.

``inplace=True`` writes the result into the input tensor, as PyTorch does (through d2s's
in-place machinery: eagerly into its array, keeping autograd history; in a program the name
is rebound).
"""
import math
import warnings

from .. import inplace as _inplace
from .. import ops as _ops
from ..ops import nn as nn_ops
from ..ops.nn import hardshrink, prelu  # noqa: F401  (F.hardshrink, F.prelu: also Tensor methods)
from ..dispatch import apply
from ..ops.support import static_shape as _static_shape
from ..tensor import Tensor, tensor


def _t(x):
    return x if isinstance(x, Tensor) else tensor(x)


def _maybe_inplace(name, fn, x, inplace, **kwargs):
    """``fn(x, **kwargs)``, written into ``x`` when ``inplace`` (``fn`` is registered as the
    in-place method ``<name>_``, so it must be a module-level function of ``x`` and ``kwargs``)."""
    x = _t(x)
    if not inplace:
        return fn(x, **kwargs)
    key = name + "_"
    _inplace.RESULTS.setdefault(key, fn)
    return _inplace._update(x, key, (), kwargs)


# ------------------------------------------------------------------ piecewise activations
def _relu(x):
    return _ops.relu(x)


def relu(input, inplace=False):
    """``max(x, 0)`` (gradient 0 at 0, as PyTorch)."""
    return _maybe_inplace("relu", _relu, input, inplace)


def relu_(input):
    """:func:`relu` written into ``input``."""
    return relu(input, inplace=True)


def _hardtanh(x, min_val=-1.0, max_val=1.0):
    # PyTorch's backward passes the gradient strictly inside (min_val, max_val) only
    out = _ops.where(_ops.le(x, min_val), _ops.full_like(x, min_val), x)
    return _ops.where(_ops.ge(x, max_val), _ops.full_like(x, max_val), out)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``clamp(x, min_val, max_val)``, with no gradient at the bounds (as PyTorch)."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    return _maybe_inplace("hardtanh", _hardtanh, input, inplace, min_val=float(min_val), max_val=float(max_val))


def relu6(input, inplace=False):
    """``min(max(x, 0), 6)``: ``hardtanh(x, 0, 6)`` as in PyTorch."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _leaky_relu(x, negative_slope=0.01):
    return _ops.where(_ops.gt(x, 0), x, x * negative_slope)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` where positive, ``negative_slope * x`` elsewhere (the slope's gradient at 0)."""
    return _maybe_inplace("leaky_relu", _leaky_relu, input, inplace, negative_slope=float(negative_slope))


def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    # clip, not minimum: at x == 0 minimum would split the gradient between x and 0; expm1, as
    # PyTorch's kernel: exp(x) - 1 loses small x (float32 elu(-1e-5) was 0.1% off, elu(-1e-30) 0)
    neg = _ops.expm1(_ops.clip(x, None, 0.0) * input_scale) * alpha
    out = _ops.where(_ops.gt(x, 0), x, neg)
    return out if scale == 1.0 else out * scale


def elu(input, alpha=1.0, inplace=False):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    return _maybe_inplace("elu", _elu, input, inplace, alpha=float(alpha))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return _maybe_inplace("selu", _elu, input, inplace, alpha=_SELU_ALPHA, scale=_SELU_SCALE)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise ValueError("celu: alpha cannot be 0")
    return _maybe_inplace("celu", _elu, input, inplace, alpha=float(alpha), input_scale=1.0 / alpha)


def _threshold(x, threshold, value):
    return _ops.where(_ops.gt(x, threshold), x, _ops.full_like(x, value))


def threshold(input, threshold, value, inplace=False):
    """``x`` where ``x > threshold``, else ``value``."""
    return _maybe_inplace("threshold", _threshold, input, inplace, threshold=threshold, value=value)


def _hardswish(x):
    mid = x * (x + 3.0) / 6.0
    return _ops.where(_ops.le(x, -3.0), _ops.zeros_like(x), _ops.where(_ops.lt(x, 3.0), mid, x))


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6`` (gradient 0 up to -3, ``x/3 + 1/2`` on (-3, 3), 1 from 3 on,
    as PyTorch)."""
    return _maybe_inplace("hardswish", _hardswish, input, inplace)


def _hardsigmoid(x):
    mid = (x + 3.0) / 6.0
    return _ops.where(_ops.le(x, -3.0), _ops.zeros_like(x), _ops.where(_ops.ge(x, 3.0), _ops.ones_like(x), mid))


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6`` (no gradient at -3 and 3, as PyTorch)."""
    return _maybe_inplace("hardsigmoid", _hardsigmoid, input, inplace)


def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""
    x = _t(input)
    if lambd < 0:
        raise ValueError(f"softshrink: lambda must be non-negative, got {lambd}")
    # x * 0 between the thresholds, as PyTorch's kernel: a NaN stays NaN (zeros gave 0)
    return _ops.where(_ops.gt(x, lambd), x - lambd, _ops.where(_ops.lt(x, -lambd), x + lambd, x * 0.0))


def tanhshrink(input):
    """``x - tanh(x)``."""
    x = _t(input)
    return x - _ops.tanh(x)


# ------------------------------------------------------------------ smooth activations
def tanh(input):
    """The hyperbolic tangent, element-wise (as :func:`d2s.tanh`)."""
    return _ops.tanh(input)


def sigmoid(input):
    """``1 / (1 + exp(-x))``, element-wise (as :func:`d2s.sigmoid`)."""
    return _ops.sigmoid(input)


def _softplus(x, beta=1.0, threshold=20.0):
    bx = x * beta if beta != 1.0 else x
    soft = _ops.logaddexp(bx, 0.0)
    if beta != 1.0:
        soft = soft / beta
    # above the threshold PyTorch returns x itself (and passes the gradient unchanged)
    return _ops.where(_ops.gt(bx, threshold), x, soft)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``."""
    return _softplus(_t(input), beta=float(beta), threshold=float(threshold))


def logsigmoid(input):
    """``log(sigmoid(x)) = -softplus(-x)``, computed without overflow."""
    return -_ops.logaddexp(-_t(input), 0.0)


def softsign(input):
    """``x / (1 + |x|)``."""
    x = _t(input)
    return x / (1.0 + _ops.abs(x))


def _silu(x):
    return x * _ops.sigmoid(x)


def silu(input, inplace=False):
    """``x * sigmoid(x)`` (swish)."""
    return _maybe_inplace("silu", _silu, input, inplace)


def _mish(x):
    return x * _ops.tanh(_softplus(x))


def mish(input, inplace=False):
    """``x * tanh(softplus(x))``."""
    return _maybe_inplace("mish", _mish, input, inplace)


_GELU_C = math.sqrt(2.0 / math.pi)


def gelu(input, approximate="none"):
    """Gaussian error linear unit, as PyTorch computes it: ``0.5 x (1 + erf(x / sqrt(2)))`` by
    default, or ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` with ``approximate='tanh'``.

    The exact form is ``erf`` and one op over ``x`` and it (its gradient another), in PyTorch's
    order of operations; it exports to ONNX as Erf and arithmetic.
    """
    x = _t(input)
    if approximate == "none":
        # erf, then one op that takes x and it (and whose gradient rule is the whole derivative)
        return apply("gelu_from_erf", x, _ops.erf(x * (1.0 / math.sqrt(2.0))))
    if approximate != "tanh":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return 0.5 * x * (1.0 + _ops.tanh(_GELU_C * (x + 0.044715 * (x * x * x))))


def glu(input, dim=-1):
    """``a * sigmoid(b)`` where ``a`` and ``b`` are the two halves of ``input`` along ``dim``."""
    x = _t(input)
    n = _static_shape(x)[dim]
    if n is None:
        raise ValueError(f"glu: the size of dim {dim}, which is halved, must be known when the program is built")
    if n % 2:
        raise ValueError(f"glu: halving dimension must be even, but dimension {dim} is size {n}")
    a, b = _ops.split(x, [n // 2, n // 2], axis=dim)
    return a * _ops.sigmoid(b)


# ------------------------------------------------------------------ softmax family
def _softmax_dim(name, ndim, dim, axis, stacklevel):
    if axis is not None:
        if dim is not None and dim != axis:
            raise TypeError(f"{name}: got both dim={dim} and axis={axis}")
        return int(axis)
    if dim is not None:
        return int(dim)
    # PyTorch's implicit choice, with its warning
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _with_dtype(x, dtype):
    return x if dtype is None else _ops.cast(x, dtype)


def softmax(input, dim=None, _stacklevel=3, dtype=None, *, axis=None):
    """``exp(x) / sum(exp(x))`` along ``dim`` (computed stably); ``dtype`` casts the input
    first. Without ``dim``, PyTorch's implicit choice (0 for 0-, 1- and 3-d inputs, else 1)
    with its deprecation warning."""
    x = _with_dtype(_t(input), dtype)
    return nn_ops.softmax(x, axis=_softmax_dim("softmax", x.ndim, dim, axis, _stacklevel))


def log_softmax(input, dim=None, _stacklevel=3, dtype=None, *, axis=None):
    """``log(softmax(x))`` along ``dim``, computed stably (see :func:`softmax` for ``dim``)."""
    x = _with_dtype(_t(input), dtype)
    return nn_ops.log_softmax(x, axis=_softmax_dim("log_softmax", x.ndim, dim, axis, _stacklevel))


def softmin(input, dim=None, _stacklevel=3, dtype=None, *, axis=None):
    """``softmax(-x)`` along ``dim``."""
    x = _with_dtype(_t(input), dtype)
    return nn_ops.softmax(-x, axis=_softmax_dim("softmin", x.ndim, dim, axis, _stacklevel))


# ------------------------------------------------------------------ dropout
def _check_p(name, p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")


def _dropout(x, p=0.5, training=True):
    return nn_ops.dropout(x, p, training)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` while
    ``training``; the identity otherwise."""
    _check_p("dropout", p)
    if not training or p == 0.0:
        return input
    return _maybe_inplace("dropout", _dropout, input, inplace, p=float(p))


def _feature_dropout(name, x, p, training, inplace, batched_ndim):
    """Dropout of whole channels: one draw per (sample, channel), broadcast over the rest."""
    _check_p(name, p)
    x = _t(x)
    if x.ndim not in (batched_ndim, batched_ndim - 1):
        raise ValueError(f"{name}: expected a {batched_ndim - 1}-d (unbatched) or {batched_ndim}-d (batched) "
                         f"input, got shape {tuple(x.shape)}")
    if not training or p == 0.0:
        return x
    lead = 2 if x.ndim == batched_ndim else 1
    probe = _ops.sum(x, axis=list(range(lead, x.ndim)), keepdims=True)  # (N, C, 1, ...): the mask's shape
    mask = _ops.stop_gradient(nn_ops.dropout(_ops.ones_like(probe), p, True))
    return _maybe_inplace(name, _masked, x, inplace, mask=mask)


def _masked(x, mask):
    return x * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) ``input`` with probability ``p``."""
    return _feature_dropout("dropout1d", input, p, training, inplace, 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) or (C, H, W) ``input`` with probability ``p``."""
    return _feature_dropout("dropout2d", input, p, training, inplace, 4)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) ``input`` with probability ``p``."""
    return _feature_dropout("dropout3d", input, p, training, inplace, 5)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalizing mean and variance: dropped elements take
    SELU's negative saturation value, then an affine map restores the statistics."""
    _check_p("alpha_dropout", p)
    x = _t(input)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    keep = _ops.stop_gradient(nn_ops.dropout(_ops.ones_like(x), p, True) * (1.0 - p))  # 1 kept, 0 dropped
    return _maybe_inplace("alpha_dropout", _alpha_masked, x, inplace, keep=keep, alpha_p=alpha_p, a=a, b=b)


def _alpha_masked(x, keep, alpha_p, a, b):
    return (x * keep + alpha_p * (1.0 - keep)) * a + b


# ------------------------------------------------------------------ PyTorch's in-place spellings
def elu_(input, alpha=1.0):
    """:func:`elu` written into ``input``."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    """:func:`leaky_relu` written into ``input``."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """:func:`hardtanh` written into ``input``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def selu_(input):
    """:func:`selu` written into ``input``."""
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    """:func:`celu` written into ``input``."""
    return celu(input, alpha, inplace=True)


def threshold_(input, threshold, value):
    """:func:`threshold` written into ``input``."""
    return _threshold_fn(input, threshold, value, inplace=True)


_threshold_fn = threshold  # (threshold_'s argument shadows the function's name)


# ------------------------------------------------------------------ randomized: rrelu, gumbel_softmax
def _rrelu(x, lower=1.0 / 8, upper=1.0 / 3, training=False):
    if not training:
        return _leaky_relu(x, (lower + upper) / 2)
    slopes = _ops.rand_like(x) * (upper - lower) + lower  # one U(lower, upper) slope per element
    return _ops.where(_ops.ge(x, 0), x, x * slopes)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """The randomized leaky ReLU, as ``torch.nn.functional.rrelu``: while ``training`` each
    negative element is scaled by its own slope drawn from U(lower, upper) (d2s's generator, so
    other numbers than PyTorch's), otherwise by the mean slope ``(lower + upper) / 2``."""
    if not 0 <= lower <= upper:
        raise ValueError(f"rrelu: expects 0 <= lower <= upper, got lower={lower}, upper={upper}")
    return _maybe_inplace("rrelu", _rrelu, input, inplace, lower=float(lower), upper=float(upper),
                          training=bool(training))


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """:func:`rrelu` written into ``input``."""
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax (concrete) distribution over ``dim``, as
    ``torch.nn.functional.gumbel_softmax``: ``softmax((logits + g) / tau)`` with Gumbel noise
    ``g = -log(E)``, E ~ Exp(1) (d2s's generator); with ``hard`` the one-hot of its maximum in
    the forward pass and the soft sample's gradient (straight-through)."""
    del eps  # (unused, as in PyTorch)
    x = _t(logits)
    gumbels = -_ops.log(_ops.empty_like(x).exponential_())
    y_soft = _ops.softmax((x + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = _ops.argmax(y_soft, dim, keepdim=True)
    y_hard = _ops.scatter(_ops.zeros_like(x), dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
