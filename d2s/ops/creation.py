"""Creation ops: ``zeros``, ``full``, ``arange``, ``eye``, random draws, ... (runtime:
``d2s_runtime/ops/creation.py``). None carries a gradient; those without inputs are exported
to ONNX as constants, random draws not at all."""
import builtins

import numpy as np

from d2s_runtime.ops import manual_seed as _runtime_seed

from .._state import STATE
from ..autograd.registry import non_differentiable
from ..dispatch import apply, create, fill_like
from ..dtypes import as_dtype
from ..onnx.registry import i64, onnx_constant, onnx_converter, onnx_unsupported
from ..tensor import Tensor, tensor
from ._util import _is_symbolic, _shape_arg

_float32 = "float32"
_RANDOM_REASON = "random draws have no ONNX form that reproduces d2s's generator; pass the noise as an input"



def _creation(name, device, requires_grad, **attrs):
    out = create(name, device, **attrs)
    if requires_grad:
        out.requires_grad_(True)
    return out


# ------------------------------------------------------------------ fills
def zeros(*shape, dtype=_float32, device=None, requires_grad=False):
    """A tensor of zeros; ``zeros(2, 3)``, ``zeros((2, 3))`` and ``zeros([2, 3])`` agree."""
    return full(_shape_arg(shape), 0, dtype=dtype, device=device, requires_grad=requires_grad)


def ones(*shape, dtype=_float32, device=None, requires_grad=False):
    """A tensor of ones; the shape is given as for :func:`zeros`."""
    return full(_shape_arg(shape), 1, dtype=dtype, device=device, requires_grad=requires_grad)


