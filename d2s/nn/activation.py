"""Element-wise activation layers and Dropout."""
from . import functional as F
from .module import Module


class ReLU(Module):
    """``max(x, 0)`` element-wise (:func:`d2s.nn.functional.relu`)."""

    def forward(self, x):
        return F.relu(x)


class Tanh(Module):
    """The hyperbolic tangent, element-wise (:func:`d2s.nn.functional.tanh`)."""

    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))`` element-wise (:func:`d2s.nn.functional.sigmoid`)."""

    def forward(self, x):
        return F.sigmoid(x)


class GELU(Module):
    """GELU: the exact erf form by default, as in PyTorch; ``approximate='tanh'`` for the tanh
    approximation (see :func:`d2s.nn.functional.gelu`)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """Softmax over one dim (:func:`d2s.nn.functional.softmax`): the entries along it are
    positive and sum to 1.

    Args:
        dim: the dim to normalize over (``axis`` is the older name; ``dim`` wins when given).
    """

    def __init__(self, axis=-1, dim=None):
        super().__init__()
        self.axis = axis if dim is None else dim

    def forward(self, x):
        return F.softmax(x, axis=self.axis)


class Dropout(Module):
    """Zero elements with probability ``p`` (scaling the rest by 1/(1-p)) in training mode;
    the identity after ``eval()``."""

    def __init__(self, p=0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: probability p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"
