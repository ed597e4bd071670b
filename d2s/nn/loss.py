"""Loss layers: ``MSELoss`` and ``CrossEntropyLoss`` (mean reduction by default)."""
from . import functional as F
from .module import Module


class MSELoss(Module):
    """Mean squared error ``mean((input - target)**2)``."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class CrossEntropyLoss(Module):
    """Cross entropy of logits (N, C) against integer class ids (N,) (or class probabilities),
    via a numerically stable ``log_softmax``."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.reduction)