def full(shape, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of ``shape`` filled with ``fill_value`` (dtype from the value by default); a
    dim may be a symbolic 0-d tensor inside a program."""
    if dtype is None:
        dtype = "bool" if isinstance(fill_value, bool) else "int64" if isinstance(fill_value, int) else _float32
    shape = _shape_arg(shape if isinstance(shape, (list, tuple)) else [shape])
    if builtins.any(_is_symbolic(d) for d in shape):
        out = apply("full_dims", *[apply("cast", d, dtype="int64") for d in shape if _is_symbolic(d)],
                    shape=[-1 if _is_symbolic(d) else d for d in shape], value=fill_value, dtype=str(as_dtype(dtype)))
        return out.requires_grad_(True) if requires_grad else out
    return _creation("full", device, requires_grad, shape=shape, value=fill_value, dtype=str(as_dtype(dtype)))


non_differentiable("full", "full_dims", "full_like", reason="a fill carries no gradient to the tensor it is shaped like")
onnx_constant("full")


@onnx_converter("full_dims")
def _full_dims_onnx(g, op):
    # a fill whose unknown sizes are 0-d inputs: assemble the shape, then ConstantOfShape
    dt = g.dtype(op.outputs[0])
    dims, parts = iter(op.inputs), []
    for d in op.attrs["shape"]:
        if d == -1:
            c, u = g.tmp(), g.tmp()
            g.node("Cast", [next(dims)], [c], to=g.onnx_dtype("int64"))
            g.node("Unsqueeze", [c, g.const(i64([0]))], [u])
            parts.append(u)
        else:
            parts.append(g.const(i64([d])))
    shape = g.tmp()
    g.node("Concat", parts, [shape], axis=0)
    value = g.x.numpy_helper.from_array(np.asarray([op.attrs.get("value", 0.0)], dtype=dt))
    g.node("ConstantOfShape", [shape], op.outputs, value=value)


def _like(x, fill, dtype, device, requires_grad):
    if isinstance(x, Tensor) and dtype is None and device is None and not requires_grad:
        return fill_like(x, fill)
    if isinstance(x, Tensor) and x.is_symbolic:
        # A symbolic shape may hold unknown dims: the full_like op reads x's shape when the
        # program runs (x * 0 + fill would turn inf and nan entries into nan).
        dtype = x.dtype if dtype is None else dtype
        return apply("full_like", x, value=fill, dtype=str(as_dtype(dtype)))
    if not isinstance(x, Tensor):
        x = tensor(x)
    dtype = x.dtype if dtype is None else dtype
    return full(list(x.shape), fill, dtype=dtype, device=device or x.device, requires_grad=requires_grad)


def zeros_like(x, dtype=None, device=None, requires_grad=False):
    """Zeros shaped like ``x`` (its dtype and device unless given)."""
    return _like(x, 0, dtype, device, requires_grad)


def ones_like(x, dtype=None, device=None, requires_grad=False):
    """Ones shaped like ``x`` (its dtype and device unless given)."""
    return _like(x, 1, dtype, device, requires_grad)


def full_like(x, fill_value, dtype=None, device=None, requires_grad=False):
    """``fill_value`` shaped like ``x`` (its dtype and device unless given)."""
    return _like(x, fill_value, dtype, device, requires_grad)


@onnx_converter("full_like")
def _full_like_onnx(g, op):
    # zeros_like/ones_like of a value whose shape may be known only at run time
    dt = g.dtype(op.outputs[0])
    shape = g.tmp()
    g.node("Shape", op.inputs, [shape])
    value = g.x.numpy_helper.from_array(np.asarray([op.attrs.get("value", 0.0)], dtype=dt))
    g.node("ConstantOfShape", [shape], op.outputs, value=value)


# ------------------------------------------------------------------ ranges
def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """``start, start + step, ...`` below ``end`` (``arange(n)``: 0 to n-1); the bounds may be
    symbolic 0-d tensors inside a program."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = "int64" if builtins.all(_integral(v) for v in (start, end, step)) else _float32
    if builtins.any(_is_symbolic(v) for v in (start, end, step)):
        return apply("arange_dyn", start, end, step, dtype=str(as_dtype(dtype)))
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    return _creation("arange", device, requires_grad, start=start, stop=end, step=step, dtype=str(as_dtype(dtype)))


def _integral(v):
    if isinstance(v, Tensor):
        return v.dtype in ("int32", "int64")
    return isinstance(v, (int, np.integer))


non_differentiable("arange", "arange_dyn", "linspace", "eye", reason="a range carries no gradient")
onnx_constant("arange", "linspace", "eye")


@onnx_converter("arange_dyn")
def _arange_dyn_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    ins = []
    for n in op.inputs:  # Range needs start, limit and delta of the output's dtype
        if g.dtype(n) != dt:
            c = g.tmp()
            g.node("Cast", [n], [c], to=g.onnx_dtype(dt))
            n = c
        ins.append(n)
    g.node("Range", ins, op.outputs)


def linspace(start, end, steps, dtype=_float32, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` (both included)."""
    return _creation("linspace", device, requires_grad, start=start, stop=end, num=int(steps), dtype=str(as_dtype(dtype)))


def eye(n, m=None, dtype=_float32, device=None, requires_grad=False):
    """The ``n`` x ``m`` (default square) identity matrix."""
    return _creation("eye", device, requires_grad, n=int(n), m=None if m is None else int(m), dtype=str(as_dtype(dtype)))


# ------------------------------------------------------------------ random draws
def rand(*shape, dtype=_float32, device=None, requires_grad=False):
    """Uniform draws in [0, 1) from d2s's generator (see :func:`manual_seed`); a dim may be a
    symbolic 0-d tensor inside a program, as for :func:`zeros`."""
    return _draw("rand", shape, dtype, device, requires_grad)


def randn(*shape, dtype=_float32, device=None, requires_grad=False):
    """Standard normal draws from d2s's generator (see :func:`manual_seed`); a dim may be a
    symbolic 0-d tensor inside a program, as for :func:`zeros`."""
    return _draw("randn", shape, dtype, device, requires_grad)


def _draw(name, shape, dtype, device, requires_grad):
    shape = _shape_arg(shape)
    if builtins.any(_is_symbolic(d) for d in shape):
        out = apply(f"{name}_dims", *[apply("cast", d, dtype="int64") for d in shape if _is_symbolic(d)],
                    shape=[-1 if _is_symbolic(d) else d for d in shape], dtype=str(as_dtype(dtype)))
        return out.requires_grad_(True) if requires_grad else out
    return _creation(name, device, requires_grad, shape=shape, dtype=str(as_dtype(dtype)))


def randint(low, high=None, size=(), dtype="int64", device=None):
    """Random integers in ``[low, high)``; the bounds may be 0-d tensors, also symbolic ones
    inside a program (then drawn between the values they have when the program runs)."""
    if high is None:
        low, high = 0, low
    size = [int(d) for d in (size if isinstance(size, (list, tuple)) else [size])]
    if _is_symbolic(low) or _is_symbolic(high) or (STATE.tracer is not None and (
            isinstance(low, Tensor) or isinstance(high, Tensor))):
        return apply("randint_dyn", apply("cast", low, dtype="int64"), apply("cast", high, dtype="int64"),
                     shape=size, dtype=str(as_dtype(dtype)))
    return _creation("randint", device, False, shape=size, low=int(low), high=int(high), dtype=str(as_dtype(dtype)))


def manual_seed(seed):
    """Make d2s's random ops (eager and in programs) repeatable."""
    _runtime_seed(seed)


non_differentiable("rand", "randn", "rand_dims", "randn_dims", "randint", "randint_dyn",
                   reason="a random draw carries no gradient")
onnx_unsupported("rand", "randn", "rand_dims", "randn_dims", "randint", "randint_dyn", reason=_RANDOM_REASON)
