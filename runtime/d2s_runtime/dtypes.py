"""dtype names shared by the IR, the kernels and the authoring layer."""
import numpy as np

# The narrow dtypes after the first five (float16, uint8, int8, int16) are those numpy computes
# with and PyTorch models meet (images as uint8, half precision, quantized int8): they work
# eagerly, in programs and in saved programs; the native backend and ONNX export refuse the ops
# they do not lower for them, with the reason.
DTYPES = ("float32", "float64", "int32", "int64", "bool", "float16", "uint8", "int8", "int16")
FLOATS = ("float16", "float32", "float64")
SHORT = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "bool",
         "float16": "f16", "uint8": "u8", "int8": "i8", "int16": "i16"}
LONG = {v: k for k, v in SHORT.items()}
_ALIASES = {"float": "float32", "int": "int64", "double": "float64", "long": "int64", "half": "float16",
            "short": "int16", "byte": "uint8", "char": "int8"}


def normalize(dtype):
    """Return the canonical dtype name for a name, numpy dtype or Python type.

    Raises TypeError naming the supported dtypes when `dtype` is not one of them.
    """
    if dtype is bool:
        return "bool"
    if dtype is float:
        return "float32"
    if dtype is int:
        return "int64"
    name = getattr(dtype, "name", None)
    if name is None:
        name = str(dtype)
    name = _ALIASES.get(name, LONG.get(name, name))
    if name not in DTYPES:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
        if name not in DTYPES:
            raise TypeError(f"unknown dtype {dtype!r}: d2s supports {', '.join(DTYPES)}")
    return name


def is_floating(dtype):
    return dtype in FLOATS


DEFAULT_FLOAT = "float32"


def result_type(*dtypes):
    """d2s promotion over canonical dtype names of operands of one kind (all dimensioned
    tensors, or all 0-d ones): PyTorch's ``promote_types`` -- NumPy's, except that integers or
    bools combined with floats give the float dtype present (float32 stays float32).

    This keeps a Python int that a program carries as an int64 tensor (a loop counter, a dim)
    from turning float32 results into float64, so programs and eager code agree. Operands of
    different ranks combine by :func:`operand_result_type`.
    """
    floats = [d for d in dtypes if d in FLOATS]
    if floats:
        return max(floats, key=FLOATS.index)
    return np.result_type(*[np.dtype(d) for d in dtypes]).name


def _combine(higher, lower):
    """PyTorch's ``combine_categories``: the result of operands of a higher priority
    (dimensioned tensors over 0-d tensors over Python numbers) meeting lower ones. The lower
    ones count only when they are of a higher category (bool < integer < float)."""
    if higher is None:
        return lower
    if lower is None or higher in FLOATS:
        return higher
    if higher == "bool" or lower in FLOATS:
        return result_type(higher, lower)
    return higher


def operand_result_type(dtypes, ndims):
    """PyTorch's ``torch.result_type`` over tensors of ``dtypes`` with ``ndims`` dims: a 0-d
    tensor does not widen a dimensioned one of the same category (float32 tensor * 0-d float64
    tensor is float32, int32 + 0-d int64 is int32), but does lift it to a higher category (an
    int32 tensor * a 0-d float64 tensor is float64). Python numbers are weaker still
    (:func:`scalar_result`)."""
    dims = [d for d, n in zip(dtypes, ndims) if n]
    zeros = [d for d, n in zip(dtypes, ndims) if not n]
    if not dims or not zeros:
        return result_type(*dtypes)
    return _combine(result_type(*dims), result_type(*zeros))


def types_result(*types):
    """:func:`operand_result_type` of objects with ``.dtype`` (a name or numpy dtype) and
    ``.shape`` (TensorTypes, arrays, numpy scalars)."""
    return operand_result_type([getattr(t.dtype, "name", t.dtype) for t in types], [len(t.shape) for t in types])


