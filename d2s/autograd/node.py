"""Autograd graph nodes, and ``record``, which dispatch calls to attach one to an op's outputs.

A node runs its op's gradient rule (see ``registry.py``; the rules themselves sit next to
their ops in ``d2s/ops/*.py``) with itself as ``ctx``: ``ctx.inputs`` (the op's inputs as
given: tensors, arrays or Python scalars), ``ctx.outputs`` and ``ctx.attrs``.
"""
import itertools
import weakref

import numpy as np

from .. import dispatch as _dispatch
from .. import tensor as _tensor
from .._state import STATE
from .anomaly import ACTIVE_THREADS, remember
from .registry import FLOAT_COTANGENTS_ONLY, GRAD_RULES, NONDIFF, OUTPUTS_READ, READ_FOR, SHAPE_ONLY, USES_OUTPUTS


def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


_SEQUENCE = itertools.count()


class Node:
    """One recorded op in the autograd graph (``t.grad_fn``). ``seq`` numbers nodes in the order
    they were recorded: backward runs the latest recorded of its ready nodes first, as PyTorch's
    engine does (see ``engine._run``)."""

    __slots__ = ("op", "rule", "inputs", "outputs", "attrs", "next_functions", "pre_hooks",
                 "retained", "freed", "versions", "out_versions", "seq", "__weakref__")

    def __init__(self):
        self.seq = next(_SEQUENCE)

    def name(self):
        # reduce_sum -> SumBackward0, as PyTorch names it
        return _camel(self.op.removeprefix("reduce_")) + "Backward0"

    def __repr__(self):
        return f"<{self.name()}>"

    def apply(self, grads):
        """Input gradients for output gradients ``grads`` (a list, one per output)."""
        if self.freed:
            raise RuntimeError(
                f"Trying to backward through the graph a second time ({self.name()} has already freed "
                "its saved tensors). Pass retain_graph=True to the first backward() or d2s.grad() "
                "if you need to backward through the graph again.")
        if self.versions is not None:
            self._check_versions()
        for g in grads:
            if g is None:
                # (structured ops' rules read only their floating-point outputs' gradients: a
                # bool flag or counter they carry gets no zeros, which would be ops per replay)
                skip = self.op in FLOAT_COTANGENTS_ONLY
                grads = [g if g is not None or (skip and not o.dtype.is_floating_point) else _dispatch.fill_like(o, 0)
                         for g, o in zip(grads, self.outputs)]
                break
        return self.rule(self, *grads)

    def release(self):
        self.inputs = self.outputs = None
        self.freed = True

    def _check_versions(self):
        if self.versions is None:
            return
        skip = SHAPE_ONLY.get(self.op, ())
        read_for = READ_FOR.get(self.op)
        for i, (t, v) in enumerate(zip(self.inputs, self.versions)):
            if v is not None and i not in skip and changed_since(t, v):
                if read_for is not None and i in read_for and \
                        all(self.next_functions[j][0] is None for j in read_for[i]):
                    continue  # only the gradients of inputs that need none read it
                raise self._modified_error(t, f"input {i}", v)
        if self.op in USES_OUTPUTS and self.outputs is not None:
            expected = getattr(self, "out_versions", None)
            read = OUTPUTS_READ.get(self.op)
            for i, o in enumerate(self.outputs):
                v = expected[i] if expected is not None else 0
                if o._version != v and (read is None or i in read):
                    raise self._modified_error(o, f"output {i}", v)

    def _modified_error(self, t, which, expected):
        return RuntimeError(
            f"one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: a {t.dtype} tensor of shape {list(t.shape)}, which is {which} of {self.name()}, "
            f"is at version {_plain(version_of(t))}; expected version {_plain(expected)} instead. It was modified in place "
            "(t[idx] = v, t += v, t.add_(v), ...) after it was used; modify a copy (t = t.clone()) instead")

    def add_pre_hook(self, idx, fn):
        if self.pre_hooks is None:
            self.pre_hooks = {}
        hooks = self.pre_hooks.setdefault(idx, [])
        return _tensor._HookHandle(hooks, fn)

    def retain(self, idx, tensor):
        if self.retained is None:
            self.retained = {}
        self.retained[idx] = weakref.ref(tensor)


