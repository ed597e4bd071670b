"""InputSpec: the shape and dtype of a program input; None (or -1) marks a dynamic dim."""
import re

from ..dtypes import as_dtype

_SPEC_TEXT = re.compile(r"^\s*(\w+)\s*\[([^\]]*)\]\s*$")


class InputSpec:
    """Describe a program input without data: ``InputSpec([None, 784], 'float32', name='x')``."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = tuple(None if d is None or d == -1 else int(d) for d in shape)
        self.dtype = as_dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, t, name=None):
        return cls(t.shape, t.dtype, name)

    def __eq__(self, other):
        return isinstance(other, InputSpec) and (self.shape, self.dtype, self.name) == (other.shape, other.dtype, other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name))

    def __repr__(self):
        return f"InputSpec(shape={list(self.shape)}, dtype={self.dtype}, name={self.name!r})"


def spec_from_text(text):
    """``'float32[?,784]'`` -> ``InputSpec([None, 784], 'float32')`` (``?``, ``-1`` or ``None``
    for a dynamic dim, ``[]`` for a scalar); raises ValueError saying how to write it."""
    m = _SPEC_TEXT.match(text)
    if not m:
        raise ValueError("write it as DTYPE[DIM,...], e.g. 'float32[?,784]' ('?' for a dynamic dim, '[]' for a scalar)")
    dtype, dims = m.group(1), m.group(2).strip()
    try:
        shape = [] if not dims else [None if d.strip() in ("?", "-1", "None") else int(d) for d in dims.split(",")]
        return InputSpec(shape, dtype)
    except (TypeError, ValueError) as e:
        raise ValueError(str(e)) from None
