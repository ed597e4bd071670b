"""Neural-network layers, losses and initializers (``from d2s import nn``).

Layers are :class:`Module` subclasses whose forward passes use d2s ops only, so the same
model runs eagerly, trains with autograd, and converts to a static program.
"""
from . import functional, init, utils
from .activation import GELU, Dropout, ReLU, Sigmoid, Softmax, Tanh
from .containers import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Fold, Unfold
from .linear import Embedding, Flatten, Linear
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d,
                            InstanceNorm3d, LayerNorm, LocalResponseNorm, RMSNorm)
from .padding import (CircularPad1d, CircularPad2d, ConstantPad1d, ConstantPad2d, ReflectionPad1d, ReflectionPad2d,
                      ReplicationPad1d, ReplicationPad2d, ZeroPad1d, ZeroPad2d)
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d,
                      MaxPool1d, MaxPool2d)
from .upsampling import PixelShuffle, PixelUnshuffle, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .loss import CrossEntropyLoss, MSELoss
from .module import Buffer, Module, Parameter
from .rnn import GRUCell, RNNCell

__all__ = ["Module", "Parameter", "Buffer", "Linear", "ReLU", "Tanh", "Sigmoid", "GELU", "Softmax",
           "Sequential", "ModuleList", "ModuleDict", "Dropout", "LayerNorm", "Embedding", "Conv2d", "MaxPool2d",
           "Flatten", "RNNCell", "GRUCell", "MSELoss", "CrossEntropyLoss", "functional", "init", "utils",
           # convolution, pooling, padding, resampling and normalization layers
           "Conv1d", "ConvTranspose1d", "ConvTranspose2d", "Unfold", "Fold", "MaxPool1d", "AvgPool1d", "AvgPool2d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Upsample",
           "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ZeroPad1d", "ZeroPad2d",
           "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
           "ReplicationPad2d", "CircularPad1d", "CircularPad2d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
           "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "GroupNorm", "RMSNorm", "LocalResponseNorm"]
