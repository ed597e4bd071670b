"""Values flowing through converted control flow: symbolic checks, leaves, fresh copies."""
from ..tensor import Tensor
from .undefined import Undefined


def is_symbolic(x):
    return isinstance(x, Tensor) and x._data is None


def truth(x):
    """The value an ``if``/``not`` tests: a list grown in a tensor loop or branch (a TensorArray
    whose length is known only at run time) tests ``len(xs) > 0`` in the program."""
    if hasattr(type(x), "truth") and hasattr(type(x), "_d2s_children") and x.data is not None \
            and is_symbolic(x.data):
        return x.truth()
    return x


def any_symbolic(values):
    return any(is_symbolic(v) for v in values)


def leaves(obj):
    """(leaves, skeleton) of a nested tuple/list/dict: every non-container value is a leaf."""
    out = []

    def walk(o):
        if isinstance(o, (list, tuple)) and not hasattr(o, "_fields"):
            return (type(o), tuple(walk(x) for x in o))
        if isinstance(o, dict):
            return (dict, tuple(o), tuple(walk(o[k]) for k in o))
        if hasattr(type(o), "_d2s_children"):  # a pytree node such as TensorArray
            return (type(o), tuple(walk(c) for c in o._d2s_children()), "node")
        out.append(o)
        return None

    return out, walk(obj)


def rebuild(skeleton, values):
    it = iter(values)

    def build(s):
        if s is None:
            return next(it)
        if s[0] is dict:
            return {k: build(c) for k, c in zip(s[1], s[2])}
        if len(s) == 3:
            return s[0]._d2s_from_children(tuple(build(c) for c in s[1]))
        return s[0](build(c) for c in s[1])

    return build(skeleton)


def fresh(obj):
    """``obj`` with containers (and TensorArrays) rebuilt, one copy per branch, so what a branch
    appends or assigns into a container cannot leak into the other. Tensors stay the same
    objects, so aliases keep aliasing: an in-place update a branch makes to a tensor from
    outside lasts only while that branch is built (see ``ProgramBuilder.note_inplace``)."""
    vals, skel = leaves(obj)
    return rebuild(skel, vals)


def write_back(original, merged):
    """Update container ``original`` in place to hold ``merged`` (so other references to it see
    what the branch or loop did); returns the object to bind."""
    if type(original) is list and isinstance(merged, list):
        original[:] = merged
        return original
    if type(original) is dict and isinstance(merged, dict):
        original.clear()
        original.update(merged)
        return original
    return merged


def describe(v):
    if isinstance(v, Tensor):
        return f"a {v.dtype} tensor of shape {tuple('?' if not isinstance(d, int) else d for d in v.shape)}" \
            if v._data is not None else f"a tensor {v._var.type}"
    if isinstance(v, Undefined):
        return "undefined"
    if hasattr(type(v), "_d2s_children") and hasattr(v, "truth"):
        return "a list whose length is known only when the program runs (grown in a tensor loop or branch)"
    func = getattr(v, "__func__", v)
    code = getattr(func, "__code__", None)
    if code is not None and callable(v):
        # not its repr: a converted function's qualified name shows the converter's wrappers
        return f"the function {func.__name__} (line {code.co_firstlineno})"
    return f"{type(v).__name__} {v!r}"