class AccumulateGrad:
    """The sink of a leaf tensor that requires grad: gradients are summed into ``.grad``."""

    __slots__ = ("variable", "post_hooks", "__weakref__")
    next_functions = ()
    freed = False
    pre_hooks = retained = None
    seq = float("inf")  # (as PyTorch's: a ready sink is written at once)

    def __init__(self, variable):
        self.variable = variable
        self.post_hooks = None  # fn(tensor) after each accumulation into .grad

    def name(self):
        return "AccumulateGrad"

    def __repr__(self):
        return "<AccumulateGrad>"


def grad_node(t):
    """The node a gradient for tensor ``t`` flows into, or None when none is needed."""
    if t.grad_fn is not None:
        return t.grad_fn
    if not t.requires_grad:
        return None
    if t._accum is None:
        t._accum = AccumulateGrad(t)
    return t._accum




def version_of(t):
    """t's version, or for a view (``_base`` set) ``(t's version, the versions of the tensors
    it views)``: the second part changes when one of them is written in place."""
    base = getattr(t, "_base", None)
    if base is None:
        return t._version
    v = 0
    while base is not None:
        v += base._version
        base = getattr(base, "_base", None)
    return (t._version, v)


def changed_since(t, recorded):
    """Whether ``t`` was written in place since ``version_of(t)`` gave ``recorded``. A base
    since rebound to a new array (``y[i] = v`` under autograd) no longer shares t's memory:
    what t shows is intact then."""
    if type(recorded) is not tuple:
        return t._version != recorded
    own, bases = recorded
    if t._version != own:
        return True
    base = getattr(t, "_base", None)
    return base is not None and _shares(t, base) and version_of(t)[1] != bases


def _plain(v):
    return v if type(v) is not tuple else sum(v)


def _shares(t, base):
    a, b = t._data, base._data
    if a is None or b is None:
        return False
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.may_share_memory(a, b)
    return True


_NO_EDGE = (None, 0)


def record(opdef, inputs, attrs, outputs):
    """Attach a Node for ``opdef`` to ``outputs`` (called by dispatch when recording).

    This runs once per differentiable op call, so it is written for speed: one pass over the
    inputs builds the edges and the version snapshot, and dtypes are read off the arrays.
    """
    name = opdef.name
    rule = GRAD_RULES.get(name)
    if rule is None:
        if name in NONDIFF:
            return
        raise NotImplementedError(f"d2s has no gradient rule for op {name!r}")
    Tensor = _tensor.Tensor
    edges = []
    versions = []
    for a in inputs:
        if type(a) is Tensor or isinstance(a, Tensor):
            fn = a.grad_fn
            if fn is not None:
                edges.append((fn, a._out_idx))
            elif a.requires_grad:
                acc = a._accum
                if acc is None:
                    acc = a._accum = AccumulateGrad(a)
                edges.append((acc, 0))
            else:
                edges.append(_NO_EDGE)
            # Versions taken now let backward notice a later in-place write to a saved input
            # (or to the tensor it is a view of: W.T changes when W is updated in place).
            versions.append(a._version if getattr(a, "_base", None) is None else version_of(a))
        else:
            edges.append(_NO_EDGE)
            versions.append(None)
    node = Node()
    node.op = name
    node.rule = rule
    node.inputs = inputs
    node.outputs = outputs
    node.attrs = attrs
    node.next_functions = tuple(edges)
    node.versions = tuple(versions)
    node.out_versions = None
    node.pre_hooks = None
    node.retained = None
    node.freed = False
    for i, o in enumerate(outputs):
        d = o._data
        if (d.dtype.kind == "f") if d is not None else o.dtype.is_floating_point:
            o.requires_grad = True
            o.grad_fn = node
            o._out_idx = i
    # Outputs are saved for rules such as exp's, which reuse them; the cycle this makes
    # (output -> node -> output) is broken when backward frees the node.
    if ACTIVE_THREADS[0]:  # detect_anomaly() in some thread: remember the user's line
        remember(node)
    if not STATE.grad_enabled:  # pragma: no cover - dispatch only records with grad on
        node.release()

