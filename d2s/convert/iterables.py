"""What a converted ``for`` walks when its iterable is symbolic: a ``range`` with a tensor
bound, a tensor's rows, a list grown in a tensor loop or branch, and their ``enumerate`` and
``zip`` (``TensorIterable``: ``length()`` items, item ``i``; ``convert_for`` walks it with a
``while`` op), and the builtins converted code calls to make them."""
from .. import ops
from ..static.tensor_array import TensorArray
from ..static.weak_index import number_type, weak
from ..tensor import Tensor
from ..user_errors import ConvertError, at_user_line
from . import raising
from .values import is_symbolic


class TensorIterable:
    """Something a ``for`` loop walks with a ``while`` op: ``length()`` items, item ``i``."""

    def length(self):
        raise NotImplementedError

    def item(self, i):
        raise NotImplementedError

    def __iter__(self):
        # only a converted `for` statement walks one (with a while op); a comprehension, a
        # generator or list(...) would need its length as a Python number
        raise at_user_line("cannot iterate here over a range, enumerate or zip whose length is known only when "
                           "the program runs (over a tensor bound, a symbolic tensor's rows, or a list grown in "
                           "a tensor loop or branch): a comprehension, generator or list(...) needs its length "
                           "as a Python number. Write the loop as a `for` statement (appending to a list), or "
                           "stack the list (d2s.stack(xs))", TypeError)


def python_iter(value, kind, reason):
    """``value`` for a ``for`` that must stay Python; iterating a symbolic tensor is an error."""
    if is_symbolic(value) or isinstance(value, TensorIterable):
        raise at_user_line(f"a `for` over a symbolic tensor {reason} is not supported by to_static. Move "
                           "the `for` out of it, or iterate over Python values", ConvertError)
    return value


class TensorRange(TensorIterable):
    """``range(start, stop, step)`` where some bound is a symbolic tensor."""

    def __init__(self, start, stop, step):
        if not isinstance(step, Tensor) and step == 0:
            raise ValueError("range() arg 3 must not be zero")
        self.start, self.stop, self.step = start, stop, step

    def length(self):
        span = ops.sub(self.stop, self.start)
        if isinstance(self.step, Tensor) or self.step != 1:  # (a Python step is never 0 here)
            step = self.step
            # ceil(span / step) for either sign of step, never negative
            span = ops.floordiv(ops.add(span, ops.sub(step, ops.sign(step))), step)
        return ops.maximum(ops.cast(span, "int64"), 0)

    def item(self, i):
        plain = not isinstance(self.step, Tensor) and not isinstance(self.start, Tensor) and \
            self.step == 1 and self.start == 0
        return weak(i if plain else ops.add(self.start, ops.mul(i, self.step)))


class TensorRows(TensorIterable):
    """The rows of a symbolic tensor."""

    def __init__(self, x):
        self.x = x

    def length(self):
        return self.x.shape[0]

    def item(self, i):
        return self.x[i]


class TensorEnumerate(TensorIterable):
    def __init__(self, inner, start=0):
        self.inner, self.start = inner, start

    def length(self):
        return self.inner.length()

    def item(self, i):
        return (weak(ops.add(i, self.start) if not (isinstance(self.start, int) and self.start == 0) else i),
                self.inner.item(i))


class TensorZip(TensorIterable):
    def __init__(self, parts):
        self.parts = parts

    def length(self):
        lengths = [p.length() for p in self.parts]
        out = lengths[0]
        for n in lengths[1:]:
            out = ops.minimum(out, n)
        return out

    def item(self, i):
        return tuple(p.item(i) for p in self.parts)


class TensorListItems(TensorIterable):
    """The elements of a list grown in a tensor loop or branch (a TensorArray), whose length is
    known only when the program runs."""

    def __init__(self, ta):
        self.ta = ta

    def length(self):
        return self.ta.length()

    def item(self, i):
        return self.ta[i]


def as_tensor_iterable(x):
    if isinstance(x, TensorIterable):
        return x
    if is_symbolic(x):
        if x.ndim == 0:
            # Python's own TypeError, as eagerly (a tensor standing for a Python number: that number's)
            py = number_type(x)
            message = f"'{py.__name__}' object is not iterable" if py is not None else "iteration over a 0-d tensor"
            raise raising.eager_error(at_user_line(message, TypeError))
        return TensorRows(x)
    if isinstance(x, TensorArray) and x.data is not None and x.data.is_symbolic:
        return TensorListItems(x.copy())  # a snapshot: the body may append to the list itself
    return None


# ------------------------------------------------------------------ builtins that make iterables
def convert_range(*args):
    """``range`` that accepts symbolic tensor bounds (then a loop over it becomes a while op)."""
    if any(is_symbolic(a) for a in args):
        if len(args) == 1:
            return TensorRange(0, args[0], 1)
        if len(args) == 2:
            return TensorRange(args[0], args[1], 1)
        return TensorRange(*args)
    return range(*[a.__index__() if isinstance(a, Tensor) else a for a in args])


def convert_enumerate(x, start=0):
    it = as_tensor_iterable(x)
    if it is not None or is_symbolic(start):
        if it is None:
            raise at_user_line("enumerate() with a symbolic start needs a tensor to iterate over")
        return TensorEnumerate(it, start)
    return enumerate(x, start)


def convert_zip(*xs):
    its = [as_tensor_iterable(x) for x in xs]
    if any(i is not None for i in its):
        if not all(i is not None for i in its):
            raise at_user_line("zip() of symbolic tensors with Python sequences is not supported inside a "
                               "program; make every part a tensor (d2s.tensor / d2s.stack)")
        return TensorZip(its)
    return zip(*xs)
