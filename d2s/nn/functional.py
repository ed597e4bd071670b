"""Functional forms of the layers (``import d2s.nn.functional as F``).

Everything here is written in d2s ops only (never ``.numpy()`` on an activation), so the same
code runs eagerly, gets gradients from the ops' rules, and builds a static program when its
inputs are symbolic.
"""
import math

from .. import ops as _ops
from ..ops import nn as nn_ops
from ..tensor import Tensor, tensor


def _static_shape(x):
    """Shape with ``None`` for dims known only when a program runs (reading ``x.shape`` of a
    symbolic tensor would add ops computing those dims)."""
    if not isinstance(x, Tensor):
        return tuple(getattr(x, "shape", ()))
    return tuple(x._data.shape) if not x.is_symbolic else tuple(x._var.type.shape)


def _axis(axis, dim):
    """PyTorch users write ``dim=``; d2s says ``axis=``."""
    return axis if dim is None else dim


# ------------------------------------------------------------------ activations
def relu(x):
    """``max(x, 0)`` element-wise (the same as :func:`d2s.relu`)."""
    return _ops.relu(x)


def tanh(x):
    """The hyperbolic tangent, element-wise (the same as :func:`d2s.tanh`)."""
    return _ops.tanh(x)


def sigmoid(x):
    """``1 / (1 + exp(-x))`` element-wise (the same as :func:`d2s.sigmoid`)."""
    return _ops.sigmoid(x)


_GELU_C = math.sqrt(2.0 / math.pi)


def gelu(x, approximate="none"):
    """Gaussian error linear unit, as PyTorch computes it: ``0.5 x (1 + erf(x / sqrt(2)))`` by
    default, or ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` with ``approximate='tanh'``.

    ``erf`` is composed of d2s ops (:func:`_erf`, accurate to 1.5e-7), so the exact form runs
    eagerly, in programs and in exports without an ``erf`` primitive.
    """
    if approximate == "none":
        return 0.5 * x * (1.0 + _erf(x * (1.0 / math.sqrt(2.0))))
    if approximate != "tanh":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return 0.5 * x * (1.0 + _ops.tanh(_GELU_C * (x + 0.044715 * (x * x * x))))


# Abramowitz & Stegun 7.1.26: erf(x) = 1 - t (a1 + t (a2 + ...)) exp(-x^2), t = 1 / (1 + p x)
# for x >= 0, odd in x; the absolute error is below 1.5e-7 (under float32's resolution of 1).
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _erf(x):
    a = _ops.abs(x)
    t = 1.0 / (1.0 + _ERF_P * a)
    poly = _ERF_A[4]
    for c in _ERF_A[3::-1]:
        poly = poly * t + c
    return _ops.sign(x) * (1.0 - poly * t * _ops.exp(-(a * a)))


def _implicit_softmax_dim(fn, x, dim, axis):
    """PyTorch's legacy rule when F.softmax gets no dim (0 for 0-, 1- and 3-d inputs, else 1),
    with its warning."""
    if dim is not None or axis is not None:
        return dim if axis is None else axis
    import warnings
    warnings.warn(f"Implicit dimension choice for {fn} has been deprecated. Change the call to include dim=X "
                  f"as an argument.", UserWarning, stacklevel=3)
    return 0 if len(_static_shape(x)) in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None, *, axis=None):
    """Softmax along ``dim`` (as ``torch.nn.functional.softmax``; see :func:`d2s.softmax`)."""
    return nn_ops.softmax(input, _implicit_softmax_dim("softmax", input, dim, axis), dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None, *, axis=None):
    """Log-softmax along ``dim`` (as ``torch.nn.functional.log_softmax``)."""
    return nn_ops.log_softmax(input, _implicit_softmax_dim("log_softmax", input, dim, axis), dtype)