def scalar_result(dtype, value):
    """dtype of a ``dtype`` tensor combined with Python scalar ``value`` (scalars are weak:
    they never widen the tensor's dtype; a float meeting an integer tensor gives float32)."""
    if isinstance(value, bool):
        return dtype
    if isinstance(value, int):
        return "int64" if dtype == "bool" else dtype
    if isinstance(value, float):
        return dtype if dtype in FLOATS else DEFAULT_FLOAT
    return result_type(dtype, np.asarray(value).dtype.name)


# (min, max) of the integer dtypes a Python int may meet
_INT_RANGES = {np.dtype(n): (int(np.iinfo(n).min), int(np.iinfo(n).max))
               for n in ("uint8", "int8", "int16", "int32", "int64")}
_INT_RANGES.update({d.name: r for d, r in list(_INT_RANGES.items())})


def wrap_int(value, dtype):
    """Python int ``value`` as an operand of an integer tensor of ``dtype`` (a numpy dtype or
    its name), as PyTorch casts it: wrapped into the dtype's range modulo 2**bits
    (``uint8_tensor > -1`` compares with 255, ``uint8_tensor + 300`` adds 44, ``int64_tensor +
    2**63`` adds -2**63) where NumPy would raise OverflowError or compare the unwrapped value.

    Raises OverflowError for a value outside [-2**63, 2**64), which PyTorch refuses too (NumPy
    would compare it unwrapped, silently)."""
    lo, hi = _INT_RANGES.get(dtype, (None, None))
    if lo is None or lo <= value <= hi:
        return value
    if not -(1 << 63) <= value < (1 << 64):
        raise OverflowError(f"the Python int {value} does not fit in 64 bits, so it cannot meet a "
                            f"{getattr(dtype, 'name', dtype)} tensor (PyTorch refuses it too); use a float or a "
                            "tensor of a wider dtype")
    span = hi - lo + 1
    return (value - lo) % span + lo


def checked_int(value, dtype):
    """Python int ``value`` converted to integer ``dtype`` as PyTorch converts a Scalar argument
    (``clamp(min=-1)``, an exponent): within the dtype's range, or for uint8 down to -255
    (wrapped, two's complement); otherwise OverflowError, as PyTorch raises."""
    lo, hi = _INT_RANGES.get(dtype, (None, None))
    if lo is None or lo <= value <= hi:
        return value
    if lo == 0 and -hi <= value < 0:
        return value + hi + 1
    raise OverflowError(f"value {value} cannot be converted to type {getattr(dtype, 'name', dtype)} without "
                        "overflow (PyTorch raises too)")


def checked_fill(value, dtype):
    """Python number ``value`` as the fill of a tensor of ``dtype`` (``full``, ``full_like``,
    ``fill_``, ``masked_fill``), converted as PyTorch converts it: an int as ``checked_int``
    (uint8's -1 is 255); a float for an integer dtype truncated toward zero when it lies within
    the dtype's range, else (NaN and infinities too) OverflowError; a finite float beyond
    float32's range for a float32 tensor OverflowError (float16 turns it into inf, as PyTorch
    does); bools and bool tensors as they are."""
    name = getattr(dtype, "name", None) or str(dtype)
    if isinstance(value, (bool, np.bool_)) or name == "bool":
        return value
    if name in _INT_RANGES:
        if isinstance(value, (int, np.integer)):
            return checked_int(int(value), name)
        if isinstance(value, (float, np.floating)):
            lo, hi = _INT_RANGES[name]
            f = float(value)
            if f != f or not lo <= f <= hi:  # (exact comparisons: a NaN or an infinity fails both)
                raise OverflowError(f"value {value} cannot be converted to type {name} without overflow "
                                    "(PyTorch raises too)")
            return int(f)
        return value
    if name == "float16" and isinstance(value, (int, float)) and abs(float(value)) != float("inf"):
        with np.errstate(over="ignore"):  # beyond float16's range: inf, as PyTorch's (NumPy warns)
            if np.isinf(np.float16(value)):
                return float("inf") if value > 0 else float("-inf")
    if name == "float32" and isinstance(value, (int, float, np.integer, np.floating)) and not \
            isinstance(value, np.float32):
        f = float(value)
        if abs(f) != float("inf") and abs(f) > float(np.finfo(np.float32).max):
            raise OverflowError(f"value {value} cannot be converted to type float32 without overflow "
                                "(PyTorch raises too)")
    return value


