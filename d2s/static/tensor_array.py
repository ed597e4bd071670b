"""TensorArray: a list of same-typed tensors that grows in loops, eagerly and inside programs.

Converted code turns ``xs.append(v)`` inside a tensor loop into ``TensorArray`` calls. The
value is one tensor whose leading dim is the length (see ``d2s_runtime/ops/tensor_list.py``),
so it can be a ``while_loop`` / ``scan`` carry like any tensor: a ``TensorArray`` is a pytree
node whose one child is that tensor.
"""
from .. import ops, pytree
from ..dispatch import apply
from ..tensor import Tensor, tensor
from ..user_errors import at_user_line
from .weak_index import number_stand_in


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

    # pytree node protocol (registered with d2s.pytree below the class)
    def _d2s_children(self):
        return (self.data,)

    @classmethod
    def _d2s_from_children(cls, children):
        return cls(children[0])

    def append(self, x):
        """Add ``x`` at the end (in place; also returns self)."""
        if not isinstance(x, Tensor):  # a Python number takes the list's dtype, as in a tensor
            x = tensor(x, dtype=str(self.data.dtype)) if self.data is not None else tensor(x)
        elif self.data is not None and x.dtype != self.data.dtype and _mixes_numbers(self, x):
            x = ops.cast(x, str(self.data.dtype))
        if self.data is None:
            self.data = apply("list_new", x)
        self.data = apply("list_push", self.data, x)
        return self

    def pop(self, index=-1):
        """Remove and return the last element (``pop()`` / ``pop(-1)`` only: the list's length
        may be known only when the program runs, so other positions cannot be cut out)."""
        if isinstance(index, Tensor) or index != -1:
            raise _user_error("pop(i) with i other than -1 on a list whose length is known only when the "
                              "program runs (a list grown in a tensor loop or branch) is not supported; "
                              "use pop() or index it (xs[i])", TypeError)
        self._need("pop")
        self.data, x = apply("list_pop", self.data)
        return x

    def extend(self, items):
        """Append every element of ``items`` (a list, tuple or TensorArray), in place."""
        if isinstance(items, TensorArray):
            if items.data is not None:
                if self.data is None:
                    self.data = items.data
                else:
                    self.data = ops.concat([self.data, items.data], 0)
            return self
        if isinstance(items, Tensor) or not isinstance(items, (list, tuple)):
            raise _user_error(f"can only extend a list by a list or tuple here, not {type(items).__name__}",
                              TypeError)
        for x in items:
            self.append(x)
        return self

    def clear(self):
        """Remove every element (the element type stays)."""
        if self.data is not None:
            self.data = apply("list_new", self.element_zeros())

    def reverse(self):
        """Reverse the elements in place."""
        if self.data is not None:
            self.data = ops.getitem(self.data, slice(None, None, -1))

    def _unsupported(self, name):
        def method(*args, **kwargs):
            raise _user_error(f"list.{name}() is not supported on a list whose length is known only when the "
                              "program runs (grown in a tensor loop or branch); append, extend, pop(), "
                              "xs[i], xs[i] = v, len, +, iteration, reverse and clear are", TypeError)
        return method

    def __getattr__(self, name):
        if name in ("insert", "remove", "index", "count", "sort"):
            return self._unsupported(name)
        raise AttributeError(f"a list grown in a tensor loop or branch has no attribute {name!r}")

    def copy(self):
        """A new list holding the same elements (``xs.copy()``, ``list(xs)``, ``xs[:]``)."""
        return type(self)(self.data)

    def __add__(self, other):
        """``xs + [v]``: a new list, as Python's list concatenation."""
        if not isinstance(other, (list, TensorArray)):
            raise _user_error(f'can only concatenate list (not "{type(other).__name__}") to list', TypeError)
        return self.copy().extend(other)

    def __radd__(self, other):
        """``[v] + xs``."""
        if type(other) is not list:
            return NotImplemented
        return type(self).like(self._element_like(other)).extend(other).extend(self)

    def __iadd__(self, other):
        """``xs += items``: extends in place, as Python's ``list.__iadd__``."""
        if isinstance(other, Tensor) or not isinstance(other, (list, tuple, TensorArray)):
            raise _user_error(f"a list grown in a tensor loop or branch can only be extended by a list or "
                              f"tuple here, not {type(other).__name__}", TypeError)
        return self.extend(other)

    def element_zeros(self):
        """Zeros typed like one element (unknown dims as 1), made in the current block: only
        the type is used (to start an empty list of such elements)."""
        return ops.zeros([d if isinstance(d, int) else 1 for d in _elem_shape(self.data)],
                         dtype=str(self.data.dtype))

    def _element_like(self, items):
        return self.element_zeros() if self.data is not None else items[0]

    def __getitem__(self, i):
        if isinstance(i, slice):
            if i == slice(None):
                return self.copy()
            raise _user_error("slicing a list whose length is known only when the program runs (grown in "
                              "a tensor loop or branch) is not supported; index it (xs[i]) or stack it "
                              "(d2s.stack(xs)) and slice the tensor", TypeError)
        self._need("index")
        if not isinstance(i, Tensor):
            i = tensor(int(i))
        return apply("list_get", self.data, i)

    def __setitem__(self, i, value):
        """``xs[i] = v`` (``i`` may be negative or a tensor)."""
        self._need("index")
        if not isinstance(i, Tensor):
            i = tensor(int(i))
        n = apply("list_len", self.data)
        i = ops.where(i < 0, i + n, i)  # negative positions count from the end, as in Python
        data = self.data
        if not data.is_symbolic:  # a concrete list may share its array with a copy of it
            data = Tensor._make(data.array.copy()) if not data.requires_grad else data
        data = _alias_tensor(data)
        ops.setitem(data, i, value)
        self.data = data

    def __iter__(self):
        if self.data is not None and self.data.is_symbolic:
            raise _user_error("cannot iterate over a list whose length is known only when the program runs "
                              "(it was grown in a tensor loop or branch) outside a converted `for`; iterate it "
                              "with a `for` statement in a to_static function, or stack it (d2s.stack(xs))",
                              TypeError)
        for k in range(len(self)):
            yield self[k]

    def __bool__(self):
        if self.data is not None and self.data.is_symbolic:
            raise _user_error("the truth value of a list whose length is known only when the program runs "
                              "cannot be a Python bool here; test `len(xs) > 0`", TypeError)
        return len(self) > 0

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

    def truth(self):
        """``bool(xs)`` as a 0-d bool tensor (symbolic inside programs)."""
        return ops.gt(self.length(), 0)

    def _need(self, what):
        if self.data is None:
            raise _user_error(f"{'pop from' if what == 'pop' else 'index into'} an empty list (it has no "
                              "element yet)", IndexError)

    def __repr__(self):
        return f"TensorArray({self.data!r})"


