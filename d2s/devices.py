"""``d2s.device``: PyTorch's device objects over d2s's device names.

d2s names its devices ``'cpu'`` (numpy), ``'gpu'`` (cupy) and any registered with
``d2s_runtime.device.register_device``; PyTorch code says ``'cuda'``, ``'cuda:0'``,
``torch.device('cuda', 0)``. A :class:`device` is a ``str`` holding d2s's name (so everything
that takes a device name takes it, and ``t.device == 'cpu'`` keeps working) with PyTorch's
``.type`` (``'cuda'`` for the GPU) and ``.index``, equal to any spelling of the same device.
``Tensor.device`` returns one.
"""
from d2s_runtime.device import get_xp, known_devices

_ALIASES = {"cuda": "gpu", "gpu": "gpu", "cpu": "cpu"}


class DeviceError(RuntimeError, ValueError):
    """A device name d2s does not know (RuntimeError as in PyTorch; ValueError as
    ``d2s_runtime.device.get_xp`` raises)."""


def _parse(spec, index=None):
    """(d2s name, index) of a device spelling: 'cuda:1', 'cpu', 'gpu', a device, an int."""
    if isinstance(spec, device):
        return str.__str__(spec), spec.index if index is None else index
    if isinstance(spec, int) and not isinstance(spec, bool):
        return "gpu", spec  # torch.device(0) is cuda:0
    if not isinstance(spec, str):
        raise TypeError(f"a device is a string ('cpu', 'cuda', 'cuda:0', 'gpu') or a d2s.device, got "
                        f"{type(spec).__name__}")
    name, _, idx = spec.partition(":")
    if idx:
        if index is not None:
            raise RuntimeError(f"device {spec!r} already names an index; do not pass index={index} too")
        try:
            index = int(idx)
        except ValueError:
            raise DeviceError(f"invalid device string {spec!r}: expected 'type' or 'type:index'") from None
    name = _ALIASES.get(name, name)
    if name not in known_devices():
        extra = ", ".join(repr(n) for n in known_devices() if n not in ("cpu", "gpu", "cuda"))
        raise DeviceError(f"unknown device {spec!r}: d2s supports 'cpu' (numpy) and 'gpu' (cupy), also spelled "
                          f"'cuda'{', and ' + extra if extra else ''}")
    if index is not None and (index < 0 or (name == "cpu" and index != 0)):
        raise RuntimeError(f"device index {index} is not valid for device type {name!r}")
    return name, index


class device(str):
    """A device, as ``torch.device``: ``d2s.device('cpu')``, ``d2s.device('cuda')``,
    ``d2s.device('cuda:0')``, ``d2s.device('cuda', 0)``.

    Attributes:
        type: ``'cpu'``, ``'cuda'`` (d2s's ``'gpu'``) or a registered device's name.
        index: the device index, or None.

    It is the string of d2s's name for the device (``'cpu'``, ``'gpu'``), so it goes wherever a
    device name does; it equals every spelling of its device (``'cuda'``, ``'gpu'``,
    ``'cuda:0'``; one without an index equals one with any index), and ``str()`` gives
    PyTorch's spelling (``'cuda:0'``).
    """

    def __new__(cls, type, index=None):  # noqa: A002 - PyTorch's argument name
        if isinstance(type, device) and index is None:
            return type
        name, index = _parse(type, index)
        obj = str.__new__(cls, name)
        obj.index = index
        obj.type = "cuda" if name == "gpu" else name
        return obj

    def __eq__(self, other):
        if isinstance(other, (str, device)):
            try:
                name, index = _parse(other)
            except (RuntimeError, TypeError):
                return False
            return str.__str__(self) == name and (self.index is None or index is None or self.index == index)
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = str.__hash__

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type={self.type!r})" if self.index is None else \
            f"device(type={self.type!r}, index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))


_CACHE = {}


def device_named(name):
    """The device object for d2s name ``name`` (one object per name: Tensor.device is hot)."""
    d = _CACHE.get(name)
    if d is None:
        d = _CACHE[name] = device(name)
    return d


def as_device_name(spec):
    """d2s's name for a device given any way PyTorch code gives one (a device, 'cuda:0', an
    int), or None for None. Raises for an unknown device."""
    if spec is None:
        return None
    return _parse(spec)[0]


def is_device(spec):
    """Whether ``spec`` names a device (rather than, say, a dtype given to ``.to()``)."""
    if isinstance(spec, device) or (isinstance(spec, int) and not isinstance(spec, bool)):
        return True
    if isinstance(spec, str):
        try:
            _parse(spec)
            return True
        except DeviceError:
            return False
    return False


def available(name):
    """Whether device ``name`` can be used here (for 'gpu': cupy imports and sees a GPU)."""
    try:
        get_xp(name)
    except Exception:  # noqa: BLE001 - any failure to load the backend means: not available
        return False
    return True
