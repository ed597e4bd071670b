"""Shared shape/dtype rule helpers: broadcasting with unknown dims, reductions."""
from ..dtypes import types_result
from .registry import ShapeError, TensorType


def fmt_shape(shape):
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def broadcast_shapes(op, *shapes):
    """NumPy broadcasting of shapes that may hold ``None`` (unknown) dims."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dim = 1
        for s in shapes:
            j = i - (ndim - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif d is None or dim is None:
                # One side unknown: the result is the known side if the other broadcasts to it.
                dim = dim if d is None else d
            elif d != dim:
                raise ShapeError(
                    f"{op}: shapes {' and '.join(fmt_shape(x) for x in shapes)} cannot be broadcast "
                    f"together (dimension {i - ndim} is {dim} vs {d}); reshape or unsqueeze one of them")
        out.append(dim)
    return tuple(out)


def elementwise(op, *types, dtype=None):
    """The broadcast type of element-wise op ``op`` on ``types``: ``dtype``, or PyTorch's
    promotion of theirs (a 0-d operand does not widen a dimensioned one of its category)."""
    shape = broadcast_shapes(op, *(t.shape for t in types))
    return TensorType(shape, dtype or types_result(*types))


def norm_axes(axis, ndim, op="reduce"):
    """Canonical tuple of non-negative axes, or None for all axes."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    lim = max(ndim, 1)  # a 0-d tensor takes axis 0 or -1, as in PyTorch
    for a in axes:
        if not -lim <= a < lim:
            raise ShapeError(f"{op}: axis {a} is out of range for a tensor with {ndim} dims")
        out.append(a % ndim if ndim else 0)
    return tuple(sorted(set(out)))


def reduce_shape(shape, axes, keepdims):
    if axes is None:
        return tuple(1 for _ in shape) if keepdims else ()
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)

