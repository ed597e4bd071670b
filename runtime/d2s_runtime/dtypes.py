"""dtype names shared by the IR, the kernels and the authoring layer."""
import numpy as np

DTYPES = ("float32", "float64", "int32", "int64", "bool")
SHORT = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "bool"}
LONG = {v: k for k, v in SHORT.items()}
_ALIASES = {"float": "float32", "int": "int64", "double": "float64", "long": "int64"}


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
    return dtype in ("float32", "float64")


def result_type(*dtypes):
    """NumPy promotion over canonical dtype names."""
    return np.result_type(*[np.dtype(d) for d in dtypes]).name
