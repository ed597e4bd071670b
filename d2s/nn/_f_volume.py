"""Volumes (N, C, D, H, W): ``F.conv3d``, ``F.conv_transpose3d``, ``F.max_pool3d``, ``F.avg_pool3d``,
``F.adaptive_avg_pool3d`` and ``F.adaptive_max_pool3d`` (video and medical-imaging models).

Compositions of d2s ops: the input is padded, its windows taken with ``Tensor.unfold`` along
each spatial dim (every ``dilation``-th element of a window of ``(k - 1) * dilation + 1``), then
contracted with the weight (``einsum``, channel groups apart) or reduced; the adaptive pools
are separable, one dim at a time. So values are PyTorch's up to the order of the sums,
gradients come from the ops' rules, and they convert, save and export (the unfold exports as a
Gather). The channel and spatial sizes must be known when a program is built.
"""
import numpy as np

from .. import ops as _ops
from ..ops.support import as_tensor as _t, static_shape as _static_shape
from ..tensor import tensor


def _triple(v, name, op):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return (int(v[0]),) * 3
        if len(v) != 3:
            raise ValueError(f"{op}: {name} needs one int or 3, got {v!r}")
        return tuple(int(a) for a in v)
    return (int(v),) * 3


def _volume(op, input):
    """(5-d input, whether it was unbatched) with its channel and spatial sizes known."""
    x = _t(input)
    if x.ndim not in (4, 5):
        raise ValueError(f"{op}: expected a 4-d (unbatched) or 5-d (batched) input, got shape "
                         f"{tuple(_static_shape(x))}")
    unbatched = x.ndim == 4
    if unbatched:
        x = _ops.unsqueeze(x, 0)
    if None in _static_shape(x)[1:]:
        raise ValueError(f"{op}: the channel and spatial sizes must be known when the program is built, got "
                         f"{tuple(_static_shape(x))}")
    return x, unbatched


def _windows(x, kernel, stride, dilation):
    """(N, C, D', H', W', kd, kh, kw): every window of the (already padded) volume."""
    for a, (k, s, d) in enumerate(zip(kernel, stride, dilation)):
        x = x.unfold(2 + a, (k - 1) * d + 1, s)
        if d > 1:
            x = x[..., ::d]
    return x


