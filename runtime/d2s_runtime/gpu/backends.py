"""The protocol a graph backend implements (the CUDA one in ``cuda.py``; the strict test
device's fake in ``tests/strict_graph.py``). Nothing here runs on its own.

A backend captures a program by calling ``record(rec)`` with a :class:`Recorder`, and gets back
a graph it can launch. The recorder's calls are the only way the capture computes anything, so
a backend sees every computation: on a GPU the kernels launched on the capturing stream are
recorded by CUDA itself, on the fake each call becomes a thunk.
"""


class Recorder:
    """What the capture interpreter records with (one capture).

    Attributes:
        xp: the device's array namespace.
    """

    xp = None

    def op(self, fn, *args):
        """``fn(*args)``, recorded: ``fn`` takes and returns device arrays (one or a tuple) and
        computes only with device kernels; it may write into its arguments in place."""
        raise NotImplementedError

    def copy(self, dst, src):
        """``dst[...] = src``, recorded (a device-to-device copy; equal shapes and dtypes)."""
        raise NotImplementedError

    def empty(self, shape, dtype):
        """A graph-owned buffer (its contents are written by recorded ops before any read)."""
        raise NotImplementedError

    def gemm(self, a, b):
        """``xp.matmul(a, b)`` by a library call allowed inside a capture (not recorded on its
        own: it runs inside a recorded ``op``)."""
        raise NotImplementedError

    def fused(self, plan, run, *args):
        """A fused group: ``plan`` (a :class:`~d2s_runtime.gpu.cuda_lower.FusedPlan`) launched
        on ``args``, returning its outputs (a tuple); ``run(*args)`` computes the same with the
        ops' own kernels (the default: recorded as one op)."""
        return self.op(run, *args)

    def assume(self, fn, value, why):
        """A fact the capture proved (``fn(value)``, a 0-d bool, holds at every replay), so no
        check is recorded for it: a backend records nothing (the default), a test backend may
        verify it at each replay."""

    def if_else(self, pred, then_fn, else_fn):
        """An IF/ELSE node: ``then_fn()`` runs where the 0-d bool ``pred`` holds at replay,
        else ``else_fn()`` (each records its branch's body)."""
        raise NotImplementedError

    def while_loop(self, cond_fn, body_fn):
        """A WHILE node: ``cond_fn()`` records the predicate's computation and returns it (a
        0-d bool); ``body_fn()`` records the body. At replay: while the predicate holds, the
        body runs and the predicate is computed again."""
        raise NotImplementedError


class GraphBackend:
    """A device's graph machinery."""

    name = None
    xp = None

    def capture(self, record):
        """``(graph, result)``: ``result = record(rec)`` run under a new capture."""
        raise NotImplementedError

    def launch(self, graph):
        """Replay ``graph`` (asynchronously, on the caller's stream)."""
        raise NotImplementedError

    def copy_in(self, dst, src):
        """``dst[...] = src`` before a launch, on the launch stream (no host wait)."""
        raise NotImplementedError

    def write_host(self, dst, host):
        """``dst[...] = host`` (a numpy array): a host-to-device copy, on the launch stream."""
        raise NotImplementedError

    def read_word(self, word):
        """The int in the 0-d device array ``word`` (a host synchronization)."""
        raise NotImplementedError

    def release(self, graph):
        """Free what ``graph`` holds (a capture replaced by another)."""
