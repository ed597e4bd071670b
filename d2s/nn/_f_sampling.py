"""Sampling an image at computed points: ``F.grid_sample`` and the grids of ``F.affine_grid``
(spatial transformer networks, optical-flow warps, deformable attention).

Both are compositions of d2s ops (gathers of the image's flattened pixels at the corner indices,
weighted sums), written in the order PyTorch's CPU kernels compute them, so their values are
PyTorch's, their gradients (image and grid) come from the ops' rules, and they convert, save and
export as those ops do. The image's channel and spatial sizes must be known when a program is
built; its batch size and the grid's sizes may be dynamic.
"""
import itertools

import numpy as np

from .. import ops as _ops
from ..ops.support import as_tensor as _t, static_shape as _static_shape

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_CUBIC_A = -0.75  # PyTorch's bicubic convolution coefficient


def _unnormalize(coord, size, align_corners):
    """Grid coordinates in [-1, 1] to pixel indices (corner pixels' centres, or their outer
    edges, at -1 and 1)."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return (coord + 1) * (size / 2) - 0.5


def _reflect(coord, twice_low, twice_high):
    """``coord`` reflected into [twice_low / 2, twice_high / 2] (the image mirrored at its
    edges, as often as it takes)."""
    if twice_low == twice_high:
        return _ops.zeros_like(coord)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    dist = _ops.abs(coord - low)
    extra = _ops.fmod(dist, span)
    flips = _ops.floor(dist / span)
    even = _ops.eq(_ops.fmod(flips, 2.0), 0.0)
    return _ops.where(even, extra + low, (span - extra) + low)


def _pad_coordinates(coord, size, padding_mode, align_corners):
    """A pixel index moved inside the image as ``padding_mode`` says ('zeros' leaves it)."""
    if padding_mode == "border":
        return _ops.clamp(coord, 0, size - 1)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        return _ops.clamp(coord, 0, size - 1)
    return coord


class _Image:
    """An (N, C, *sizes) image flattened to (N, C, prod(sizes)), read at integer-valued indices
    (float tensors of the grid's shape), 0 outside it."""

    def __init__(self, x, sizes):
        self.sizes = sizes
        self.n, self.c = x.shape[0], x.shape[1]
        self.flat = _ops.reshape(x, [-1, self.c, int(np.prod(sizes))])
        self.strides = [int(np.prod(sizes[d + 1:])) for d in range(len(sizes))]

    def read(self, idx):
        """The pixels at indices ``idx`` (one per spatial dim, each (N, *out)) as (N, C, L), and
        whether each is inside the image, (N, 1, L)."""
        inside, lin = None, None
        for i, size, stride in zip(idx, self.sizes, self.strides):
            ok = _ops.logical_and(_ops.ge(i, 0), _ops.le(i, size - 1))
            inside = ok if inside is None else _ops.logical_and(inside, ok)
            term = _ops.clamp(i, 0, size - 1) * stride
            lin = term if lin is None else lin + term
        lin = _ops.reshape(_ops.cast(lin, "int64"), [self.n, 1, -1])
        vals = _ops.gather(self.flat, 2, lin.expand(self.n, self.c, lin.shape[-1]))
        return vals, _ops.reshape(inside, [self.n, 1, -1])

    def weighted(self, idx, weight):
        """``pixel * weight`` at ``idx``, 0 outside the image."""
        vals, inside = self.read(idx)
        w = _ops.reshape(weight, [self.n, 1, -1])
        return _ops.where(inside, vals * w, _ops.zeros_like(vals))


def _cubic_coefficients(t):
    """The four weights of the cubic convolution at fractional offset ``t`` (A = -0.75)."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """``input`` sampled at the points of ``grid``, as ``torch.nn.functional.grid_sample``.

    ``grid[n, ..., :]`` holds normalized coordinates in [-1, 1] (x: width first, then y, then z
    for a volume): -1 and 1 are the centres of the corner pixels with ``align_corners``, their
    outer edges without (PyTorch's default, ``None``, is False).

    Args:
        input: (N, C, H, W) or, for a volume, (N, C, D, H, W), float.
        grid: (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3), of ``input``'s dtype.
        mode: 'bilinear' (trilinear for volumes), 'nearest' (ties to even) or 'bicubic' (4-d only).
        padding_mode: 'zeros' (0 outside the image), 'border' (the nearest edge pixel) or
            'reflection' (the image mirrored at its edges).
        align_corners: see above.

    Returns:
        (N, C, H_out, W_out) or (N, C, D_out, H_out, W_out), ``input``'s dtype.
    """
    x, g = _t(input), _t(grid)
    if mode not in _MODES:
        raise ValueError(f"grid_sample: mode must be one of {_MODES}, got {mode!r}")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"grid_sample: padding_mode must be one of {_PADDINGS}, got {padding_mode!r}")
    k = x.ndim - 2
    if k not in (2, 3) or g.ndim != x.ndim or _static_shape(g)[-1] not in (k, None):
        raise ValueError(f"grid_sample: expects a 4-d input with a grid (N, H_out, W_out, 2) or a 5-d input with a "
                         f"grid (N, D_out, H_out, W_out, 3), got input {tuple(_static_shape(x))} and grid "
                         f"{tuple(_static_shape(g))}")
    if mode == "bicubic" and k != 2:
        raise ValueError("grid_sample: mode='bicubic' needs a 4-d input (PyTorch's too)")
    if x.dtype != g.dtype:
        raise TypeError(f"grid_sample: the grid must have the input's dtype ({x.dtype}), got {g.dtype}")
    sizes = list(_static_shape(x)[2:])
    if None in sizes or _static_shape(x)[1] is None:
        raise ValueError(f"grid_sample: the input's channel and spatial sizes must be known when the program is "
                         f"built, got {tuple(_static_shape(x))}; give them in the InputSpec")
    align = bool(align_corners)
    image = _Image(x, sizes)
    out_shape = list(g.shape[:-1])  # (N, *spatial out), symbolic where dynamic
    # the grid's last axis lists x (the last spatial dim) first
    coords = [_unnormalize(g[..., k - 1 - d], sizes[d], align) for d in range(k)]

    if mode == "bicubic":
        out = _bicubic(image, coords, padding_mode, align)
    else:
        coords = [_pad_coordinates(c, s, padding_mode, align) for c, s in zip(coords, sizes)]
        if mode == "nearest":
            out = image.weighted([_ops.round(c) for c in coords], _ops.ones_like(coords[0]))
        else:
            low = [_ops.floor(c) for c in coords]
            frac = [c - f for c, f in zip(coords, low)]  # distance to the lower neighbour
            out = None
            # corners in PyTorch's order (nw, ne, sw, se; a volume's top four first), each weighted
            # by the product of its distances to the opposite sides, x first
            for bits in itertools.product((0, 1), repeat=k):
                idx = [f + b for f, b in zip(low, bits)]
                w = None
                for d in reversed(range(k)):
                    side = frac[d] if bits[d] else 1 - frac[d]
                    w = side if w is None else w * side
                term = image.weighted(idx, w)
                out = term if out is None else out + term
    return _ops.reshape(out, [out_shape[0], image.c] + out_shape[1:])


def _bicubic(image, coords, padding_mode, align):
    """Bicubic interpolation over the 4 x 4 neighbours (rows first, then the column of row
    results), each neighbour's index padded on its own."""
    ix, iy = coords[1], coords[0]
    x0, y0 = _ops.floor(ix), _ops.floor(iy)
    wx, wy = _cubic_coefficients(ix - x0), _cubic_coefficients(iy - y0)
    (h, w) = image.sizes
    rows = []
    for i in range(4):
        yi = _pad_coordinates(y0 - 1 + i, h, padding_mode, align)
        row = None
        for j in range(4):
            xj = _pad_coordinates(x0 - 1 + j, w, padding_mode, align)
            term = image.weighted([yi, xj], wx[j])
            row = term if row is None else row + term
        rows.append(row)
    out = None
    for i in range(4):
        term = rows[i] * _ops.reshape(wy[i], [image.n, 1, -1])
        out = term if out is None else out + term
    return out


def _base_coordinates(steps, align_corners, like):
    """``steps`` points spread over [-1, 1] (the pixel centres; without ``align_corners``
    scaled by (steps - 1) / steps), PyTorch's ``linspace_from_neg_one``."""
    if steps <= 1:
        return _ops.zeros(1, dtype=like.dtype)
    r = _ops.linspace(-1.0, 1.0, steps, dtype=like.dtype)
    return r if align_corners else r * ((steps - 1) / steps)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of the affine maps ``theta``, as ``torch.nn.functional.affine_grid``:
    each output pixel's normalized coordinates ``(x, y[, z], 1)`` times ``theta`` transposed.

    Args:
        theta: (N, 2, 3) for images, (N, 3, 4) for volumes; float.
        size: the output's size ``(N, C, H, W)`` or ``(N, C, D, H, W)`` (a list of ints).
        align_corners: as :func:`grid_sample`'s (None: False).

    Returns:
        The grid (N, H, W, 2) or (N, D, H, W, 3) for :func:`grid_sample`, ``theta``'s dtype.
    """
    th = _t(theta)
    size = [int(s) for s in size]
    k = len(size) - 2
    if k not in (2, 3):
        raise ValueError(f"affine_grid: size must be (N, C, H, W) or (N, C, D, H, W), got {size}")
    if tuple(_static_shape(th)[1:]) != (k, k + 1) or th.dtype not in ("float32", "float64"):
        raise ValueError(f"affine_grid: for a {len(size)}-d size, theta must be floats of shape (N, {k}, {k + 1}), "
                         f"got {th.dtype} {tuple(_static_shape(th))}")
    align = bool(align_corners)
    spatial = size[2:]
    # base[..., :] = (x, y[, z], 1): x runs along the last spatial dim
    axes = [_base_coordinates(s, align, th) for s in spatial]
    mesh = _ops.meshgrid(*axes, indexing="ij")
    base = _ops.stack([mesh[k - 1 - d] for d in range(k)] + [_ops.ones_like(mesh[0])], dim=-1)
    flat = _ops.reshape(base, [1, -1, k + 1])
    grid = _ops.matmul(flat, _ops.transpose(th, 1, 2))
    return _ops.reshape(grid, [size[0]] + spatial + [k])
