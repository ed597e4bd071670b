"""Attention of ``d2s.nn.functional``: ``scaled_dot_product_attention`` and
``multi_head_attention_forward`` (the computation behind ``nn.MultiheadAttention``), as
PyTorch computes them: matmuls, a softmax and masks, so programs export to ONNX as
MatMul/Softmax.

Masks follow PyTorch's two conventions, which are opposite: in
``scaled_dot_product_attention`` a bool mask is True where attention is *allowed*; in
``MultiheadAttention`` (``attn_mask``, ``key_padding_mask``) True marks what is *masked out*.
Float masks are added to the scores in both.
"""
import math

import numpy as np

from .. import ops as _ops
from ..dispatch import apply
from ..ops import nn as nn_ops
from ._f_activation import dropout
from ._f_linear import linear
from ._util import _static_shape, as_tensor, const, known

_NEG_INF = float("-inf")


def _causal_allowed(scores):
    """Bool (L, S) (or broadcastable) mask, True where key position <= query position (the
    top-left aligned lower triangle, as PyTorch's ``is_causal``)."""
    L, S = (known(d) for d in _static_shape(scores)[-2:])
    if L is not None and S is not None:
        return const(np.tril(np.ones((L, S), dtype=bool)), scores)
    # dims known only when the program runs: positions counted with cumsum
    rows = _ops.cumsum(_ops.ones_like(scores[..., :, :1]), scores.ndim - 2)  # (..., L, 1)
    cols = _ops.cumsum(_ops.ones_like(scores[..., :1, :]), scores.ndim - 1)  # (..., 1, S)
    return _ops.le(cols, rows)


def _safe_softmax(scores):
    """Softmax over the last dim that gives zeros (not NaN) on rows masked out entirely, as
    PyTorch's attention kernels do (no NaN reaches backward either: the gradient of a zero row
    is zero)."""
    return apply("softmax", scores, axis=-1, zero_dead_rows=True)


def _repeat_heads(t, groups):
    """(..., Hk, S, E) -> (..., Hk * groups, S, E), each head repeated ``groups`` times in a row
    (``repeat_interleave`` on dim -3)."""
    shape = list(_static_shape(t))
    if any(d is None for d in shape[-3:]):
        raise ValueError("scaled_dot_product_attention: enable_gqa needs the heads, sequence and embedding dims "
                         "of key and value known when the program is built")
    hk, s, e = shape[-3:]
    lead = [-1 if d is None else d for d in shape[:-3]]
    rep = _ops.unsqueeze(t, -3) + _ops.zeros((groups, 1, 1), dtype=str(t.dtype), device=t.device)  # (..., Hk, g, S, E)
    return _ops.reshape(rep, lead + [hk * groups, s, e]) if lead.count(-1) <= 1 else rep


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(q k^T * scale + mask) v`` over (..., L, E) queries and (..., S, E) keys.

    Args:
        attn_mask: bool (True: may attend) or float (added to the scores), broadcastable to
            (..., L, S).
        dropout_p: dropout on the attention weights — applied whatever the mode, as in
            PyTorch (pass ``dropout_p if self.training else 0.0``).
        is_causal: attend only to key positions <= the query position; no ``attn_mask`` then.
        scale: the scores' factor (default ``1 / sqrt(E)``).
        enable_gqa: key and value may have fewer heads (dim -3) than the query, each shared by
            a group of query heads.

    Rows that may attend nowhere give zeros, as PyTorch's kernels give.
    """
    q, k, v = as_tensor(query), as_tensor(key), as_tensor(value)
    if scale is None:
        e = known(_static_shape(q)[-1])
        # (an embedding dim known only when the program runs: the factor is computed there)
        scale = 1.0 / math.sqrt(e) if e is not None else 1.0 / _ops.sqrt(_ops.cast(_ops.shape(q)[-1], q.dtype))
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa:
        hq, hk = _static_shape(q)[-3], _static_shape(k)[-3]
        if hq is not None and hk is not None and hq != hk:
            if hq % hk:
                raise RuntimeError(f"scaled_dot_product_attention: enable_gqa needs the query heads ({hq}) to be a "
                                   f"multiple of the key/value heads ({hk})")
            k, v = _repeat_heads(k, hq // hk), _repeat_heads(v, hq // hk)
    scores = _ops.matmul(q, _ops.transpose(k, -2, -1)) * scale
    if is_causal:
        scores = _ops.where(_causal_allowed(scores), scores, _ops.full_like(scores, _NEG_INF))
    if attn_mask is not None:
        mask = as_tensor(attn_mask)
        if str(mask.dtype) == "bool":
            scores = _ops.where(mask, scores, _ops.full_like(scores, _NEG_INF))
        else:
            scores = scores + mask
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return _ops.matmul(weights, v)


# ------------------------------------------------------------------ multi-head attention
def _float_mask(mask, dtype, what):
    """PyTorch's ``_canonical_mask``: a bool mask (True: masked out) as 0 / -inf floats."""
    if mask is None:
        return None
    mask = as_tensor(mask)
    if str(mask.dtype) == "bool":
        zeros = _ops.zeros_like(_ops.cast(mask, dtype))
        return _ops.where(mask, _ops.full_like(zeros, _NEG_INF), zeros)
    if not mask.dtype.is_floating_point:
        raise TypeError(f"only bool and floating types of {what} are supported, got {mask.dtype}")
    return mask


