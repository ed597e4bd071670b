"""Creation ops: ``zeros``, ``full``, ``empty``, ``arange``, ``eye``, ``from_numpy``, the
``*_like`` and ``Tensor.new_*`` forms, ... (runtime: ``d2s_runtime/ops/creation.py``; random
draws are the ``random`` family). None carries a gradient; those without inputs are exported to
ONNX as constants.

PyTorch's signatures: sizes as ints, one tuple or list, or ``size=``; ``dtype=`` (the default
float dtype, see ``d2s.set_default_dtype``, for float fills), ``device=`` and
``requires_grad=`` on every one.
"""
import builtins

import numpy as np

from .._state import STATE
from ..autograd.registry import non_differentiable
from ..dispatch import apply, create, fill_like
from d2s_runtime.dtypes import checked_fill

from ..dtypes import as_dtype, default_float
from ..onnx.registry import i64, onnx_constant, onnx_converter
from ..tensor import Tensor, check_dtype, get_default_device, number_dtype, tensor, tensor_method
from ._util import _is_symbolic, _shape_arg


def _creation(name, device, requires_grad, **attrs):
    out = create(name, _device(device), **attrs)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _device(device):
    """A device argument as d2s names it: 'cuda' (and 'cuda:0', or a device object printing so)
    is 'gpu'."""
    if device is None:
        return None
    name = str(getattr(device, "type", device))
    return "gpu" if name.split(":")[0] == "cuda" else name


def _no_out(op, out):
    if out is not None:
        raise TypeError(f"{op}: out= is not supported by d2s (tensors are never written through out=); assign "
                        f"the result instead, or copy it in with buf.copy_(result)")


