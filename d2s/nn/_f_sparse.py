"""Lookups of ``d2s.nn.functional``: ``embedding``, ``embedding_bag`` and ``one_hot``."""
import numpy as np

from d2s_runtime.device import to_host, xp_of
from d2s_runtime.ops.indexing import IndexOutOfRange

from .. import ops as _ops
from .._state import STATE
from ..autograd import no_grad
from ..ops import nn as nn_ops
from ..tensor import Tensor, tensor
from ..ops import amax
from ._util import _static_shape


def _t(x):
    return x if isinstance(x, Tensor) else tensor(x)


def _ids(x, what):
    x = _t(x)  # Python ints and lists give int64; a float array is refused below, not truncated
    if not str(x.dtype).startswith("int"):
        raise TypeError(f"{what}: indices must be an integer tensor (int64 or int32), got {x.dtype}")
    return x


def one_hot(tensor, num_classes=-1):
    """int64 one-hot rows of ``num_classes`` entries (``-1``: the largest id + 1)."""
    return _ops.one_hot(tensor, num_classes)


def _scale_grad(v, s):
    """``v`` itself, with its gradient multiplied by ``s`` (``v - sg(v)`` is exactly 0)."""
    fixed = _ops.stop_gradient(v)
    return fixed + (v - fixed) * s


def _renorm_(ids, weight, max_norm, norm_type, what):
    """PyTorch's ``embedding_renorm_``: rows of ``weight`` that ``ids`` look up, with a
    ``norm_type``-norm above ``max_norm``, are scaled down to it, in place (no gradient)."""
    if weight.is_symbolic or ids.is_symbolic or STATE.builder is not None:
        raise NotImplementedError(
            f"{what}: max_norm rescales rows of the weight in place, which a program cannot do to a parameter; "
            "run this embedding eagerly (d2s.jit.not_to_static), or renormalize the weight yourself outside the "
            "converted function (under d2s.no_grad()) and drop max_norm")
    with no_grad():
        w = weight.array
        xp = xp_of(w)
        rows = np.unique(to_host(ids.array).reshape(-1) % w.shape[0])
        rows = rows if xp is np else xp.asarray(rows)
        sel = w[rows]
        a = xp.abs(sel)
        if norm_type == float("inf"):
            norms = a.max(axis=1)
        else:
            norms = (a ** norm_type).sum(axis=1) ** (1.0 / norm_type)
        scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
        w[rows] = sel * scale[:, None]
        weight._version += 1


def _padding(padding_idx, n, what):
    """``padding_idx`` as a non-negative row index (``n``: the rows, None if unknown here)."""
    if padding_idx is None:
        return None
    padding_idx = int(padding_idx)
    if n is None:
        if padding_idx < 0:
            raise ValueError(f"{what}: a negative padding_idx needs the number of embeddings known when the program "
                             "is built")
        return padding_idx
    if not -n <= padding_idx < n:
        raise ValueError(f"{what}: padding_idx {padding_idx} must be within num_embeddings ({n})")
    return padding_idx % n


def _check_range(ids, n, what):
    # on the host only: elsewhere the check would wait for the device on every lookup
    if n is not None and isinstance(ids.array, np.ndarray) and ids.array.size:
        lo, hi = int(ids.array.min()), int(ids.array.max())
        if lo < 0 or hi >= n:
            raise IndexOutOfRange(f"{what}: index out of range in self: indices must lie in [0, {n}), got values in "
                                  f"[{lo}, {hi}]")


