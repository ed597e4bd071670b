"""Functional forms of the layers (``import d2s.nn.functional as F``).

Everything here is written in d2s ops only (never ``.numpy()`` on an activation), so the same
code runs eagerly, gets gradients from the ops' rules, and builds a static program when its
inputs are symbolic.
"""
import math

from .. import ops as _ops
from ..ops import nn as nn_ops
from ..ops.support import as_tensor as _as_tensor
from ..tensor import Tensor, tensor


def _static_shape(x):
    """Shape with ``None`` for dims known only when a program runs (reading ``x.shape`` of a
    symbolic tensor would add ops computing those dims)."""
    if not isinstance(x, Tensor):
        return tuple(getattr(x, "shape", ()))
    return tuple(x.array.shape) if not x.is_symbolic else tuple(x._var.type.shape)


def _axis(axis, dim):
    """PyTorch users write ``dim=``; d2s says ``axis=``."""
    return axis if dim is None else dim


# ------------------------------------------------------------------ layers' functional forms
# (activations, linear, lookups, recurrent cells, losses, attention: one module each)
from ._f_activation import (alpha_dropout, celu, celu_, dropout, dropout1d, dropout2d, dropout3d, elu, elu_,  # noqa: E402,F401
                            gelu, glu, gumbel_softmax, hardshrink, hardsigmoid, hardswish, hardtanh, hardtanh_,
                            leaky_relu, leaky_relu_, log_softmax, logsigmoid, mish, prelu, relu, relu6, relu_,
                            rrelu, rrelu_, selu, selu_, sigmoid,
                            silu, softmax, softmin, softplus, softshrink, softsign, tanh, tanhshrink, threshold,
                            threshold_)
from ._f_linear import bilinear, linear  # noqa: E402,F401
from ._f_loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss,  # noqa: E402,F401
                      cosine_similarity, cross_entropy, gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div,
                      l1_loss, margin_ranking_loss, mse_loss, multi_margin_loss, multilabel_margin_loss,
                      multilabel_soft_margin_loss, nll_loss, normalize, pairwise_distance, poisson_nll_loss,
                      smooth_l1_loss, soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss)
from ._f_recurrent import gru_cell, lstm_cell, rnn_cell  # noqa: E402,F401
from ._f_sparse import embedding, embedding_bag, one_hot  # noqa: E402,F401
from ._f_attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402,F401
from ._f_sampling import affine_grid, grid_sample  # noqa: E402,F401
from ._f_volume import (adaptive_avg_pool3d, adaptive_max_pool3d, avg_pool3d, conv3d,  # noqa: E402,F401
                        conv_transpose3d, max_pool3d)


# ------------------------------------------------------------------ linear layers


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


# ==================================================================================================
# Convolution, pooling, resampling, padding and normalization (PyTorch's signatures): the
# primitives' wrappers live in their op families (d2s/ops/conv.py, pooling.py), the normalization
# functions in _functional_norm.py.
# ==================================================================================================
from ..ops.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d  # noqa: E402
from ..ops.support import col2im as _col2im, im2col as _im2col  # noqa: E402
from ..ops.pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,  # noqa: E402
                           adaptive_max_pool2d, avg_pool1d, avg_pool2d, channel_shuffle, interpolate, max_pool1d,
                           max_pool2d, pixel_shuffle, pixel_unshuffle)
from ..ops.linalg import pdist  # noqa: E402,F401
from ._functional_norm import (batch_norm, group_norm, instance_norm, layer_norm, local_response_norm,  # noqa: E402
                               rms_norm)


