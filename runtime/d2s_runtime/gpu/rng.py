"""Random draws in a captured graph: the device generators are counter-based (Philox,
``philox.py``; ``ops/random.py``'s ``_DeviceDraws``), so a draw is element-wise work over
counters ``offset .. offset+n-1`` of a stream's key. A graph keeps each stream's key and offset
in device buffers; its draws read the offset and advance it in place, so replays need no
host work for the generator:

* at capture, each random op draws through :class:`GraphDraws` (``RNG.graph_draws``): the
  buffers of its stream (one per generator the program draws from), and how many numbers one
  replay draws from it (static shapes);
* before a replay, :meth:`GraphDraws.sync` compares each stream's host state (key, offset) with
  what the buffers hold after the last replay: equal (nothing else drew in between) costs
  nothing; different (a reseed, an eager draw) writes the two words to the device;
* after it, the host offset moves by the numbers the replay drew, as a Python-backend call's
  draws would have moved it. So graph mode draws the very numbers the Python backend draws.

Draws inside a loop or a branch are not captured: how far they move the offset depends on the
data, which the host could not follow without reading it back.
"""
import numpy as np

from ..ops.random import RNG


class _Stream:
    __slots__ = ("generator", "key", "offset", "n", "held")

    def __init__(self, generator, key, offset):
        self.generator, self.key, self.offset = generator, key, offset
        self.n = 0          # numbers one replay draws from this stream
        self.held = None    # (key, offset) the buffers hold now (None: not written yet)


class GraphDraws:
    """The random streams of one capture (see the module docstring)."""

    def __init__(self, rec):
        self.rec = rec
        self.streams = {}   # generator attr -> _Stream
        self.recording = True

    def hook(self, generator):
        """What ``RNG.graph_draws`` takes while op(s) drawing from ``generator`` run."""
        return _Hook(self, generator)

    def _stream(self, generator):
        st = self.streams.get(generator)
        if st is None:
            st = self.streams[generator] = _Stream(generator, self.rec.empty((2,), "uint32"),
                                                   self.rec.empty((), "uint64"))
        return st

    # ---------------------------------------------------------------- around replays
    def sync(self, backend):
        """Before a replay: the buffers take the host streams' states where they differ;
        returns the host streams' offsets (to rewind a replay that failed)."""
        xp = backend.xp
        marks = []
        for st in self.streams.values():
            gen = RNG.get(xp, st.generator)
            state = (tuple(gen.key), gen.offset)
            if st.held != state:
                backend.write_host(st.key, np.array(state[0], dtype="uint32"))
                backend.write_host(st.offset, np.array(state[1], dtype="uint64"))
            marks.append((gen, gen.offset))
        return marks

    def advance(self, backend, marks):
        """After a replay: each host stream moves past what the replay drew."""
        for st, (gen, offset) in zip(self.streams.values(), marks):
            gen.offset = offset + st.n
            st.held = (tuple(gen.key), gen.offset)

    def rewind(self, marks):
        """A replay whose results are dropped (the call runs again on Python): its draws too
        (the buffers are written again before the next replay)."""
        for st, (gen, offset) in zip(self.streams.values(), marks):
            gen.offset = offset
            st.held = None


class _Hook:
    __slots__ = ("draws", "generator")

    def __init__(self, draws, generator):
        self.draws, self.generator = draws, generator

    def words(self, stream, n):
        """``n`` Philox blocks from the stream's device buffers, advancing its offset there."""
        from .. import philox
        d = self.draws
        st = d._stream(self.generator)
        xp = d.rec.xp
        if d.recording:
            st.n += n
        w = philox.words(xp, st.key, st.offset, n)
        xp.add(st.offset, np.uint64(n), out=st.offset)
        return w
