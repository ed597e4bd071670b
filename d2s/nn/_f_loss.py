"""Loss functions and distances of ``d2s.nn.functional``, with PyTorch's signatures,
reductions (``'none'``, ``'sum'``, ``'mean'``, and the deprecated ``size_average``/``reduce``)
and gradients (kinks included: ``margin_ranking_loss``'s clamp passes the gradient at 0, as
PyTorch's ``clamp_min`` does).

Class targets are checked as PyTorch checks them: eagerly, a target outside ``[0, C)`` that
is not ``ignore_index`` raises ``IndexError``; inside a program (where nothing can raise
without a host round trip) its loss entry is NaN, never a silently wrong number.
"""
import math
import warnings

import numpy as np

from .. import ops as _ops
from ..ops import nn as nn_ops
from ..ops.support import static_shape as _static_shape, with_slope
from ..tensor import Tensor, tensor
from ._f_activation import log_softmax
from ..linalg import vector_norm


def _t(x):
    return x if isinstance(x, Tensor) else tensor(x)


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's mapping of the deprecated ``size_average``/``reduce`` to ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='none'|'sum'|'mean' "
                  "instead.", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _check_reduction(reduction, extra=()):
    if reduction not in ("none", "mean", "sum") + tuple(extra):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction):
    _check_reduction(reduction)
    if reduction == "mean":
        return _ops.mean(loss)
    if reduction == "sum":
        return _ops.sum(loss)
    return loss


def _same_shape(op, input, target, raise_=True):
    a, b = _static_shape(input), _static_shape(target)
    if len(a) != len(b) or any(i is not None and j is not None and i != j for i, j in zip(a, b)):
        if raise_:
            raise ValueError(f"{op}: input shape {a} and target shape {b} differ; PyTorch would broadcast them "
                             "(with a warning), which is rarely what is meant: reshape one of them so that they match")
        return False
    return True


def _weighted(op, elems, weight, input, reduction):
    """PyTorch's per-element ``weight`` of l1/mse: 'mean' divides by the summed weights."""
    if weight is None:
        return _reduce(elems, reduction)
    weight = _t(weight)
    if _static_shape(weight) != _static_shape(input):
        raise ValueError(f"{op}: Weights and input must have the same size.")
    _check_reduction(reduction)
    out = elems * weight
    if reduction == "mean":
        return _ops.sum(out) / _ops.sum(weight)
    return _ops.sum(out) if reduction == "sum" else out


# ------------------------------------------------------------------ regression
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean (or sum, or each) of ``|input - target|``."""
    input, target = _t(input), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _same_shape("l1_loss", input, target)
    return _weighted("l1_loss", _ops.abs(input - target), weight, input, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean (or sum, or each) of ``(input - target)**2``."""
    input, target = _t(input), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _same_shape("mse_loss", input, target)
    d = input - target
    return _weighted("mse_loss", d * d, weight, input, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``)."""
    input, target = _t(input), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _same_shape("smooth_l1_loss", input, target)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = input - target
    a = _ops.abs(d)
    if beta == 0:
        return _reduce(a, reduction)
    return _reduce(_ops.where(_ops.lt(a, beta), 0.5 * d * d / beta, a - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``; ``weight`` scales
    each element (its 'mean' is the plain mean of the weighted losses, as PyTorch)."""
    input, target = _t(input), _t(target)
    _same_shape("huber_loss", input, target)
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    d = input - target
    a = _ops.abs(d)
    loss = _ops.where(_ops.lt(a, delta), 0.5 * d * d, delta * (a - 0.5 * delta))
    if weight is not None:
        weight = _t(weight)
        if _static_shape(weight) != _static_shape(input):
            raise ValueError("huber_loss: Weights and input must have the same size.")
        loss = loss * weight
    return _reduce(loss, reduction)


