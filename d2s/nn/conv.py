"""Convolution and pooling layers on NCHW images: ``Conv2d`` and ``MaxPool2d``."""
import math

from . import functional as F
from . import init
from ._param import new_parameter
from .module import Module


def _pair(v):
    return (int(v[0]), int(v[1])) if isinstance(v, (list, tuple)) else (int(v), int(v))


class Conv2d(Module):
    """2-d convolution (cross-correlation) with weight (out_channels, in_channels, kH, kW).

    Initialized as in PyTorch: kaiming-uniform with a = sqrt(5) for the weight, and bias from
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in_channels * kH * kW.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True,
                 dtype="float32", device=None, groups=1):
        super().__init__()
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        self.groups = int(groups)
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"Conv2d: groups={groups} must divide in_channels ({in_channels}) and "
                             f"out_channels ({out_channels})")
        self.weight = new_parameter((out_channels, in_channels // self.groups) + self.kernel_size, dtype, device)
        self.bias = new_parameter((out_channels,), dtype, device) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight)
            bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, stride=self.stride, padding=self.padding, groups=self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")


class MaxPool2d(Module):
    """Max over ``kernel_size`` windows; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
