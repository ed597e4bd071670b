"""Optimizers (``from d2s import optim``): ``SGD``, ``Adam`` and ``AdamW``, with PyTorch's update rules."""
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
