"""Neural-network layers, losses and initializers (``from d2s import nn``).

Layers are :class:`Module` subclasses whose forward passes use d2s ops only, so the same
model runs eagerly, trains with autograd, and converts to a static program. Their
constructor arguments, parameter and buffer names and initializations are PyTorch's, so a
PyTorch ``state_dict`` loads with ``load_state_dict``.
"""
from . import functional, init, parallel, utils
from .activation import (CELU, ELU, GELU, GLU, SELU, AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d,
                         Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, PReLU,
                         ReLU, ReLU6, RReLU, Sigmoid, SiLU, Softmax, Softmax2d, Softmin, Softplus, Softshrink, Softsign,
                         Tanh, Tanhshrink, Threshold)
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, Fold, Unfold
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CosineSimilarity, CrossEntropyLoss,
                   GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                   MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, PairwiseDistance,
                   PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss)
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d,
                            InstanceNorm3d, LayerNorm, LocalResponseNorm, RMSNorm)
from .padding import (CircularPad1d, CircularPad2d, ConstantPad1d, ConstantPad2d, ReflectionPad1d, ReflectionPad2d,
                      ReplicationPad1d, ReplicationPad2d, ZeroPad1d, ZeroPad2d)
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d,
                      AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, LPPool1d, LPPool2d, MaxPool1d, MaxPool2d,
                      MaxPool3d, MaxUnpool1d, MaxUnpool2d)
from .upsampling import (ChannelShuffle, PixelShuffle, PixelUnshuffle, Upsample, UpsamplingBilinear2d,
                         UpsamplingNearest2d)
from .module import Buffer, Module, Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .sparse import Embedding, EmbeddingBag
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer)

__all__ = ["Module", "Parameter", "Buffer",
           # containers
           "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
           # layers with weights
           "Linear", "Bilinear", "Identity", "LayerNorm", "Embedding", "EmbeddingBag", "Conv2d", "MaxPool2d",
           "Flatten", "Unflatten",
           # recurrent and attention
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention",
           "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer",
           # activations and dropout
           "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Softplus",
           "Softsign", "Hardtanh", "Hardswish", "Hardsigmoid", "Hardshrink", "Softshrink", "Tanhshrink", "Threshold",
           "GLU", "Tanh", "Sigmoid", "LogSigmoid", "Softmax", "LogSoftmax", "Softmin", "Softmax2d", "Dropout",
           "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           # losses
           "L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss", "PoissonNLLLoss", "GaussianNLLLoss", "CosineEmbeddingLoss",
           "MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
           "TripletMarginLoss", "CosineSimilarity", "PairwiseDistance", "MultiMarginLoss", "MultiLabelMarginLoss",
           "TripletMarginWithDistanceLoss",
           "functional", "init", "parallel", "utils",
           # convolution, pooling, padding, resampling and normalization layers
           "Conv1d", "ConvTranspose1d", "ConvTranspose2d", "Unfold", "Fold", "MaxPool1d", "AvgPool1d", "AvgPool2d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Upsample",
           "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle",
           "LPPool1d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d", "RReLU", "Conv3d", "ConvTranspose3d", "MaxPool3d",
           "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d",
           "ZeroPad1d", "ZeroPad2d",
           "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
           "ReplicationPad2d", "CircularPad1d", "CircularPad2d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
           "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "GroupNorm", "RMSNorm", "LocalResponseNorm"]
