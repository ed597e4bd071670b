"""Placeholders for names not bound on every path into a branch or loop."""
from .. import ops, pytree
from ..tensor import Tensor, tensor
from ..user_errors import ConvertError, at_user_line


class Undefined:
    """Stands for a variable that has no value yet; any use of it raises a clear error."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<undefined {self.name}>"

    def _fail(self, *args, **kwargs):
        raise unbound_error(self.name)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._fail()

    __call__ = __bool__ = __len__ = __iter__ = __getitem__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __matmul__ = __neg__ = __lt__ = __gt__ = __le__ = __ge__ = _fail


def unbound_error(name):
    """Python's own error for reading local ``name`` before it is bound, at the user's line."""
    return at_user_line(f"cannot access local variable '{name}' where it is not associated with a value",
                        UnboundLocalError)


class MaybeUnbound:
    """A value that a tensor loop or tensor ``if`` binds on some paths only, with a bool tensor
    ``bound`` saying whether the path a run takes bound it (a variable first assigned in a loop
    that may run zero times). Branches and loops carry it as two leaves; a read of the variable
    (``checked``) adds a run-time check that raises Python's UnboundLocalError when it is not
    bound, and uses ``value`` otherwise. Where it is not bound, ``value`` is a placeholder of
    the same type (zeros)."""

    __slots__ = ("value", "bound")
    _d2s_numbers_inside = True  # a loop carrying it carries a Python number value as a tensor

    def __init__(self, value, bound):
        self.value, self.bound = value, bound

    def _d2s_children(self):
        return (self.value, self.bound)

    @classmethod
    def _d2s_from_children(cls, children):
        return cls(*children)

    @classmethod
    def _d2s_from_output(cls, children):
        # reached a program output without a user read (the early-return pass's result
        # variable, whose reads a flag guards): the value stands
        return children[0]

    def __repr__(self):
        return f"<maybe unbound {self.value!r}>"

    def _unchecked(self, *args, **kwargs):
        # every read the analysis sees goes through `checked`; this one did not (a lambda,
        # comprehension or nested function reading the variable)
        raise at_user_line("a variable that a tensor loop or tensor `if` binds on some runs only is read here, "
                           "inside a lambda, comprehension or nested function, where to_static cannot check it "
                           "when the program runs; bind it before the loop or `if` (or read it outside)")

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        self._unchecked()

    __call__ = __bool__ = __len__ = __iter__ = __getitem__ = _unchecked
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _unchecked
    __matmul__ = __rmatmul__ = __neg__ = __pow__ = __lt__ = __gt__ = __le__ = __ge__ = _unchecked


class MaybeNone(MaybeUnbound):
    """``h = None`` before a tensor loop whose body assigns ``h``: after the loop ``h`` is the
    loop's value when it ran at least once (``bound``) and still None when it ran zero times.
    ``h is None`` becomes a tensor predicate (``is_none``), a program returning ``h`` returns
    None or the value, run by run, and any other use checks at run time that ``h`` is not
    None (TypeError otherwise, as Python's operators on None raise)."""

    __slots__ = ()

    @classmethod
    def _d2s_from_output(cls, children):
        value, bound = children
        return value if bool(bound) else None

    def __repr__(self):
        return f"<None or {self.value!r}>"


class MaybeKey(MaybeUnbound):
    """The value of a dict key set on some runs only, with the flag ``bound`` (see the module)."""

    __slots__ = ()

    @classmethod
    def _d2s_from_output(cls, children):
        value, bound = children
        if not bool(bound):
            raise KeyError("a dict returned by this program has a key that the tensor `if` or loop which sets "
                           "it did not set on this run; Python's dict would not hold it, which a program's "
                           "result cannot show (set the key before the `if` or loop)")
        return value

    def __repr__(self):
        return f"<key set on some runs: {self.value!r}>"

    def _unchecked(self, *args, **kwargs):
        raise at_user_line("a dict value that a tensor `if` or loop sets on some runs only is used here without "
                           "reading it as d[key] (through a copy of the dict, or its values()); to_static cannot "
                           "check it when the program runs. Read it as d[key], or set the key before the `if` "
                           "or loop", ConvertError)

    __call__ = __bool__ = __len__ = __iter__ = __getitem__ = _unchecked
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _unchecked
    __matmul__ = __rmatmul__ = __neg__ = __pow__ = __lt__ = __gt__ = __le__ = __ge__ = _unchecked


# branches and loops carry a MaybeUnbound (MaybeNone too) as a pytree node of two leaves
pytree.register_node(MaybeUnbound, lambda m: (m._d2s_children(), type(m)),
                     lambda cls, children: cls._d2s_from_children(children))


def is_none(value):
    """``value is None``; for a MaybeNone, a bool tensor computed when the program runs."""
    if type(value) is MaybeNone:
        return ops.logical_not(value.bound)
    return value is None


def maybe_unbound(value, bound):
    """``value`` as a MaybeUnbound bound where ``bound`` (a Python bool becomes a tensor, so
    both sides of a tensor ``if`` carry the flag the same way)."""
    if isinstance(value, MaybeUnbound):
        return value
    return MaybeUnbound(value, bound if isinstance(bound, Tensor) else tensor(bool(bound)))


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
