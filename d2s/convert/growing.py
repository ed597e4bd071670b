"""A sequence grown by ``cat`` in a bounded loop, as a buffer of its final length.

``idx = cat((idx, nxt), dim=1)`` in a loop op over ``n`` iterations (``range_loops.py``) grows
``idx`` by ``nxt``'s size ``k`` each time. The loop carries instead a buffer of the final
length ``L0 + n * k`` and the current length ``t``: the body reads ``idx`` as the buffer's first
``t`` positions (a :class:`GrowingView`; ``idx[:, -block:]``, ``idx.size(1)`` and every other read
see exactly the sequence eager code holds), and the ``cat`` becomes a write of ``nxt`` at
positions ``t .. t + k - 1`` (``index_copy``) and a view one step longer. After the loop the
buffer is the result (or its first ``t`` positions when a ``break`` may end the loop early).

Which loop variables grow so is learnt while the probe of ``range_loops`` traces the first
iteration: :func:`watch` records each ``cat`` whose first part is a loop variable (or what such
a ``cat`` returned), so a variable that comes back as ``cat((itself, part of static size k),
dim)`` grows by ``k`` along ``dim``, whatever its other dims (a dynamic prompt length too).
"""
import contextlib
import threading

from d2s_runtime.dtypes import result_type

from .. import ops
from ..tensor import Tensor, tensor
from .dynamic_slices import has_dynamic_slices, read_dynamic_slices

_ACTIVE = threading.local()  # the watch of the probe being traced on this thread, if any


