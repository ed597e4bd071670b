"""Padding layers, as PyTorch's: ``ZeroPad1d``/``2d``, ``ConstantPad1d``/``2d``,
``ReflectionPad1d``/``2d``, ``ReplicationPad1d``/``2d``, ``CircularPad1d``/``2d``. Each is
``F.pad`` with a fixed padding (an int for every side, or a tuple (left, right[, top, bottom]))."""
from . import functional as F
from .module import Module


class _PadNd(Module):
    _n = 2
    _mode = "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        sides = 2 * self._n
        if isinstance(padding, (list, tuple)):
            if len(padding) != sides:
                raise ValueError(f"{type(self).__name__}: padding needs one int or {sides}, got {padding!r}")
            self.padding = tuple(int(p) for p in padding)
        else:
            self.padding = (int(padding),) * sides
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, list(self.padding), mode="constant", value=self.value)
        return F.pad(input, list(self.padding), mode=self._mode)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}" if self._mode == "constant" else f"{self.padding}"


class ConstantPad1d(_PadNd):
    """Pad the last dim with ``value`` (``padding``: an int or (left, right))."""

    _n = 1

    def __init__(self, padding, value):
        super().__init__(padding, value)


class ConstantPad2d(_PadNd):
    """Pad the last two dims with ``value`` (``padding``: an int or (left, right, top, bottom))."""

    def __init__(self, padding, value):
        super().__init__(padding, value)


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros (``padding``: an int or (left, right, top, bottom))."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection (the edge not repeated)."""

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last two dims with their reflection (the edge not repeated)."""

    _mode = "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge value."""

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last two dims by repeating their edge values."""

    _mode = "replicate"


class CircularPad1d(_PadNd):
    """Pad the last dim by wrapping around."""

    _n, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Pad the last two dims by wrapping around."""

    _mode = "circular"
