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


# ------------------------------------------------------------------ layers' functional forms
# (activations, linear, lookups, recurrent cells, losses, attention: one module each)
from ._f_activation import (alpha_dropout, celu, dropout, dropout1d, dropout2d, dropout3d, elu, elu_,  # noqa: E402,F401
                            gelu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, hardtanh_, leaky_relu,
                            leaky_relu_, log_softmax, logsigmoid, mish, prelu, relu, relu6, relu_, selu, sigmoid,
                            silu, softmax, softmin, softplus, softshrink, softsign, tanh, tanhshrink, threshold,
                            threshold_)
from ._f_linear import bilinear, linear  # noqa: E402,F401
from ._f_loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss,  # noqa: E402,F401
                      cosine_similarity, cross_entropy, gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div,
                      l1_loss, margin_ranking_loss, mse_loss, multilabel_soft_margin_loss, nll_loss, normalize,
                      pairwise_distance, poisson_nll_loss, smooth_l1_loss, soft_margin_loss, triplet_margin_loss)
from ._f_recurrent import gru_cell, lstm_cell, rnn_cell  # noqa: E402,F401
from ._f_sparse import embedding, embedding_bag, one_hot  # noqa: E402,F401
from ._f_attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402,F401


# ------------------------------------------------------------------ linear layers
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


def pad(input, pad, mode="constant", value=0):
    """``torch.nn.functional.pad``: see :func:`d2s.pad` (``pad`` starts from the last dim)."""
    return _ops.pad(input, pad, mode=mode, value=value)
