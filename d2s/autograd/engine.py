"""The backward engine: Kahn's algorithm over the autograd graph, no recursion.

Dependencies are counted first (how many consumers will send a gradient to each node); a
node runs once all of them have arrived, so gradients reaching a node along several paths
are summed before its rule runs, and a chain of any length backprops without recursion.
"""
import heapq
import threading
import warnings

import numpy as _np

from .. import dispatch as _dispatch
from .. import tensor as _tensor
from .._state import HOOKED_THREADS, STATE
from .anomaly import ACTIVE_THREADS, check_gradients
from ..user_errors import at_user_line
from .node import AccumulateGrad, grad_node

_ndarray = _np.ndarray
_callbacks = threading.local()  # .stack: one list of callbacks per backward pass running
# .ids: the arrays (by id) that the backward pass running has stored in a .grad or got from
# its caller (gradient=), so that no .grad shares memory with another or with the caller's
_handed = threading.local()


def queue_callback(fn):
    """Run ``fn()`` once the backward pass now running has finished (every ``.grad`` written),
    like PyTorch's ``Variable._execution_engine.queue_callback``; e.g. to wait for gradient
    communication started by hooks. Outside a backward pass it raises."""
    stack = getattr(_callbacks, "stack", None)
    if not stack:
        raise RuntimeError("queue_callback: no backward pass is running (call it from a hook)")
    stack[-1].append(fn)


def _as_tensor_like(g, ref):
    if isinstance(g, _tensor.Tensor):
        return g
    return _tensor.tensor(g, dtype=ref.dtype, device=ref.device)