def _lp_pool(avg_pool, input, norm_type, kernel_size, stride, ceil_mode, window):
    # PyTorch's composition: the average of x ** p over each window, times its size, to the 1/p
    # (a negative average, from an odd p, is clamped to 0 first)
    x = _as_tensor(input)
    out = avg_pool(_ops.pow(x, norm_type), kernel_size, stride, 0, ceil_mode)
    out = _ops.sign(out) * _ops.relu(_ops.abs(out))
    return _ops.pow(out * window, 1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The ``norm_type``-norm of each window of (N, C, L) or (C, L) ``input``, as
    ``torch.nn.functional.lp_pool1d``: ``(sum over the window of x ** p) ** (1 / p)`` (inf: the
    maximum is not supported, as PyTorch's power form)."""
    return _lp_pool(avg_pool1d, input, float(norm_type), kernel_size, stride, ceil_mode, int(kernel_size))


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The ``norm_type``-norm of each window of (N, C, H, W) or (C, H, W) ``input``, as
    ``torch.nn.functional.lp_pool2d`` (see :func:`lp_pool1d`)."""
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    return _lp_pool(avg_pool2d, input, float(norm_type), kernel_size, stride, ceil_mode, kh * kw)


def _unpool_output_size(name, in_sizes, kernel, stride, padding, output_size):
    """PyTorch's ``_unpool_output_size``: the default (in - 1) * stride + kernel - 2 * padding,
    or ``output_size`` (its last dims) when within a stride of it."""
    default = [(i - 1) * s + k - 2 * p for i, k, s, p in zip(in_sizes, kernel, stride, padding)]
    if output_size is None:
        return default
    out = [int(o) for o in output_size]
    if len(out) == len(kernel) + 2:
        out = out[2:]
    if len(out) != len(kernel):
        raise ValueError(f"{name}: output_size should be a sequence containing {len(kernel)} or {len(kernel) + 2} "
                         f"elements, but it has a length of '{len(out)}'")
    for d, (o, base, s) in enumerate(zip(out, default, stride)):
        if not base - s < o < base + s:
            raise ValueError(f'invalid output_size "{tuple(out)}" (dim {d} must be between {base - s} and '
                             f'{base + s})')
    return out


def _max_unpool(name, k, input, indices, kernel_size, stride, padding, output_size):
    x, idx = _as_tensor(input), _as_tensor(indices)
    as_k = (lambda v: [int(v)] * k if isinstance(v, int) else [int(e) for e in v])
    kernel = as_k(kernel_size)
    stride = kernel if stride is None else as_k(stride)
    padding = as_k(padding)
    shape = _static_shape(x)
    if x.ndim not in (k + 1, k + 2) or None in shape[-k - 1:]:
        raise ValueError(f"{name}: expects a {k + 1}-d (unbatched) or {k + 2}-d input with its channel and spatial "
                         f"sizes known, got {shape}")
    if tuple(_static_shape(idx)) != tuple(shape):
        raise ValueError(f"{name}: indices must have the input's shape {shape}, got {tuple(_static_shape(idx))}")
    out = _unpool_output_size(name, shape[-k:], kernel, stride, padding, output_size)
    lead = [-1 if d is None else d for d in shape[:-k]]
    flat_x, flat_i = _ops.reshape(x, lead + [-1]), _ops.reshape(idx, lead + [-1])
    zeros = _ops.zeros_like(flat_x[..., :1]).expand(*([-1] * len(lead)), math.prod(out))
    return _ops.reshape(_ops.scatter(zeros, -1, flat_i, flat_x), lead + out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of ``max_pool1d(..., return_indices=True)``: each value put back at its
    index, zeros elsewhere, as ``torch.nn.functional.max_unpool1d`` ((N, C, L) or (C, L))."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of ``max_pool2d(..., return_indices=True)``: each value put back at its
    index (flat within its (H, W) plane), zeros elsewhere, as ``torch.nn.functional.max_unpool2d``
    ((N, C, H, W) or (C, H, W); the output's size as PyTorch computes it, or ``output_size``)."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The ``norm_type``-norm of each window of (N, C, D, H, W) or (C, D, H, W) ``input``, as
    ``torch.nn.functional.lp_pool3d`` (see :func:`lp_pool1d`)."""
    kd, kh, kw = (kernel_size,) * 3 if isinstance(kernel_size, int) else tuple(kernel_size)
    return _lp_pool(avg_pool3d, input, float(norm_type), kernel_size, stride, ceil_mode, kd * kh * kw)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding ``kernel_size`` windows of (N, C, H, W) or (C, H, W) ``input`` as columns,
    as ``torch.nn.functional.unfold``: (N, C*kH*kW, L) with L windows, rows ordered
    ``c * kH * kW + i * kW + j``."""
    x = _as_tensor(input)
    if x.ndim == 3:
        return _ops.squeeze(_im2col(_ops.unsqueeze(x, 0), kernel_size, dilation, padding, stride), 0)
    if x.ndim != 4:
        raise ValueError(f"unfold: expected a 3-d (unbatched) or 4-d (batched) input, got shape {tuple(x.shape)}")
    return _im2col(x, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum (N, C*kH*kW, L) or (C*kH*kW, L) columns back into an (N, C, H, W) image with
    (H, W) = ``output_size``, as ``torch.nn.functional.fold`` (the adjoint of :func:`unfold`)."""
    x = _as_tensor(input)
    if x.ndim == 2:
        return _ops.squeeze(_col2im(_ops.unsqueeze(x, 0), output_size, kernel_size, dilation, padding, stride), 0)
    if x.ndim != 3:
        raise ValueError(f"fold: expected a 2-d (unbatched) or 3-d (batched) input, got shape {tuple(x.shape)}")
    return _col2im(x, output_size, kernel_size, dilation, padding, stride)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The older name of :func:`interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """:func:`interpolate` with mode 'nearest'."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """:func:`interpolate` with mode 'bilinear' and ``align_corners=True`` (as PyTorch's alias)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
