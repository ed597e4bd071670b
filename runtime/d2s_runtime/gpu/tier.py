"""The graph rung of the tier ladder (``backend="graph"``; see ``tiers.py``).

Wired like the native tier: the first call runs on the Python backend (it warms every kernel,
handle and memory pool), the second captures the program (``capture.py``) and replays it, later
calls replay. Captures are kept per input signature (shapes and dtypes): a call with new shapes
captures again. A replay:

1. copies the program's inputs into the graph's static input buffers (device to device);
   params and constants are captured at their own addresses and not copied, unless a later
   call passes another array there: then the program is captured again with a buffer of its
   own for that position, which each call copies into;
2. launches the graph (its random draws advance their streams' offsets on the device; the
   host records as much, and writes a stream's state to the device only where something else
   drew from it since, ``rng.py``);
3. reads the device error word, once, when the program holds checks (asserts, guards, pops,
   the loop limit, device stacks): a set word runs the call again on the Python backend, which
   raises the program's own error (or, for a device stack that outgrew its capacity, returns
   the right answer, and the next capture sizes the stack for it);
4. copies the outputs out (the graph overwrites its buffers at the next replay), unless the
   runner was asked for views valid until the next call (``outputs_valid_until_next_call``).

A program the tier cannot capture stays on the Python backend; ``backend_report()`` says why.
"""
from .. import forksafe
from ..ops.random import RNG
from .capture import ERR_CAPACITY, Capture, CaptureRefused, DeviceStack, one_line

# keep at most this many captures per program (one per input signature), newest first
MAX_GRAPHS = 8


class _Entry:
    """One capture: the graph, its static feed buffers, its outputs and error word."""

    __slots__ = ("graph", "statics", "owned", "outs", "err", "checks", "stacks", "rng")


