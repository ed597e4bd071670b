"""The base class of d2s's probability distributions (PyTorch's ``torch.distributions``)."""
import numpy as np

from .. import ops as _ops
from .._state import STATE
from ..autograd import no_grad
from ..ops.support import static_shape as _static_shape
from ..tensor import Tensor, tensor


def broadcast_all(*values):
    """The values as tensors of one broadcast shape: Python numbers take the dtype of the tensors
    among them (float32 when there are none), as PyTorch's ``broadcast_all``."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    dtype = str(tensors[0].dtype) if tensors and tensors[0].dtype.is_floating_point else "float32"
    device = tensors[0].device if tensors else None
    out = [v if isinstance(v, Tensor) else tensor(np.asarray(v, dtype=dtype), device=device) for v in values]
    shape = _broadcast_shape(*[_static_shape(v) for v in out])
    if shape is None:  # dims known only when the program runs: broadcast by adding zeros
        common = out[0] * 0
        for v in out[1:]:
            common = common + v * 0
        return [v + common for v in out]
    return [v if _static_shape(v) == shape else _ops.broadcast_to(v, list(shape)) for v in out]


def _broadcast_shape(*shapes):
    if any(None in s for s in shapes):
        return None  # a dim known only when the program runs: broadcasting happens in each op
    return tuple(np.broadcast_shapes(*shapes))


class Distribution:
    """A distribution with a ``batch_shape`` (independent, differently parametrized copies) and
    an ``event_shape`` (the shape of one draw), as PyTorch's.

    Subclasses define ``sample``/``rsample``, ``log_prob``, ``entropy`` and the moments;
    ``rsample`` (where ``has_rsample``) is differentiable in the parameters (the
    reparameterization trick), ``sample`` is not.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    arg_constraints = {}

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for distributions made afterwards."""
        if value not in (True, False):
            raise ValueError("set_default_validate_args: value must be True or False")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def _static_sample_shape(self, sample_shape, what):
        shape = self._extended_shape(sample_shape)
        if any(not isinstance(d, int) for d in shape):
            raise ValueError(f"{type(self).__name__}.{what}: the batch shape {shape} must be known when the program "
                             "is built to draw samples (give the parameters static shapes with an InputSpec)")
        return shape

    def sample(self, sample_shape=()):
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with no_grad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no rsample (it is not reparameterizable): use "
                                  "sample(), which passes no gradient")

    def sample_n(self, n):
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} has no cdf")

    def icdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} has no icdf")

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return _ops.exp(self.entropy())

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return _ops.sqrt(self.variance)

    def _check(self, name, value, ok, constraint):
        """PyTorch's validation error for a parameter or value outside its support (eagerly)."""
        if not self._validate_args or not isinstance(value, Tensor) or value.is_symbolic or STATE.builder:
            return
        if not bool(np.all(ok(np.asarray(value.numpy())))):
            raise ValueError(f"Expected parameter {name} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                             f"distribution {self!r} to satisfy the constraint {constraint}, but found invalid "
                             f"values:\n{value}")

    def __repr__(self):
        params = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{k}: {self.__dict__[k] if self.__dict__[k].numel() == 1 else tuple(self.__dict__[k].shape)}"
                         for k in params)
        return f"{type(self).__name__}({args})"


def sum_rightmost(value, n):
    """``value`` summed over its last ``n`` dims."""
    return value if n == 0 else _ops.sum(value, axis=list(range(-n, 0)))
