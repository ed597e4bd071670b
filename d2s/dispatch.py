"""The one entry point of every op call: compute now, or append to a program; record autograd.

``apply(name, *inputs, **attrs)`` takes Tensors, numpy/cupy arrays and Python scalars as
inputs and attrs as plain data. Concrete inputs run the runtime kernel at once; while a
program is being built (or with a symbolic input) the builder appends an op and returns
symbolic tensors. In both cases, when grad mode is on and an input requires grad, an autograd
node is recorded with the op's gradient rule, so eager, static and higher-order backward
share one rule.

Every op call goes through here: public wrappers (``d2s/ops/*``) call :func:`apply`, creation
ops with no inputs :func:`create`, and Tensor's operators are built by :func:`operator`, whose
eager fast path (plain arrays, nothing to record or build) calls the kernel directly.
"""
import numpy as np

from d2s_runtime.device import device_of, get_xp, xp_of
from d2s_runtime.dtypes import checked_fill, operand_result_type, scalar_result
from d2s_runtime.ops import OPS, ShapeError, TensorType
from d2s_runtime.ops.indexing import IndexOutOfRange
from d2s_runtime.ops.linalg import LinAlgError

from ._state import HOOKED_THREADS, STATE
from . import views as _views
from .autograd import node as _node
from .devices import as_device_name
from .autograd.grad_mode import INFERENCE_THREADS, mark_inference
from .tensor import Tensor, _default_array, get_default_device
from .user_errors import stray_symbolic_error

_ndarray = np.ndarray


def apply(name, *inputs, **attrs):
    """Run primitive ``name`` on ``inputs``; returns a Tensor (or a tuple for multi-output ops)."""
    opdef = OPS[name]
    if HOOKED_THREADS[0] and STATE.hooked:
        return _apply_hooked(opdef, _coerce_plain(inputs), attrs)
    arrays = []
    record = False
    xp = None
    plain = True  # no tensor or array input: Python scalars then take d2s's dtype defaults
    seq = False
    for a in inputs:
        if type(a) is Tensor or isinstance(a, Tensor):
            d = a._data
            if d is None:
                return _apply_hooked(opdef, inputs, attrs)
            vi = a._view
            if vi is not None and vi.version != vi.root._version:
                _views.fresh(a)  # its root was written in place since: take the new history
            if a.requires_grad:
                record = True
            if xp is None and type(d) is not _ndarray:
                xp = xp_of(d)
            arrays.append(d)
            plain = False
        else:
            if type(a) is list or type(a) is tuple:
                a = _default_array(a, np)
                seq = True
            elif hasattr(a, "shape"):
                plain = False
                if xp is None and type(a) is not _ndarray:  # a bare device array (gradient rules pass them)
                    xp = xp_of(a)
                    if xp is np:
                        xp = None
            arrays.append(a)
    if plain and arrays:
        arrays = [_default_array(a, np) for a in arrays]
    if xp is None:
        xp = np
    elif xp is not np:
        arrays = _same_device(opdef, arrays, xp, inputs)
    if seq and not plain:  # gradient rules see the lists as the arrays they became
        inputs = tuple(arr if type(a) is list or type(a) is tuple else a for a, arr in zip(inputs, arrays))
    try:
        out = opdef.kernel(xp, *arrays, **attrs)
    except ShapeError:
        raise
    except (ValueError, TypeError, IndexError) as e:
        raise _op_error(opdef, inputs, e, attrs) from None
    if opdef.n_out == 1:
        result = Tensor._make(out if type(out) is _ndarray else _as_array(out, xp))
        if record and STATE.grad_enabled:
            _record(opdef, inputs, attrs, (result,))
        if opdef.view:
            _views.note(opdef, inputs, attrs, (result,))
        if INFERENCE_THREADS[0]:
            mark_inference((result,))
        return result
    results = tuple(Tensor._make(o if type(o) is _ndarray else _as_array(o, xp)) for o in out)
    if record and STATE.grad_enabled:
        _record(opdef, inputs, attrs, results)
    if opdef.view:
        _views.note(opdef, inputs, attrs, results)
    if INFERENCE_THREADS[0]:
        mark_inference(results)
    return results


def _as_array(out, xp):
    """A kernel's result as an array: scalars become 0-d arrays of ``xp``; an array of another
    device stays as it is (``to_device``'s result is on the target device, not the input's)."""
    if isinstance(out, np.generic) or not hasattr(out, "shape"):
        return xp.asarray(out)
    return out


