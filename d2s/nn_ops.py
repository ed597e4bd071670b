"""Tensor functions for neural networks: softmax family, cumsum, gather, one_hot, and the
primitives behind ``d2s.nn`` layers (conv2d, max_pool2d, dropout, embedding).

Each is a thin call of :func:`d2s.dispatch.apply` on a runtime primitive (see
``d2s_runtime/ops/nn_ops.py``); gradient rules live in ``d2s/autograd/rules_nn.py``.
"""
import numpy as np

from .dispatch import apply
from .ops import _axes
from .tensor import Tensor, tensor


def _as_tensor(x):
    """Python scalars, lists and numpy arrays as tensors (d2s dtype defaults); tensors unchanged."""
    return x if isinstance(x, Tensor) else tensor(x)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis``, computed stably (the max is subtracted first)."""
    return apply("softmax", _as_tensor(x), axis=int(axis))


def log_softmax(x, axis=-1):
    """log(softmax(x)) along ``axis``, computed stably without forming softmax."""
    return apply("log_softmax", _as_tensor(x), axis=int(axis))


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over ``axis`` (None: all), computed stably."""
    return apply("logsumexp", _as_tensor(x), axes=_axes(axis), keepdims=bool(keepdims))


def cumsum(x, axis):
    """Running sum along ``axis``; bool and int32 inputs sum in int64 (as numpy does)."""
    return apply("cumsum", _as_tensor(x), axis=int(axis))


def gather(x, axis, index):
    """Values of ``x`` picked along ``axis`` by ``index`` (torch.gather / take_along_axis).

    ``index`` has as many dims as ``x``; the result has ``index``'s shape, and
    ``out[i][j] = x[index[i][j]][j]`` for ``axis=0``.
    """
    return apply("gather", _as_tensor(x), _index_tensor(index), axis=int(axis))


def scatter_add(x, axis, index, src):
    """A copy of ``x`` with ``src`` added at ``index`` along ``axis`` (repeated indices add up)."""
    return apply("scatter_add", _as_tensor(x), _index_tensor(index), _as_tensor(src), axis=int(axis))


def one_hot(x, num_classes=-1):
    """int64 one-hot encoding of integer class ids, with a new last dim of ``num_classes``.

    ``num_classes=-1`` takes ``max(x) + 1``, which needs a concrete tensor.
    """
    x = _index_tensor(x)
    if num_classes is None or int(num_classes) < 0:
        if x._data is None:
            raise ValueError("one_hot: num_classes must be given for a symbolic tensor "
                             "(the largest id is only known when the program runs)")
        num_classes = int(x._concrete("one_hot without num_classes").max()) + 1 if x.numel() else 0
    return apply("one_hot", x, num_classes=int(num_classes))


def _index_tensor(index):
    if isinstance(index, Tensor):
        return index
    arr = np.asarray(index)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"index must hold integers, got {arr.dtype}")
    return tensor(arr.astype(np.int64))


# ------------------------------------------------------------------ layer primitives
def conv2d(x, weight, bias=None, stride=1, padding=0, groups=1):
    """2-d cross-correlation of NCHW ``x`` (or unbatched CHW) with OIHW ``weight``, plus
    optional bias (O,). ``padding`` may be ``'valid'`` (0) or ``'same'`` (stride 1, odd
    kernel); ``groups`` splits the channels into independent convolutions, as in PyTorch."""
    x, weight = _as_tensor(x), _as_tensor(weight)
    if x.ndim == 3:  # unbatched (C, H, W), as PyTorch accepts
        return apply("squeeze", conv2d(apply("expand_dims", x, axis=0), weight, bias, stride, padding, groups),
                     axes=[0])
    padding = _conv_padding(padding, weight, stride)
    groups = int(groups)
    if groups == 1:
        out = apply("conv2d", x, weight, stride=_pair_attr(stride), padding=padding)
    else:
        out = _grouped_conv2d(x, weight, groups, stride, padding)
    if bias is not None:
        out = out + apply("reshape", _as_tensor(bias), shape=[1, -1, 1, 1])
    return out


def _conv_padding(padding, weight, stride):
    if isinstance(padding, str):
        if padding == "valid":
            return 0
        if padding == "same":
            kh, kw = weight.shape[2], weight.shape[3]
            if _pair_attr(stride) not in (1, [1, 1]):
                raise ValueError("conv2d: padding='same' needs stride 1 (as in PyTorch)")
            if kh % 2 == 0 or kw % 2 == 0:
                raise NotImplementedError(f"conv2d: padding='same' with an even kernel size ({kh}, {kw}) needs "
                                          "asymmetric padding, which d2s does not have; use an odd kernel")
            return [kh // 2, kw // 2]
        raise ValueError(f"conv2d: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    return _pair_attr(padding)


def _grouped_conv2d(x, weight, groups, stride, padding):
    from .ops import concat, split
    c, o = x.shape[1], weight.shape[0]
    if c % groups or o % groups:
        raise ValueError(f"conv2d: groups={groups} must divide the input channels ({c}) and the output "
                         f"channels ({o})")
    xs = split(x, c // groups, axis=1)
    ws = split(weight, o // groups, axis=0)
    return concat([apply("conv2d", xi, wi, stride=_pair_attr(stride), padding=padding)
                   for xi, wi in zip(xs, ws)], axis=1)


def max_pool2d(x, kernel_size, stride=None, padding=0):
    """Max over ``kernel_size`` windows of NCHW (or unbatched CHW) ``x``; ``stride`` defaults
    to ``kernel_size``."""
    x = _as_tensor(x)
    if x.ndim == 3:  # unbatched (C, H, W), as PyTorch accepts
        return apply("squeeze", max_pool2d(apply("expand_dims", x, axis=0), kernel_size, stride, padding),
                     axes=[0])
    return apply("max_pool2d", x, kernel_size=_pair_attr(kernel_size),
                 stride=None if stride is None else _pair_attr(stride), padding=_pair_attr(padding))


def dropout(x, p=0.5, training=True):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) (training only)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1], got {p}")
    x = _as_tensor(x)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    return x * apply("dropout_mask", x, p=float(p))


def embedding(ids, weight):
    """Rows of ``weight`` (num_embeddings, dim) picked by integer ``ids``: shape ids.shape + (dim,)."""
    ids = _index_tensor(ids)
    if not str(ids.dtype).startswith("int"):
        raise TypeError(f"embedding: ids must be an integer tensor, got {ids.dtype}")
    return apply("getitem", _as_tensor(weight), ids, index=[["t", 0]])


def _pair_attr(v):
    return [int(a) for a in v] if isinstance(v, (list, tuple)) else int(v)


def _install():
    Tensor.softmax = lambda self, axis=-1: softmax(self, axis)
    Tensor.log_softmax = lambda self, axis=-1: log_softmax(self, axis)
    Tensor.logsumexp = lambda self, axis=None, keepdims=False: logsumexp(self, axis, keepdims)
    Tensor.cumsum = lambda self, axis: cumsum(self, axis)
    Tensor.gather = lambda self, axis, index: gather(self, axis, index)


_install()