def _clamped_min(x, lo):
    """``max(x, lo)`` in value with the gradient of ``x`` (PyTorch clamps under no_grad)."""
    return x + _ops.stop_gradient(_ops.maximum(x, lo) - x)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 (log(var) + (input - target)**2 / var)`` (+ ``0.5 log(2 pi)`` with ``full``), with
    ``var`` clamped to ``eps`` (without touching its gradient, as PyTorch)."""
    input, target = _t(input), _t(target)
    var = _t(var) if not isinstance(var, (int, float)) else _ops.full_like(input, float(var))
    si, sv = _static_shape(input), _static_shape(var)
    if si != sv:
        if si[:-1] == sv:
            var = _ops.unsqueeze(var, -1)
        elif not (len(si) == len(sv) and sum(1 for a, b in zip(si, sv) if a != b) == 1):
            raise ValueError("gaussian_nll_loss: var is of incorrect size")
    _check_reduction(reduction)
    var = _clamped_min(var, eps)
    d = input - target
    loss = 0.5 * (_ops.log(var) + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Negative log-likelihood of ``target`` under Poisson(``exp(input)``) (``log_input``) or
    Poisson(``input``); ``full`` adds Stirling's term where ``target > 1``."""
    input, target = _t(input), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = _ops.exp(input) - target * input if log_input else input - target * _ops.log(input + eps)
    if full:
        safe = _ops.where(_ops.gt(target, 1), target, _ops.ones_like(target) * 2.0)
        stirling = safe * _ops.log(safe) - safe + 0.5 * _ops.log(2 * math.pi * safe)
        loss = loss + _ops.where(_ops.gt(target, 1), stirling, _ops.zeros_like(stirling))
    return _reduce(loss, reduction)


