"""d2s dtype objects: strings with a readable repr, so ``t.dtype == 'float32'`` also holds."""
from d2s_runtime.dtypes import DTYPES, normalize


class dtype(str):
    """A d2s dtype; compares equal to its canonical name."""

    def __repr__(self):
        return f"d2s.{str(self)}"

    @property
    def is_floating_point(self):
        return self in ("float32", "float64")


_BY_NAME = {name: dtype(name) for name in DTYPES}
float32, float64, int32, int64 = (_BY_NAME[n] for n in ("float32", "float64", "int32", "int64"))
bool_ = _BY_NAME["bool"]


def as_dtype(d):
    """The d2s dtype for a name, numpy dtype, Python type or d2s dtype (TypeError if unknown)."""
    if type(d) is dtype:
        return d
    return _BY_NAME[normalize(d)]
