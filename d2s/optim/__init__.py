"""Optimizers (``from d2s import optim``): ``SGD`` and ``Adam``, with PyTorch's update rules."""
from .adam import Adam
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam"]
