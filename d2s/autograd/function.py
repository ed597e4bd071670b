"""Custom autograd functions: user-written forward and backward, like ``torch.autograd.Function``.

    class Square(d2s.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    y = Square.apply(x)

``forward`` runs with grad off (its ops record nothing); the outputs get one node whose rule is
``backward``. ``backward`` gets one gradient per output and returns one per ``forward``
argument (``None`` where there is none). It runs in the engine's grad mode, so writing it in
d2s ops makes it differentiable with ``create_graph``.
"""
from ..tensor import Tensor, tensor
from .._state import STATE
from .grad_mode import no_grad
from .node import Node, grad_node

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` of a custom Function: a free-form namespace plus saved tensors."""

    def __init__(self):
        self._saved = ()
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        self._saved = tensors

    @property
    def saved_tensors(self):
        if self._saved is None:
            raise RuntimeError("saved tensors of this custom Function were freed by a previous backward; "
                               "pass retain_graph=True to backward through it again")
        return self._saved


class FunctionNode(Node):
    """The node of one custom Function call; ``rule`` calls the class's ``backward``."""

    __slots__ = ("fn_cls", "ctx")

    def name(self):
        return self.fn_cls.__name__ + "Backward"

    def release(self):
        super().release()
        self.ctx._saved = None


def _run_backward(node, *grads):
    res = node.fn_cls.backward(node.ctx, *grads)
    if not isinstance(res, tuple):
        res = (res,)
    n_in = len(node.next_functions)
    if len(res) != n_in:
        raise RuntimeError(f"{node.fn_cls.__name__}.backward returned {len(res)} gradients, but forward "
                           f"took {n_in} arguments: return one per argument (None where there is none)")
    out = []
    for g, (nxt, _) in zip(res, node.next_functions):
        out.append(None if nxt is None else _as_tensor(g))
    return tuple(out)


def _as_tensor(g):
    return g if g is None or isinstance(g, Tensor) else tensor(g)


class Function:
    """Base class of custom autograd functions; subclass it with static ``forward(ctx, *args)``
    and ``backward(ctx, *grads)``, and call ``YourFunction.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a custom Function must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("a custom Function must define backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` and, when an argument requires grad, record one node for the outputs."""
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            raw = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(raw, tuple)
        outs = (raw,) if single else raw
        # Fresh tensor objects sharing the data, so an argument returned as-is keeps its own history.
        outs = tuple(Tensor._make(o._data, o._var) if isinstance(o, Tensor) else o for o in outs)
        if STATE.grad_enabled and any(ctx.needs_input_grad):
            node = FunctionNode()
            node.op, node.fn_cls, node.ctx, node.rule = cls.__name__, cls, ctx, _run_backward
            node.inputs, node.attrs, node.versions = args, kwargs, None
            node.outputs = tuple(o for o in outs if isinstance(o, Tensor))
            node.next_functions = tuple((grad_node(a), a._out_idx if a.grad_fn is not None else 0)
                                        if isinstance(a, Tensor) and a.requires_grad else (None, 0)
                                        for a in args)
            node.pre_hooks = node.retained = None
            node.freed = False
            for i, o in enumerate(node.outputs):
                if o.dtype.is_floating_point:
                    o.requires_grad = True
                    o.grad_fn = node
                    o._out_idx = i
        return outs[0] if single else outs
