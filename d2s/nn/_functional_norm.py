"""The normalization functions of ``d2s.nn.functional``: ``batch_norm``, ``instance_norm``,
``layer_norm``, ``group_norm``, ``rms_norm`` and ``local_response_norm``, with
PyTorch's signatures and arithmetic.

The first four are the ``normalize`` primitive (``d2s/ops/norm.py``) plus their scale and
shift; running statistics are updated in place as PyTorch does (eagerly; inside ``to_static``
the ``nn`` layers write them back after each call, see ``d2s/nn/normalization.py``).
"""
import numpy as np

from .. import ops as _ops
from .._state import STATE
from ..autograd import no_grad
from ..dispatch import apply
from ..ops.support import normalize_moments as _normalize
from ..ops.pooling import avg_pool2d
from ..tensor import Tensor, tensor


def _as_tensor(t):
    return t if isinstance(t, Tensor) else tensor(t)


def _shape(x):
    return tuple(x.array.shape) if not x.is_symbolic else tuple(x._var.type.shape)


def _channel_view(t, ndim):
    """A per-channel (C,) tensor shaped to broadcast against (N, C, *) of ``ndim`` dims."""
    return _ops.reshape(t, [1, -1] + [1] * (ndim - 2)) if ndim > 2 else t


def _affine(y, weight, bias, ndim):
    if weight is not None:
        y = y * _channel_view(_as_tensor(weight), ndim)
    if bias is not None:
        y = y + _channel_view(_as_tensor(bias), ndim)
    return y


def _count(shape, axes):
    n = 1
    for a in axes:
        if shape[a] is None:
            return None
        n *= shape[a]
    return n


def _reshape(x, shape, rest):
    """x as (N, *rest): with only N unknown a plain reshape (-1 for N), which every backend
    lowers; otherwise N is read from x when the program runs."""
    if all(d is not None for d in shape[1:]):
        if -1 in rest:
            known = 1
            for d in rest:
                known *= d if d != -1 else 1
            total = 1
            for d in shape[1:]:
                total *= d
            rest = [total // known if d == -1 else d for d in rest]
        return _ops.reshape(x, [-1 if shape[0] is None else shape[0]] + list(rest))
    return _ops.reshape(x, [x.shape[0]] + list(rest))


def _reshape_back(y, x, shape):
    """y reshaped to x's shape (see _reshape)."""
    if all(d is not None for d in shape[1:]):
        return _ops.reshape(y, [-1 if shape[0] is None else shape[0]] + list(shape[1:]))
    return apply("reshape_like", y, _ops.stop_gradient(x))


# ------------------------------------------------------------------ batch norm
def batch_norm_train(x, weight, bias, eps, op="batch_norm"):
    """Batch normalization with the batch's statistics: (output, batch mean (C,), unbiased batch
    variance (C,)); the statistics carry no gradient (they only feed running averages)."""
    x = _as_tensor(x)
    shape = _shape(x)
    if len(shape) < 2:
        raise ValueError(f"{op}: expected an input of at least 2 dims (N, C, *), got shape {shape}")
    axes = [0] + list(range(2, len(shape)))
    n = _count(shape, axes)
    if n == 1:
        raise ValueError(f"{op}: expected more than 1 value per channel when training, got input size {shape}")
    y, mean, var = _normalize(x, axes, eps)
    out = _affine(y, weight, bias, len(shape))
    mean = _ops.stop_gradient(_ops.reshape(mean, [-1]))
    var = _ops.stop_gradient(_ops.reshape(var, [-1]))
    if n is None:  # a dim known only when the program runs
        n = _ops.cast(_ops.sum(_ops.ones_like(_ops.stop_gradient(x)), axis=axes), var.dtype)
        return out, mean, var * n / (n - 1)
    return out, mean, var * (n / (n - 1))


def batch_norm_eval(x, running_mean, running_var, weight, bias, eps):
    """``(x - running_mean) / sqrt(running_var + eps) * weight + bias`` as one scale and one
    shift per channel (two full-size ops)."""
    x = _as_tensor(x)
    nd = len(_shape(x))
    std = _ops.sqrt(_as_tensor(running_var) + eps)
    # weight / std rather than (1 / std) * weight: onnxruntime 1.32 rejects Mul(Div(1, s), Identity(w))
    scale = 1.0 / std if weight is None else _as_tensor(weight) / std
    shift = -_as_tensor(running_mean) * scale
    if bias is not None:
        shift = shift + _as_tensor(bias)
    return x * _channel_view(scale, nd) + _channel_view(shift, nd)


def running_average(running, batch, momentum):
    """PyTorch's running-statistics update ``(1 - momentum) * running + momentum * batch``."""
    return running * (1.0 - momentum) + batch * momentum


def _write_in_place(t, value, op):
    if STATE.builder is not None:
        raise RuntimeError(
            f"{op}(training=True) inside to_static cannot update running statistics passed as tensors (a program "
            "cannot write into values it reads from outside); use the nn layer (nn.BatchNorm2d, "
            "nn.InstanceNorm2d, ...), whose running statistics to_static writes back after each call")
    with no_grad():
        t.copy_(value)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch normalization of (N, C, *) ``input`` over every dim but the channels (dim 1), as
    ``torch.nn.functional.batch_norm``.

    Args:
        running_mean, running_var: (C,) running statistics or None. Used when not ``training``;
            updated in place when ``training``: ``(1 - momentum) * running + momentum * batch``,
            the variance unbiased.
        weight, bias: (C,) scale and shift, or None.
        training: normalize with the batch's statistics (else with the running ones).

    Returns:
        The normalized tensor, shaped like ``input``.
    """
    if training or running_mean is None or running_var is None:
        out, mean, var = batch_norm_train(input, weight, bias, eps)
        if training and running_mean is not None:
            _write_in_place(running_mean, running_average(running_mean, mean, momentum), "batch_norm")
        if training and running_var is not None:
            _write_in_place(running_var, running_average(running_var, var, momentum), "batch_norm")
        return out
    return batch_norm_eval(input, running_mean, running_var, weight, bias, eps)


# ------------------------------------------------------------------ instance norm
def instance_norm_train(x, weight, bias, eps):
    """Instance normalization with each instance's statistics: (output, mean over the batch of
    the instance means (C,), of the unbiased instance variances (C,)), as PyTorch averages them
    into the running statistics."""
    x = _as_tensor(x)
    shape = _shape(x)
    if len(shape) < 3:
        raise ValueError(f"instance_norm: expected an input of at least 3 dims (N, C, *), got shape {shape}")
    axes = list(range(2, len(shape)))
    n = _count(shape, axes)
    if n == 1:
        raise ValueError(f"instance_norm: expected more than 1 spatial element when training, got input size {shape}")
    y, mean, var = _normalize(x, axes, eps)
    out = _affine(y, weight, bias, len(shape))
    flat = [-1] if shape[1] is None else [shape[1]]
    mean = _ops.stop_gradient(_ops.reshape(_ops.mean(mean, axis=[0]), flat))
    var = _ops.stop_gradient(_ops.reshape(_ops.mean(var, axis=[0]), flat))
    if n is None:
        n = _ops.cast(_ops.sum(_ops.ones_like(_ops.stop_gradient(x)), axis=axes), var.dtype)
        n = _ops.reshape(_ops.mean(n, axis=[0]), flat)
        return out, mean, var * n / (n - 1)
    return out, mean, var * (n / (n - 1))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Instance normalization of (N, C, *) ``input``: each (sample, channel) over its spatial
    dims, as ``torch.nn.functional.instance_norm``; with ``use_input_stats=False`` the running
    statistics normalize instead, and with it they are updated in place (averaged over the batch)."""
    if use_input_stats or running_mean is None or running_var is None:
        out, mean, var = instance_norm_train(input, weight, bias, eps)
        if use_input_stats and running_mean is not None:
            _write_in_place(running_mean, running_average(running_mean, mean, momentum), "instance_norm")
        if use_input_stats and running_var is not None:
            _write_in_place(running_var, running_average(running_var, var, momentum), "instance_norm")
        return out
    return batch_norm_eval(input, running_mean, running_var, weight, bias, eps)