def _check_offsets(offsets, ids):
    """PyTorch's checks of embedding_bag's offsets, on the host only (as _check_range): bags
    start at 0 and in order, and none starts past the input's end (d2s silently dropped the ids
    before a first offset above 0, and gave empty bags past the end)."""
    o, n = offsets.array, ids.array
    if not isinstance(o, np.ndarray) or not isinstance(n, np.ndarray) or not o.size:
        return
    if int(o[0]) != 0:
        raise ValueError(f"embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                         f"start from position 0. However, got {int(o[0])}")
    if int(o[-1]) > n.shape[0]:
        raise ValueError(f"embedding_bag: offsets[-1] can not be greater than input's length {n.shape[0]} but got "
                         f"offsets[-1] of {int(o[-1])}")
    if o.size > 1 and (np.diff(o) < 0).any():
        raise ValueError(f"embedding_bag: offsets must be non-decreasing, got {o.tolist()}")


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` (num_embeddings, dim) picked by integer ``input`` (any shape).

    Rows picked by ``padding_idx`` pass no gradient to ``weight``; ``max_norm`` first rescales
    the looked-up rows of ``weight`` in place to that norm at most (eagerly, as PyTorch);
    ``scale_grad_by_freq`` divides each row's gradient by how often the batch looks it up.
    """
    if sparse:
        raise NotImplementedError("embedding: sparse=True (sparse gradients) is not supported; d2s gradients "
                                  "are dense: drop sparse=")
    ids, weight = _ids(input, "embedding"), _t(weight)
    n = _static_shape(weight)[0]  # None: known only when the program runs
    _check_range(ids, n, "embedding")
    if max_norm is not None:
        _renorm_(ids, weight, float(max_norm), float(norm_type), "embedding")
    out = nn_ops.embedding(ids, weight)
    padding_idx = _padding(padding_idx, n, "embedding")
    if padding_idx is not None:
        keep = _ops.unsqueeze(_ops.ne(ids, padding_idx), -1)
        out = _ops.where(keep, out, _ops.stop_gradient(out))
    if scale_grad_by_freq:
        flat = _ops.reshape(ids, [-1])
        counts = _ops.scatter_add(_ops.zeros(weight.shape[0], dtype=str(weight.dtype), device=weight.device), 0, flat,
                                  _ops.ones_like(_ops.cast(flat, weight.dtype)))
        per_id = nn_ops.embedding(ids, _ops.unsqueeze(counts, -1))  # ids.shape + (1,)
        out = _scale_grad(out, 1.0 / per_id)
    return out


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embeddings, without forming the bags' rows one by one.

    ``input`` is either 2-d (B, L): B bags of L ids each, or 1-d with ``offsets`` (B,) giving
    where each bag starts (``include_last_offset``: B + 1 offsets, the last one the end).
    ``per_sample_weights`` (``mode='sum'`` only) weights each id; ids equal to
    ``padding_idx`` are left out of their bag (an empty bag gives zeros).
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("embedding_bag: max mode does not support scaling the gradient by the frequency")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None; per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request")
    ids, weight = _ids(input, "embedding_bag"), _t(weight)
    padding_idx = _padding(padding_idx, _static_shape(weight)[0], "embedding_bag")
    emb = embedding(ids, weight, None, max_norm, norm_type, scale_grad_by_freq, sparse)
    psw = None if per_sample_weights is None else _t(per_sample_weights)
    if psw is not None and None not in _static_shape(psw) + _static_shape(ids) and \
            tuple(_static_shape(psw)) != tuple(_static_shape(ids)):
        # (it would broadcast: one weight for every id, silently)
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(psw.shape)}) is not None, then it must have "
                         f"the same shape as the input ({tuple(ids.shape)})")
    if ids.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: if input is 2D, then offsets has to be None, as input is treated is a "
                             "mini-batch of fixed length sequences")
        valid = _ops.cast(_ops.ne(ids, -1 if padding_idx is None else padding_idx), weight.dtype)  # (B, L)
        if psw is not None:
            emb = emb * _ops.unsqueeze(psw, -1)
        return _bag_reduce(emb, valid, mode)
    if ids.ndim != 1:
        raise ValueError(f"embedding_bag: input has to be 1D or 2D, got shape {tuple(ids.shape)}")
    if offsets is None:
        raise ValueError("embedding_bag: offsets has to be a 1D tensor but got None")
    offsets = _ids(offsets, "embedding_bag")
    _check_offsets(offsets, ids)
    starts = offsets
    if include_last_offset:
        starts = offsets[:-1]
    # membership[i, b]: id i belongs to bag b (its position lies in [start_b, start_{b+1}))
    pos = _ops.unsqueeze(_ops.cumsum(_ops.ones_like(ids), 0) - 1, 1)  # (n, 1)
    bounds = _ops.concat([starts[1:], _ops.reshape(_ops.sum(_ops.ones_like(ids)), [1])
                          if not include_last_offset else offsets[-1:]], 0)
    member = _ops.logical_and(_ops.ge(pos, _ops.unsqueeze(starts, 0)), _ops.lt(pos, _ops.unsqueeze(bounds, 0)))
    if padding_idx is not None:
        member = _ops.logical_and(member, _ops.unsqueeze(_ops.ne(ids, padding_idx), 1))
    m = _ops.cast(member, weight.dtype)  # (n, B)
    if psw is not None:
        emb = emb * _ops.unsqueeze(psw, -1)
    return _bag_reduce(_ops.unsqueeze(emb, 0), _ops.transpose(m), mode)


def _bag_reduce(emb, valid, mode):
    """Reduce (B, L, D) rows over L where ``valid`` (B, L) is 1."""
    mask = _ops.unsqueeze(valid, -1)
    if mode in ("sum", "mean"):
        total = _ops.sum(emb * mask, axis=-2)
        if mode == "sum":
            return total
        count = _ops.sum(valid, axis=-1, keepdims=True)
        return total / _ops.maximum(count, 1.0)
    neg = _ops.where(_ops.gt(mask, 0), emb, _ops.full_like(emb, -np.inf))
    best = amax(neg, -2)
    has = _ops.gt(_ops.sum(valid, axis=-1, keepdims=True), 0)
    return _ops.where(has, best, _ops.zeros_like(best))
