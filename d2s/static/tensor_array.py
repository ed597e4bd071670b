"""TensorArray: a list of same-typed tensors that grows in loops, eagerly and inside programs.

Converted code turns ``xs.append(v)`` inside a tensor loop into ``TensorArray`` calls. The
value is one tensor whose leading dim is the length (see ``d2s_runtime/ops/tensor_list.py``),
so it can be a ``while_loop`` / ``scan`` carry like any tensor: a ``TensorArray`` is a pytree
node whose one child is that tensor.
"""
from ..dispatch import apply
from ..tensor import Tensor, tensor


class TensorArray:
    """A growable list of tensors of one dtype and rank.

    ``TensorArray.like(x)`` is an empty list of elements typed like ``x``; ``TensorArray()``
    starts empty and takes its element type from the first ``append`` (outside loops only:
    a list carried through a symbolic loop must have its element type before the loop).
    """

    __slots__ = ("data",)

    def __init__(self, data=None):
        self.data = data  # the stacked elements (leading dim = length), or None while untyped

    @classmethod
    def like(cls, x):
        """An empty list whose elements will be typed like tensor ``x``."""
        return cls(apply("list_new", x if isinstance(x, Tensor) else tensor(x)))

    # pytree node protocol (see control_flow.tree_flatten)
    def _d2s_children(self):
        return (self.data,)

    @classmethod
    def _d2s_from_children(cls, children):
        return cls(children[0])

    def append(self, x):
        """Add ``x`` at the end (in place; also returns self)."""
        x = x if isinstance(x, Tensor) else tensor(x)
        if self.data is None:
            self.data = apply("list_new", x)
        self.data = apply("list_push", self.data, x)
        return self

    def pop(self):
        """Remove and return the last element."""
        self._need("pop")
        self.data, x = apply("list_pop", self.data)
        return x

    def __getitem__(self, i):
        self._need("index")
        if not isinstance(i, Tensor):
            i = tensor(int(i))
        return apply("list_get", self.data, i)

    def length(self):
        """The length, as a 0-d int64 tensor (symbolic inside programs)."""
        if self.data is None:
            return tensor(0)
        return apply("list_len", self.data)

    def __len__(self):
        n = self.length()
        return int(n)  # raises a clear error when the length is only known at run time

    def stack(self):
        """The elements stacked along a new axis 0."""
        self._need("stack")
        return apply("list_stack", self.data)

    def _need(self, what):
        if self.data is None:
            raise IndexError(f"TensorArray.{what}: the list is empty (and has no element type yet)")

    def __repr__(self):
        return f"TensorArray({self.data!r})"