def _pad_last(t, n=1):
    """``t`` with ``n`` zeros appended along its last dim (F.pad(t, (0, n)))."""
    return _ops.concat([t, _ops.zeros_like(t[..., :1]) if n == 1 else _ops.zeros_like(t[..., :n])], axis=-1)


def _in_projection(query, key, value, w, b, separate, e):
    """q, k, v projected to width ``e``: one packed (3E, E) weight (split the way PyTorch's
    ``_in_projection_packed`` splits it), or three separate weights."""
    if separate is not None:
        wq, wk, wv = separate
        bq, bk, bv = (None, None, None) if b is None else _ops.split(b, [e, e, e], axis=0)
        return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)
    ws = _ops.split(w, [e, e, e], axis=0)
    bs = (None, None, None) if b is None else _ops.split(b, [e, e, e], axis=0)
    if key is query and value is query:  # self-attention: one matmul
        q, k, v = _ops.split(linear(query, w, b), [e, e, e], axis=-1)
        return q, k, v
    if value is key:
        kv_w = _ops.concat([ws[1], ws[2]], axis=0)
        kv_b = None if b is None else _ops.concat([bs[1], bs[2]], axis=0)
        k, v = _ops.split(linear(key, kv_w, kv_b), [e, e], axis=-1)
        return linear(query, ws[0], bs[0]), k, v
    return linear(query, ws[0], bs[0]), linear(key, ws[1], bs[1]), linear(value, ws[2], bs[2])


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """PyTorch's ``F.multi_head_attention_forward`` on sequence-first inputs: query (L, N, E),
    key and value (S, N, E) (or unbatched (L, E), (S, E)). Returns ``(output (L, N, E),
    weights)``, the weights (N, L, S) averaged over heads (or (N, heads, L, S)), or None
    without ``need_weights``. Masks: True (or -inf) marks a position masked out.
    """
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k/static_v are not supported; project the "
                                  "keys and values through the layer instead")
    same_qk, same_kv = key is query, value is key
    query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
    batched = query.ndim == 3
    if not batched:
        if query.ndim != 2 or key.ndim != 2 or value.ndim != 2:
            raise AssertionError(f"query, key and value must be all 2-d (unbatched) or all 3-d (batched), got "
                                 f"{query.ndim}-d, {key.ndim}-d and {value.ndim}-d")
        query = _ops.unsqueeze(query, 1)
        key = query if same_qk else _ops.unsqueeze(key, 1)
        value = key if same_kv else _ops.unsqueeze(value, 1)
        if key_padding_mask is not None:
            key_padding_mask = _ops.unsqueeze(as_tensor(key_padding_mask), 0)
    elif same_qk:
        key = query
    if batched and same_kv:
        value = key
    tgt_len, bsz, embed_dim = query.shape
    if isinstance(embed_dim, int) and embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    embed_dim = embed_dim_to_check
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    dtype = str(query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal mask is sdpa's own
    else:
        attn_mask = _float_mask(attn_mask, dtype, "attn_mask")
        is_causal = False
    key_padding_mask = _float_mask(key_padding_mask, dtype, "key_padding_mask")

    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias,
                             (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else None,
                             embed_dim)
    shared_mask = False  # one (1, L, S) mask for every batch entry and head (PyTorch's size(0) == 1 test)
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            attn_mask = _ops.unsqueeze(attn_mask, 0)
            shared_mask = True
        elif attn_mask.ndim != 3:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    if bias_k is not None and bias_v is not None:
        k = _ops.concat([k, _ops.zeros_like(k[:1]) + bias_k], axis=0)
        v = _ops.concat([v, _ops.zeros_like(v[:1]) + bias_v], axis=0)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    bh = bsz * num_heads
    q = _ops.transpose(_ops.reshape(q, [tgt_len, bh, head_dim]), 0, 1)  # (N*H, L, hd)
    k = _ops.transpose(_ops.reshape(k, [k.shape[0], bh, head_dim]), 0, 1)
    v = _ops.transpose(_ops.reshape(v, [v.shape[0], bh, head_dim]), 0, 1)
    if add_zero_attn:
        k = _ops.concat([k, _ops.zeros_like(k[:, :1])], axis=1)
        v = _ops.concat([v, _ops.zeros_like(v[:, :1])], axis=1)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        kpm = _ops.unsqueeze(_ops.unsqueeze(key_padding_mask, 1), 1)  # (N, 1, 1, S)
        kpm = _ops.reshape(kpm + _ops.zeros((1, num_heads, 1, 1), dtype=dtype, device=kpm.device), [bh, 1, src_len])
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
        shared_mask = False
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = _ops.matmul(q * math.sqrt(1.0 / float(head_dim)), _ops.transpose(k, -2, -1))
        if attn_mask is not None:
            scores = attn_mask + scores
        weights = nn_ops.softmax(scores, axis=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p, True)
        out = _ops.matmul(weights, v)  # (N*H, L, hd)
        out = _ops.reshape(_ops.transpose(out, 0, 1), [tgt_len * bsz, embed_dim])
        out = _ops.reshape(linear(out, out_proj_weight, out_proj_bias), [tgt_len, bsz, embed_dim])
        weights = _ops.reshape(weights, [bsz, num_heads, tgt_len, src_len])
        if average_attn_weights:
            weights = _ops.mean(weights, axis=1)
        if not batched:
            out, weights = _ops.squeeze(out, 1), _ops.squeeze(weights, 0)
        return out, weights
    if attn_mask is not None:
        if shared_mask or _static_shape(attn_mask)[0] == 1:
            attn_mask = _ops.unsqueeze(attn_mask, 0)
        else:
            attn_mask = _ops.reshape(attn_mask, [bsz, num_heads, attn_mask.shape[-2], src_len])
    q = _ops.reshape(q, [bsz, num_heads, tgt_len, head_dim])
    k = _ops.reshape(k, [bsz, num_heads, src_len, head_dim])
    v = _ops.reshape(v, [bsz, num_heads, src_len, head_dim])
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)  # (N, H, L, hd)
    out = _ops.reshape(_ops.permute(out, [2, 0, 1, 3]), [bsz * tgt_len, embed_dim])
    out = _ops.reshape(linear(out, out_proj_weight, out_proj_bias), [tgt_len, bsz, embed_dim])
    if not batched:
        out = _ops.squeeze(out, 1)
    return out, None