# ------------------------------------------------------------------ classification
def _check_class_target(op, target, n_classes, ignore_index):
    """PyTorch's IndexError for a class id outside [0, C) (that is not ignore_index), eagerly."""
    # on the host only: elsewhere the check would wait for the device on every call (a target out
    # of range there gives a NaN loss, as inside a program)
    if target.is_symbolic or not isinstance(target.array, np.ndarray) or n_classes is None:
        return
    t = target.array
    bad = (t != ignore_index) & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].reshape(-1)[0])} is out of bounds.")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of integer class ``target`` under log-probabilities ``input``
    (class dim 1: (N, C) or (N, C, d1, ...), or (C,) for one sample), as PyTorch: entries whose
    target is ``ignore_index`` count for nothing, ``weight`` (C,) scales each entry by its
    class's weight, and ``'mean'`` divides by the summed weights of the entries counted."""
    if isinstance(weight, str):  # the old d2s positional form nll_loss(logp, target, 'sum')
        weight, reduction = None, weight
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    input, target = _t(input), _t(target)
    if target.dtype.is_floating_point or str(target.dtype) == "bool":
        raise TypeError(f"nll_loss: expected target dtype to be Long (integer class ids), but got {target.dtype}; "
                        "for class probabilities use cross_entropy with a float target shaped like the input")
    if str(target.dtype) == "uint8":  # PyTorch takes Byte class ids as well as Long
        target = _ops.cast(target, "int64")
    if input.ndim == 1:  # a single sample of C classes
        if target.ndim != 0:
            raise ValueError(f"nll_loss: a 1-d input (C,) takes a 0-d target, got target shape {tuple(target.shape)}")
        input, target = _ops.unsqueeze(input, 0), _ops.unsqueeze(target, 0)
    si, st = _static_shape(input), _static_shape(target)
    if len(st) != len(si) - 1 or any(a is not None and b is not None and a != b
                                     for a, b in zip(st, si[:1] + si[2:])):
        if len(st) >= 1 and len(si) >= 1 and st[0] is not None and si[0] is not None and st[0] != si[0]:
            raise ValueError(f"Expected input batch_size ({si[0]}) to match target batch_size ({st[0]}).")
        raise ValueError(f"nll_loss: target shape {st} must be the input shape {si} without the class dim 1")
    n_classes = si[1]
    _check_class_target("nll_loss", target, n_classes, ignore_index)
    valid = _ops.ne(target, ignore_index)
    in_range = _ops.logical_and(_ops.ge(target, 0), _ops.lt(target, n_classes if n_classes is not None
                                                             else _ops.shape(input)[1]))
    ok = _ops.logical_or(_ops.logical_not(valid), in_range)
    safe = _ops.where(_ops.logical_and(valid, in_range), target, _ops.zeros_like(target))
    picked = -_ops.squeeze(nn_ops.gather(input, 1, _ops.unsqueeze(safe, 1)), 1)
    w = _ops.cast(valid, input.dtype)
    if weight is not None:
        w = w * nn_ops.embedding(safe, _t(weight))
    # an ignored entry's loss is a 0 chosen by where, not picked * 0: its gradient stays 0 even
    # when nothing is counted and the mean's 1 / 0 is inf (PyTorch's backward skips it too)
    loss = _ops.where(valid, picked * w, _ops.zeros_like(picked))
    loss = _ops.where(ok, loss, _ops.full_like(loss, float("nan")))  # (programs: see the module docstring)
    if reduction == "mean":
        return _ops.sum(loss) / _ops.sum(w)
    return _reduce(loss, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross entropy of logits ``input`` (C,), (N, C) or (N, C, d1, ...) against integer class
    ids (shaped like ``input`` without the class dim 1) or against class probabilities (a
    float target shaped like ``input``).

    ``weight``, ``ignore_index`` and ``label_smoothing`` mean what they mean in PyTorch.
    Computed through ``log_softmax``, so large logits neither overflow nor lose precision.
    """
    if isinstance(weight, str):  # the old d2s positional form cross_entropy(x, t, 'sum')
        weight, reduction = None, weight
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    input, target = _t(input), _t(target)
    axis = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, axis)
    n_classes = _static_shape(input)[axis]
    if n_classes is None:  # known only when the program runs
        n_classes = _ops.cast(_ops.shape(input)[axis], input.dtype)
    w_shape = [1] * input.ndim
    w_shape[axis] = -1
    cw = None if weight is None else _ops.reshape(_t(weight), w_shape)
    if target.dtype.is_floating_point:
        if not _same_shape("cross_entropy", input, target, raise_=False):
            raise ValueError(
                f"cross_entropy: a float target holds class probabilities and must have the input's shape "
                f"{_static_shape(input)}, got {_static_shape(target)}; for class indices pass an integer "
                "(int64) target shaped like the input without the class dim")
        if label_smoothing:
            target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
        terms = target * logp if cw is None else target * logp * cw
        return _reduce(-_ops.sum(terms, axis=axis), reduction)
    loss = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if not label_smoothing:
        return loss
    # PyTorch's smoothing: (1 - s) * nll + s / C * (-sum_c w_c log p_c), ignored entries dropped
    if input.ndim == 1:
        logp, target = _ops.unsqueeze(logp, 0), _ops.unsqueeze(target, 0)
        cw = None if cw is None else _ops.reshape(cw, [1, -1])
    valid = _ops.ne(target, ignore_index)
    smooth = -_ops.sum(logp if cw is None else logp * cw, axis=1)
    smooth = _ops.where(valid, smooth, _ops.zeros_like(smooth))
    if reduction == "mean":
        if weight is None:
            denom = _ops.sum(_ops.cast(valid, logp.dtype))
        else:
            safe = _ops.where(valid, target, _ops.zeros_like(target))
            denom = _ops.sum(nn_ops.embedding(safe, _t(weight)) * _ops.cast(valid, logp.dtype))
        smooth = _ops.sum(smooth) / denom
    else:
        smooth = _reduce(smooth, reduction)
    return (1.0 - label_smoothing) * loss + (label_smoothing / n_classes) * smooth


_BCE_EPS = float(np.float32(1e-12))  # PyTorch's EPSILON, a float constant (also in double kernels)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-w (y log(x) + (1 - y) log(1 - x))`` of probabilities ``x``, each log clamped at -100
    (as PyTorch, so ``x`` of exactly 0 or 1 gives a finite loss, and PyTorch's finite gradient)."""
    input, target = _t(input), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not _same_shape("binary_cross_entropy", input, target, raise_=False):
        raise ValueError(f"Using a target size ({_static_shape(target)}) that is different to the input size "
                         f"({_static_shape(input)}) is deprecated. Please ensure they have the same size.")
    if isinstance(input.array, np.ndarray) and input.array.size:  # (on the host only: no device sync)
        lo, hi = float(input.array.min()), float(input.array.max())
        if lo < 0 or hi > 1:
            raise RuntimeError("all elements of input should be between 0 and 1 (binary_cross_entropy takes "
                               "probabilities; for logits use binary_cross_entropy_with_logits)")
    x = input.detach() if input.requires_grad else input
    # PyTorch's expression: (y - 1) max(log1p(-x), -100) - y max(log(x), -100)
    log_x = _ops.clip(_ops.log(x), -100.0, None)
    log_1mx = _ops.clip(_ops.log1p(-x), -100.0, None)
    loss = (target - 1.0) * log_1mx - target * log_x
    if input.requires_grad:
        # the gradient PyTorch gives the input: (x - y) / max(x (1 - x), 1e-12), finite where x is
        # exactly 0 or 1 (a saturated sigmoid in float32), where the clamped logs' own gradient is
        # 0 / 0
        y = target.detach() if target.requires_grad else target
        loss = with_slope(loss, input, (x - y) / _ops.maximum((1.0 - x) * x, _BCE_EPS))
    if weight is not None:
        loss = loss * _t(weight)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross entropy of logits, computed stably: ``(1 - y) x + lw * softplus(-x)`` with
    ``lw = 1 + (pos_weight - 1) y``; ``weight`` scales each element."""
    input, target = _t(input), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not _same_shape("binary_cross_entropy_with_logits", input, target, raise_=False):
        raise ValueError(f"Target size ({_static_shape(target)}) must be the same as input size "
                         f"({_static_shape(input)})")
    soft = _ops.logaddexp(-input, 0.0)  # softplus(-x) = -log(sigmoid(x))
    if pos_weight is not None:
        soft = soft * ((_t(pos_weight) - 1.0) * target + 1.0)
    loss = (1.0 - target) * input + soft
    if weight is not None:
        loss = loss * _t(weight)
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """``target * (log(target) - input)`` pointwise (``input`` holds log-probabilities; with
    ``log_target`` so does ``target``); ``reduction='batchmean'`` divides the sum by the batch
    size, which is the KL divergence (``'mean'`` divides by every element, with PyTorch's
    warning)."""
    input, target = _t(input), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, ("batchmean",))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if log_target:
        loss = _ops.exp(target) * (target - input)
    else:
        zero = _ops.eq(target, 0)
        safe = _ops.where(zero, _ops.ones_like(target), target)
        xlogx = _ops.where(zero, _ops.zeros_like(target), target * _ops.log(safe))
        loss = xlogx - target * input
    if reduction == "batchmean":
        n = input.shape[0] if input.ndim else 1
        return _ops.sum(loss) / n
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-y x))`` for targets ``y`` of +1 / -1."""
    input, target = _t(input), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(_ops.logaddexp(-target * input, 0.0), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per-class binary logistic loss of (N, C) logits against 0/1 targets, averaged over C."""
    input, target = _t(input), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * -_ops.logaddexp(-input, 0.0) + (1.0 - target) * -_ops.logaddexp(input, 0.0))
    if weight is not None:
        loss = loss * _t(weight)
    loss = _ops.mean(loss, axis=input.ndim - 1)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``x`` where ``y == 1``, ``max(0, margin - x)`` where ``y == -1``."""
    input, target = _t(input), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zeros = _ops.zeros_like(input)
    margin_part = _ops.where(_ops.ne(target, 1), _ops.clip(margin - input, 0.0, None), zeros)
    self_part = _ops.where(_ops.ne(target, -1), input, zeros)
    return _reduce(margin_part + self_part, reduction)


# ------------------------------------------------------------------ distances and ranking
def _p_norm(x, p, axis, keepdims=False):
    return vector_norm(x, p, dim=axis, keepdim=keepdims)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` along the last dim."""
    x1, x2 = _t(x1), _t(x2)
    return _p_norm(x1 - x2 + eps, p, -1, keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``x1 . x2 / (max(||x1||, eps) max(||x2||, eps))`` along ``dim`` (each norm clamped without
    touching its gradient, as PyTorch)."""
    x1, x2 = _t(x1), _t(x2)
    n1 = _clamped_min(_p_norm(x1, 2, dim, True), eps)
    n2 = _clamped_min(_p_norm(x2, 2, dim, True), eps)
    return _ops.sum((x1 / n1) * (x2 / n2), axis=dim)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    if out is not None:
        raise TypeError("normalize: out= is not supported; use the returned tensor")
    x = _t(input)
    return x / _ops.clip(_p_norm(x, p, dim, True), eps, None)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``y == 1``, ``max(0, cos(x1, x2) - margin)`` where ``y == -1``."""
    x1, x2, target = _t(input1), _t(input2), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if x1.ndim not in (1, 2) or x1.ndim != x2.ndim:
        raise ValueError(f"cosine_embedding_loss: expected 1-d or 2-d inputs of one rank, got shapes "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    d = x1.ndim - 1
    eps = 1e-12
    prod = _ops.sum(x1 * x2, axis=d)
    mag = (_ops.sum(x1 * x1, axis=d) + eps) * (_ops.sum(x2 * x2, axis=d) + eps)
    cos = prod / _ops.sqrt(mag)
    zeros = _ops.zeros_like(cos)
    pos = _ops.where(_ops.eq(target, 1), 1.0 - cos, zeros)
    neg = _ops.where(_ops.eq(target, -1), _ops.clip(cos - margin, 0.0, None), zeros)
    return _reduce(pos + neg, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -y (x1 - x2) + margin)``."""
    x1, x2, target = _t(input1), _t(input2), _t(target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not (x1.ndim == x2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(x1.shape)}, input2: {tuple(x2.shape)}, target: {tuple(target.shape)}")
    return _reduce(_ops.clip(-target * (x1 - x2) + margin, 0.0, None), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the ``p``-norm pairwise distance
    (``swap``: ``d(a, n)`` replaced by ``d(p, n)`` where smaller)."""
    a, pos, neg = _t(anchor), _t(positive), _t(negative)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not (a.ndim == pos.ndim == neg.ndim) or a.ndim not in (1, 2):
        raise RuntimeError(f"triplet_margin_loss: the anchor, positive and negative tensors are expected to have "
                           f"the same number of dimensions (1 or 2), but got: anchor {a.ndim}D, positive "
                           f"{pos.ndim}D, and negative {neg.ndim}D inputs")
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = _ops.minimum(d_neg, pairwise_distance(pos, neg, p, eps))
    return _reduce(_ops.clip(margin + d_pos - d_neg, 0.0, None), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` with any distance ``d`` (a function of two tensors;
    default :func:`pairwise_distance`), as ``torch.nn.functional.triplet_margin_with_distance_loss``
    (``swap``: ``d(a, n)`` replaced by ``d(p, n)`` where smaller)."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} "
                         f"instead")
    a, pos, neg = _t(anchor), _t(positive), _t(negative)
    if not (a.ndim == pos.ndim == neg.ndim):
        raise RuntimeError(f"triplet_margin_with_distance_loss: the anchor, positive and negative tensors are expected "
                           f"to have the same number of dimensions, but got: anchor {a.ndim}D, positive {pos.ndim}D, "
                           f"and negative {neg.ndim}D inputs")
    _check_reduction(reduction)
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = dist(a, pos), dist(a, neg)
    if swap:
        d_neg = _ops.minimum(d_neg, dist(pos, neg))
    return _reduce(_ops.clip(margin + d_pos - d_neg, 0.0, None), reduction)


def _class_rows(op, input, target):
    """(N, C) scores and (N,) int64 class targets of a margin loss (a 1-d input is one row)."""
    x, y = _t(input), _t(target)
    if x.ndim not in (1, 2) or y.ndim > 1:
        raise ValueError(f"{op}: expects input (C,) or (N, C) and target () / (1,) or (N,), got input "
                         f"{tuple(_static_shape(x))} and target {tuple(_static_shape(y))}")
    if y.dtype not in ("int64", "int32"):
        raise TypeError(f"{op}: target must hold class indices (an integer tensor), got {y.dtype}")
    return (_ops.unsqueeze(x, 0) if x.ndim == 1 else x), _ops.reshape(_ops.cast(y, "int64"), [-1])


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The multi-class hinge loss, as ``torch.nn.functional.multi_margin_loss``: per row
    ``sum over classes i != y of max(0, margin - x[y] + x[i]) ** p / C`` (``p`` 1 or 2), each
    term scaled by ``weight[y]`` when given.

    Args:
        input: (N, C) or (C,) scores.
        target: (N,) (or 0-d / (1,)) class indices.
        p: 1 or 2.
        margin: the margin.
        weight: (C,) per-class weights, or None.
        reduction: 'mean', 'sum' or 'none' (then (N,), or 0-d for a 1-d input).

    Returns:
        The loss, ``input``'s dtype.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("multi_margin_loss: only p == 1 and p == 2 supported")
    x, y = _class_rows("multi_margin_loss", input, target)
    c = _static_shape(x)[1]
    own = _ops.gather(x, 1, _ops.unsqueeze(y, 1))
    z = _ops.relu(margin - own + x)
    h = z if p == 1 else z * z
    if weight is not None:
        h = h * _ops.unsqueeze(_ops.index_select(_t(weight), 0, y), 1)
    others = _ops.logical_not(_ops.cast(_ops.one_hot(y, c), "bool"))
    loss = _ops.sum(_ops.where(others, h, _ops.zeros_like(h)), 1) / c
    if _t(input).ndim == 1:
        loss = _ops.reshape(loss, [])
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The multi-label hinge loss, as ``torch.nn.functional.multilabel_margin_loss``: each row's
    target lists its classes, ended by the first -1; the loss is
    ``sum over listed j, unlisted i of max(0, 1 - (x[j] - x[i])) / C``.

    Args:
        input: (N, C) or (C,) scores.
        target: int64 of ``input``'s shape: class indices, then -1 (and anything) after the last.
        reduction: 'mean', 'sum' or 'none' (then (N,), or 0-d for a 1-d input).

    Returns:
        The loss, ``input``'s dtype.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, y = _t(input), _t(target)
    if x.ndim not in (1, 2) or tuple(_static_shape(x)) != tuple(_static_shape(y)):
        raise ValueError(f"multilabel_margin_loss: expects input (C,) or (N, C) and a target of its shape, got "
                         f"{tuple(_static_shape(x))} and {tuple(_static_shape(y))}")
    rows, labels = (_ops.unsqueeze(x, 0), _ops.unsqueeze(y, 0)) if x.ndim == 1 else (x, y)
    labels = _ops.cast(labels, "int64")
    c = _static_shape(rows)[1]
    listed = _ops.cast(_ops.cumprod(_ops.cast(_ops.ne(labels, -1), "int64"), 1), "bool")  # before the first -1
    safe = _ops.where(listed, labels, _ops.zeros_like(labels))
    hot = _ops.logical_and(_ops.cast(_ops.one_hot(safe, c), "bool"), _ops.unsqueeze(listed, -1))
    is_target = _ops.any(hot, 1)  # (N, C)
    own = _ops.gather(rows, 1, safe)  # (N, C_listed)
    z = _ops.relu(1.0 - (_ops.unsqueeze(own, 2) - _ops.unsqueeze(rows, 1)))  # (N, listed j, class i)
    keep = _ops.logical_and(_ops.unsqueeze(listed, 2), _ops.unsqueeze(_ops.logical_not(is_target), 1))
    loss = _ops.sum(_ops.where(keep, z, _ops.zeros_like(z)), [1, 2]) / c
    if x.ndim == 1:
        loss = _ops.reshape(loss, [])
    return _reduce(loss, reduction)
