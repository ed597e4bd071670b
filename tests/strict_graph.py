"""A fake CUDA graph backend for the "strict" test device (``strict_device.py``): what the
graph tier (``d2s_runtime/gpu``) captures and replays, checked on the CPU.

* ``capture`` sets ``strict_device.CAPTURE``: every host synchronization, host-to-device copy
  and library call cupy refuses during a stream capture raises ``CaptureViolation``, so a
  forgotten host read cannot bake a value into a graph unnoticed;
* each recorded op is a thunk: at replay it runs again and writes its result into the *same*
  array it gave at capture (fixed addresses, new values), as a replayed kernel writes the
  buffer it was captured with. The capture runs each op once too (the fake has no other way to
  know shapes), but a replay never relies on what it computed;
* IF/ELSE and WHILE nodes are Python loops over their recorded bodies, their condition read
  from the device array directly (a set-condition kernel on a GPU: no host synchronization);
* a fact the capture proved instead of checking it on the device (``Recorder.assume``: a
  pop that cannot find its stack empty, a capacity that cannot be outgrown) is verified at
  every replay, so a wrong proof fails the tests instead of clamping silently;
* buffers the graph allocates start as NaN (floats) or zeros (ints, bools): a value read
  before the graph writes it shows up in the tests' comparisons.

``StrictGraphs.stats`` counts captures and launches, for the tests.
"""
import numpy as np

import strict_device as sd
from d2s_runtime.gpu.backends import GraphBackend, Recorder


def _raw(x):
    return x._a if type(x) is sd.StrictArray else x


class _Graph:
    __slots__ = ("nodes", "released")

    def __init__(self, nodes):
        self.nodes, self.released = nodes, False


def _run(nodes):
    for node in nodes:
        kind = node[0]
        if kind == "op":
            _, fn, args, outs = node
            res = fn(*args)
            res = res if isinstance(res, tuple) else (res,)
            for o, r in zip(outs, res):
                ro, rr = _raw(o), _raw(r)
                if type(ro) is not np.ndarray or rr is ro or np.may_share_memory(ro, rr):
                    continue  # written in place, or a view of a buffer already up to date
                np.copyto(ro, rr)
        elif kind == "assume":
            _, fn, value, why = node
            if not bool(fn(value._a)):
                raise AssertionError(f"a fact the capture proved is false at replay: {why}")
        elif kind == "copy":
            np.copyto(node[1]._a, node[2]._a)
        elif kind == "if":
            _, pred, then_nodes, else_nodes = node
            _run(then_nodes if bool(pred._a) else else_nodes)
        elif kind == "while":
            _, pred, body, again = node
            go = bool(pred._a)
            while go:
                _run(body)
                go = bool(again._a)
        else:  # pragma: no cover
            raise AssertionError(kind)


class StrictRecorder(Recorder):
    """One fake capture (see the module docstring)."""

    xp = sd.xp

    def __init__(self):
        self.lists = [[]]

    def op(self, fn, *args):
        res = fn(*args)
        outs = res if isinstance(res, tuple) else (res,)
        for o in outs:
            if type(o) is not sd.StrictArray:
                raise TypeError(f"a recorded op gave {type(o).__name__}, not a device array")
        self.lists[-1].append(("op", fn, args, outs))
        return res

    def fused(self, plan, run, *args):
        # one node for the group, as on a GPU (where it is the plan's kernels): here the ops'
        # own kernels compute it (tests/runtime/gpu/test_fusion.py runs the plan's C itself)
        StrictGraphs.stats["fused"] += 1
        make = StrictGraphs.plan_runner
        fn = make(plan) if make is not None else None
        return self.op(fn or run, *args)

    def assume(self, fn, value, why):
        # the CUDA backend records nothing: here each proven fact is checked at every replay
        self.lists[-1].append(("assume", fn, value, why))

    def copy(self, dst, src):
        if dst.shape != src.shape or dst.dtype != src.dtype:
            raise ValueError(f"copy of {src.dtype}{src.shape} into {dst.dtype}{dst.shape}")
        np.copyto(dst._a, src._a)
        self.lists[-1].append(("copy", dst, src))

    def empty(self, shape, dtype):
        dtype = np.dtype(dtype)
        fill = np.nan if dtype.kind == "f" else 0
        return sd.StrictArray(np.full(tuple(shape), fill, dtype=dtype))

    def gemm(self, a, b):
        # the backend's own GEMM (a cuBLAS handle of its own on a GPU): allowed in a capture
        return sd.StrictArray(np.asarray(np.matmul(_raw(a), _raw(b))))

    def _record(self, fn):
        self.lists.append([])
        try:
            res = fn()
        finally:
            nodes = self.lists.pop()
        return nodes, res

    def if_else(self, pred, then_fn, else_fn):
        then_nodes, _ = self._record(then_fn)
        else_nodes, _ = self._record(else_fn)
        self.lists[-1].append(("if", pred, then_nodes, else_nodes))

    def while_loop(self, cond_fn, body_fn):
        pred = cond_fn()

        def body_then_cond():
            body_fn()
            return cond_fn()

        body, again = self._record(body_then_cond)
        self.lists[-1].append(("while", pred, body, again))


class StrictGraphs(GraphBackend):
    """The fake graph backend of device "strict"."""

    name = "strict"
    xp = sd.xp
    stats = {"captures": 0, "launches": 0, "fused": 0}
    # plan -> a function computing its outputs (or None): a test's way to run a fused group's
    # generated CUDA C itself, compiled for the host (tests/runtime/gpu/test_fusion.py)
    plan_runner = None

    def capture(self, record):
        rec = StrictRecorder()
        prev = sd.CAPTURE[0]
        sd.CAPTURE[0] = "a fake capture on device 'strict'"
        try:
            result = record(rec)
        finally:
            sd.CAPTURE[0] = prev
        StrictGraphs.stats["captures"] += 1
        return _Graph(rec.lists[0]), result

    def launch(self, graph):
        if graph.released:
            raise RuntimeError("a released graph was launched")
        StrictGraphs.stats["launches"] += 1
        _run(graph.nodes)

    def copy_in(self, dst, src):
        if dst.shape != src.shape:
            raise ValueError(f"copy of {src.shape} into {dst.shape}")
        np.copyto(dst._a, _raw(src), casting="same_kind")

    def write_host(self, dst, host):
        sd.COUNTS.to_device += 1  # a host-to-device copy (a generator's state, after a reseed)
        np.copyto(dst._a, np.asarray(host, dtype=dst._a.dtype))

    def read_word(self, word):
        return int(word)  # the host synchronization the budgets count

    def release(self, graph):
        graph.released = True
