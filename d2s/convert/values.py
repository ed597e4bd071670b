"""Values flowing through converted control flow: symbolic checks, leaves, fresh copies."""
from .. import pytree
from ..static.tensor_array import TensorArray
from ..tensor import Tensor
from ..user_errors import ConvertError, at_user_line
from .undefined import MaybeKey, Undefined


def is_symbolic(x):
    return isinstance(x, Tensor) and x.is_symbolic


def truth(x):
    """The value an ``if``/``not`` tests: a list grown in a tensor loop or branch (a TensorArray
    whose length is known only at run time) tests ``len(xs) > 0`` in the program."""
    if isinstance(x, TensorArray) and x.data is not None and is_symbolic(x.data):
        return x.truth()
    if type(x) is dict and x and all(type(v) is MaybeKey for v in x.values()):
        # every key held on some runs only (convert/dict_keys.py): its truth depends on the run
        raise at_user_line(f"testing the truth of a dict whose keys {list(x)} were set on some runs only (in one "
                           "branch of a tensor `if`, or first inside a tensor loop): Python's answer depends on "
                           "the data, which a Python value cannot. Set a key before the `if` or loop, or test "
                           f"`{next(iter(x))!r} in d`", ConvertError)
    return x


def fresh(obj):
    """``obj`` with containers (and TensorArrays) rebuilt, one copy per branch, so what a branch
    appends or assigns into a container cannot leak into the other. Tensors stay the same
    objects, so aliases keep aliasing: an in-place update a branch makes to a tensor from
    outside lasts only while that branch is built (see ``ProgramBuilder.note_inplace``)."""
    vals, skel = pytree.tree_flatten(obj)
    return pytree.tree_unflatten(skel, vals)


# ids of the Python lists that a tensor branch or loop replaced by a tensor list while the
# current program is built: the list object itself no longer shows the change (the jit refuses
# such a list when it is an argument, see jit/static_function.py)
REPLACED_LISTS = set()


def write_back(original, merged):
    """Update container ``original`` in place to hold ``merged`` (so other references to it see
    what the branch or loop did); returns the object to bind."""
    if type(original) is list and isinstance(merged, list):
        original[:] = merged
        return original
    if type(original) is list and isinstance(merged, TensorArray):
        REPLACED_LISTS.add(id(original))
    if type(original) is dict and isinstance(merged, dict):
        original.clear()
        original.update(merged)
        return original
    return merged


def changed(original, copy):
    """Whether ``copy`` (from ``fresh(original)``) no longer holds what ``original`` holds."""
    a_vals, a_skel = pytree.tree_flatten(original)
    b_vals, b_skel = pytree.tree_flatten(copy)
    if a_skel != b_skel:
        return True
    return any((a._var is not b._var) if is_symbolic(a) and is_symbolic(b) else a is not b
               for a, b in zip(a_vals, b_vals))


def describe(v):
    if isinstance(v, Tensor):
        return f"a {v.dtype} tensor of shape {tuple('?' if not isinstance(d, int) else d for d in v.shape)}" \
            if not v.is_symbolic else f"a tensor {v._var.type}"
    if isinstance(v, Undefined):
        return "undefined"
    if isinstance(v, TensorArray):
        return "a list whose length is known only when the program runs (grown in a tensor loop or branch)"
    func = getattr(v, "__func__", v)
    code = getattr(func, "__code__", None)
    if code is not None and callable(v):
        # not its repr: a converted function's qualified name shows the converter's wrappers
        return f"the function {func.__name__} (line {code.co_firstlineno})"
    return f"{type(v).__name__} {v!r}"
