"""The one entry point of every op call: compute now, or append to a program; record autograd.

``apply(name, *inputs, **attrs)`` takes Tensors, numpy/cupy arrays and Python scalars as
inputs and attrs as plain data. Concrete inputs run the runtime kernel at once; while a
program is being built (or with a symbolic input) the builder appends an op and returns
symbolic tensors. In both cases, when grad mode is on and an input requires grad, an autograd
node is recorded with the op's gradient rule, so eager, static and higher-order backward
share one rule.
"""
import numpy as np

from d2s_runtime.device import xp_of
from d2s_runtime.ops import OPS, ShapeError

from ._state import HOOKED_THREADS, STATE
from .tensor import Tensor, _default_array

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
            arrays.append(a)
    if plain and arrays:
        arrays = [_default_array(a, np) for a in arrays]
    elif seq:  # gradient rules see the lists as the arrays they became
        inputs = tuple(arr if type(a) is list or type(a) is tuple else a for a, arr in zip(inputs, arrays))
    if xp is None:
        xp = np
    elif xp is not np:
        arrays = _same_device(opdef, arrays, xp)
    try:
        out = opdef.kernel(xp, *arrays, **attrs)
    except ShapeError:
        raise
    except (ValueError, TypeError, IndexError) as e:
        raise _op_error(opdef, inputs, e, attrs) from None
    if opdef.n_out == 1:
        result = Tensor._make(out if type(out) is _ndarray else xp.asarray(out))
        if record and STATE.grad_enabled:
            _record(opdef, inputs, attrs, (result,))
        return result
    results = tuple(Tensor._make(o if type(o) is _ndarray else xp.asarray(o)) for o in out)
    if record and STATE.grad_enabled:
        _record(opdef, inputs, attrs, results)
    return results


def _coerce_plain(inputs):
    """Lists become arrays, and with no tensor or array among the inputs, Python scalars do
    too, with d2s's defaults (float -> float32, int -> int64) instead of numpy's float64."""
    if any(isinstance(a, Tensor) or hasattr(a, "shape") for a in inputs):
        return tuple(_default_array(a, np) if type(a) in (list, tuple) else a for a in inputs)
    return tuple(_default_array(a, np) for a in inputs)


# Element-wise ops whose dtype follows NumPy promotion over these input positions (None: all):
# a weakly typed int among them (a loop counter, see d2s.static.weak_index) takes the other
# inputs' dtype, as the Python int it stands for would.
_WEAK_PROMOTING = {name: None for name in ("add", "sub", "mul", "div", "floordiv", "mod", "pow", "maximum",
                                          "minimum", "bitwise_and", "bitwise_or", "bitwise_xor")}
_WEAK_PROMOTING["where"] = (1, 2)


def _strengthen_weak(opdef, inputs):
    """``inputs`` with weak ints cast to the dtype the other operands give (as Python ints)."""
    from d2s_runtime.dtypes import result_type, scalar_result
    positions = _WEAK_PROMOTING[opdef.name] or range(len(inputs))
    strong = [str(a.dtype) for k, a in enumerate(inputs) if k in positions and hasattr(a, "dtype")
              and not getattr(a, "_d2s_weak", False)]
    if not strong:
        return inputs
    target = scalar_result(result_type(*strong), 0)
    out = list(inputs)
    for k in positions:
        a = out[k]
        if getattr(a, "_d2s_weak", False) and str(a.dtype) != target:
            out[k] = apply("cast", Tensor._make(a._data, a._var), dtype=target)
    return tuple(out)


def _apply_hooked(opdef, inputs, attrs):
    if opdef.name in _WEAK_PROMOTING and any(getattr(a, "_d2s_weak", False) for a in inputs):
        inputs = _strengthen_weak(opdef, inputs)
    builder = STATE.builder
    if builder is not None or any(isinstance(a, Tensor) and a._data is None for a in inputs):
        if builder is None:
            from .user_errors import stray_symbolic_error
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
    return results[0] if opdef.n_out == 1 else results


_record_fn = None  # d2s.autograd.node.record, bound on first use (autograd imports this module)


def _record(opdef, inputs, attrs, outputs):
    global _record_fn
    if _record_fn is None:
        from .autograd.node import record
        _record_fn = record
    _record_fn(opdef, inputs, attrs, outputs)


def _same_device(opdef, arrays, xp):
    out = []
    for a in arrays:
        if isinstance(a, _ndarray):
            if a.ndim == 0 or a.size == 1:
                a = xp.asarray(a)
            else:
                raise RuntimeError(f"{opdef.name}: inputs are on different devices (cpu and gpu); "
                                   "move them with .to('gpu') or .to('cpu') first")
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
    shapes = ", ".join(str(tuple(a.shape)) if hasattr(a, "shape") else repr(a) for a in inputs)
    return ShapeError(f"{opdef.name}: cannot apply to inputs with shapes {shapes}: {err}")


def _type_of(a):
    from d2s_runtime.ops import TensorType
    if isinstance(a, Tensor):
        return TensorType(a.shape, str(a.dtype))
    arr = a if hasattr(a, "dtype") else np.asarray(a)
    return TensorType(arr.shape, arr.dtype.name)
