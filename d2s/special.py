"""``d2s.special``: PyTorch's ``torch.special`` functions that d2s has, under their
``torch.special`` names (``import d2s as torch; torch.special.polygamma(2, x)``).

Each is d2s's function of the same meaning (``psi`` and ``digamma`` are one function, as in
PyTorch; ``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``, ``multigammaln`` is
``mvlgamma``), so values, gradients, conversion and export are those of that function (tests:
``tests/test_special.py``). The ``torch.special`` functions not listed here (Bessel functions,
orthogonal polynomials, ``zeta``, ``gammainc``, ...) are not in d2s yet.
"""
from .ops import elementwise as _elementwise, nn as _nn, pointwise as _pointwise, special as _special

__all__ = ["digamma", "psi", "polygamma", "gammaln", "multigammaln", "erf", "erfc", "erfinv", "exp2", "expm1",
           "expit", "log1p", "logit", "xlogy", "sinc", "round", "softmax", "log_softmax", "logsumexp"]

digamma = psi = _special.digamma
polygamma = _special.polygamma
gammaln = _special.lgamma
xlogy = _special.xlogy
logit = _special.logit
sinc = _special.sinc
expit = _elementwise.sigmoid
softmax, log_softmax, logsumexp = _nn.softmax, _nn.log_softmax, _nn.logsumexp
round = _pointwise.round
erf, erfc, erfinv = _pointwise.erf, _pointwise.erfc, _pointwise.erfinv
exp2, expm1, log1p = _pointwise.exp2, _pointwise.expm1, _pointwise.log1p


def multigammaln(input, p):
    """``torch.special.multigammaln``: the log of the multivariate gamma function of dimension
    ``p`` (d2s's :func:`d2s.mvlgamma`).

    Args:
        input: a float tensor, every element above ``(p - 1) / 2``.
        p: the dimension, an int >= 1.

    Returns:
        A tensor of ``input``'s shape and dtype.
    """
    return _special.mvlgamma(input, p)