def _root_grads(tensors, grads):
    roots = []
    for i, t in enumerate(tensors):
        g = None if grads is None else grads[i]
        d = t._data
        if g is None and type(d) is _ndarray and d.dtype.kind == "f" and d.size == 1 and t.requires_grad \
                and not HOOKED_THREADS[0]:
            # the usual seed: a scalar loss of a plain numpy run (no builder or tracer to see
            # the ones being created); the checks below give the same result slower
            roots.append((grad_node(t), t._out_idx if t.grad_fn is not None else 0,
                          _tensor.Tensor._make(_np.ones(d.shape, d.dtype))))
            continue
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"backward needs a floating point tensor, got {t.dtype}: integer and bool "
                               "results (argmax, comparisons, casts to int) carry no gradient")
        if not t.requires_grad:
            if STATE.builder is not None and t.is_symbolic:
                raise at_user_line(
                    "backward() inside a function being converted by to_static: its program records no "
                    "autograd history for the parameters, so this tensor has none. Convert the model (or "
                    "its forward) and call loss.backward() and optimizer.step() outside the converted "
                    "function, or compute the gradients inside it with d2s.func.value_and_grad / "
                    "d2s.autograd.grad", RuntimeError)
            raise RuntimeError(
                f"element {i} of tensors does not require grad and has no grad_fn: nothing in its "
                "history requires grad (it may come from .detach() or from inside no_grad())")
        if g is None:
            if t.ndim != 0 and t.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs, this one has shape "
                    f"{tuple(t.shape)}: pass gradient= (e.g. d2s.ones_like(out)) or reduce it first")
            g = _dispatch.fill_like(t, 1)
        else:
            g = _as_tensor_like(g, t)
        roots.append((grad_node(t), t._out_idx if t.grad_fn is not None else 0, g))
    return roots


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) into each leaf's ``.grad`` (or only ``inputs``' leaves)."""
    if retain_graph is None:
        retain_graph = create_graph
    b = STATE.builder
    if b is not None and b.forward_only and any(t.is_symbolic for t in tensors):
        # (its values require grad as eagerly, so the program sees x.requires_grad; but .grad
        # cannot take values that exist only when the program runs)
        raise at_user_line(
            "backward() inside a function being converted by to_static: a program cannot accumulate "
            "gradients into the parameters' .grad while it is built. Convert the model (or its forward) and "
            "call loss.backward() and optimizer.step() outside the converted function, or compute the "
            "gradients inside it with d2s.func.value_and_grad / d2s.autograd.grad", RuntimeError)
    roots = _root_grads(tensors, grad_tensors)
    outer = getattr(_handed, "ids", None)  # (a hook may run a backward of its own)
    _handed.ids = set() if grad_tensors is None else {id(_owner(g._data)) for _, _, g in roots}
    try:
        if inputs is not None:
            targets = [grad_node(t) for t in inputs]
            _run(roots, targets, retain_graph, create_graph, capture=None, accumulate_only=set(targets))
        else:
            _run(roots, None, retain_graph, create_graph, capture=None)
    finally:
        _handed.ids = outer


def _owner(d):
    """The array whose memory ``d`` uses (``d`` itself unless it is a view)."""
    while getattr(d, "base", None) is not None:
        d = d.base
    return d


def _accumulates_in_place(grad, g):
    """Whether gradient ``g`` may be added into ``grad`` (a leaf's existing ``.grad``) in place:
    both concrete, of one shape and dtype, ``grad`` without history and writable, no program
    being traced."""
    gd, d = g._data, grad._data
    return (not HOOKED_THREADS[0] and d is not None and gd is not None and not grad.requires_grad
            and d.shape == gd.shape and d.dtype == gd.dtype and getattr(getattr(d, "flags", None), "writeable", True))


def _own(g):
    """``g`` for a ``.grad`` that holds nothing yet, copied where its memory is not its own: a
    read-only broadcast (``x.sum()``'s gradient), the caller's ``gradient=`` or a view of it, or
    memory another ``.grad`` of this pass holds (``a + b`` sends one gradient to both). As in
    PyTorch, whose AccumulateGrad copies unless it holds the only reference, a later in-place
    update of one ``.grad`` (``zero_()``, ``mul_()`` in gradient clipping) then changes
    nothing else, and works. (A writable view of memory nothing else holds, the transpose of
    a fresh product, is kept as it is.)"""
    d = g._data
    ids = getattr(_handed, "ids", None)
    # (cupy's arrays have no writeable flag: they are always writable)
    if not getattr(getattr(d, "flags", None), "writeable", True) or (ids is not None and id(_owner(d)) in ids):
        g = g.clone()
        d = g._data
    if ids is not None:
        ids.add(id(_owner(d)))
    return g


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, as a tuple; ``.grad`` is untouched.

    Only the part of the graph that leads from ``outputs`` to ``inputs`` runs. PyTorch's
    signature: ``only_inputs`` is accepted and ignored (deprecated in PyTorch, which also only
    computes the inputs' gradients); ``allow_unused`` defaults to ``materialize_grads``;
    ``materialize_grads=True`` gives zeros, not None, for an input the outputs do not use;
    ``is_grads_batched=True`` (vmap over grad_outputs) is not supported.

    Args:
        outputs, inputs: tensors (or sequences of them).
        grad_outputs: the vector of the vector-Jacobian product (ones for scalar outputs).
        retain_graph: keep the graph for another backward (default: ``create_graph``).
        create_graph: record the backward pass, for higher-order derivatives.
        allow_unused: None for an input the outputs do not use (else an error).
        materialize_grads: zeros for such an input.

    Returns:
        A tuple of gradients, one per input.
    """
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use d2s.autograd.backward.",
                      FutureWarning, stacklevel=2)
    if is_grads_batched:
        raise at_user_line("d2s.autograd.grad: is_grads_batched=True (a vmap over grad_outputs) is not "
                           "supported; call grad once per row of grad_outputs with retain_graph=True, or use "
                           "d2s.func.jacrev for a whole Jacobian", NotImplementedError)
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    result = _grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        ins = [inputs] if isinstance(inputs, _tensor.Tensor) else list(inputs)
        result = tuple(_zeros_like(t) if g is None else g for g, t in zip(result, ins))
    return result


def _zeros_like(t):
    # the full_like op through dispatch (importing d2s's ops from here would tie autograd into
    # the package's import cycle): any device, symbolic inputs too
    return _dispatch.apply("full_like", t, value=0, dtype=str(t.dtype))


def _grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused):
    Tensor = _tensor.Tensor
    single_out = isinstance(outputs, Tensor)
    outputs = [outputs] if single_out else list(outputs)
    single_in = isinstance(inputs, Tensor)
    inputs = [inputs] if single_in else list(inputs)
    if grad_outputs is not None and isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if retain_graph is None:
        retain_graph = create_graph
    b = STATE.builder
    if b is not None:
        inputs = _program_params(b, inputs)
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            if t.is_symbolic and b is not None and b.forward_only and not b.grad_inputs:
                # a to_static forward build records no autograd nodes for its inputs and params;
                # the program is built again with them recording (see StaticFunction._build)
                raise SymbolicInputNeedsGrad(f"input {i} of d2s.grad does not require grad")
            raise RuntimeError(f"input {i} of d2s.grad does not require grad")
    roots = _root_grads(outputs, grad_outputs)
    keys = [(grad_node(t), t._out_idx if t.grad_fn is not None else 0) for t in inputs]
    capture = {k: None for k in keys}
    _run(roots, [k[0] for k in keys], retain_graph, create_graph, capture=capture)
    result = []
    for i, k in enumerate(keys):
        g = capture[k]
        if g is None and not allow_unused:
            raise RuntimeError(f"input {i} of d2s.grad is not used in computing the outputs; "
                               "pass allow_unused=True to get None for it")
        result.append(g)
    return tuple(result)


