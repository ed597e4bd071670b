"""Parameter initializers (PyTorch's ``torch.nn.init``), filling tensors in place.

Draws come from d2s's random generator, so ``d2s.manual_seed(n)`` makes a freshly built model
repeatable. They call the random kernels directly (not through dispatch): initialization is
never recorded by autograd, a tracer or a program being built. The distributions (bounds,
standard deviations, gains, fans) are PyTorch's; the draws themselves are d2s's own.
"""
import math
import warnings

import numpy as np
from d2s_runtime.device import to_host, xp_of

from ..dispatch import apply_kernel

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_"]


def _data(t):
    data = t.array
    if data is None:
        raise TypeError("nn.init works on concrete tensors, not symbolic ones: initialize parameters in __init__, "
                        "outside of to_static")
    return data


def _draw(t, name):
    data = _data(t)
    return apply_kernel(name, xp_of(data), shape=list(data.shape), dtype=data.dtype.name)


def _write(t, value):
    data = _data(t)
    data[...] = value
    t._version += 1
    return t


def _no_op(t):
    if 0 in tuple(t.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
        return True
    return False


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight: dims 1 and 0 times the receptive field (conv kernels)."""
    shape = tuple(tensor.shape)
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for d in shape[2:]:
        receptive *= d
    return shape[1] * receptive, shape[0] * receptive


calculate_fan_in_and_fan_out = _calculate_fan_in_and_fan_out  # the name d2s used before


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity``, as PyTorch's table: 1 for linear, convolutions
    and sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu
    (``param``: the slope, default 0.01), 3/4 for selu."""
    linear_fns = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d")
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill ``tensor`` with draws from U(a, b)."""
    _no_generator(generator)
    draw = _draw(tensor, "rand")
    return _write(tensor, draw * (b - a) + a)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill ``tensor`` with draws from N(mean, std**2)."""
    _no_generator(generator)
    draw = _draw(tensor, "randn")
    return _write(tensor, draw * std + mean)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill ``tensor`` with draws from N(mean, std**2) truncated to [a, b] (draws outside are
    drawn again, which samples exactly that distribution)."""
    _no_generator(generator)
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)
    data = _data(tensor)
    xp = xp_of(data)
    out = np.empty(data.shape, dtype=data.dtype)
    todo = np.ones(data.shape, dtype=bool)
    for _ in range(1000):
        if not todo.any():
            break
        draw = to_host(apply_kernel("randn", xp, shape=list(data.shape), dtype=data.dtype.name)) * std + mean
        ok = todo & (draw >= a) & (draw <= b)
        out[ok] = draw[ok]
        todo &= ~ok
    if todo.any():  # [a, b] holds almost no probability: PyTorch's clamp as a last resort
        out[todo] = np.clip(mean, a, b)
    return _write(tensor, out if xp is np else xp.asarray(out))


def constant_(tensor, val):
    """Fill ``tensor`` with ``val``."""
    return _write(tensor, val)


def ones_(tensor):
    return constant_(tensor, 1)


def zeros_(tensor):
    return constant_(tensor, 0)


def eye_(tensor):
    """The identity matrix in a 2-d ``tensor`` (ones on the diagonal of a non-square one)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    data = _data(tensor)
    return _write(tensor, xp_of(data).eye(*data.shape, dtype=data.dtype))


def dirac_(tensor, groups=1):
    """The Dirac delta in a 3-, 4- or 5-d convolution weight: each of the first channels passes
    its input channel through unchanged (per group)."""
    nd = tensor.ndim
    if nd not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tuple(tensor.shape)
    if shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = shape[0] // groups
    min_dim = min(out_per_group, shape[1])
    w = np.zeros(shape, dtype=_data(tensor).dtype)
    centre = tuple(s // 2 for s in shape[2:])
    for g in range(groups):
        for d in range(min_dim):
            w[(g * out_per_group + d, d) + centre] = 1
    xp = xp_of(_data(tensor))
    return _write(tensor, w if xp is np else xp.asarray(w))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot-uniform: U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot-normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He-uniform: U(-b, b) with b = gain * sqrt(3 / fan) (``mode`` picks fan_in or fan_out,
    ``a`` is leaky_relu's slope)."""
    if _no_op(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He-normal: N(0, std**2) with std = gain / sqrt(fan)."""
    if _no_op(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix, from the QR decomposition of a normal draw (signs fixed by
    R's diagonal, as PyTorch), times ``gain``; dims after the first are flattened."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    _no_generator(generator)
    data = _data(tensor)
    rows = data.shape[0]
    cols = data.size // rows
    flat = to_host(apply_kernel("randn", xp_of(data), shape=[rows, cols], dtype="float64"))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    out = (q * gain).reshape(data.shape).astype(data.dtype)
    xp = xp_of(data)
    return _write(tensor, out if xp is np else xp.asarray(out))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-d ``tensor`` drawn from N(0, std**2) with a ``sparsity`` fraction of each column zero."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    normal_(tensor, 0.0, std, generator)
    rows, cols = tuple(tensor.shape)
    num_zeros = int(math.ceil(sparsity * rows))
    data = to_host(_data(tensor)).copy()
    keys = to_host(apply_kernel("rand", xp_of(_data(tensor)), shape=[rows, cols], dtype="float64"))
    for c in range(cols):  # a random permutation of each column's rows, from d2s's generator
        data[np.argsort(keys[:, c])[:num_zeros], c] = 0
    xp = xp_of(_data(tensor))
    return _write(tensor, data if xp is np else xp.asarray(data))


def _no_generator(generator):
    if generator is not None:
        raise TypeError("nn.init: generator= is not supported; seed d2s's generator with d2s.manual_seed(n)")


def _deprecated(fn):
    def old(*args, **kwargs):
        warnings.warn(f"`nn.init.{fn.__name__[:-1]}` is now deprecated in favor of `nn.init.{fn.__name__}`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    old.__name__ = fn.__name__[:-1]
    old.__doc__ = f"Deprecated alias of :func:`{fn.__name__}`."
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