def _out_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling output size (a ceil_mode window must start inside the input or its
    left padding)."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution (cross-correlation), as ``torch.nn.functional.conv3d``.

    Args:
        input: (N, C_in, D, H, W) or (C_in, D, H, W).
        weight: (C_out, C_in / groups, kD, kH, kW).
        bias: (C_out,) or None.
        stride, dilation: an int or three.
        padding: an int, three, ``'valid'`` or ``'same'`` (stride 1; odd totals pad one more at the end).
        groups: independent channel groups.

    Returns:
        (N, C_out, D_out, H_out, W_out), or without N for an unbatched input.
    """
    x, unbatched = _volume("conv3d", input)
    w = _t(weight)
    kernel = tuple(_static_shape(w)[2:])
    if w.ndim != 5 or None in _static_shape(w):
        raise ValueError(f"conv3d: weight must be (C_out, C_in / groups, kD, kH, kW), got {tuple(_static_shape(w))}")
    stride, dilation = _triple(stride, "stride", "conv3d"), _triple(dilation, "dilation", "conv3d")
    groups = int(groups)
    c, o = _static_shape(x)[1], _static_shape(w)[0]
    if c % groups or o % groups or _static_shape(w)[1] * groups != c:
        raise ValueError(f"conv3d: input of {c} channels and weight {tuple(_static_shape(w))} do not match "
                         f"groups={groups}")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"conv3d: invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        if padding == "same" and stride != (1, 1, 1):
            raise ValueError("conv3d: padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) if padding == "same" else 0 for k, d in zip(kernel, dilation)]
        pads = [(t // 2, t - t // 2) for t in totals]
    else:
        pads = [(p, p) for p in _triple(padding, "padding", "conv3d")]
    flat_pads = [e for pair in reversed(pads) for e in pair]  # F.pad: the last dim first
    if any(flat_pads):
        x = _ops.pad(x, flat_pads)
    win = _windows(x, kernel, stride, dilation)  # (N, C, D', H', W', kd, kh, kw)
    n = _static_shape(win)[0]
    lead = -1 if n is None else n
    out_sizes = list(_static_shape(win)[2:5])
    win = _ops.reshape(win, [lead, groups, c // groups] + out_sizes + list(kernel))
    wg = _ops.reshape(w, [groups, o // groups, c // groups] + list(kernel))
    out = _ops.einsum("ngcdhwijk,gocijk->ngodhw", win, wg)
    out = _ops.reshape(out, [lead, o] + out_sizes)
    if bias is not None:
        out = out + _ops.reshape(_t(bias), [1, o, 1, 1, 1])
    return _ops.squeeze(out, 0) if unbatched else out


def _spread(x, dim, s):
    """``s - 1`` zeros between the elements of ``x`` along ``dim`` (a strided transposed
    convolution's input)."""
    if s == 1:
        return x
    n = _static_shape(x)[dim]
    zeros = _ops.zeros_like(_ops.unsqueeze(x, dim + 1))
    both = _ops.concat([_ops.unsqueeze(x, dim + 1)] + [zeros] * (s - 1), dim + 1)
    merged = _ops.flatten(both, dim, dim + 1)
    return _ops.narrow(merged, dim, 0, (n - 1) * s + 1)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-d transposed convolution (the gradient of :func:`conv3d` with respect to its input), as
    ``torch.nn.functional.conv_transpose3d``: the input spread ``stride`` apart, padded by
    ``dilation * (k - 1) - padding`` (plus ``output_padding`` at the end) and convolved with the
    flipped weight, in/out channels swapped within each group.

    Args:
        input: (N, C_in, D, H, W) or (C_in, D, H, W).
        weight: (C_in, C_out / groups, kD, kH, kW).
        bias: (C_out,) or None.
        stride, padding, output_padding, dilation: an int or three (output_padding < stride or
            dilation).
        groups: independent channel groups.

    Returns:
        (N, C_out, D_out, H_out, W_out) with ``out = (in - 1) * stride - 2 * padding +
        dilation * (k - 1) + output_padding + 1``; without N for an unbatched input.
    """
    x, unbatched = _volume("conv_transpose3d", input)
    w = _t(weight)
    if w.ndim != 5 or None in _static_shape(w):
        raise ValueError(f"conv_transpose3d: weight must be (C_in, C_out / groups, kD, kH, kW), got "
                         f"{tuple(_static_shape(w))}")
    stride, padding = _triple(stride, "stride", "conv_transpose3d"), _triple(padding, "padding", "conv_transpose3d")
    out_pad = _triple(output_padding, "output_padding", "conv_transpose3d")
    dilation, groups = _triple(dilation, "dilation", "conv_transpose3d"), int(groups)
    c, per_group_out = _static_shape(x)[1], _static_shape(w)[1]
    kernel = tuple(_static_shape(w)[2:])
    if _static_shape(w)[0] != c or c % groups:
        raise ValueError(f"conv_transpose3d: input of {c} channels and weight {tuple(_static_shape(w))} do not "
                         f"match groups={groups}")
    if any(op >= max(s, d) for op, s, d in zip(out_pad, stride, dilation)):
        raise ValueError(f"conv_transpose3d: output_padding {out_pad} must be smaller than either stride {stride} or "
                         f"dilation {dilation}")
    for a, s in enumerate(stride):
        x = _spread(x, 2 + a, s)
    pads = []
    for k, d, p, op in zip(kernel, dilation, padding, out_pad):
        edge = d * (k - 1) - p
        pads.append((edge, edge + op))
    # negative padding crops
    for a, (lo, hi) in enumerate(pads):
        if lo < 0 or hi < 0:
            n = _static_shape(x)[2 + a]
            x = _ops.narrow(x, 2 + a, max(-lo, 0), n - max(-lo, 0) - max(-hi, 0))
    flat_pads = [max(e, 0) for pair in reversed(pads) for e in pair]
    if any(flat_pads):
        x = _ops.pad(x, flat_pads)
    # (C_in, C_out/g, k) -> per group (C_out/g, C_in/g, k), flipped in space
    wg = _ops.reshape(w, [groups, c // groups, per_group_out] + list(kernel))
    wg = _ops.flip(_ops.transpose(wg, 1, 2), [3, 4, 5])
    wt = _ops.reshape(wg, [groups * per_group_out, c // groups] + list(kernel))
    out = conv3d(x, wt, bias, 1, 0, dilation, groups)
    return _ops.squeeze(out, 0) if unbatched else out


def _pool_setup(op, input, kernel_size, stride, padding, dilation, ceil_mode):
    x, unbatched = _volume(op, input)
    kernel = _triple(kernel_size, "kernel_size", op)
    stride = kernel if stride is None or stride == [] else _triple(stride, "stride", op)
    padding, dilation = _triple(padding, "padding", op), _triple(dilation, "dilation", op)
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise ValueError(f"{op}: pad should be at most half of effective kernel size, but got pad={padding}, "
                         f"kernel_size={kernel}")
    sizes = _static_shape(x)[2:]
    outs = [_out_size(s, k, st, p, d, ceil_mode) for s, k, st, p, d in zip(sizes, kernel, stride, padding, dilation)]
    if any(o <= 0 for o in outs):
        raise ValueError(f"{op}: the output would be empty ({outs}) for an input of {tuple(sizes)}")
    # right padding: enough for the last (ceil_mode) window
    pads = [(p, max(p, (o - 1) * st + d * (k - 1) + 1 - s - p))
            for s, k, st, p, d, o in zip(sizes, kernel, stride, padding, dilation, outs)]
    return x, unbatched, kernel, stride, dilation, sizes, outs, pads


def _crop(win, outs):
    """The first ``outs`` windows along each spatial dim (padding may give one more)."""
    return win[:, :, :outs[0], :outs[1], :outs[2]]


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of each window of a volume, as ``torch.nn.functional.max_pool3d`` (padding
    counts as -inf). ``return_indices`` is not supported."""
    if return_indices:
        raise NotImplementedError("max_pool3d: return_indices=True is not supported; d2s's max_pool2d has it")
    x, unbatched, kernel, stride, dilation, _, outs, pads = _pool_setup("max_pool3d", input, kernel_size, stride,
                                                                        padding, dilation, ceil_mode)
    flat_pads = [e for pair in reversed(pads) for e in pair]
    if any(flat_pads):
        x = _ops.pad(x, flat_pads, value=float("-inf"))
    out = _ops.amax(_crop(_windows(x, kernel, stride, dilation), outs), [-3, -2, -1])
    return _ops.squeeze(out, 0) if unbatched else out


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean of each window of a volume, as ``torch.nn.functional.avg_pool3d``: divided by
    ``divisor_override``, else by the window's size within the padded input
    (``count_include_pad``) or within the input alone."""
    x, unbatched, kernel, stride, _, sizes, outs, pads = _pool_setup("avg_pool3d", input, kernel_size, stride,
                                                                     padding, 1, ceil_mode)
    flat_pads = [e for pair in reversed(pads) for e in pair]
    if any(flat_pads):
        x = _ops.pad(x, flat_pads)
    sums = _ops.sum(_crop(_windows(x, kernel, stride, (1, 1, 1)), outs), [-3, -2, -1])
    if divisor_override:
        out = sums / float(divisor_override)
    else:
        counts = np.ones([1, 1, 1], np.float64)
        for a, (s, _, p, k, st, o) in enumerate(zip(sizes, pads, _triple(padding, "padding", "avg_pool3d"),
                                                           kernel, stride, outs)):
            # per output position along this dim: the window's length inside the input (+ its padding)
            starts = np.arange(o) * st - p
            ends = np.minimum(starts + k, s + p)
            if not count_include_pad:
                ends, starts = np.minimum(ends, s), np.maximum(starts, 0)
            shape = [1, 1, 1]
            shape[a] = o
            counts = counts * (ends - starts).reshape(shape)
        out = sums / tensor(counts.astype(str(x.dtype)))
    return _ops.squeeze(out, 0) if unbatched else out


def _adaptive_bounds(size, out):
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _adaptive(op, reduce, input, output_size):
    x, unbatched = _volume(op, input)
    sizes = _static_shape(x)[2:]
    outs = output_size if isinstance(output_size, (list, tuple)) else (output_size,) * 3
    if len(outs) != 3:
        raise ValueError(f"{op}: output_size needs one int or 3, got {output_size!r}")
    outs = [s if o is None else int(o) for s, o in zip(sizes, outs)]
    for a, (s, o) in enumerate(zip(sizes, outs)):
        dim = 2 + a
        if o == s:
            continue
        parts = [reduce(_ops.narrow(x, dim, b, e - b), dim) for b, e in _adaptive_bounds(s, o)]
        x = _ops.stack(parts, dim)
    return _ops.squeeze(x, 0) if unbatched else x


def adaptive_avg_pool3d(input, output_size):
    """The mean over PyTorch's adaptive windows (``floor(i * D / out)`` to ``ceil((i + 1) * D /
    out)``) of a volume, as ``torch.nn.functional.adaptive_avg_pool3d`` (None keeps a size)."""
    return _adaptive("adaptive_avg_pool3d", lambda t, d: _ops.mean(t, d), input, output_size)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The maximum over PyTorch's adaptive windows of a volume, as
    ``torch.nn.functional.adaptive_max_pool3d``. ``return_indices`` is not supported."""
    if return_indices:
        raise NotImplementedError("adaptive_max_pool3d: return_indices=True is not supported")
    return _adaptive("adaptive_max_pool3d", lambda t, d: _ops.amax(t, d), input, output_size)


__all__ = ["conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"]