def checked_values(values, dtype):
    """Python numbers ``values`` (a number or nested lists, as ``torch.tensor(data, dtype=...)``
    takes them) as an array of integer ``dtype``, each converted as ``checked_fill`` converts
    one (uint8's -1 is 255; 127.5 for int8 and NaN raise OverflowError); other dtypes: None (the
    caller converts as usual)."""
    name = getattr(dtype, "name", None) or str(dtype)
    if name not in _INT_RANGES:
        return None
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf" or arr.size == 0:
        return None
    lo, hi = _INT_RANGES[name]
    if arr.dtype.kind == "f":
        if not ((arr >= lo) & (arr <= hi)).all():  # (NaN fails both)
            # one by one: an int among the floats converts as an int ([1, -1, 2.5] for uint8)
            return np.array([checked_fill(v, name) for v in _flat(values)], dtype=name).reshape(arr.shape)
        return np.trunc(arr).astype(name)
    wide = arr.astype(np.int64) if arr.dtype.kind == "i" else arr
    low = -hi if lo == 0 else lo  # uint8 takes -255..-1 wrapped (two's complement), as checked_int
    bad = (wide < low) | (wide > hi) if arr.dtype != np.uint64 else wide > hi
    if bad.any():
        raise OverflowError(f"value {arr[bad].flat[0]} cannot be converted to type {name} without overflow "
                            "(PyTorch raises too)")
    return wide.astype(name)  # (a negative int in uint8 wraps: -1 is 255)


def _flat(values):
    if isinstance(values, (list, tuple)):
        return [v for item in values for v in _flat(item)]
    return [values]


def int_exponent(value, dtype):
    """A Python int exponent of an integer tensor of ``dtype``: refused when negative, as
    PyTorch does (uint8 would wrap it, NumPy refuses only an array exponent), else checked_int."""
    if value < 0:
        raise ValueError(f"pow: integers to negative integer powers are not allowed ({getattr(dtype, 'name', dtype)} "
                         f"tensor ** {value}); cast the tensor to a float dtype first")
    return checked_int(value, dtype)


def convert_ints(args, dtype, wraps, pow_=False):
    """Op operands with their Python ints (not bools) converted to integer ``dtype`` as PyTorch
    converts them: wrap_int where the op ``wraps`` them (its ``wraps_ints`` trait: add,
    comparisons, ...) and for pow's base (``pow_``), int_exponent for pow's exponent,
    checked_int otherwise (where, clamp)."""
    if dtype not in _INT_RANGES:
        return args
    out = list(args)
    for i, a in enumerate(args):
        if type(a) is int:
            if pow_:
                out[i] = wrap_int(a, dtype) if i == 0 else int_exponent(a, dtype)
            else:
                out[i] = wrap_int(a, dtype) if wraps else checked_int(a, dtype)
    return out


def float_of(dtype):
    """The dtype a float-valued op (exp, true division, mean) gives for ``dtype`` inputs."""
    return dtype if dtype in FLOATS else DEFAULT_FLOAT


def promote(args, floating=False):
    """Op inputs (arrays and Python scalars) cast to their common d2s dtype (PyTorch's
    promotion: :func:`operand_result_type`, then Python scalars); with ``floating``, at least
    float32. Arrays already of that dtype are returned as they are."""
    arrays = [a for a in args if hasattr(a, "dtype")]
    if not arrays:
        return args
    dts = [a.dtype for a in arrays]
    first = dts[0]
    if all(d is first or d == first for d in dts):
        target = first.name
    else:
        target = types_result(*arrays)
    for a in args:
        if not hasattr(a, "dtype") and not isinstance(a, (list, tuple)):
            target = scalar_result(target, a)
    if floating:
        target = float_of(target)
    if all(d.name == target for d in dts):
        return args
    return [a.astype(target) if hasattr(a, "dtype") and a.dtype.name != target else a for a in args]
