"""Activation layers and the dropout family, with PyTorch's constructor arguments and reprs
(their functions are in :mod:`d2s.nn.functional`)."""
from . import functional as F
from . import init as _init
from ._param import default_float, new_parameter
from .module import Module


def _inplace(inplace, sep=True):
    return (", inplace=True" if sep else "inplace=True") if inplace else ""


class _Elementwise(Module):
    """An activation without settings beyond ``inplace``."""

    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace(self.inplace, sep=False)


class ReLU(_Elementwise):
    """``max(x, 0)``."""
    _fn = staticmethod(F.relu)


class SELU(_Elementwise):
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    _fn = staticmethod(F.selu)


class SiLU(_Elementwise):
    """``x * sigmoid(x)``."""
    _fn = staticmethod(F.silu)


class Mish(_Elementwise):
    """``x * tanh(softplus(x))``."""
    _fn = staticmethod(F.mish)


class Hardswish(_Elementwise):
    """``x * relu6(x + 3) / 6``."""
    _fn = staticmethod(F.hardswish)

    def extra_repr(self):
        return ""


class Hardsigmoid(_Elementwise):
    """``relu6(x + 3) / 6``."""
    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self):
        return ""


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)`` (no gradient at the bounds, as PyTorch)."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace(self.inplace, sep=False)


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace(self.inplace)}"


class RReLU(Module):
    """The randomized leaky ReLU, as ``torch.nn.RReLU``: random slopes in U(lower, upper) while
    training, their mean in evaluation (see ``F.rrelu``)."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace(self.inplace)}"


class PReLU(Module):
    """``leaky_relu`` with a learned slope: one for all channels, or one per channel (dim 1)
    with ``num_parameters=C``; each starts at ``init``."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = int(num_parameters), init
        self.weight = new_parameter((self.num_parameters,), default_float(dtype), device)
        self.reset_parameters()

    def reset_parameters(self):
        _init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class ELU(Module):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace(self.inplace)}"


class CELU(ELU):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace(self.inplace)}"


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, and ``x`` where ``beta x > threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class _Shrink(Module):
    _fn = None

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return type(self)._fn(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Softshrink(_Shrink):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    _fn = staticmethod(F.softshrink)


class Hardshrink(_Shrink):
    """0 on ``[-lambd, lambd]``, else ``x``."""
    _fn = staticmethod(F.hardshrink)


class _Plain(Module):
    """An activation without settings."""

    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class Tanh(_Plain):
    """The hyperbolic tangent, element-wise."""
    _fn = staticmethod(F.tanh)


class Sigmoid(_Plain):
    """``1 / (1 + exp(-x))``, element-wise."""
    _fn = staticmethod(F.sigmoid)


class LogSigmoid(_Plain):
    """``log(sigmoid(x))``."""
    _fn = staticmethod(F.logsigmoid)


class Softsign(_Plain):
    """``x / (1 + |x|)``."""
    _fn = staticmethod(F.softsign)


class Tanhshrink(_Plain):
    """``x - tanh(x)``."""
    _fn = staticmethod(F.tanhshrink)


class GELU(Module):
    """GELU: the exact erf form by default, as in PyTorch; ``approximate='tanh'`` for the tanh
    approximation (see :func:`d2s.nn.functional.gelu`)."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class GLU(Module):
    """``a * sigmoid(b)`` over the two halves of ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class _SoftmaxBase(Module):
    _fn = None

    def __init__(self, dim=None, *, axis=None):
        super().__init__()
        self.dim = dim if axis is None else axis

    def forward(self, input):
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """Softmax along ``dim`` (PyTorch's implicit choice, with its warning, when None)."""
    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxBase):
    """Log-softmax along ``dim``."""
    _fn = staticmethod(F.log_softmax)


class Softmin(_SoftmaxBase):
    """``softmax(-x)`` along ``dim``."""
    _fn = staticmethod(F.softmin)


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


# ------------------------------------------------------------------ dropout
class _DropoutNd(Module):
    _fn = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability ``p`` (scaling the rest by 1/(1-p)) in training mode;
    the identity after ``eval()``."""
    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) inputs with probability ``p`` in training mode."""
    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) inputs with probability ``p`` in training mode."""
    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) inputs with probability ``p`` in training mode."""
    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's zero mean and unit variance, in training mode."""
    _fn = staticmethod(F.alpha_dropout)


class Identity(Module):
    """Returns its input; accepts (and ignores) any constructor arguments, as PyTorch."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input
