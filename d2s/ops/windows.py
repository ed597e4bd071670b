"""Window functions, ``logspace`` and ``range`` with PyTorch's signatures: hann_window,
hamming_window, blackman_window, bartlett_window, kaiser_window, logspace, range.

Each is a constant of its arguments: computed in float64 by numpy (PyTorch's formulas, its
``periodic=True`` default: the window of ``N + 1`` points without its last) and made a tensor of
the requested dtype (the default float dtype unless given), so a converted function holds it as
a constant.
"""
import numpy as np

from ..dtypes import as_dtype, default_float
from ..tensor import Tensor, tensor


def _window(name, n, periodic, dtype, device, requires_grad, fn):
    n = int(n)
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    dt = str(as_dtype(dtype)) if dtype is not None else str(as_dtype(default_float()))
    if not dt.startswith(("float", "bfloat")):
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if n <= 1:
        values = np.ones(n)
    else:
        m = n + 1 if periodic else n
        values = fn(np.arange(m, dtype=np.float64), m)[:n]
    return tensor(values, dtype=dt, device=device, requires_grad=requires_grad)


def _cosine_sum(*coefs):
    def fn(k, m):
        w = np.zeros_like(k)
        for j, c in enumerate(coefs):
            w += (-1) ** j * c * np.cos(2 * np.pi * j * k / (m - 1))
        return w
    return fn


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi k / (N - 1))``, as ``torch.hann_window`` (periodic by
    default: ``N + 1`` points without the last)."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, _cosine_sum(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """The Hamming window ``alpha - beta cos(2 pi k / (N - 1))``, as ``torch.hamming_window``."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(float(alpha), float(beta)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``, as
    ``torch.blackman_window``."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular Bartlett window ``1 - |2k / (N - 1) - 1|``, as ``torch.bartlett_window``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 1 - np.abs(2 * k / (m - 1) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - (2k / (N - 1) - 1)^2)) / I0(beta)``, as
    ``torch.kaiser_window``."""
    beta = float(beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (m - 1) - 1) ** 2, 0, None))) / np.i0(beta))


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in the exponent,
    as ``torch.logspace`` (the default float dtype unless given; an integer dtype truncates)."""
    if out is not None:
        raise TypeError("logspace: out= is not supported; assign the result instead")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    steps = int(steps)
    if steps < 0:
        raise RuntimeError(f"logspace: number of steps must be non-negative, got {steps}")
    dt = str(as_dtype(dtype)) if dtype is not None else str(as_dtype(default_float()))
    exps = np.linspace(float(start), float(end), steps)
    values = np.power(float(base), exps)
    if not dt.startswith(("float", "bfloat")):
        values = np.trunc(values)
    return tensor(values.astype(np.float64), dtype=dt, device=device, requires_grad=requires_grad)


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,  # noqa: A001 (PyTorch's name)
          requires_grad=False):
    """The values ``start, start + step, ...`` up to ``end`` included, as the deprecated
    ``torch.range`` (``floor((end - start) / step) + 1`` of them; the default float dtype unless
    given). Prefer :func:`d2s.arange`, whose end is excluded."""
    if out is not None:
        raise TypeError("range: out= is not supported; assign the result instead")
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = int(np.floor((end - start) / step)) + 1
    dt = str(as_dtype(dtype)) if dtype is not None else str(as_dtype(default_float()))
    values = float(start) + float(step) * np.arange(n, dtype=np.float64)
    return tensor(values, dtype=dt, device=device, requires_grad=requires_grad)
