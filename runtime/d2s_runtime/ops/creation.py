"""Primitives with no tensor inputs: fills and ranges (random draws: ``random.py``)."""
import numpy as np

from ..dtypes import FLOATS, normalize
from .random import RNG, manual_seed  # noqa: F401  (their home before random.py)
from .registry import ShapeError, TensorType, deflowering, defop


def _fill_infer(shape, value=0.0, dtype="float32"):
    return TensorType(shape, dtype)


defop("full", _fill_infer, doc="An array of ``shape`` filled with ``value``.", fresh=True)(
    lambda xp, shape, value=0.0, dtype="float32": xp.full(tuple(shape), value, dtype=normalize(dtype)))


def _full_like_infer(x, value=0.0, dtype=None):
    return TensorType(x.shape, dtype or x.dtype)


@defop("full_like", _full_like_infer, fresh=True)
def _full_like(xp, x, value=0.0, dtype=None):
    """An array shaped like x (whose values are never read) filled with ``value``: the way to
    make zeros/ones when x's shape is only known when the program runs."""
    return xp.full(x.shape, value, dtype=normalize(dtype) if dtype else x.dtype)


def _arange_size(start, stop, step):
    if step == 0:
        raise ShapeError("arange: step must be nonzero")
    if (stop - start) * step < 0:
        raise ShapeError(f"arange: the bounds ({start}, {stop}) are inconsistent with the sign of step ({step})")
    return max(0, int(np.ceil((stop - start) / step)))


def _arange_infer(start, stop, step=1, dtype="int64"):
    return TensorType((_arange_size(start, stop, step),), dtype)


def _arange_values(xp, start, stop, step, dtype):
    dt = normalize(dtype)
    if dt in FLOATS or any(isinstance(v, float) for v in (start, stop, step)):
        # start + i * step in float64, then rounded to dtype (as PyTorch; numpy's arange in a
        # narrower dtype accumulates its own rounding)
        n = _arange_size(start, stop, step)
        return (start + step * xp.arange(n, dtype="float64")).astype(dt)
    _arange_size(start, stop, step)
    return xp.arange(start, stop, step, dtype=dt)


defop("arange", _arange_infer, doc="Evenly spaced values in ``[start, stop)`` by ``step``.")(
    lambda xp, start, stop, step=1, dtype="int64": _arange_values(xp, start, stop, step, dtype))


def _linspace_infer(start, stop, num, dtype="float32"):
    return TensorType((num,), dtype)


def _linspace_values(xp, start, stop, num, dtype):
    """PyTorch's values: ``start + step * i`` for the first half and ``stop - step * (num - 1 - i)``
    for the rest, in the dtype for floats (its step too); an integer dtype takes start and stop
    as integers (truncated), the step in float64, and truncates the values toward zero (numpy's
    linspace rounds down and adds ``i * step`` from start to the end: other values)."""
    dt = np.dtype(normalize(dtype))
    if num <= 1:
        return xp.full(num, start, dt)
    if dt.kind == "c":
        return xp.linspace(start, stop, num, dtype=dt)
    if dt.kind in "iub":
        s, e, ft = float(int(start)), float(int(stop)), np.float64
    else:
        ft = dt.type
        s, e = ft(start), ft(stop)
    step = (ft(e) - ft(s)) / ft(num - 1)
    i = xp.arange(num).astype(ft)
    back = xp.arange(num - 1, -1, -1).astype(ft)  # num - 1 - i, an exact integer
    values = xp.where(xp.arange(num) < num // 2, ft(s) + step * i, ft(e) - step * back)
    return values.astype(dt)


defop("linspace", _linspace_infer, doc="``num`` evenly spaced values from ``start`` to ``stop`` (included).")(
    lambda xp, start, stop, num, dtype="float32": _linspace_values(xp, start, stop, num, dtype))


def _eye_infer(n, m=None, dtype="float32"):
    return TensorType((n, n if m is None else m), dtype)


defop("eye", _eye_infer, doc="An ``n`` x ``m`` matrix with ones on the diagonal.")(
    lambda xp, n, m=None, dtype="float32": xp.eye(n, m, dtype=normalize(dtype)))


# Creation with sizes known only when the program runs (``d2s.zeros([x.shape[0], 2])`` or
# ``d2s.arange(n)`` on symbolic values): the unknown sizes are 0-d integer inputs.
def _full_dims_infer(*dims, shape, value=0.0, dtype="float32"):
    return TensorType([None if d == -1 else d for d in shape], dtype)


@defop("full_dims", _full_dims_infer)
def _full_dims(xp, *dims, shape, value=0.0, dtype="float32"):
    """``full`` whose -1 entries of ``shape`` are read, in order, from the inputs."""
    it = iter(dims)
    return xp.full(tuple(int(next(it)) if d == -1 else d for d in shape), value, dtype=normalize(dtype))


def _arange_dyn_infer(start, stop, step, dtype="int64"):
    return TensorType((None,), dtype)


@defop("arange_dyn", _arange_dyn_infer)
def _arange_dyn(xp, start, stop, step, dtype="int64"):
    """``arange`` over 0-d inputs (bounds only known when the program runs)."""
    start, stop, step = (v.item() if hasattr(v, "item") else v for v in (start, stop, step))
    try:
        return _arange_values(xp, start, stop, step, dtype)
    except ShapeError as e:
        raise ValueError(str(e)) from None


@deflowering("arange_dyn", "native")
def _arange_dyn_native(e, start, stop, step, dtype="int64"):
    """Integer ``arange`` over run-time bounds (ceil((stop - start) / step) values, none when
    that is not positive; a zero step raises as the kernel does)."""
    if dtype not in ("int64", "int32") or any(v.dtype not in ("int64", "int32") or v.ndim for v in (start, stop, step)):
        e.unsupported("arange_dyn of other than 0-d integer bounds and an integer dtype")
    l = e._l
    a, b, c, n, out, i = (l.fresh() for _ in range(6))
    ind = l.indent
    for name, v in ((a, start), (b, stop), (c, step)):
        v = l.materialize(v)
        l.emit(ind, f"{name} = np.int64({v.name if v.kind == 's' else v.name + '[()]'})")
    l.emit(ind, f"if {c} == 0: raise ValueError('arange: step must be nonzero')")
    l.emit(ind, f"if ({b} - {a}) * {c} < 0: raise ValueError('arange: the bounds are inconsistent with the sign "
                f"of step')")
    l.emit(ind, f"{n} = max(np.int64(0), ({b} - {a} + {c} - (1 if {c} > 0 else -1)) // {c})")
    l.emit(ind, f"{out} = np.empty({n}, {'np.int64' if dtype == 'int64' else 'np.int32'})")
    l.emit(ind, f"for {i} in range({n}):")
    l.emit(ind + 1, f"{out}[{i}] = {a} + {i} * {c}")
    return l.new_array(out, dtype, (None,))


@deflowering("arange", "native")
def _arange_native(e, start, stop, step=1, dtype="int64"):
    """Its values (known from the attrs alone) computed once by the kernel, passed as a literal."""
    values = _arange_values(np, start, stop, step, dtype)
    if values.shape != tuple(e.out.shape):
        e.unsupported("arange's length differs from its type")
    return e.constant(values)


@deflowering("full", "native")
def _full_native(e, shape, value=0.0, dtype="float32"):
    return e.fill(value)


@deflowering("full_like", "native")
def _full_like_native(e, x, value=0.0, dtype=None):
    return e.fill(value, shape_of=x)