def _program_params(builder, inputs):
    """Inside a program being built, a concrete parameter is read through its program param:
    differentiate with respect to that."""
    out = []
    for t in inputs:
        if not t.is_symbolic and t.requires_grad:
            if builder.forward_only and not builder.grad_inputs:
                raise SymbolicInputNeedsGrad("d2s.grad of a parameter inside a forward-only build")
            t = builder.param(t)
        out.append(t)
    return out


class SymbolicInputNeedsGrad(RuntimeError):
    """d2s.grad asked for the gradient of a program input or param in a to_static build that
    does not record autograd nodes for them; the build is redone with them recording."""


def _needed_nodes(roots, targets):
    """Nodes from which some target is reachable (iterative post-order, no recursion)."""
    target_set = set(targets)
    reach = {}
    for root, _, _ in roots:
        if root is None or root in reach:
            continue
        stack = [(root, iter(root.next_functions))]
        reach[root] = root in target_set
        while stack:
            node, it = stack[-1]
            advanced = False
            for nxt, _ in it:
                if nxt is None:
                    continue
                if nxt not in reach:
                    reach[nxt] = nxt in target_set
                    stack.append((nxt, iter(nxt.next_functions)))
                    advanced = True
                    break
                if reach[nxt]:
                    reach[node] = True
            if not advanced:
                stack.pop()
                if stack and reach[node]:
                    reach[stack[-1][0]] = True
    return {n for n, r in reach.items() if r}


class _pass:
    """One backward pass: grad mode as ``create_graph`` asks, and the callbacks queued during
    it (``queue_callback``) run at its end, once every ``.grad`` is written. (A class, not a
    generator: it is entered on every eager backward.)"""
    __slots__ = ("create_graph", "prev_mode", "stack")

    def __init__(self, create_graph):
        self.create_graph = create_graph

    def __enter__(self):
        self.prev_mode = STATE.grad_enabled
        STATE.grad_enabled = bool(self.create_graph)
        STATE.in_backward += 1
        stack = getattr(_callbacks, "stack", None)
        if stack is None:
            stack = _callbacks.stack = []
        stack.append([])
        self.stack = stack

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                callbacks = self.stack[-1]
                while callbacks:  # a callback may queue another
                    callbacks.pop(0)()
        finally:
            self.stack.pop()
            STATE.grad_enabled = self.prev_mode
            STATE.in_backward -= 1
        return False