def _coerce_plain(inputs):
    """Lists become arrays, and with no tensor or array among the inputs, Python scalars do
    too, with d2s's defaults (float -> float32, int -> int64) instead of numpy's float64."""
    if any(isinstance(a, Tensor) or hasattr(a, "shape") for a in inputs):
        return tuple(_default_array(a, np) if type(a) in (list, tuple) else a for a in inputs)
    return tuple(_default_array(a, np) for a in inputs)


def _weak_promoting(opdef):
    """Whether a weakly typed int among the op's inputs (a loop counter, see
    d2s.static.weak_index) takes the other inputs' dtype (over the ``promotes`` positions, or
    all), as the Python int it stands for would: element-wise ops other than comparisons (a
    unary op has no other input to take a dtype from, so it keeps its input)."""
    return opdef.elementwise and not opdef.comparison


def _is_weak(a):
    """Whether ``a`` stands for a Python number in promotion: a weak int (a loop counter) or a
    float stand-in (``float(t)``, ``t.item()`` of a symbolic ``t``: float64, as a Python float
    is a double, which must not widen a float32 tensor nor make an int tensor's result float64)."""
    return getattr(a, "_d2s_weak", False) or (getattr(a, "_d2s_weak_float", False) and a.dtype.is_floating_point)


def _strengthen_weak(opdef, inputs):
    """``inputs`` with weak numbers cast to the dtype the other operands give (as Python ints and
    floats: scalar_result)."""
    positions = opdef.promotes or range(len(inputs))
    strong = [a for k, a in enumerate(inputs) if k in positions and hasattr(a, "dtype") and not _is_weak(a)]
    if not strong:
        return inputs
    result = operand_result_type([str(a.dtype) for a in strong], [a.ndim for a in strong])
    out = list(inputs)
    for k in positions:
        a = out[k]
        if _is_weak(a):
            target = scalar_result(result, 0.0 if a.dtype.is_floating_point else 0)
            if str(a.dtype) != target:
                out[k] = apply("cast", Tensor._make(a._data, a._var), dtype=target)
    return tuple(out)


def _apply_hooked(opdef, inputs, attrs):
    if _weak_promoting(opdef) and any(_is_weak(a) for a in inputs):
        inputs = _strengthen_weak(opdef, inputs)
    builder = STATE.builder
    given = inputs  # (a view's root is the object given: a module buffer, not the param reading it)
    if builder is not None or any(isinstance(a, Tensor) and a._data is None for a in inputs):
        if builder is None:
            raise stray_symbolic_error(opdef.name)
        results, inputs = builder.append(opdef, inputs, attrs)
    else:
        tracer = STATE.tracer
        STATE.tracer = None
        STATE.refresh()
        try:
            out = apply(opdef.name, *inputs, **attrs)
        finally:
            STATE.tracer = tracer
            STATE.refresh()
        results = out if isinstance(out, tuple) else (out,)
        # eager apply already recorded autograd nodes; the tracer only needs to see the op
        tracer.record(opdef, inputs, attrs, results)
        return out
    if STATE.grad_enabled and any(isinstance(a, Tensor) and a.requires_grad for a in inputs):
        _record(opdef, inputs, attrs, results)
    if opdef.view:
        _views.note(opdef, given, attrs, results)
    return results[0] if opdef.n_out == 1 else results


def _record(opdef, inputs, attrs, outputs):
    _node.record(opdef, inputs, attrs, outputs)


def _same_device(opdef, arrays, xp, inputs):
    """``arrays`` on the device of namespace ``xp``: Python data (scalars, lists), one-element
    numpy arrays and numpy scalars (where the op is not element-wise) are copied there; a
    larger numpy array is refused, as torch refuses a CPU tensor meeting a CUDA one (a silent
    copy on every call would hide a slow program)."""
    out = []
    for a, given in zip(arrays, inputs):
        if isinstance(a, _ndarray):
            if a.ndim == 0 or a.size == 1 or type(given) is list or type(given) is tuple:
                a = xp.asarray(a)
            else:
                dev = next(device_of(b) for b in arrays if not isinstance(b, (_ndarray, np.generic))
                           and hasattr(b, "dtype") and xp_of(b) is xp)
                raise RuntimeError(f"{opdef.name}: inputs are on different devices (cpu and {dev}); "
                                   f"move them with .to({dev!r}) or .to('cpu') first")
        elif isinstance(a, np.generic) and not opdef.elementwise:
            # cupy's ufuncs take numpy scalars as they take Python ones, but its other
            # functions (stack, concatenate, ...) take only device arrays
            a = xp.asarray(a)
        out.append(a)
    return out


