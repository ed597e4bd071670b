"""Probability distributions, as PyTorch's ``torch.distributions`` (``import d2s.distributions
as D``): ``Normal``, ``Uniform``, ``Bernoulli``, ``Categorical`` and ``Independent``, with
``sample``, ``rsample`` (reparameterized: gradients flow to the parameters), ``log_prob``,
``entropy``, ``mean``, ``stddev``, ``variance``, and ``kl_divergence`` between two of one
family. They are written in d2s ops, so they work eagerly and inside converted functions
(sampling there needs the batch shape known when the program is built).
"""
from .continuous import Normal, Uniform
from .discrete import Bernoulli, Categorical
from .distribution import Distribution
from .independent import Independent
from .kl import kl_divergence, register_kl

__all__ = ["Distribution", "Normal", "Uniform", "Bernoulli", "Categorical", "Independent", "kl_divergence",
           "register_kl"]
