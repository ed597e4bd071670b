"""Optimizers (``from d2s import optim``) with PyTorch's names, arguments, update rules and
state dicts: ``SGD``, ``Adam``, ``AdamW``, ``Adamax``, ``NAdam``, ``RAdam``, ``RMSprop``,
``Adagrad``, ``Adadelta``, ``ASGD``, ``Rprop``, ``LBFGS``; learning-rate schedules in
``optim.lr_scheduler``."""
from . import lr_scheduler
from .adam import Adam, Adamax, AdamW, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, RMSprop
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .sgd import ASGD, SGD, Rprop

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta",
           "ASGD", "Rprop", "LBFGS", "lr_scheduler"]
