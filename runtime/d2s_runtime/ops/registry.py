"""The op registry: one entry per primitive, holding its kernel and its shape/dtype rule.

A kernel is ``kernel(xp, *arrays, **attrs)`` written against an array namespace ``xp``
(numpy or cupy), returning one array or a tuple of arrays. A shape rule is
``infer(*types, **attrs)`` over :class:`TensorType` inputs, returning one TensorType or a
tuple of them; unknown dimensions are ``None``. Eager execution calls only the kernel; graph
building calls only the rule; the executor calls the kernel.
"""
from ..dtypes import normalize


class ShapeError(ValueError):
    """Inputs whose shapes or dtypes an op cannot accept."""


class TensorType:
    """The static type of a value: shape (ints, ``None`` where unknown) and dtype name."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(None if d is None or d < 0 else int(d) for d in shape)
        self.dtype = normalize(dtype)

    @property
    def ndim(self):
        return len(self.shape)

    def __eq__(self, other):
        return isinstance(other, TensorType) and self.shape == other.shape and self.dtype == other.dtype

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        from ..dtypes import SHORT
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{SHORT[self.dtype]}[{dims}]"


class OpDef:
    """A registered primitive. ``effect`` marks ops that passes must neither merge nor drop
    (random draws, prints, asserts); ``n_out`` is the number of outputs (``None``: decided by
    the attrs, see ``num_outputs``)."""

    __slots__ = ("name", "kernel", "infer", "n_out", "effect", "doc")

    def __init__(self, name, kernel, infer, n_out=1, effect=False, doc=""):
        self.name, self.kernel, self.infer = name, kernel, infer
        self.n_out, self.effect, self.doc = n_out, effect, doc

    def __repr__(self):
        return f"<op {self.name}>"


OPS = {}


def defop(name, infer, n_out=1, effect=False):
    """Decorator registering ``kernel`` as primitive ``name`` with shape rule ``infer``."""

    def deco(kernel):
        if name in OPS:
            raise ValueError(f"op {name!r} is registered twice")
        OPS[name] = OpDef(name, kernel, infer, n_out, effect, (kernel.__doc__ or "").strip())
        return kernel

    return deco


def get_op(name):
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}: not in the d2s runtime's op registry") from None
