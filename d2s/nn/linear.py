"""Layers with weights: ``Linear``, ``Embedding``, and the shape-only ``Flatten`` (``LayerNorm``
lives with the normalization layers, ``d2s/nn/normalization.py``)."""
import math

from . import functional as F
from . import init
from ._param import new_parameter
from .module import Module


class Linear(Module):
    """``y = x W^T + b`` with W (out_features, in_features).

    Initialized as in PyTorch: W from kaiming-uniform with a = sqrt(5), i.e.
    U(-1/sqrt(in_features), 1/sqrt(in_features)), and b from the same range.
    """

    def __init__(self, in_features, out_features, bias=True, dtype="float32", device=None):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = new_parameter((out_features, in_features), dtype, device)
        self.bias = new_parameter((out_features,), dtype, device) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table: integer ids of any shape -> rows of ``weight`` (num_embeddings, dim),
    initialized from N(0, 1) as in PyTorch. The row ``padding_idx`` (if given) starts at zero
    and receives no gradient."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, dtype="float32", device=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            padding_idx = int(padding_idx)
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range for "
                                 f"{self.num_embeddings} embeddings")
            padding_idx %= self.num_embeddings
        self.padding_idx = padding_idx
        self.weight = init.normal_(new_parameter((num_embeddings, embedding_dim), dtype, device))
        if padding_idx is not None:
            self.weight._data[padding_idx] = 0

    def forward(self, ids):
        return F.embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Flatten(Module):
    """Merge dims ``start_dim..end_dim`` (by default every dim after the batch dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return F.flatten(x, self.start_dim, self.end_dim)