class NumberList(TensorArray):
    """A list of Python numbers that a tensor loop grows or shrinks (``xs.pop()`` per
    iteration): a TensorArray of 0-d tensors inside the program, which a program returns as a
    list of Python numbers again (``float32`` values for floats). An element read from it
    stands for the Python number eager code reads (weak: it promotes like one and comes back
    from the program as one)."""

    __slots__ = ()

    def pop(self, index=-1):
        return _number(super().pop(index))

    def __getitem__(self, i):
        return _number(super().__getitem__(i))


def _number(x):
    return number_stand_in(x) if isinstance(x, Tensor) and x.ndim == 0 else x


def numbers_dtype(items):
    """One dtype for a list's tensors and Python numbers: a floating tensor's dtype (float64
    for a Python float: a double, which a program returning the list gives back exactly) if
    any element is floating, bool if all are bools, else int64."""
    floats = [str(e.dtype) for e in items if isinstance(e, Tensor) and e.dtype.is_floating_point]
    if floats:
        return floats[0]
    if any(isinstance(e, float) for e in items):
        return "float64"
    if all(isinstance(e, bool) or (isinstance(e, Tensor) and str(e.dtype) == "bool") for e in items):
        return "bool"
    ints = [str(e.dtype) for e in items if isinstance(e, Tensor)]
    return ints[0] if ints else "int64"


def _mixes_numbers(lst, x):
    """Whether ``x`` joins a list of scalars of another dtype (an int loop counter's multiple
    into a float list): such lists hold one dtype, as a Python list of mixed numbers would
    compare equal."""
    return isinstance(lst, NumberList) or (x.ndim == 0 and lst.data.ndim == 1)


def _user_error(message, cls):
    return at_user_line(message, cls)


def _elem_shape(data):
    shape = data._var.type.shape if data.is_symbolic else data.shape
    return list(shape)[1:]


def _alias_tensor(t):
    a = Tensor._make(t.array, t._var)
    a.requires_grad, a.grad_fn, a._out_idx = t.requires_grad, t.grad_fn, t._out_idx
    return a


# ------------------------------------------------------------------ lists of tuples
def _is_element_leaf(o):
    """In a list element, only plain tuples, lists and dicts are structure (a namedtuple or a
    TensorArray is one value)."""
    return not isinstance(o, (tuple, list, dict)) or hasattr(o, "_fields")


def _struct_leaves(obj):
    """(leaves, treedef) of a nested tuple/list/dict element (``(h, c)``, ``{'h': h}``)."""
    return pytree.tree_flatten(obj, is_leaf=_is_element_leaf)



_TUPLE_LIST_TYPES = {}


# a TensorArray (TupleList too) is a pytree node: its children are its tensors, rebuilt by its
# own class (each TupleList structure has its own subclass)
pytree.register_node(TensorArray, lambda a: (a._d2s_children(), type(a)),
                     lambda cls, children: cls._d2s_from_children(children))