class GraphTier:
    """The graph backend's rung (see the module docstring). ``state``: off | warming | graph |
    unsupported | failed."""

    def __init__(self, runner, base, outputs_valid_until_next_call=False):
        self.runner, self.executor = runner, base
        self.views = outputs_valid_until_next_call
        self.origin = None
        self.state, self.reason = "off", None
        self.backend = None
        self.capture = None
        self.graphs = {}      # signature -> _Entry
        self.recaptures = 0   # captures after the first (new shapes, moved params, resized stacks)
        self.capacities = {}  # stack key -> capacity learned from an earlier call
        self._moved = set()   # feed positions whose array changed once: copied from then on
        self._lock = forksafe.Lock()
        self._start()

    # ---------------------------------------------------------------- preparing
    def _start(self):
        base = self.executor
        if base.parallel:
            self.state, self.reason = "unsupported", "parallel=True runs on the Python step interpreter"
            return
        from . import graph_backend
        backend, reason = graph_backend(base.device)
        if backend is None:
            self.state, self.reason = "unsupported", reason
            return
        from ..passes.if_convert import if_convert
        try:
            program = if_convert(base.program)
            self.capture = Capture(program, base.max_loop_iterations, self.capacities)
        except CaptureRefused as e:
            self.state, self.reason = "unsupported", str(e)
            return
        self.backend = backend
        self.n_inputs = len(base.program.inputs)
        self.state = "warming"
        self.runner.box[0] = self._first_call

    def boxed(self):
        return self.state in ("warming", "graph")

    def report(self):
        if self.state == "graph":
            return "graph"
        if self.state == "warming":
            return "python (graph pending: captured at the next call)"
        if self.state == "off":
            return "python"
        return f"python (graph {self.state}: {self.reason})"

    def wait(self, timeout=None):
        return self.state == "graph"

    # ---------------------------------------------------------------- calls
    def _first_call(self, feeds):
        """Call 1: the Python backend (it warms kernels and pools); the next call captures."""
        out = self.runner._python_call(feeds)
        if self.runner.box[0] == self._first_call:
            self.runner.box[0] = self._call
        return out

    def _python(self, feeds):
        return self.runner._python_call(feeds)

    def _call(self, feeds):
        if self.state != "warming" and self.state != "graph":
            return self._python(feeds)
        with self._lock:  # one replay at a time: a graph's buffers are shared by its calls
            try:
                entry = self._entry(feeds)
            except CaptureRefused as e:
                self._give_up("unsupported", str(e))
                return self._python(feeds)
            except Exception as e:  # noqa: BLE001 - a capture bug must not break the program
                self._give_up("failed", f"capture failed: {one_line(e)}")
                return self._python(feeds)
            if self.state == "warming":
                self.state = "graph"
                self.runner.backend = "graph"
            return self._replay(entry, feeds)

    def _give_up(self, state, reason):
        self.state, self.reason = state, reason
        self.runner.backend = "python"
        self.runner.box[0] = self.runner._python_call
        for e in self.graphs.values():
            self.backend.release(e.graph)
        self.graphs.clear()

    def _signature(self, feeds):
        sig = []
        for k, f in enumerate(feeds):
            sig.append((tuple(f.shape), f.dtype.str))
        return tuple(sig)

    def _entry(self, feeds):
        sig = self._signature(feeds)
        entry = self.graphs.get(sig)
        if entry is not None:
            for k in range(self.n_inputs, len(feeds)):
                if not entry.owned[k] and feeds[k] is not entry.statics[k]:
                    # a param or constant at another address (an optimizer that rebinds its
                    # arrays): capture again, with a buffer of its own copied into at each call
                    self._moved.add(k)
                    self.backend.release(entry.graph)
                    del self.graphs[sig]
                    entry = None
                    break
        if entry is None:
            if self.graphs:
                self.recaptures += 1
            entry = self._record(feeds)
            if len(self.graphs) >= MAX_GRAPHS:
                old = next(iter(self.graphs))
                self.backend.release(self.graphs.pop(old).graph)
            self.graphs[sig] = entry
        return entry

    def _record(self, feeds):
        backend, xp = self.backend, self.backend.xp
        owned = [k < self.n_inputs or k in self._moved for k in range(len(feeds))]
        # static buffers: graph-owned copies for inputs (and params that moved); the caller's
        # own arrays for params and constants (captured at their addresses)
        statics = [xp.array(f, copy=True) if own else f for f, own in zip(feeds, owned)]
        cap = self.capture
        cap.capacities = dict(self.capacities)
        literals = cap.literals(xp)
        graph, outs = backend.capture(lambda rec: cap.run(rec, statics, literals))
        for k, o in enumerate(outs):
            if type(o) is DeviceStack:
                backend.release(graph)
                raise CaptureRefused(f"output {self.executor.program.outputs[k]} is a tensor stack (handed to "
                                     "another program): graphs keep their stacks on the device")
        e = _Entry()
        e.graph, e.statics, e.owned, e.outs = graph, statics, owned, outs
        e.err, e.checks, e.stacks = cap.err, cap.checks, list(cap.stacks)
        e.rng = cap.rng
        e.rng.recording = False
        return e

    def _replay(self, entry, feeds):
        if not entry.rng.streams:
            return self._launch(entry, feeds, None)
        with RNG.lock:  # (no other thread draws between this call's draws and the host's record of them)
            marks = entry.rng.sync(self.backend)
            return self._launch(entry, feeds, marks)

    def _launch(self, entry, feeds, marks):
        backend = self.backend
        for k, (f, own) in enumerate(zip(feeds, entry.owned)):
            if own:
                backend.copy_in(entry.statics[k], f)
        backend.launch(entry.graph)
        if marks is not None:
            entry.rng.advance(backend, marks)
        if entry.checks:
            word = backend.read_word(entry.err)  # the one host synchronization of the call
            if word:
                if marks is not None:
                    entry.rng.rewind(marks)  # the Python backend draws these numbers again
                return self._failed_on_device(entry, feeds, word)
        if self.views:
            return list(entry.outs)
        xp = backend.xp
        return [xp.array(o, copy=True) for o in entry.outs]

    def _failed_on_device(self, entry, feeds, word):
        """The error word was set: run the call on Python (which raises the program's error);
        a stack that outgrew its capacity is sized for the next capture."""
        if word & ERR_CAPACITY:
            for st in entry.stacks:
                peak = self.backend.read_word(st.peak)
                if peak > st.capacity or (st.exact and peak != st.capacity):
                    self.capacities[st.key] = int(peak)
            for sig, e in list(self.graphs.items()):
                if e is entry:
                    self.backend.release(e.graph)
                    del self.graphs[sig]
        out = self._python(feeds)
        if not word & ERR_CAPACITY:
            # the device said the program fails, Python did not: the graph is wrong here
            self._give_up("failed", "the device flagged an error that the Python backend did not raise")
        return out

