"""Plain-numpy reference implementations shared by the layer and op tests (slow and obvious on
purpose: loops over output positions)."""
import numpy as np


def conv2d_ref(x, w, b=None, stride=1, padding=0):
    """NCHW input, OIHW weight, symmetric zero padding; float64 result."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho, wo = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + (0 if b is None else b[None, :, None, None])


def max_pool2d_ref(x, k, stride, padding=0):
    """Max over k×k windows (padding counts as -inf); keeps x's dtype."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)), constant_values=-np.inf)
    ho, wo = (h + 2 * padding - k) // stride + 1, (w + 2 * padding - k) // stride + 1
    out = np.zeros((n, c, ho, wo), dtype=x.dtype)
    for i in range(ho):
        for j in range(wo):
            out[:, :, i, j] = xp[:, :, i * stride:i * stride + k, j * stride:j * stride + k].max(axis=(2, 3))
    return out
