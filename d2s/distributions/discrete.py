"""Discrete distributions: ``Bernoulli`` and ``Categorical`` (by ``probs`` or ``logits``, as
PyTorch's, each computing the other on demand)."""
import numpy as np

from .. import ops as _ops
from ..autograd import no_grad
from ..nn.functional import binary_cross_entropy_with_logits
from ..ops import nn as nn_ops
from ..ops.support import static_shape as _static_shape
from ..tensor import Tensor
from .distribution import Distribution, broadcast_all

_EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps)}
_MIN = {"float32": float(np.finfo(np.float32).min), "float64": float(np.finfo(np.float64).min)}


def _clamp_probs(p):
    eps = _EPS.get(str(p.dtype), _EPS["float32"])
    return _ops.clip(p, eps, 1 - eps)


def _one_of(probs, logits, what):
    if (probs is None) == (logits is None):
        raise ValueError(f"{what}: either `probs` or `logits` must be specified, but not both.")


class Bernoulli(Distribution):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""

    arg_constraints = {"probs": "unit_interval", "logits": "real"}
    support = "boolean"
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits, "Bernoulli")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        super().__init__(param.shape, validate_args=validate_args)
        if probs is not None:
            self._check("probs", self.probs, lambda a: (a >= 0) & (a <= 1), "Interval(lower_bound=0.0, upper_bound=1.0)")

    def __getattr__(self, name):  # probs and logits, whichever was not given, on first use
        if name == "probs":
            self.probs = _ops.sigmoid(self.__dict__["logits"])
            return self.probs
        if name == "logits":
            p = _clamp_probs(self.__dict__["probs"])
            self.logits = _ops.log(p) - _ops.log(1.0 - p)
            return self.logits
        raise AttributeError(name)

    @property
    def param_shape(self):
        return self._batch_shape

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        p = self.probs
        m = _ops.cast(_ops.ge(p, 0.5), p.dtype)
        return _ops.where(_ops.eq(p, 0.5), _ops.full_like(p, float("nan")), m)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """0/1 draws (in the parameters' dtype), without gradient."""
        shape = self._static_sample_shape(sample_shape, "sample")
        with no_grad():
            p = _ops.broadcast_to(self.probs, list(shape))
            u = _ops.rand(*shape, dtype=str(p.dtype), device=p.device)
            return _ops.cast(_ops.lt(u, p), p.dtype)

    def log_prob(self, value):
        self._check("value", value, lambda a: (a == 0) | (a == 1), "Boolean()")
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        p = self.__dict__.get("probs", self.__dict__.get("logits"))
        values = _ops.reshape(_ops.arange(2, dtype=str(p.dtype), device=p.device), [2] + [1] * len(self._batch_shape))
        return _ops.broadcast_to(values, [2, *self._batch_shape]) if expand else values


def _on_simplex(a):
    """Whether each last-dim row of ``a`` is a probability vector (PyTorch's ``Simplex`` check)."""
    return np.all(a >= 0, axis=-1) & (np.abs(a.sum(-1) - 1) < 1e-6)


class Categorical(Distribution):
    """One of K categories with probabilities ``probs`` (normalized along the last dim) or
    ``softmax(logits)``; the leading dims are the batch."""

    arg_constraints = {"probs": "simplex", "logits": "real_vector"}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits, "Categorical")
        if probs is not None:
            probs = probs if isinstance(probs, Tensor) else broadcast_all(probs)[0]
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / _ops.sum(probs, axis=-1, keepdims=True)
            param = self.probs
        else:
            logits = logits if isinstance(logits, Tensor) else broadcast_all(logits)[0]
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - _ops.logsumexp(logits, axis=-1, keepdims=True)
            param = self.logits
        shape = _static_shape(param)
        self._num_events = shape[-1]
        super().__init__(tuple(param.shape[:-1]), validate_args=validate_args)
        # checked once normalized, as PyTorch does: rows of zeros, or of -inf logits, normalize to NaN
        if probs is not None:
            self._check("probs", self.probs, _on_simplex, "Simplex()")
        else:
            self._check("logits", self.logits, lambda a: a == a, "IndependentConstraint(Real(), 1)")

    def __getattr__(self, name):
        if name == "probs":
            self.probs = nn_ops.softmax(self.__dict__["logits"], axis=-1)
            return self.probs
        if name == "logits":
            self.logits = _ops.log(_clamp_probs(self.__dict__["probs"]))
            return self.logits
        raise AttributeError(name)

    @property
    def param_shape(self):
        return self._batch_shape + (self._num_events,)

    @property
    def mean(self):
        return _ops.full(list(self._extended_shape()), float("nan"), dtype=str(self.probs.dtype),
                         device=self.probs.device)

    @property
    def mode(self):
        return _ops.argmax(self.probs, -1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=()):
        """Category ids (int64) of shape ``sample_shape + batch_shape``, by inverse CDF."""
        shape = self._static_sample_shape(sample_shape, "sample")
        with no_grad():
            p = self.probs
            cdf = _ops.cumsum(p, -1)
            u = _ops.rand(*shape, 1, dtype=str(p.dtype), device=p.device) * cdf[..., -1:]
            idx = _ops.sum(_ops.cast(_ops.le(cdf, u), "int64"), axis=-1)
            return _ops.clip(idx, 0, self._num_events - 1)  # rounding in the last cumulative sum

    def log_prob(self, value):
        value = value if isinstance(value, Tensor) else broadcast_all(value)[0]
        value = _ops.cast(value, "int64")
        if self._validate_args and not value.is_symbolic:
            v = np.asarray(value.numpy())
            if v.size and (v.min() < 0 or v.max() >= self._num_events):
                raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to "
                                 f"be within the support (IntegerInterval(lower_bound=0, upper_bound="
                                 f"{self._num_events - 1})) of the distribution {self!r}, but found invalid values:"
                                 f"\n{value}")
        logits = self.logits
        idx = _ops.unsqueeze(value, -1)
        # value and the logits broadcast together (the class dim aside), as PyTorch's
        log_pmf = logits + _ops.cast(idx * 0, logits.dtype)
        idx = idx + _ops.cast(_ops.zeros_like(log_pmf[..., :1]), "int64")
        return _ops.squeeze(nn_ops.gather(log_pmf, -1, idx), -1)

    def entropy(self):
        logits = _ops.clip(self.logits, _MIN.get(str(self.logits.dtype), _MIN["float32"]), None)
        return -_ops.sum(logits * self.probs, axis=-1)

    def enumerate_support(self, expand=True):
        values = _ops.reshape(_ops.arange(self._num_events, device=self.logits.device), [-1] + [1] * len(self._batch_shape))
        return _ops.broadcast_to(values, [self._num_events, *self._batch_shape]) if expand else values