def _run(roots, targets, retain_graph, create_graph, capture, accumulate_only=None):
    if targets is None and capture is None and len(roots) == 1 and _flat(roots[0][0]):
        return _run_flat(roots[0], retain_graph, create_graph)
    needed = _needed_nodes(roots, targets) if targets is not None else None
    # Count, for every node, how many gradients it will receive.
    deps = {}
    seen = set()
    stack = []
    for node, _, _ in roots:
        if node is not None and node not in seen and (needed is None or node in needed):
            seen.add(node)
            stack.append(node)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None or (needed is not None and nxt not in needed):
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    buffers = {}
    for node, idx, g in roots:
        if node is None or node not in seen:
            continue
        _accumulate(buffers, node, idx, g)
    ready = _Ready()
    for n in dict.fromkeys(r[0] for r in roots):
        if n in seen and deps.get(n, 0) == 0:
            ready.append(n)
    with _pass(create_graph):
        while ready:
            node = ready.pop()
            grads = buffers.pop(node)
            if type(node) is AccumulateGrad:
                _leaf(node, grads[0], capture, create_graph, accumulate_only)
                continue
            if node.pre_hooks or node.retained or capture is not None:
                grads = _outputs_hooks(node, grads, capture, create_graph)
            if capture is not None and needed is not None and not any(
                    nxt in needed for nxt, _ in node.next_functions if nxt is not None):
                continue  # a captured input whose own history is not needed
            in_grads = node.apply(grads)
            if ACTIVE_THREADS[0]:
                check_gradients(node, grads, in_grads)
            inputs = node.inputs
            if not retain_graph:
                node.release()
            for (nxt, idx), g, a in zip(node.next_functions, in_grads, inputs):
                if nxt is None or (needed is not None and nxt not in needed):
                    continue
                if g is not None:
                    g = _in_dtype_of(g, a)
                    if type(nxt) is AccumulateGrad:  # a leaf's sink: one slot (as _accumulate)
                        slot = buffers.get(nxt)
                        if slot is None:
                            buffers[nxt] = [g]
                        else:
                            slot[0] = g if slot[0] is None else slot[0] + g
                    else:
                        _accumulate(buffers, nxt, idx, g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    if nxt in buffers:
                        ready.append(nxt)
                    else:
                        _skip(nxt, deps, ready, buffers, needed)


class _Ready:
    """The nodes whose gradients are all in, run latest recorded first (the highest ``seq``), as
    PyTorch's engine runs them: a tensor's gradients then sum in the order PyTorch sums them, and
    a recurrence unrolled eagerly sums a weight's per-step gradients from the last step back, as
    a converted loop's backward does. Among equals (leaf sinks), the last one added first."""

    __slots__ = ("heap", "count")

    def __init__(self):
        self.heap, self.count = [], 0

    def __bool__(self):
        return bool(self.heap)

    def append(self, node):
        self.count += 1
        heapq.heappush(self.heap, (-node.seq, -self.count, node))

    def pop(self):
        return heapq.heappop(self.heap)[2]


def _flat(node):
    """Whether ``node``'s graph is the node and distinct leaf sinks only (a converted forward's
    ``RunProgramBackward0`` over parameters): ``_run_flat`` then gives what ``_run`` gives."""
    if node is None or type(node) is AccumulateGrad:
        return False
    nexts = node.next_functions
    seen = set()
    for nxt, _ in nexts:
        if nxt is not None:
            if type(nxt) is not AccumulateGrad or nxt in seen:
                return False
            seen.add(nxt)
    return True


def _run_flat(root, retain_graph, create_graph):
    """``_run`` for one root node whose successors are distinct leaf sinks: no dependency count
    or ready queue is needed. Leaves are written in the order ``_run`` writes them (its ready
    stack pops the last one pushed first)."""
    node, idx, g = root
    n_out = len(node.outputs or ()) or idx + 1
    grads = [None] * max(n_out, idx + 1)
    grads[idx] = g
    with _pass(create_graph):
        if node.pre_hooks or node.retained:
            grads = _outputs_hooks(node, grads, None, create_graph)
        in_grads = node.apply(grads)
        if ACTIVE_THREADS[0]:
            check_gradients(node, grads, in_grads)
        if not retain_graph:
            node.release()
        leaves = [(nxt, g) for (nxt, _), g in zip(node.next_functions, in_grads) if nxt is not None and g is not None]
        for nxt, g in reversed(leaves):
            _leaf(nxt, g, None, create_graph, None)


def _in_dtype_of(g, a):
    """``g``, the gradient for input ``a`` of a node, in ``a``'s floating dtype, as PyTorch's
    engine casts each gradient to its input's dtype before passing it on: a float32 tensor used
    with float64 values (``x64 + t32``) gets a float32 gradient, and the ops before it
    differentiate in float32 (as the converted program's backward does), not in float64."""
    gd, ad = g._data, a._data
    if gd is not None and ad is not None:
        if gd.dtype == ad.dtype or ad.dtype.kind != "f" or gd.dtype.kind != "f":
            return g
    elif g.dtype == a.dtype or not (g.dtype.is_floating_point and a.dtype.is_floating_point):
        return g
    return g.cast(a.dtype)


def _skip(node, deps, ready, buffers, needed):
    """A node that received no gradient at all: release its consumers' counts without running it."""
    stack = [node]
    while stack:
        n = stack.pop()
        for nxt, _ in n.next_functions:
            if nxt is None or (needed is not None and nxt not in needed):
                continue
            deps[nxt] -= 1
            if deps[nxt] == 0:
                if nxt in buffers:
                    ready.append(nxt)
                else:
                    stack.append(nxt)


def _accumulate(buffers, node, idx, g):
    n_out = 1 if isinstance(node, AccumulateGrad) else len(node.outputs or ()) or idx + 1
    slot = buffers.get(node)
    if slot is None:
        slot = buffers[node] = [None] * max(n_out, idx + 1)
    slot[idx] = g if slot[idx] is None else slot[idx] + g


def _outputs_hooks(node, grads, capture, create_graph):
    if node.pre_hooks:
        for idx, hooks in node.pre_hooks.items():
            for fn in list(hooks):
                if grads[idx] is None:
                    continue
                new = fn(grads[idx])
                if new is not None:
                    grads[idx] = new
    if node.retained:
        for idx, ref in node.retained.items():
            t = ref()
            g = grads[idx]
            if t is not None and g is not None:
                g = g if create_graph else g.detach()
                if t.grad is None and not create_graph:
                    g = _own(g)
                t.grad = g if t.grad is None else t.grad + g
    if capture is not None:
        for idx, g in enumerate(grads):
            if (node, idx) in capture and g is not None:
                capture[(node, idx)] = g
    return grads


def _leaf(node, g, capture, create_graph, accumulate_only):
    t = node.variable
    if t._hooks:
        for fn in list(t._hooks):
            new = fn(g)
            if new is not None:
                g = new
    if capture is not None:
        if (node, 0) in capture:
            capture[(node, 0)] = g
        return
    if accumulate_only is not None and node not in accumulate_only:
        return
    if not create_graph:
        g = g.detach()
    gd, td = g._data, t._data
    if not HOOKED_THREADS[0] and gd is not None and td is not None and gd.dtype == td.dtype \
            and gd.shape == td.shape:
        pass  # the usual case, checked on the arrays (the properties below cost more, and tell a tracer)
    else:
        if g.dtype != t.dtype:  # a float32 leaf used with float64 values gets a float32 .grad
            g = g.cast(t.dtype)
        if g.shape != t.shape:
            g = g.broadcast_to(t.shape)
    if t.grad is None:
        t.grad = g if create_graph else _own(g)
    elif not create_graph and _accumulates_in_place(t.grad, g):
        # PyTorch's AccumulateGrad adds into the existing .grad in place (outside create_graph):
        # a reference taken to it earlier (g = p.grad) sees the sum, as it does there
        grad = t.grad
        enabled, STATE.grad_enabled = STATE.grad_enabled, False
        try:
            grad.add_(g)
        finally:
            STATE.grad_enabled = enabled
    else:
        t.grad = t.grad + g
    if node.post_hooks:
        for fn in list(node.post_hooks):
            fn(t)
