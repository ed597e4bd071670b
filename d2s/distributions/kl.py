"""``kl_divergence(p, q)`` for pairs of distributions, PyTorch's formulas, and ``register_kl``
to add a pair."""
from .. import ops as _ops
from .continuous import Normal, Uniform
from .discrete import Bernoulli, Categorical
from .distribution import sum_rightmost
from .independent import Independent

_KL = {}


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as the KL divergence of a ``type_p`` from a ``type_q``."""
    def deco(fn):
        _KL[(type_p, type_q)] = fn
        return fn
    return deco


def kl_divergence(p, q):
    """``KL(p || q)``, batched over the distributions' batch shape."""
    for tp in type(p).__mro__:
        for tq in type(q).__mro__:
            fn = _KL.get((tp, tq))
            if fn is not None:
                return fn(p, q)
    raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                              f"{type(q).__name__}")


def _inf_where(cond, value):
    return _ops.where(cond, _ops.full_like(value, float("inf")), value)


def _zero_where(cond, value):
    return _ops.where(cond, _ops.zeros_like(value), value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    ratio = p.scale / q.scale
    var_ratio = ratio * ratio
    t1 = (p.loc - q.loc) / q.scale
    return 0.5 * (var_ratio + t1 * t1 - 1 - _ops.log(var_ratio))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    def softplus(x):
        return _ops.logaddexp(x, 0.0)

    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _zero_where(_ops.eq(p.probs, 0), _inf_where(_ops.eq(q.probs, 0), t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _zero_where(_ops.eq(p.probs, 1), _inf_where(_ops.eq(q.probs, 1), t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _zero_where(_ops.eq(p.probs, 0), _inf_where(_ops.eq(q.probs, 0), t))
    return _ops.sum(t, axis=-1)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = _ops.log((q.high - q.low) / (p.high - p.low))
    return _inf_where(_ops.logical_or(_ops.gt(q.low, p.low), _ops.lt(q.high, p.high)), result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence: Independent distributions of different reinterpreted_batch_ndims")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