def dropout(x, p=0.5, training=True):
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` while
    ``training``; the identity otherwise."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    return nn_ops.dropout(x, p, training)


# ------------------------------------------------------------------ linear layers
def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` with weight (out_features, in_features)."""
    if weight.ndim != 2:
        raise ValueError(f"linear: weight must be 2-d (out_features, in_features), got shape {tuple(weight.shape)}")
    xs = _static_shape(x)
    x_last, w_in = xs[-1] if xs else None, weight.shape[1]
    if x_last is not None and x_last != w_in:
        raise ValueError(f"linear: input has {x_last} features (shape {xs}) but the weight "
                         f"{tuple(weight.shape)} expects {w_in}")
    out = _ops.matmul(x, _ops.transpose(weight))
    return out if bias is None else out + bias


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the last ``len(normalized_shape)`` dims, then scale and shift."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(normalized_shape)
    xs = _static_shape(x)
    tail = xs[len(xs) - k:]
    if len(xs) < k or any(d is not None and d != n for d, n in zip(tail, normalized_shape)):
        raise ValueError(f"layer_norm: input shape {xs} does not end with normalized_shape "
                         f"{tuple(normalized_shape)}")
    axes = list(range(x.ndim - k, x.ndim))
    mu = _ops.mean(x, axis=axes, keepdims=True)
    d = x - mu
    var = _ops.mean(d * d, axis=axes, keepdims=True)
    out = d / _ops.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def embedding(ids, weight, padding_idx=None):
    """Rows of ``weight`` (num_embeddings, dim) picked by integer ``ids`` (any shape); rows
    picked by ``padding_idx`` pass no gradient to ``weight``, as in PyTorch."""
    out = nn_ops.embedding(ids, weight)
    if padding_idx is None:
        return out
    ids = _as_tensor(ids)
    keep = _ops.unsqueeze(_ops.ne(ids, int(padding_idx) % weight.shape[0]), -1)
    return _ops.where(keep, out, _ops.stop_gradient(out))


# ------------------------------------------------------------------ convolution and pooling
def conv2d(x, weight, bias=None, stride=1, padding=0, groups=1):
    """2-d cross-correlation of NCHW (or CHW) ``x`` with OIHW ``weight``, plus a per-channel
    bias; ``padding`` may also be ``'valid'`` or ``'same'``."""
    return nn_ops.conv2d(x, weight, bias, stride=stride, padding=padding, groups=groups)


def max_pool2d(x, kernel_size, stride=None, padding=0):
    """Max over ``kernel_size`` windows of NCHW ``x`` (stride defaults to the kernel size)."""
    return nn_ops.max_pool2d(x, kernel_size, stride=stride, padding=padding)


def flatten(x, start_dim=1, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` (by default all but the batch dim)."""
    if not x.is_symbolic or x.ndim == 0:
        return _ops.flatten(x, start_dim, end_dim)
    # Symbolic: the static shape has None for dims known only at run time; at most one
    # dim of the target may be unknown (-1), typically the batch dim.
    static = list(x._var.type.shape)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    merged = static[s:e + 1]
    n = None if None in merged else math.prod(merged)
    target = [-1 if d is None else d for d in static[:s]] + [-1 if n is None else n] + \
             [-1 if d is None else d for d in static[e + 1:]]
    if target.count(-1) > 1:
        raise ValueError(f"flatten: input {x._var.type} has more than one dim unknown until run time after "
                         f"merging dims {s}..{e}; give the program input more static dims (InputSpec)")
    return _ops.reshape(x, target)


# ------------------------------------------------------------------ recurrent cells
def rnn_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None, nonlinearity="tanh"):
    """One Elman RNN step: ``act(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    pre = linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh)
    if nonlinearity == "tanh":
        return _ops.tanh(pre)
    if nonlinearity == "relu":
        return _ops.relu(pre)
    raise ValueError(f"rnn_cell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")


def gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step with PyTorch's gate layout (reset, update, new) in the stacked weights:

    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z = sigmoid(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.
    """
    hidden = w_hh.shape[1]
    gi = _ops.split(linear(x, w_ih, b_ih), [hidden] * 3, axis=-1)
    gh = _ops.split(linear(h, w_hh, b_hh), [hidden] * 3, axis=-1)
    r = _ops.sigmoid(gi[0] + gh[0])
    z = _ops.sigmoid(gi[1] + gh[1])
    n = _ops.tanh(gi[2] + r * gh[2])
    return (1.0 - z) * n + z * h


# ------------------------------------------------------------------ losses
def _as_tensor(t):
    return t if isinstance(t, Tensor) else tensor(t)


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return _ops.mean(loss)
    if reduction == "sum":
        return _ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def mse_loss(input, target, reduction="mean"):
    """Mean (or sum) of squared differences."""
    a, b = _static_shape(input), _static_shape(target)
    mismatch = len(a) != len(b) or any(i is not None and j is not None and i != j for i, j in zip(a, b))
    if isinstance(target, Tensor) and isinstance(input, Tensor) and mismatch:
        raise ValueError(f"mse_loss: input shape {a} and target shape {b} "
                         "differ; reshape one of them (a silent broadcast would compute the wrong loss)")
    d = input - target
    return _reduce(d * d, reduction, "mse_loss")


