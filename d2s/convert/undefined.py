"""Placeholders for names not bound on every path into a branch or loop."""


class Undefined:
    """Stands for a variable that has no value yet; any use of it raises a clear error."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<undefined {self.name}>"

    def _fail(self, *args, **kwargs):
        from .errors import at_user_line
        raise at_user_line(f"'{self.name}' is used before it is defined (it is not bound on this path)",
                           NameError)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._fail()

    __call__ = __bool__ = __len__ = __iter__ = __getitem__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __matmul__ = __neg__ = __lt__ = __gt__ = __le__ = __ge__ = _fail


def is_undefined(x):
    return type(x) is Undefined


def ld(frame_locals, name):
    """The value of local ``name`` if it is bound, else an Undefined placeholder."""
    return frame_locals.get(name, Undefined(name)) if name in frame_locals else Undefined(name)


def ld_attr(obj, attr):
    """``obj.attr`` or an Undefined placeholder when the attribute does not exist yet."""
    try:
        return getattr(obj, attr)
    except AttributeError:
        return Undefined(attr)


def st_attr(obj, attr, value):
    """``obj.attr = value``, skipping placeholders (the attribute stays unset)."""
    if not is_undefined(value):
        setattr(obj, attr, value)
