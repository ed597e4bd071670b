"""d2s dtype objects: strings with a readable repr, so ``t.dtype == 'float32'`` also holds.

PyTorch's aliases are here too (``d2s.long``, ``d2s.float``, ``d2s.half``, ...), and
:func:`finfo` / :func:`iinfo` and the default float dtype (``set_default_dtype``).
``d2s.bfloat16`` exists so model files that name it import, but numpy cannot hold it: using it
raises a clear error.
"""
import numpy as np

from d2s_runtime.dtypes import DTYPES, FLOATS, normalize


class dtype(str):
    """A d2s dtype; compares equal to its canonical name."""

    def __repr__(self):
        return f"d2s.{str(self)}"

    @property
    def is_floating_point(self):
        return self in FLOATS

    @property
    def is_complex(self):
        return False

    @property
    def is_signed(self):
        return self not in ("bool", "uint8")

    @property
    def itemsize(self):
        """Bytes per element."""
        return np.dtype(str(self)).itemsize


_BY_NAME = {name: dtype(name) for name in DTYPES}
float32, float64, int32, int64 = (_BY_NAME[n] for n in ("float32", "float64", "int32", "int64"))
float16, uint8, int8, int16 = (_BY_NAME[n] for n in ("float16", "uint8", "int8", "int16"))
bool_ = _BY_NAME["bool"]

# PyTorch's other names of the same dtypes (torch.float is float32, torch.int is int32)
float_, double, half, long, int_, short = float32, float64, float16, int64, int32, int16

BFLOAT16_WHY = ("bfloat16 cannot be used: d2s computes with numpy, which has no bfloat16; use "
                 "d2s.float32 (or d2s.float16 for half-precision storage)")
# a dtype object so `dtype = torch.bfloat16 if ... else ...` imports; as_dtype refuses it
bfloat16 = dtype("bfloat16")


def as_dtype(d):
    """The d2s dtype for a name, numpy dtype, Python type or d2s dtype (TypeError if unknown)."""
    if type(d) is dtype and d in _BY_NAME:
        return d
    if isinstance(d, str) and d in ("bfloat16", "torch.bfloat16", "d2s.bfloat16"):
        raise TypeError(BFLOAT16_WHY)
    if isinstance(d, str) and d.startswith(("torch.", "d2s.")):  # 'torch.float32' as printed
        d = d.split(".", 1)[1]
    return _BY_NAME[normalize(d)]


# ------------------------------------------------------------------ the default float dtype
_DEFAULT_FLOAT = ["float32"]


def get_default_dtype():
    """The dtype of tensors made from Python floats and of float creation ops without ``dtype=``
    (``d2s.float32`` unless changed with :func:`set_default_dtype`)."""
    return _BY_NAME[_DEFAULT_FLOAT[0]]


def set_default_dtype(d):
    """Make ``d`` (float32 or float64) the default float dtype, as ``torch.set_default_dtype``:
    ``d2s.tensor(1.5)``, ``d2s.zeros(2)``, ``d2s.rand(2)`` and ``d2s.arange(0.5, 2)`` give it.
    Unlike PyTorch, ops that turn integers into floats (``int_tensor / 2``, ``exp`` or ``mean``
    of integers) still give float32, and Python floats inside programs are float32 constants.

    Args:
        d: ``d2s.float32`` or ``d2s.float64`` (or their names).
    """
    d = as_dtype(d)
    if d not in ("float32", "float64"):
        raise TypeError(f"set_default_dtype: only float32 and float64 can be the default float dtype, got {d}")
    _DEFAULT_FLOAT[0] = str(d)


def default_float():
    """The default float dtype's name (for creation ops)."""
    return _DEFAULT_FLOAT[0]


# ------------------------------------------------------------------ finfo / iinfo
class finfo:
    """Machine limits of a float dtype, as ``torch.finfo``: ``bits``, ``eps``, ``max``, ``min``,
    ``tiny`` (= ``smallest_normal``), ``resolution``, ``dtype``.

    Args:
        type: a float dtype (default: the default float dtype).
    """

    def __init__(self, type=None):
        d = get_default_dtype() if type is None else as_dtype(type)
        if not d.is_floating_point:
            raise TypeError(f"finfo: {d} is not a floating point dtype; use d2s.iinfo for integers")
        info = np.finfo(str(d))
        self.dtype = str(d)
        self.bits = int(info.bits)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = 10.0 ** -int(info.precision)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, "
                f"smallest_normal={self.tiny}, tiny={self.tiny}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as ``torch.iinfo``: ``bits``, ``max``, ``min``, ``dtype``.

    Args:
        type: an integer dtype (or bool).
    """

    def __init__(self, type):
        d = as_dtype(type)
        if d.is_floating_point:
            raise TypeError(f"iinfo: {d} is a floating point dtype; use d2s.finfo")
        info = np.iinfo("uint8" if d == "bool" else str(d))
        self.dtype = str(d)
        self.bits = 8 if d == "bool" else int(info.bits)
        self.max, self.min = (1, 0) if d == "bool" else (int(info.max), int(info.min))

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
