"""Neural-network layers, losses and initializers (``from d2s import nn``).

Layers are :class:`Module` subclasses whose forward passes use d2s ops only, so the same
model runs eagerly, trains with autograd, and converts to a static program.
"""
from . import functional, init, utils
from .activation import GELU, Dropout, ReLU, Sigmoid, Softmax, Tanh
from .containers import ModuleDict, ModuleList, Sequential
from .conv import Conv2d, MaxPool2d
from .linear import Embedding, Flatten, LayerNorm, Linear
from .loss import CrossEntropyLoss, MSELoss
from .module import Buffer, Module, Parameter
from .rnn import GRUCell, RNNCell

__all__ = ["Module", "Parameter", "Buffer", "Linear", "ReLU", "Tanh", "Sigmoid", "GELU", "Softmax",
           "Sequential", "ModuleList", "ModuleDict", "Dropout", "LayerNorm", "Embedding", "Conv2d", "MaxPool2d",
           "Flatten", "RNNCell", "GRUCell", "MSELoss", "CrossEntropyLoss", "functional", "init", "utils"]
