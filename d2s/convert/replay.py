"""Decisions of nested tensor `if`s, replayed when an enclosing `if` traces its branches again.

A tensor ``if`` may trace its branches more than once: the false branch can show that a value
the true branch left as a Python number must be a tensor, and then both are traced again with
that hint. Every nested tensor ``if`` inside them ran its own retries the first time and, without
a memory, runs them all again: with one retry per level, nesting depth ``d`` cost ``2**d``
traces (a long function with many early returns nests that deep, since the code after each
``if ...: return`` moves into its other branch).

A retrace replays the same calls in the same order on values of the same types, so each nested
``if`` can start from the hints it ended with last time. The enclosing ``if`` keeps, per round,
the list of (key, decision) its nested ``if``s finished with; the ``i``-th nested call of the next
round takes the ``i``-th decision when its key (branch code, argument types, probing mode) is the
same, and otherwise starts from nothing as before.
"""
from .. import pytree
from ..tensor import Tensor
from .undefined import Undefined

_frames = []  # the `if`s now retracing their branches, innermost last


class Rounds:
    """``with Rounds() as r:`` around a retry loop; ``r.next_round()`` before each retrace.
    ``prev`` holds the (key, decision) list of the last round, ``cur`` that of this one."""

    def __init__(self, children=None):
        # children: the nested decisions of the recalled round, so they replay too
        self.prev, self.cur = children, []

    def __enter__(self):
        _frames.append(self)
        return self

    def next_round(self):
        self.prev, self.cur = self.cur, []

    def __exit__(self, *exc):
        # by identity: an exception may unwind several frames, and frames never compare equal
        del _frames[next(i for i in range(len(_frames) - 1, -1, -1) if _frames[i] is self):]
        return False


def recall(key):
    """The decision a nested call at this position with ``key`` ended with last round, or None."""
    if not _frames:
        return None
    frame = _frames[-1]
    prev, pos = frame.prev, len(frame.cur)
    if prev is not None and pos < len(prev) and prev[pos][0] == key:
        return prev[pos][1]
    return None


def record(key, decision):
    """Note the decision a nested call finished with, for the enclosing call's next round."""
    if _frames:
        _frames[-1].cur.append((key, decision))


def signature(values):
    """What a trace's decisions depend on in ``values``: tensors by dtype, shape and whether
    they are symbolic, Python scalars by value, other objects by type and identity."""
    vals, skel = pytree.tree_flatten(values)
    out = []
    for v in vals:
        if isinstance(v, Tensor):
            shape = v._var.type.shape if v.is_symbolic else v.shape
            out.append(("T", str(v.dtype), tuple(shape), v.is_symbolic))
        elif v is None or isinstance(v, (bool, int, float, str)):
            out.append((type(v), v))
        elif isinstance(v, Undefined):
            out.append((Undefined, v.name))
        else:
            out.append((type(v), id(v)))
    return repr(skel), tuple(out)