class TupleList(TensorArray):
    """A growable list whose elements are tuples (lists, dicts) of tensors of one structure
    (``outs.append((h, c))`` in a tensor loop): one tensor list per position of the element.
    ``TupleList.like(elem)`` picks the class for ``elem``'s structure."""

    __slots__ = ("parts",)
    skeleton = None  # the element structure, set on the per-structure subclasses

    def __init__(self, parts=None):
        self.parts = tuple(parts) if parts is not None else None

    @property
    def data(self):
        return self.parts[0] if self.parts else None

    @classmethod
    def like(cls, elem):
        leaves, skel = _struct_leaves(elem)
        kind = _TUPLE_LIST_TYPES.get(skel)
        if kind is None:
            kind = _TUPLE_LIST_TYPES[skel] = type("TupleList", (TupleList,), {"__slots__": (), "skeleton": skel})
        return kind([apply("list_new", x if isinstance(x, Tensor) else tensor(x)) for x in leaves])

    def _d2s_children(self):
        return tuple(self.parts)

    @classmethod
    def _d2s_from_children(cls, children):
        return cls(children)

    def _leaves_of(self, x):
        leaves, skel = _struct_leaves(x)
        if skel != self.skeleton:
            raise _user_error(f"every element of this list must have the same structure as the first "
                              f"({_describe_skel(self.skeleton)}), got {_describe_skel(skel)}", TypeError)
        out = []
        for leaf, part in zip(leaves, self.parts):
            if not isinstance(leaf, Tensor):
                leaf = tensor(leaf, dtype=str(part.dtype))
            out.append(leaf)
        return out

    def append(self, x):
        self.parts = tuple(apply("list_push", p, leaf) for p, leaf in zip(self.parts, self._leaves_of(x)))
        return self

    def pop(self, index=-1):
        if isinstance(index, Tensor) or index != -1:
            return TensorArray.pop(self, index)  # the same clear error
        parts, leaves = [], []
        for p in self.parts:
            p, x = apply("list_pop", p)
            parts.append(p)
            leaves.append(x)
        self.parts = tuple(parts)
        return pytree.tree_unflatten(self.skeleton, leaves)

    def extend(self, items):
        if isinstance(items, TupleList) and items.skeleton == self.skeleton:
            self.parts = tuple(ops.concat([a, b], 0) for a, b in zip(self.parts, items.parts))
            return self
        if isinstance(items, TensorArray) or not isinstance(items, (list, tuple)):
            raise _user_error("can only extend a list of tuples by a list of tuples of the same structure",
                              TypeError)
        for x in items:
            self.append(x)
        return self

    def copy(self):
        return type(self)(self.parts)

    def clear(self):
        self.parts = tuple(apply("list_new", z) for z in _struct_leaves(self.element_zeros())[0])

    def reverse(self):
        self.parts = tuple(ops.getitem(p, slice(None, None, -1)) for p in self.parts)

    def element_zeros(self):
        zeros = [ops.zeros([d if isinstance(d, int) else 1 for d in _elem_shape(p)], dtype=str(p.dtype))
                 for p in self.parts]
        return pytree.tree_unflatten(self.skeleton, zeros)

    def __radd__(self, other):
        if type(other) is not list:
            return NotImplemented
        return type(self).like(self.element_zeros()).extend(other).extend(self)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return TensorArray.__getitem__(self, i)
        if not isinstance(i, Tensor):
            i = tensor(int(i))
        return pytree.tree_unflatten(self.skeleton, [apply("list_get", p, i) for p in self.parts])

    def __setitem__(self, i, value):
        parts = []
        for p, leaf in zip(self.parts, self._leaves_of(value)):
            one = TensorArray(p)
            one[i] = leaf
            parts.append(one.data)
        self.parts = tuple(parts)

    def stack(self):
        raise _user_error("d2s.stack/d2s.concat of a list of tuples grown in a tensor loop or branch is not "
                          "supported; stack each position (d2s.stack([p[0] for p in xs]) in eager code, or "
                          "keep one list per position)", TypeError)

    def __repr__(self):
        return f"TupleList({self.parts!r})"


def _describe_skel(skel):
    if skel.node_type is None:
        return "a tensor"
    if skel.node_type is dict:
        return f"a dict with keys {list(skel.node_data)}"
    return f"a {skel.node_type.__name__} of {len(skel.children)}"


def struct_list_for(items):
    """A TupleList class's empty instance for ``items`` (tuples/lists/dicts of tensors and
    numbers sharing one structure and leaf dtypes), or None if they do not fit one."""
    structs = [_struct_leaves(e) for e in items]
    if not structs or structs[0][1].node_type is None or any(s[1] != structs[0][1] for s in structs):
        return None
    columns = list(zip(*[s[0] for s in structs]))
    like = []
    for col in columns:
        tensors = [e for e in col if isinstance(e, Tensor)]
        if not all(isinstance(e, (Tensor, bool, int, float)) for e in col):
            return None
        if tensors:
            if len({str(t.dtype) for t in tensors}) != 1 or len({t.ndim for t in tensors}) != 1:
                return None
            t0 = tensors[0]
            like.append(ops.zeros([d if isinstance(d, int) else 1 for d in
                                   (t0._var.type.shape if t0.is_symbolic else t0.shape)], dtype=str(t0.dtype)))
        else:
            dt = "float32" if any(isinstance(e, float) for e in col) else \
                "bool" if all(isinstance(e, bool) for e in col) else "int64"
            like.append(tensor(0, dtype=dt))
    return TupleList.like(pytree.tree_unflatten(structs[0][1], like))
