"""``nn.utils``: gradient clipping (``clip_grad_norm_``, ``clip_grad_value_``), flattening
parameters to one vector and back, and the ``rnn`` (padding and packing) and ``stateless``
(``functional_call``) submodules, with PyTorch's semantics.

    loss.backward()
    total = d2s.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()

Both change ``.grad`` in place (the arrays themselves, so an optimizer holding them sees the
clipped values) and record nothing for autograd.
"""
import math

import numpy as np
from d2s_runtime.device import xp_of

from ... import ops as _ops
from ...dtypes import default_float
from ...tensor import Tensor
from . import rnn, stateless  # noqa: F401

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_", "parameters_to_vector",
           "vector_to_parameters", "rnn", "stateless"]


def _with_grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p for p in parameters if p.grad is not None]


def _norm_type(norm_type):
    if isinstance(norm_type, str):
        if norm_type.lower() not in ("inf", "-inf"):
            raise ValueError(f"clip_grad_norm_: norm_type must be a number or 'inf', got {norm_type!r}")
        return float(norm_type)
    return float(norm_type)


def _vector_norm(xp, flat, p):
    """The ``p``-norm of a 1-d array, in its own dtype (``inf``: largest magnitude, ``0``: the
    number of non-zeros, as ``torch.linalg.vector_norm``)."""
    a = xp.abs(flat)
    if a.size == 0:
        return xp.zeros((), dtype=a.dtype)
    if p == math.inf:
        return a.max()
    if p == -math.inf:
        return a.min()
    if p == 0:
        return (a != 0).sum().astype(a.dtype)
    if p == 1:
        return a.sum()
    if p == 2:
        return xp.sqrt((a * a).sum())
    return (a ** p).sum() ** (1.0 / p)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients of ``parameters`` so that their total norm is at most ``max_norm``.

    The total norm is the ``norm_type``-norm of all gradients together (as if concatenated into
    one vector). Every gradient is multiplied in place by ``min(1, max_norm / (total + 1e-6))``.

    Args:
        parameters: a tensor or an iterable of tensors; those without ``.grad`` are skipped.
        max_norm: the largest total norm allowed.
        norm_type: the p of the p-norm: a float, ``float('inf')`` or ``'inf'`` (largest
            magnitude).
        error_if_nonfinite: raise ``RuntimeError`` when the total norm is NaN or infinite
            (otherwise the gradients are scaled by a NaN factor, as in PyTorch).
        foreach: accepted for PyTorch compatibility; ignored.

    Returns:
        The total norm of the gradients before clipping, as a 0-d tensor (0.0 when no
        parameter has a gradient).
    """
    grads = [p.grad for p in _with_grads(parameters)]
    p = _norm_type(norm_type)
    if not grads:
        return Tensor._make(np.zeros((), dtype=default_float()))  # (torch.tensor(0.0))
    xp = xp_of(grads[0].array)
    norms = [_vector_norm(xp, g.array.reshape(-1), p) for g in grads]
    dtype = xp.result_type(*[n.dtype for n in norms])
    total = _vector_norm(xp, xp.stack([xp.asarray(n, dtype=dtype) for n in norms]), p)
    total = xp.asarray(total, dtype=dtype)
    finite = bool(xp.isfinite(total))
    if error_if_nonfinite and not finite:
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
                           f"{float(total)}, so they cannot be clipped; pass error_if_nonfinite=False to "
                           "scale them anyway, or find where they became non-finite with "
                           "d2s.autograd.detect_anomaly()")
    coef = min(float(max_norm) / (float(total) + 1e-6), 1.0) if finite else float(max_norm) / (float(total) + 1e-6)
    for g in grads:
        _write(g, g.array * xp.asarray(coef, dtype=g.array.dtype))
    return Tensor._make(total)


def _write(grad, value):
    """Put ``value`` into the gradient's own array (so whoever holds it sees the change), or
    replace the array when it is read-only."""
    d = grad.array
    if getattr(getattr(d, "flags", None), "writeable", True):
        d[...] = value
    else:
        grad.array = value


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of ``parameters`` into ``[-clip_value, clip_value]`` in place.

    Args:
        parameters: a tensor or an iterable of tensors; those without ``.grad`` are skipped.
        clip_value: the largest magnitude allowed (NaN gradients stay NaN).
        foreach: accepted for PyTorch compatibility; ignored.
    """
    c = float(clip_value)
    for param in _with_grads(parameters):
        d = param.grad.array
        _write(param.grad, xp_of(d).clip(d, -c, c))


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of ``tensors`` taken together (as if concatenated), a 0-d tensor."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = [t for t in tensors if t is not None]
    p = _norm_type(norm_type)
    if not tensors:
        return Tensor._make(np.zeros((), dtype=default_float()))  # (torch.tensor(0.0))
    xp = xp_of(tensors[0].array)
    norms = [_vector_norm(xp, t.array.reshape(-1), p) for t in tensors]
    dtype = xp.result_type(*[n.dtype for n in norms])
    total = xp.asarray(_vector_norm(xp, xp.stack([xp.asarray(n, dtype=dtype) for n in norms]), p), dtype=dtype)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return Tensor._make(total)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))``, in place."""
    grads = [p.grad for p in _with_grads(parameters)]
    if not grads:
        return
    coef = min(float(max_norm) / (float(total_norm) + 1e-6), 1.0)
    xp = xp_of(grads[0].array)
    for g in grads:
        _write(g, g.array * xp.asarray(coef, dtype=g.array.dtype))


def parameters_to_vector(parameters):
    """Every tensor of ``parameters`` flattened and joined into one 1-d tensor (differentiable)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return _ops.concat([_ops.reshape(p, [-1]) for p in parameters], axis=0)


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-d ``vec`` into ``parameters``' values (in place)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    flat = vec.detach().array
    pointer = 0
    for param in parameters:
        n = int(np.prod(param.shape))
        param.array[...] = flat[pointer:pointer + n].reshape(param.shape)
        param._version += 1
        pointer += n
