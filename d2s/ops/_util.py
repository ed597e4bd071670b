"""Argument helpers shared by the op families: axes, shapes, and the gradient of broadcasting."""
import numpy as np

from ..dispatch import apply
from ..tensor import Tensor, tensor


def _axes(axis):
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    return [int(axis)]


def _is_symbolic(v):
    return isinstance(v, Tensor) and v.is_symbolic


def _shape_arg(shape):
    """zeros(2, 3), zeros((2, 3)) and zeros([2, 3]) all mean shape (2, 3); a dim may be a
    symbolic 0-d tensor (``x.shape[0]`` of a dynamic dim), kept as is."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    if len(shape) == 1 and isinstance(shape[0], Tensor) and shape[0].ndim == 1:
        shape = _dims_of_shape_tensor(shape[0])
    return [d if _is_symbolic(d) else int(d) for d in shape]


def _dims_of_shape_tensor(t):
    """The dims a 1-D integer tensor holds (``d2s.zeros(x_shape_tensor)``): Python ints when
    it is concrete, 0-d symbolic dims inside a program (its length must be known there)."""
    if not t.dtype.startswith("int"):
        raise TypeError(f"a shape given as a tensor must hold integers, got {t.dtype}")
    if not _is_symbolic(t):
        return [int(d) for d in t.numpy().tolist()]
    n = t._var.type.shape[0]
    if not isinstance(n, int):
        raise ValueError("a shape given as a 1-D tensor needs a length known when the program is built "
                         "(the rank of the result); this one's length is known only when it runs")
    return [t[k] for k in range(n)]


def _static_dims(shape):
    """Target shape as ints; a symbolic dim (only known when the program runs) becomes -1."""
    out = []
    for d in shape:
        if isinstance(d, Tensor):
            if d.is_symbolic:
                out.append(-1)
                continue
            d = int(d)
        out.append(int(d))
    if out.count(-1) > 1:
        raise ValueError(f"reshape: at most one dim may be unknown (-1 or symbolic), got {list(shape)}")
    return out


def _static_shape(x):
    """Shape with ``None`` for dims known only when a program runs."""
    if isinstance(x, Tensor):
        return tuple(x.array.shape) if not x.is_symbolic else tuple(x._var.type.shape)
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _as_tensor(x):
    """Python scalars, lists and numpy arrays as tensors (d2s dtype defaults); tensors unchanged."""
    return x if isinstance(x, Tensor) else tensor(x)


# ------------------------------------------------------------------ gradient-rule helpers
def _shape(x):
    """Static shape of an op input (Tensor, array or Python scalar); None marks unknown dims."""
    if isinstance(x, Tensor):
        return x._var.type.shape if x.is_symbolic else x.array.shape
    return getattr(x, "shape", ())


def _is_diff(x):
    return isinstance(x, Tensor) and x.requires_grad


def unbroadcast(g, shape):
    """Sum ``g`` down to ``shape``: the gradient of NumPy broadcasting."""
    gshape = _shape(g)
    if tuple(gshape) == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        g = apply("reduce_sum", g, axes=_axes(axes), keepdims=True)
    if lead and None in shape:
        # the summed leading dims (kept, of size 1) dropped by a squeeze, which needs no sizes: a
        # reshape to a shape of two dims known only when the program runs has no static form
        g = apply("squeeze", g, axes=list(range(lead)))
        lead = 0
    if lead or not _matches(_shape(g), shape):
        target = [1 if s == 1 else -1 if s is None else s for s in shape] if None in shape else list(shape)
        g = apply("reshape", g, shape=_static_dims(target))
    return g


def _matches(got, want):
    """Whether static shape ``got`` fits ``want`` (None: a dim known only when the program runs)."""
    return len(got) == len(want) and all(w is None or g == w for g, w in zip(got, want))


def _pair(ctx, ga, gb):
    """The gradients of a binary op's two inputs, each summed down to its input's shape."""
    a, b = ctx.inputs
    return (unbroadcast(ga, _shape(a)) if _is_diff(a) else None,
            unbroadcast(gb, _shape(b)) if _is_diff(b) else None)


def with_slope(value, x, slope):
    """``value`` (computed from ``x`` detached) with the gradient ``slope`` (element-wise, no
    history) with respect to ``x``: a term of value 0 (``x * slope`` minus itself detached,
    subtracted, so that -0.0 stays) carries it. For an expression whose own gradient is not
    PyTorch's: a clamped log's 0 / 0 where PyTorch's backward formula is finite."""
    term = x * slope
    return value - (term.detach() - term)

