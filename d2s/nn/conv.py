"""Convolution layers with PyTorch's constructor arguments, parameter names and initialization:
``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``, ``ConvTranspose2d``, ``ConvTranspose3d``; and
``Unfold``/``Fold``."""
import math

from . import functional as F
from . import init
from ._param import default_float, new_parameter
from .module import Module

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(v, n, name, layer):
    if isinstance(v, (list, tuple)):
        if len(v) != n:
            raise ValueError(f"{layer}: {name} needs one int or {n}, got {v!r}")
        return tuple(int(a) for a in v)
    return (int(v),) * n


class _ConvNd(Module):
    """What every convolution layer shares: the attributes PyTorch's have, the weight and bias
    (kaiming-uniform with a = sqrt(5); bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in))), padding_mode."""

    _n = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                 padding_mode, output_padding=0, device=None, dtype=None):
        super().__init__()
        name, n = type(self).__name__, self._n
        in_channels, out_channels, groups = int(in_channels), int(out_channels), int(groups)
        if groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) must be divisible by groups ({groups})")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels ({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size", name)
        self.stride = _ntuple(stride, n, "stride", name)
        self.dilation = _ntuple(dilation, n, "dilation", name)
        if isinstance(padding, str):
            if self._transposed or padding not in ("same", "valid"):
                raise ValueError(f"{name}: invalid padding string {padding!r}" +
                                 ("" if not self._transposed else " (transposed convolutions take ints)") +
                                 ", should be one of {'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(padding, n, "padding", name)
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f"{name}: only 'zeros' padding mode is supported for transposed convolutions")
        self.padding_mode = padding_mode
        self.output_padding = _ntuple(output_padding, n, "output_padding", name)
        self.transposed = self._transposed
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = new_parameter(shape, default_float(dtype), device)
        if bias:
            self.bias = new_parameter((out_channels,), default_float(dtype), device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1.0 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _explicit_pads(self):
        """F.pad's (left, right, top, bottom) for a padding_mode other than zeros (PyTorch's
        ``_reversed_padding_repeated_twice``)."""
        pads = []
        for k, d, p in reversed(list(zip(self.kernel_size, self.dilation,
                                         self.padding if not isinstance(self.padding, str) else [None] * self._n))):
            if self.padding == "valid":
                pads += [0, 0]
            elif self.padding == "same":
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
            else:
                pads += [p, p]
        return pads

    def forward(self, input):
        x, padding = self._conv_input(input)
        return self._function(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)

    def _conv_input(self, x):
        """(input, padding for the convolution): a non-zeros padding_mode pads with F.pad first."""
        if self.padding_mode == "zeros":
            return x, self.padding
        return F.pad(x, self._explicit_pads(), mode=self.padding_mode), 0

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"  # ('same' unquoted, as PyTorch prints it)
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-d convolution over (N, C_in, L) or (C_in, L) inputs, as ``torch.nn.Conv1d``; weight
    (out_channels, in_channels / groups, kernel_size)."""

    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    _function = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """2-d convolution (cross-correlation) over (N, C_in, H, W) or (C_in, H, W) inputs, as
    ``torch.nn.Conv2d``; weight (out_channels, in_channels / groups, kH, kW).

    Args:
        padding: an int, a pair, ``'valid'`` or ``'same'`` (stride 1).
        groups: independent channel groups (``groups == in_channels``: depthwise).
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    _function = staticmethod(F.conv2d)


class Conv3d(_ConvNd):
    """3-d convolution over (N, C_in, D, H, W) or (C_in, D, H, W) volumes, as ``torch.nn.Conv3d``;
    weight (out_channels, in_channels / groups, kD, kH, kW) (see ``F.conv3d``)."""

    _n = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    _function = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def forward(self, input, output_size=None):
        return self._function(input, self.weight, self.bias, self.stride, self.padding,
                              self._output_padding(input, output_size), self.groups, self.dilation)

    def _output_padding(self, x, output_size):
        """PyTorch's output_padding for a requested ``output_size`` (else the layer's own)."""
        if output_size is None:
            return self.output_padding
        n = self._n
        size = [int(s) for s in output_size][-n:]
        if len(size) != n:
            raise ValueError(f"{type(self).__name__}: output_size must have {n} or {n + 2} elements, got "
                             f"{output_size!r}")
        spatial = tuple(x.shape)[-n:]
        out = []
        for d in range(n):
            smallest = ((spatial[d] - 1) * self.stride[d] - 2 * self.padding[d] +
                        self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= size[d] <= largest:
                raise ValueError(f"{type(self).__name__}: requested an output size of {size}, but valid sizes range "
                                 f"from {smallest} to {largest} in dim {d} (for an input of {spatial})")
            out.append(size[d] - smallest)
        return tuple(out)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution over (N, C_in, L) or (C_in, L) inputs, as
    ``torch.nn.ConvTranspose1d``; weight (in_channels, out_channels / groups, kernel_size)."""

    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    _function = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution over (N, C_in, H, W) or (C_in, H, W) inputs, as
    ``torch.nn.ConvTranspose2d``; weight (in_channels, out_channels / groups, kH, kW). Output
    size per dim: ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``;
    ``forward(x, output_size=...)`` picks the output_padding that gives ``output_size``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    _function = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution over (N, C_in, D, H, W) or (C_in, D, H, W) volumes, as
    ``torch.nn.ConvTranspose3d``; weight (in_channels, out_channels / groups, kD, kH, kW) (see
    ``F.conv_transpose3d``; ``forward(x, output_size=...)`` as the 2-d layer's)."""

    _n = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    _function = staticmethod(F.conv_transpose3d)


class Unfold(Module):
    """Sliding windows as columns (``F.unfold``), as ``torch.nn.Unfold``."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Columns summed back into an image (``F.fold``), as ``torch.nn.Fold``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
