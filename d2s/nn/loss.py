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
    via a numerically stable ``log_softmax``; ``weight``, ``ignore_index`` (default -100) and
    ``label_smoothing`` as in PyTorch."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        if isinstance(weight, str):  # the old positional form CrossEntropyLoss('sum')
            weight, reduction = None, weight
        self.weight, self.ignore_index = weight, ignore_index
        self.reduction, self.label_smoothing = reduction, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)