class Unrolled(BaseException):
    """The loop op is not possible: the loop unrolls, for ``reason``. A BaseException, so the
    control-flow builders' ``except Exception`` handlers let it through to ``loop_op``
    (range_loops.py), which catches it; defined here, below range_loops, because the growing
    sequences' checks raise it too."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def _part_size(part, dim):
    n = part.shape[dim]
    return n if isinstance(n, int) else None


def _norm_dim(dim, ndim):
    return dim + ndim if dim < 0 else dim


class _Seen:
    """The ``cat`` calls a probe made that grow a watched loop variable."""

    def __init__(self, state):
        self.watched = {id(v): v for v in state if isinstance(v, Tensor)}
        self.results = {}  # id(result) -> (result, root variable, dim, growth)

    def record(self, parts, dim, result):
        first = parts[0]
        if not isinstance(first, Tensor) or first.ndim == 0:
            return
        d = _norm_dim(dim, first.ndim)
        if id(first) in self.results and self.results[id(first)][0] is first:
            _, root, d0, k0 = self.results[id(first)]
            if d0 != d:
                return
        elif self.watched.get(id(first)) is first:
            root, k0 = first, 0
        else:
            return
        sizes = [_part_size(p, d) if isinstance(p, Tensor) and p.ndim == first.ndim else None for p in parts[1:]]
        if not sizes or None in sizes:
            return
        self.results[id(result)] = (result, root, d, k0 + sum(sizes))

    def grown(self, t):
        """(root loop variable, dim, growth) if ``t`` came from ``cat`` calls on a loop variable."""
        got = self.results.get(id(t))
        if got is None or got[0] is not t:
            return None
        return got[1:]


@contextlib.contextmanager
def watch(state):
    """Record, while the body is traced, the ``cat`` calls that grow the loop vars ``state``."""
    seen, prev = _Seen(state), getattr(_ACTIVE, "seen", None)
    _ACTIVE.seen = seen
    try:
        yield seen
    finally:
        _ACTIVE.seen = prev


def on_cat(tensors, dim, compute):
    """``cat(tensors, dim)`` in converted code: ``compute()`` gives the plain result; a growing
    view as first part writes the others into its buffer instead."""
    parts = list(tensors) if isinstance(tensors, (list, tuple)) else None
    d = 0 if dim is None else dim
    if parts and isinstance(parts[0], GrowingView) and isinstance(d, int):
        return parts[0].extended(parts[1:], d)
    out = compute()
    seen = getattr(_ACTIVE, "seen", None)
    if seen is not None and parts and isinstance(d, int):
        seen.record(parts, d, out)
    return out


class GrowingView(Tensor):
    """The first ``length`` positions of ``buffer`` along ``dim``: how a loop op's body reads a
    sequence it grows by ``cat`` (a plain tensor for everything else)."""

    __slots__ = ("buffer", "length", "dim", "origin", "grown_by", "made_var", "expected")

    @classmethod
    def of(cls, buffer, length, dim, expected=0, origin=None, grown_by=0):
        index = (slice(None),) * dim + (slice(None, length),)
        v = read_dynamic_slices(buffer, index) if has_dynamic_slices(index) else buffer[index]
        out = cls._make(v._data, v._var)
        out.buffer, out.length, out.dim, out.expected = buffer, length, dim, expected
        out.origin, out.grown_by, out.made_var = origin if origin is not None else out, grown_by, v._var
        return out

    def extended(self, parts, dim):
        """``cat((self, *parts), dim)``: ``parts`` written into the buffer after the first
        ``length`` positions."""
        if not parts or _norm_dim(dim, self.ndim) != self.dim:
            raise Unrolled("a sequence grown into a buffer is joined along another dim")
        parts = [p if isinstance(p, Tensor) else tensor(p) for p in parts]
        if any(p.ndim != self.ndim for p in parts):
            raise Unrolled("a part joined to a sequence grown into a buffer has another rank")
        sizes = [_part_size(p, self.dim) for p in parts]
        if sizes.count(None) > 1:
            raise Unrolled("parts joined to a sequence grown into a buffer have no fixed size")
        if None in sizes:
            # a part read from the sequence itself (``idx[:, -1:] + 1``), whose size the program
            # does not know: the size the first iteration gave it, checked when the program runs
            # (a reshape, which fails on any other size instead of writing a wrong part)
            j = sizes.index(None)
            sizes[j] = self.expected - self.grown_by - sum(n for n in sizes if n is not None)
            if sizes[j] <= 0:
                raise Unrolled("a part joined to a sequence grown into a buffer has no fixed size")
            shape = [sizes[j] if a == self.dim else n for a, n in enumerate(parts[j].shape)]
            parts[j] = ops.reshape(parts[j], shape)
        k = sum(sizes)
        part = parts[0] if len(parts) == 1 else ops.cat(parts, self.dim)
        if part.dtype != self.buffer.dtype:
            if result_type(str(self.buffer.dtype), str(part.dtype)) != str(self.buffer.dtype):
                raise Unrolled("a part joined to a sequence grown into a buffer changes its dtype")
            part = ops.cast(part, str(self.buffer.dtype))
        if self._var is not self.made_var:
            raise Unrolled("a sequence grown into a buffer is written in place before it grows")
        positions = ops.add(ops.arange(k), self.length)
        buf = ops.index_copy(self.buffer, self.dim, positions, part)
        return GrowingView.of(buf, ops.add(self.length, k), self.dim, self.expected, self.origin, self.grown_by + k)


class Buffers:
    """The growing loop variables of one loop op: ``growth`` maps a position to (dim, k)."""

    def __init__(self, growth, n, may_break):
        self.growth, self.n, self.may_break = dict(growth), n, may_break

    def start(self, state):
        """The loop vars with each growing one as ``(buffer of the final length, length)``."""
        out = list(state)
        for i, (dim, k) in self.growth.items():
            x = out[i]
            shape = list(x.shape)
            length = shape[dim]
            shape[dim] = self.n * k
            pad = ops.zeros(shape, dtype=str(x.dtype))
            out[i] = (ops.cat((x, pad), dim), length if isinstance(length, Tensor) else tensor(length))
        return tuple(out)

    def views(self, s):
        """The loop vars as the body sees them (each growing one a GrowingView)."""
        if not self.growth:
            return s
        s = list(s)
        for i, (dim, k) in self.growth.items():
            buf, length = s[i]
            s[i] = GrowingView.of(buf, length, dim, k)
        return tuple(s)

    def carries(self, names, views, out):
        """The body's outputs with each growing variable back as (buffer, length)."""
        if not self.growth:
            return out
        out = list(out)
        for i, (dim, k) in self.growth.items():
            o = out[i]
            if not isinstance(o, GrowingView) or o.origin is not views[i] or o.grown_by != k:
                raise Unrolled(f"'{names[i]}' does not grow by a cat at its end on every path of an iteration")
            if o._var is not o.made_var:
                raise Unrolled(f"'{names[i]}' is written in place after it grows")
            out[i] = (o.buffer, o.length)
        return tuple(out)

    def finish(self, out):
        """The loop's results with each growing variable as the sequence eager code holds."""
        out = list(out)
        for i, (dim, _) in self.growth.items():
            buf, length = out[i]
            # every iteration ran (no break): exactly the buffer's length
            out[i] = GrowingView.of(buf, length, dim).as_plain() if self.may_break else buf
        return tuple(out)


def _as_plain(self):
    return Tensor._make(self._data, self._var)


GrowingView.as_plain = _as_plain
