"""``torch.*``'s own forms of functional layers (``torch.layer_norm``, ``torch.batch_norm``,
``torch.selu``, ``torch.pairwise_distance``, ...), which model files call beside
``torch.nn.functional``'s: the same computations, with ``torch.*``'s argument orders (``torch.batch_norm`` takes ``weight, bias`` before the running
statistics) and its ``cudnn_enabled`` flag (accepted; d2s has no cuDNN)."""
from . import functional as F


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """``torch.layer_norm``: :func:`d2s.nn.functional.layer_norm`."""
    del cudnn_enable  # (accepted: d2s has no cuDNN)
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """``torch.group_norm``: :func:`d2s.nn.functional.group_norm`."""
    del cudnn_enabled  # (accepted: d2s has no cuDNN)
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """``torch.batch_norm`` (weight and bias first): :func:`d2s.nn.functional.batch_norm`."""
    del cudnn_enabled  # (accepted: d2s has no cuDNN)
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """``torch.instance_norm`` (weight and bias first): :func:`d2s.nn.functional.instance_norm`."""
    del cudnn_enabled  # (accepted: d2s has no cuDNN)
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``torch.cosine_similarity``: :func:`d2s.nn.functional.cosine_similarity`."""
    return F.cosine_similarity(x1, x2, dim, eps)


def selu(input):
    """``torch.selu``: :func:`d2s.nn.functional.selu`."""
    return F.selu(input)


def celu(input, alpha=1.0):
    """``torch.celu``: :func:`d2s.nn.functional.celu`."""
    return F.celu(input, alpha)


def threshold(input, threshold, value):
    """``torch.threshold``: :func:`d2s.nn.functional.threshold`."""
    return F.threshold(input, threshold, value)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``torch.rms_norm``: :func:`d2s.nn.functional.rms_norm`."""
    return F.rms_norm(input, normalized_shape, weight, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``torch.pairwise_distance``: :func:`d2s.nn.functional.pairwise_distance`."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def bilinear(input1, input2, weight, bias=None):
    """``torch.bilinear``: :func:`d2s.nn.functional.bilinear`."""
    return F.bilinear(input1, input2, weight, bias)


def alpha_dropout(input, p, train):
    """``torch.alpha_dropout`` (``train``, not ``training``): :func:`d2s.nn.functional.alpha_dropout`."""
    return F.alpha_dropout(input, p, train)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """``torch.rrelu``: :func:`d2s.nn.functional.rrelu` (``generator`` not taken: d2s's global one)."""
    if generator is not None:
        raise TypeError("torch.rrelu: generator= is not supported; seed d2s.manual_seed instead")
    return F.rrelu(input, lower, upper, training)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``torch.conv3d``: :func:`d2s.nn.functional.conv3d`."""
    return F.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """``torch.conv_transpose3d``: :func:`d2s.nn.functional.conv_transpose3d`."""
    return F.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``torch.max_pool3d``: :func:`d2s.nn.functional.max_pool3d`."""
    return F.max_pool3d(input, kernel_size, stride if stride not in ((), []) else None, padding, dilation, ceil_mode)


# ATen's losses take the reduction as an int (0 'none', 1 'mean', 2 'sum'); called from Python
# without one, PyTorch's torch.* forms reduce nothing (0), whatever their schemas print
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(name, reduction):
    if isinstance(reduction, str):
        return reduction
    if isinstance(reduction, bool) or int(reduction) not in _REDUCTIONS:
        raise ValueError(f"torch.{name}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")
    return _REDUCTIONS[int(reduction)]


def kl_div(input, target, reduction=0, *, log_target=False):
    """``torch.kl_div`` (reduction an int): :func:`d2s.nn.functional.kl_div`."""
    return F.kl_div(input, target, reduction=_reduction("kl_div", reduction), log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """``torch.margin_ranking_loss``: :func:`d2s.nn.functional.margin_ranking_loss`."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction("margin_ranking_loss", reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """``torch.hinge_embedding_loss``: :func:`d2s.nn.functional.hinge_embedding_loss`."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """``torch.poisson_nll_loss`` (every argument given): :func:`d2s.nn.functional.poisson_nll_loss`."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction("poisson_nll_loss",
                                                                                          reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """``torch.cosine_embedding_loss``: :func:`d2s.nn.functional.cosine_embedding_loss`."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=0):
    """``torch.triplet_margin_loss``: :func:`d2s.nn.functional.triplet_margin_loss`."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """``torch.binary_cross_entropy_with_logits``: :func:`d2s.nn.functional.binary_cross_entropy_with_logits`."""
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction("binary_cross_entropy_with_logits", reduction),
                                              pos_weight=pos_weight)
