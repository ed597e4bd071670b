"""``d2s.print``: a print that runs every time, eagerly and on every call of a program.

Python's ``print`` inside converted code prints Python values once, while the program is
built, and becomes a ``print`` op only when a symbolic tensor is among its arguments.
``d2s.print`` is always the ``print`` op (like ``tf.print``): inside a program it prints on
every call, whatever its arguments; eagerly it prints at once. Tensors print as their values
(NumPy's format), the same way in both modes.
"""
from .dispatch import apply
from .tensor import Tensor


def print(*args, sep=" ", end="\n"):  # noqa: A001 - d2s.print, as tf.print
    """Print ``args`` (tensors as their values) each time this line runs, also inside a
    program on every call; ``sep`` and ``end`` as in Python's print."""
    parts, tensors = [], []
    for a in args:
        if isinstance(a, Tensor):
            parts.append(["t", len(tensors)])
            tensors.append(a)
        else:
            parts.append(["s", str(a)])
    apply("print", *tensors, parts=parts, sep=str(sep), end=str(end))
