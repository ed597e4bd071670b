"""Parameter initializers (PyTorch's ``torch.nn.init``), filling tensors in place.

Draws come from d2s's random generator, so ``d2s.manual_seed(n)`` makes a freshly built model
repeatable. They call the random kernels directly (not through dispatch): initialization is
never recorded by autograd, a tracer or a program being built.
"""
import math

from d2s_runtime.device import xp_of

from ..dispatch import apply_kernel


def _fill(t, name, **attrs):
    data = t._data
    if data is None:
        raise TypeError("nn.init works on concrete tensors, not symbolic ones")
    xp = xp_of(data)
    draw = apply_kernel(name, xp, shape=list(data.shape), dtype=data.dtype.name, **attrs)
    data[...] = draw
    t._version += 1
    return t


def calculate_fan_in_and_fan_out(t):
    """(fan_in, fan_out) of a weight: dims 1 and 0 times the receptive field (conv kernels)."""
    shape = t.shape
    if len(shape) < 2:
        raise ValueError(f"fan in and fan out need a tensor with at least 2 dims, got shape {tuple(shape)}")
    receptive = 1
    for d in shape[2:]:
        receptive *= d
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (as in PyTorch)."""
    if nonlinearity in ("linear", "sigmoid", "conv1d", "conv2d", "conv3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def uniform_(t, a=0.0, b=1.0):
    """Fill ``t`` with draws from U(a, b)."""
    _fill(t, "rand")
    t._data *= (b - a)
    t._data += a
    return t


def normal_(t, mean=0.0, std=1.0):
    """Fill ``t`` with draws from N(mean, std**2)."""
    _fill(t, "randn")
    t._data *= std
    t._data += mean
    return t


def constant_(t, value):
    t._data[...] = value
    t._version += 1
    return t


def zeros_(t):
    return constant_(t, 0)


def ones_(t):
    return constant_(t, 1)


def _fan(t, mode):
    fan_in, fan_out = calculate_fan_in_and_fan_out(t)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    return fan_in if mode == "fan_in" else fan_out


def kaiming_uniform_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """He-uniform: U(-b, b) with b = gain * sqrt(3 / fan)."""
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(t, mode))
    return uniform_(t, -bound, bound)


def kaiming_normal_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(t, mode))
    return normal_(t, 0.0, std)


def xavier_uniform_(t, gain=1.0):
    fan_in, fan_out = calculate_fan_in_and_fan_out(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound)


def xavier_normal_(t, gain=1.0):
    fan_in, fan_out = calculate_fan_in_and_fan_out(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))
