"""Layers with weights: ``Linear``, ``Bilinear``, and the shape-only ``Identity``, ``Flatten``
and ``Unflatten`` (``LayerNorm`` lives with the normalization layers in ``normalization.py``,
``Embedding`` with the lookups in ``sparse.py``)."""
import math

from .. import ops as _ops
from . import functional as F
from . import init
from ._param import new_parameter
from .module import Module


class Identity(Module):
    """Returns its input; accepts (and ignores) any constructor arguments, as PyTorch."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x W^T + b`` with W (out_features, in_features).

    Initialized as in PyTorch: W from kaiming-uniform with a = sqrt(5), i.e.
    U(-1/sqrt(in_features), 1/sqrt(in_features)), and b from the same range.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = new_parameter((out_features, in_features), dtype, device)
        if bias:
            self.bias = new_parameter((out_features,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with A (out_features, in1_features, in2_features); weight and bias
    from U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as PyTorch."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = int(in1_features), int(in2_features)
        self.out_features = int(out_features)
        self.weight = new_parameter((out_features, in1_features, in2_features), dtype, device)
        if bias:
            self.bias = new_parameter((out_features,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    """Merge dims ``start_dim..end_dim`` (by default every dim after the batch dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return F.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim ``dim`` into ``unflattened_size`` (a tuple of sizes, one of which may be -1)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, str):
            raise TypeError("Unflatten: named dimensions (a str dim) are not supported; give the dim's index")
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        shape = list(input.shape)
        d = self.dim % len(shape)
        return _ops.reshape(input, shape[:d] + list(self.unflattened_size) + shape[d + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
