"""Autograd graph nodes and the registry of gradient rules.

A gradient rule is written once, in d2s ops, as ``rule(ctx, *grads) -> tuple`` with one entry
per op input (``None`` where no gradient flows). ``ctx`` is the node: ``ctx.inputs`` (the
op's inputs as given: tensors, arrays or Python scalars), ``ctx.outputs`` and ``ctx.attrs``.
Because rules call ordinary d2s ops, the same rule serves eager backward, static backward
(on symbolic tensors) and higher-order derivatives (with ``create_graph``).
"""
import weakref

from .._state import STATE

GRAD_RULES = {}
NONDIFF = set()  # ops whose outputs carry no gradient (comparisons, argmax, random draws, ...)


def defgrad(*names):
    """Register the decorated function as the gradient rule of ops ``names``."""

    def deco(rule):
        for n in names:
            GRAD_RULES[n] = rule
        return rule

    return deco


def nondiff(*names):
    NONDIFF.update(names)


def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


class Node:
    """One recorded op in the autograd graph (``t.grad_fn``)."""

    __slots__ = ("op", "rule", "inputs", "outputs", "attrs", "next_functions", "pre_hooks",
                 "retained", "freed", "versions", "__weakref__")

    def name(self):
        return _camel(self.op) + "Backward0"

    def __repr__(self):
        return f"<{self.name()}>"

    def apply(self, grads):
        """Input gradients for output gradients ``grads`` (a list, one per output)."""
        if self.freed:
            raise RuntimeError(
                f"Trying to backward through the graph a second time ({self.name()} has already freed "
                "its saved tensors). Pass retain_graph=True to the first backward() or d2s.grad() "
                "if you need to backward through the graph again.")
        self._check_versions()
        if any(g is None for g in grads):
            from ..ops import zeros_like
            grads = [zeros_like(o) if g is None else g for g, o in zip(grads, self.outputs)]
        return self.rule(self, *grads)

    def release(self):
        self.inputs = self.outputs = None
        self.freed = True

    def _check_versions(self):
        if self.versions is None:
            return
        for t, v in zip(self.inputs, self.versions):
            if v is not None and t._version != v:
                raise RuntimeError(
                    f"{self.name()}: one of the tensors it needs for the gradient was modified in place "
                    f"(t[idx] = v) after it was used; write to a copy (t = t.clone()) before assigning")

    def add_pre_hook(self, idx, fn):
        if self.pre_hooks is None:
            self.pre_hooks = {}
        hooks = self.pre_hooks.setdefault(idx, [])
        from ..tensor import _HookHandle
        return _HookHandle(hooks, fn)

    def retain(self, idx, tensor):
        if self.retained is None:
            self.retained = {}
        self.retained[idx] = weakref.ref(tensor)


class AccumulateGrad:
    """The sink of a leaf tensor that requires grad: gradients are summed into ``.grad``."""

    __slots__ = ("variable", "__weakref__")
    next_functions = ()
    freed = False
    pre_hooks = retained = None

    def __init__(self, variable):
        self.variable = variable

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


def record(opdef, inputs, attrs, outputs):
    """Attach a Node for ``opdef`` to ``outputs`` (called by dispatch when recording)."""
    name = opdef.name
    rule = GRAD_RULES.get(name)
    if rule is None:
        if name in NONDIFF:
            return
        raise NotImplementedError(f"d2s has no gradient rule for op {name!r}")
    from ..tensor import Tensor
    node = Node()
    node.op, node.rule, node.inputs, node.outputs, node.attrs = name, rule, inputs, outputs, attrs
    node.next_functions = tuple((grad_node(a), 0 if a.grad_fn is None else a._out_idx)
                                if isinstance(a, Tensor) else (None, 0) for a in inputs)
    node.pre_hooks = node.retained = None
    node.freed = False
    # Versions taken now let backward notice a later in-place write to a saved input.
    node.versions = tuple(a._version if isinstance(a, Tensor) else None for a in inputs)
    for i, o in enumerate(outputs):
        if o.dtype.is_floating_point:
            o.requires_grad = True
            o.grad_fn = node
            o._out_idx = i
    # Outputs are saved for rules such as exp's, which reuse them; the cycle this makes
    # (output -> node -> output) is broken when backward frees the node.
    if not STATE.grad_enabled:  # pragma: no cover - dispatch only records with grad on
        node.release()