def _sizes(op, shape, size):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` and ``f(size=(2, 3))`` all mean (2, 3)."""
    if size is not None:
        if shape:
            raise TypeError(f"{op}: give the size either as arguments or as size=, not both")
        shape = (size,)
    return _shape_arg(shape)


def _float_or(dtype):
    return default_float() if dtype is None else dtype


# ------------------------------------------------------------------ fills
def zeros(*shape, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """A tensor of zeros; ``zeros(2, 3)``, ``zeros((2, 3))``, ``zeros([2, 3])`` and
    ``zeros(size=(2, 3))`` agree. dtype: the default float dtype unless given."""
    _no_out("zeros", out)
    return full(_sizes("zeros", shape, size), 0, dtype=_float_or(dtype), layout=layout, device=device,
                requires_grad=requires_grad)


def ones(*shape, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """A tensor of ones; the size is given as for :func:`zeros`."""
    _no_out("ones", out)
    return full(_sizes("ones", shape, size), 1, dtype=_float_or(dtype), layout=layout, device=device,
                requires_grad=requires_grad)


def empty(*shape, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None):
    """A tensor of the given size whose values are unspecified (zeros in d2s: deterministic);
    the size is given as for :func:`zeros`."""
    _no_out("empty", out)
    return full(_sizes("empty", shape, size), 0, dtype=_float_or(dtype), layout=layout, device=device,
                requires_grad=requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """A tensor of ``size`` filled with ``fill_value`` (dtype from the value by default: bool,
    int64, or the default float dtype); a dim may be a symbolic 0-d tensor inside a program,
    and the value a 0-d tensor."""
    _no_out("full", out)
    if layout is not None:
        raise TypeError(f"full: layout={layout!r} is not supported; d2s tensors are dense (leave layout out)")
    if isinstance(fill_value, Tensor):
        if fill_value.numel() != 1:
            raise ValueError(f"full: fill_value must be a number or a one-element tensor, got shape "
                             f"{tuple(fill_value.shape)}")
        if fill_value.is_symbolic:
            if dtype is None:  # a stand-in for a Python number (float(t), t.item()): the number's dtype
                dtype = number_dtype(fill_value)
            dt = str(as_dtype(fill_value.dtype if dtype is None else dtype))
            return apply("reshape", fill_value, shape=[]).cast(dt) + full(size, 0, dtype=dt)
        fill_value = fill_value.item()
    if dtype is None:
        dtype = "bool" if isinstance(fill_value, (bool, np.bool_)) else \
            "int64" if isinstance(fill_value, (int, np.integer)) else default_float()
    fill_value = checked_fill(fill_value, str(as_dtype(dtype)))  # (uint8's -1 is 255, as PyTorch's)
    shape = _shape_arg(size if isinstance(size, (list, tuple)) else [size])
    if builtins.any(_is_symbolic(d) for d in shape):
        out = apply("full_dims", *[apply("cast", d, dtype="int64") for d in shape if _is_symbolic(d)],
                    shape=[-1 if _is_symbolic(d) else d for d in shape], value=fill_value, dtype=str(as_dtype(dtype)))
        return out.requires_grad_(True) if requires_grad else out
    if builtins.any(d < 0 for d in shape):
        raise ValueError(f"full: negative dimension in size {list(shape)}")
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
        out = apply("full_like", x, value=checked_fill(fill, str(as_dtype(dtype))), dtype=str(as_dtype(dtype)))
        return out.requires_grad_(True) if requires_grad else out
    if not isinstance(x, Tensor):
        x = tensor(x)
    dtype = x.dtype if dtype is None else dtype
    return full(list(x.shape), fill, dtype=dtype, device=device or x.device, requires_grad=requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False, *, layout=None, memory_format=None):
    """Zeros shaped like ``input`` (its dtype and device unless given)."""
    return _like(input, 0, dtype, device, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False, *, layout=None, memory_format=None):
    """Ones shaped like ``input`` (its dtype and device unless given)."""
    return _like(input, 1, dtype, device, requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False, *, layout=None, memory_format=None):
    """A tensor shaped like ``input`` whose values are unspecified (zeros in d2s)."""
    return _like(input, 0, dtype, device, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False, *, layout=None, memory_format=None):
    """``fill_value`` shaped like ``input`` (its dtype and device unless given)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _like(input, fill_value, dtype, device, requires_grad)


@onnx_converter("full_like")
def _full_like_onnx(g, op):
    # zeros_like/ones_like of a value whose shape may be known only at run time
    dt = g.dtype(op.outputs[0])
    shape = g.tmp()
    g.node("Shape", op.inputs, [shape])
    value = g.x.numpy_helper.from_array(np.asarray([op.attrs.get("value", 0.0)], dtype=dt))
    g.node("ConstantOfShape", [shape], op.outputs, value=value)


# ------------------------------------------------------------------ Tensor.new_*
def _new_sizes(size):
    return size[0] if len(size) == 1 and isinstance(size[0], (list, tuple)) else list(size)


@tensor_method("new_zeros")
def _new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """Zeros of ``size`` with this tensor's dtype and device unless given."""
    return full(_new_sizes(size), 0, dtype=dtype or self.dtype, device=device or _own_device(self),
                requires_grad=requires_grad)


@tensor_method("new_ones")
def _new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """Ones of ``size`` with this tensor's dtype and device unless given."""
    return full(_new_sizes(size), 1, dtype=dtype or self.dtype, device=device or _own_device(self),
                requires_grad=requires_grad)


@tensor_method("new_empty")
def _new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A tensor of ``size`` (values unspecified: zeros) with this tensor's dtype and device."""
    return full(_new_sizes(size), 0, dtype=dtype or self.dtype, device=device or _own_device(self),
                requires_grad=requires_grad)


@tensor_method("new_full")
def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
              pin_memory=False):
    """``fill_value`` in a tensor of ``size``, with this tensor's dtype and device unless given."""
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or _own_device(self),
                requires_grad=requires_grad)


@tensor_method("new_tensor")
def _new_tensor(self, data, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A copy of ``data`` with this tensor's dtype and device unless given."""
    if isinstance(data, Tensor):
        data = data.detach()
    out = tensor(data, dtype=dtype or self.dtype, device=_device(device) or _own_device(self))
    return out.requires_grad_(True) if requires_grad else out


def _own_device(t):
    return None if t.is_symbolic else t.device


# ------------------------------------------------------------------ from arrays
def from_numpy(ndarray):
    """A tensor sharing ``ndarray``'s memory (``torch.from_numpy``): writing into one changes
    the other. Its dtype is the array's (one of d2s's dtypes)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    check_dtype(ndarray, "from_numpy")
    if get_default_device() != "cpu":
        raise RuntimeError(f"from_numpy: the default device is {get_default_device()!r}, but a tensor sharing a "
                           "numpy array's memory lives on the CPU; use d2s.tensor(array) to copy it there")
    return Tensor._make(ndarray)


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, sharing its memory where it can (``torch.as_tensor``): a tensor of
    the asked dtype and device is returned as it is, a numpy array of a d2s dtype is shared;
    anything else is copied as by :func:`d2s.tensor`."""
    device = _device(device)
    if isinstance(data, Tensor) and number_dtype(data) is not None:
        return tensor(data, dtype=dtype, device=device)  # a stand-in for a Python number: a new tensor
    if isinstance(data, Tensor):
        out = data
        if dtype is not None and as_dtype(dtype) != data.dtype:
            out = out.cast(dtype)
        if device is not None and device != out.device:
            out = out.to(device)
        return out
    on_cpu = device == "cpu" or (device is None and get_default_device() == "cpu")
    if isinstance(data, np.ndarray) and on_cpu and STATE.builder is None and \
            (dtype is None or as_dtype(dtype) == data.dtype.name):
        check_dtype(data, "as_tensor")
        return Tensor._make(data)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


# ------------------------------------------------------------------ ranges
def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """``start, start + step, ...`` below ``end`` (``arange(n)``: 0 to n-1), as ``torch.arange``:
    int64 when every bound is an integer, else the default float dtype; the bounds may be
    symbolic 0-d tensors inside a program."""
    _no_out("arange", out)
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = "int64" if builtins.all(_integral(v) for v in (start, end, step)) else default_float()
    if builtins.any(_is_symbolic(v) for v in (start, end, step)):
        out = apply("arange_dyn", start, end, step, dtype=str(as_dtype(dtype)))
        return out.requires_grad_(True) if requires_grad else out
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    start, end, step = (v.item() if isinstance(v, np.generic) else v for v in (start, end, step))
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange: upper bound ({end}) and lower bound ({start}) are inconsistent with the sign "
                         f"of step ({step})")
    return _creation("arange", device, requires_grad, start=start, stop=end, step=step, dtype=str(as_dtype(dtype)))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The row and column indices of the lower triangle of a ``row`` x ``col`` matrix (on and below
    the diagonal ``offset``), as a (2, N) tensor, row by row, as ``torch.tril_indices`` (int64
    unless ``dtype``)."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The row and column indices of the upper triangle of a ``row`` x ``col`` matrix (on and above
    the diagonal ``offset``), as a (2, N) tensor, row by row, as ``torch.triu_indices`` (int64
    unless ``dtype``)."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


def _triangle_indices(fn, indices, row, col, offset, dtype, device):
    row, col, offset = (int(v) for v in (row, col, offset))
    if row < 0 or col < 0:
        raise RuntimeError(f"{fn}: row and col must be non-negative, got row={row}, col={col}")
    dt = str(as_dtype(dtype or "int64"))
    if not dt.startswith(("int", "uint")):
        raise RuntimeError(f"{fn}: dtype must be an integer dtype (int64 by default), got {dt}")
    r, c = indices(row, offset, col)  # (numpy's are row by row too)
    return tensor(np.stack([r, c]).astype(dt).reshape(2, -1), device=_device(device))


def _integral(v):
    if isinstance(v, Tensor):
        return str(v.dtype).startswith(("int", "uint")) or v.dtype == "bool"
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


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` (both included), of the default
    float dtype unless given."""
    _no_out("linspace", out)
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    if int(steps) < 0:
        raise ValueError(f"linspace: steps must be non-negative, got {steps}")
    return _creation("linspace", device, requires_grad, start=start, stop=end, num=int(steps),
                     dtype=str(as_dtype(_float_or(dtype))))


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The ``n`` x ``m`` (default square) identity matrix, of the default float dtype unless given."""
    _no_out("eye", out)
    return _creation("eye", device, requires_grad, n=int(n), m=None if m is None else int(m),
                     dtype=str(as_dtype(_float_or(dtype))))

