"""InputSpec: the shape and dtype of a program input; None (or -1) marks a dynamic dim."""
from ..dtypes import as_dtype


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
