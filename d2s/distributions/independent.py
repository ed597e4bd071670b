"""``Independent``: some batch dims of a distribution reinterpreted as event dims."""
from .distribution import Distribution, sum_rightmost


class Independent(Distribution):
    """``base_distribution`` with its last ``reinterpreted_batch_ndims`` batch dims made event
    dims: ``log_prob`` and ``entropy`` sum over them (a diagonal Normal as one multivariate
    event, for instance)."""

    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = int(reinterpreted_batch_ndims)
        shape = base_distribution.batch_shape + base_distribution.event_shape
        event_dim = n + len(base_distribution.event_shape)
        if n > len(base_distribution.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual {n} vs "
                             f"{len(base_distribution.batch_shape)}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:], validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