def _op_error(opdef, inputs, err, attrs=None):
    # The shape rule words the problem best (op, shapes, what to do); the kernel's own error
    # is the fallback when the rule accepts the types.
    try:
        opdef.infer(*(_type_of(a) for a in inputs), **(attrs or {}))
    except ShapeError as rule_err:
        plain_index_error = isinstance(err, IndexError) and not isinstance(err, ValueError)  # not AxisError
        return (IndexError if plain_index_error else ShapeError)(str(rule_err))
    except Exception:
        pass
    if isinstance(err, (IndexOutOfRange, LinAlgError)):
        # an index out of range where PyTorch raises (gather, embedding), a singular matrix: its
        # message and type (PyTorch's own: IndexError, torch.linalg.LinAlgError)
        return err
    shapes = ", ".join(str(tuple(a.shape)) if hasattr(a, "shape") else repr(a) for a in inputs)
    return ShapeError(f"{opdef.name}: cannot apply to inputs with shapes {shapes}: {err}")


def _type_of(a):
    if isinstance(a, Tensor):
        return TensorType(a.shape, str(a.dtype))
    arr = a if hasattr(a, "dtype") else np.asarray(a)
    return TensorType(arr.shape, arr.dtype.name)


# ------------------------------------------------------------------ creation ops
def create(name, device=None, **attrs):
    """Run creation op ``name`` (no inputs) on ``device``; inside a program, append it."""
    if STATE.builder is not None:
        return apply(name, **attrs)
    opdef = OPS[name]
    if device is not None and type(device) is not str:
        device = as_device_name(device)  # a d2s.device, or an index
    elif device is not None and ":" in device:
        device = as_device_name(device)  # 'cuda:0'
    out = Tensor._make(opdef.kernel(get_xp(device if device is not None else get_default_device()), **attrs))
    if INFERENCE_THREADS[0]:
        mark_inference((out,))
    if STATE.tracer is not None:  # a trace must redraw random values on every call
        STATE.tracer.record(opdef, (), attrs, (out,))
    return out


def apply_kernel(name, xp, **attrs):
    """Op ``name``'s kernel on array namespace ``xp``, with no tensor around it (nn.init fills
    existing arrays with draws of the random ops)."""
    return OPS[name].kernel(xp, **attrs)


def fill_like(x, value):
    """A tensor shaped like tensor ``x``, of its dtype and on its device, holding ``value``
    (``zeros_like``/``ones_like``, and the seed gradients of backward)."""
    value = checked_fill(value, str(x.dtype))
    if x._data is None:
        # A symbolic shape may hold unknown dims: the full_like op reads x's shape when the
        # program runs (x * 0 + fill would turn inf and nan entries into nan).
        return apply("full_like", x, value=value, dtype=str(x.dtype))
    return create("full", x.device, shape=[int(d) for d in x.shape], value=value, dtype=str(x.dtype))


# ------------------------------------------------------------------ Tensor's operators
_SCALARS = (int, float, bool)


def operator(name, reflected=False):
    """Tensor's ``__op__`` (or ``__rop__``) for op ``name``: plain numpy operands with nothing
    to record or build call the registered kernel directly; everything else (and any error,
    for its full message) goes through :func:`apply`."""
    kernel = OPS[name].kernel

    def method(self, other):
        a = self._data
        if type(a) is _ndarray and not (HOOKED_THREADS[0] and STATE.hooked) and not self.requires_grad \
                and (self._view is None or self._view.version == self._view.root._version):
            t = type(other)
            b = None
            if t in _SCALARS:
                b = other
            elif t is Tensor and not reflected and not other.requires_grad and type(other._data) is _ndarray \
                    and (other._view is None or other._view.version == other._view.root._version):
                b = other._data
            if b is not None:
                try:
                    out = kernel(np, b, a) if reflected else kernel(np, a, b)
                except Exception:
                    pass
                else:
                    return Tensor._make(out if type(out) is _ndarray else np.asarray(out))
        return apply(name, other, self) if reflected else apply(name, self, other)

    return method


_views.bind(Tensor, apply)  # (views replay and write back through op calls)
