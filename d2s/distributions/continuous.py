"""Continuous distributions: ``Normal`` and ``Uniform`` (PyTorch's parametrizations)."""
import math

from .. import ops as _ops
from ..tensor import Tensor
from .distribution import Distribution, broadcast_all


class Normal(Distribution):
    """The normal distribution N(``loc``, ``scale``**2), parameters broadcast together."""

    arg_constraints = {"loc": "real", "scale": "positive"}
    support = "real"
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)
        self._check("scale", self.scale, lambda a: a > 0, "GreaterThan(lower_bound=0.0)")
        self._check("loc", self.loc, lambda a: ~(a != a), "Real()")

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale * self.scale

    def rsample(self, sample_shape=()):
        """``loc + eps * scale`` with ``eps ~ N(0, 1)``: differentiable in loc and scale."""
        shape = self._static_sample_shape(sample_shape, "rsample")
        eps = _ops.randn(*shape, dtype=str(self.loc.dtype), device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        var = self.scale * self.scale
        d = value - self.loc
        return -(d * d) / (2 * var) - _ops.log(self.scale) - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        return 0.5 * (1 + _ops.erf((value - self.loc) / self.scale / math.sqrt(2)))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + _ops.log(self.scale)


class Uniform(Distribution):
    """The uniform distribution on [``low``, ``high``)."""

    arg_constraints = {"low": "dependent", "high": "dependent"}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        if self._validate_args and not self.low.is_symbolic and not self.high.is_symbolic:
            if not bool((self.low.numpy() < self.high.numpy()).all()):
                raise ValueError("Uniform: expected low < high, got low "
                                 f"{self.low.numpy()} and high {self.high.numpy()}")

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return self.high * float("nan")

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        d = self.high - self.low
        return d * d / 12

    def rsample(self, sample_shape=()):
        """``low + u * (high - low)`` with ``u ~ U(0, 1)``: differentiable in low and high."""
        shape = self._static_sample_shape(sample_shape, "rsample")
        u = _ops.rand(*shape, dtype=str(self.low.dtype), device=self.low.device)
        return self.low + u * (self.high - self.low)

    def _check_support(self, value):
        if self._validate_args and isinstance(value, Tensor) and not value.is_symbolic and not self.low.is_symbolic:
            v, lo, hi = value.numpy(), self.low.numpy(), self.high.numpy()
            if not bool(((lo <= v) & (v < hi)).all()):
                raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to "
                                 f"be within the support (Interval(lower_bound={lo}, upper_bound={hi})) of the "
                                 f"distribution {self!r}, but found invalid values:\n{value}")

    def log_prob(self, value):
        self._check_support(value)
        inside = _ops.logical_and(_ops.le(self.low, value), _ops.gt(self.high, value))
        width = self.high - self.low
        zero = _ops.zeros_like(width + value * 0)
        # PyTorch's log(lb * ub): 0 inside the support, -inf outside (without log(0)'s warning)
        return _ops.where(inside, zero, _ops.full_like(zero, float("-inf"))) - _ops.log(width)

    def cdf(self, value):
        self._check_support(value)
        return _ops.clip((value - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return _ops.log(self.high - self.low)