def nll_loss(log_probs, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of integer class ``target`` under ``log_probs`` (class dim 1),
    as PyTorch computes it: entries whose target is ``ignore_index`` contribute nothing, and
    ``weight`` (C,) scales each entry by its class's weight; ``'mean'`` divides by the summed
    weights of the entries counted."""
    if isinstance(weight, str):  # the old positional form nll_loss(logp, target, 'sum')
        weight, reduction = None, weight
    target = _as_tensor(target)
    if log_probs.ndim == 1:  # a single sample of C classes
        log_probs, target = _ops.unsqueeze(log_probs, 0), _ops.unsqueeze(target, 0)
    if target.dtype.is_floating_point:
        raise TypeError(f"nll_loss: target must hold integer class ids, got {target.dtype}; "
                        "for class probabilities use cross_entropy with a float target")
    if target.ndim != log_probs.ndim - 1:
        raise ValueError(f"nll_loss: target shape {tuple(target.shape)} must be the input shape "
                         f"{tuple(log_probs.shape)} without the class dim 1")
    valid = _ops.ne(target, ignore_index)
    safe = _ops.where(valid, target, 0)  # an ignored id (-100) must not index the class dim
    picked = -_ops.squeeze(nn_ops.gather(log_probs, 1, _ops.unsqueeze(safe, 1)), 1)
    w = _ops.cast(valid, log_probs.dtype)
    if weight is not None:
        w = w * nn_ops.embedding(safe, _as_tensor(weight))
    loss = picked * w
    if reduction == "mean":
        return _ops.sum(loss) / _ops.sum(w)
    return _reduce(loss, reduction, "nll_loss")


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits ``input`` (N, C) or (N, C, ...) against integer class ids
    ``target`` (N,) or (N, ...), or against class probabilities shaped like ``input``.

    ``weight``, ``ignore_index`` and ``label_smoothing`` mean what they mean in PyTorch.
    Computed through ``log_softmax``, so large logits neither overflow nor lose precision.
    """
    if isinstance(weight, str):  # the old positional form cross_entropy(x, t, 'sum')
        weight, reduction = None, weight
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must lie in [0, 1], got {label_smoothing}")
    target = _as_tensor(target)
    axis = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, axis=axis)
    n_classes = _static_shape(input)[axis]
    w_shape = [1] * input.ndim
    w_shape[axis] = -1
    cw = None if weight is None else _ops.reshape(_as_tensor(weight), w_shape)
    if isinstance(target, Tensor) and target.dtype.is_floating_point:
        if label_smoothing:
            target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
        terms = target * logp if cw is None else target * logp * cw
        return _reduce(-_ops.sum(terms, axis=axis), reduction, "cross_entropy")
    loss = nll_loss(logp, target, weight, ignore_index, reduction)
    if not label_smoothing:
        return loss
    # PyTorch's smoothing: (1 - s) * nll + s / C * (-sum_c w_c log p_c), ignored entries dropped
    if input.ndim == 1:
        logp, target = _ops.unsqueeze(logp, 0), _ops.unsqueeze(target, 0)
        cw = None if cw is None else _ops.reshape(cw, [1, -1])
    valid = _ops.ne(target, ignore_index)
    smooth = -_ops.sum(logp if cw is None else logp * cw, axis=1)
    smooth = _ops.where(valid, smooth, 0.0)
    if reduction == "mean":
        if weight is None:
            denom = _ops.sum(_ops.cast(valid, logp.dtype))
        else:
            denom = _ops.sum(nn_ops.embedding(_ops.where(valid, target, 0), _as_tensor(weight)) *
                             _ops.cast(valid, logp.dtype))
        smooth = _ops.sum(smooth) / denom
    else:
        smooth = _reduce(smooth, reduction, "cross_entropy")
    return (1.0 - label_smoothing) * loss + (label_smoothing / n_classes) * smooth


def pad(input, pad, mode="constant", value=0):
    """``torch.nn.functional.pad``: see :func:`d2s.pad` (``pad`` starts from the last dim)."""
    return _ops.pad(input, pad, mode=mode, value=value)