# ------------------------------------------------------------------ layer norm, group norm
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the last ``len(normalized_shape)`` dims, then scale by ``weight`` and
    shift by ``bias`` (both shaped ``normalized_shape``), as ``torch.nn.functional.layer_norm``."""
    x = _as_tensor(input)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(d) for d in normalized_shape)
    k = len(normalized_shape)
    xs = _shape(x)
    tail = xs[len(xs) - k:]
    if len(xs) < k or any(d is not None and d != n for d, n in zip(tail, normalized_shape)):
        raise ValueError(f"layer_norm: input shape {xs} does not end with normalized_shape {normalized_shape}")
    y = _normalize(x, list(range(len(xs) - k, len(xs))), eps)[0]
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize (N, C, *) ``input`` over each group of ``C / num_groups`` channels and the
    spatial dims, then scale and shift per channel, as ``torch.nn.functional.group_norm``."""
    x = _as_tensor(input)
    shape = _shape(x)
    if len(shape) < 2:
        raise ValueError(f"group_norm: expected an input of at least 2 dims (N, C, *), got shape {shape}")
    g = int(num_groups)
    if shape[1] is not None and shape[1] % g:
        raise ValueError(f"group_norm: expected the number of channels ({shape[1]}) to be divisible by num_groups "
                         f"({g})")
    y = _normalize(_reshape(x, shape, [g, -1]), [2], eps)[0]
    return _affine(_reshape_back(y, x, shape), weight, bias, len(shape))


# ------------------------------------------------------------------ rms norm, local response norm
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last ``len(normalized_shape)`` dims, as
    ``torch.nn.functional.rms_norm`` (``eps=None``: the machine epsilon of ``input``'s dtype)."""
    x = _as_tensor(input)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(normalized_shape)
    xs = _shape(x)
    if len(xs) < k or any(d is not None and d != int(n) for d, n in zip(xs[len(xs) - k:], normalized_shape)):
        raise ValueError(f"rms_norm: input shape {xs} does not end with normalized_shape {tuple(normalized_shape)}")
    if eps is None:
        eps = float(np.finfo(np.dtype(str(x.dtype))).eps)
    ms = _ops.mean(x * x, axis=list(range(len(xs) - k, len(xs))), keepdims=True)
    y = x * (1.0 / _ops.sqrt(ms + eps))
    return y if weight is None else y * weight


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalization across channels, as ``torch.nn.functional.local_response_norm``:
    ``x / (k + alpha * mean of x^2 over the `size` neighbouring channels) ** beta`` (the
    window zero-padded, ``size // 2`` channels before)."""
    x = _as_tensor(input)
    shape = _shape(x)
    if len(shape) < 3:
        raise ValueError(f"local_response_norm: expected a 3-d or higher input, got shape {shape}")
    size = int(size)
    sq = x * x
    # channels as the height of a 1-wide image: (N, 1, C, rest), zero-padded, averaged over size
    if shape[1] is None:
        flat = _ops.reshape(sq, [x.shape[0], 1, x.shape[1], -1])
    else:
        flat = _reshape(sq, shape, [1, shape[1], -1])
    flat = _ops.pad(flat, [0, 0, size // 2, (size - 1) // 2])
    div = _reshape_back(avg_pool2d(flat, (size, 1), stride=1), x, shape)
    return x / _ops.pow(div * alpha + k, beta)
