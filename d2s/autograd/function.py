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
d2s ops makes it differentiable with ``create_graph`` (unless decorated with
:func:`once_differentiable`). ``ctx`` offers PyTorch's ``save_for_backward``/``saved_tensors``,
``needs_input_grad``, ``mark_non_differentiable``, ``set_materialize_grads`` and ``mark_dirty``.

**In a program** (``to_static``, ``build_program``, ``d2s.jit.trace``) the forward's ops are
traced into the program as they run, and its outputs pass through one ``custom_function`` op
(see ``d2s_runtime/ops/grad_ops.py``) whose inputs also hold the tensors the backward reads
(``ctx.saved_tensors`` and any tensor kept on ``ctx``): the op computes nothing, but its
gradient rule calls the class's ``backward`` on the backward program's values of those tensors,
so the backward program holds the user's backward (as JAX's ``custom_vjp`` does), never the
derivative of the forward's ops. The Python side of each call (class, ``ctx``) is kept in
``_CALLS`` under the op's ``fn`` attribute. A forward that reads a tensor's data (``.numpy()``,
``.item()``) cannot be traced: the program build stops there with an error naming the line.
"""
import functools
import itertools

from .. import pytree
from ..dispatch import apply
from ..tensor import Tensor, tensor
from ..user_errors import SymbolicValueError
from .._state import STATE
from .grad_mode import no_grad
from .node import Node, grad_node
from .registry import grad_rule
from ..onnx.registry import onnx_converter

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The ``ctx`` of a custom Function: a free-form namespace plus saved tensors."""

    def __init__(self):
        self._saved = ()
        self.needs_input_grad = ()
        self._non_diff = ()
        self._dirty = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` (or None) for ``backward``, where ``ctx.saved_tensors`` returns them."""
        self._saved = tensors

    @property
    def saved_tensors(self):
        if self._saved is None:
            raise RuntimeError("saved tensors of this custom Function were freed by a previous backward; "
                               "pass retain_graph=True to backward through it again")
        return self._saved

    def mark_non_differentiable(self, *outputs):
        """These outputs of ``forward`` get no gradient (integer indices, masks, ...); backward
        still receives a (zero) gradient for each."""
        self._non_diff = self._non_diff + tuple(outputs)

    def set_materialize_grads(self, value):
        """With False, backward gets ``None`` (not zeros) for outputs that got no gradient
        (eagerly; a program passes zeros, which backward must then accept too)."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        """``forward`` changed these input tensors in place and returns them: the returned
        object is the input itself, which takes the Function's history."""
        self._dirty = self._dirty + tuple(tensors)


def once_differentiable(backward):
    """Decorator for a custom Function's ``backward`` that is not itself differentiable (it runs
    under ``no_grad``: ``create_graph`` gets no second-order graph through it)."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with no_grad():
            return backward(ctx, *grads)

    return wrapper


class FunctionNode(Node):
    """The node of one custom Function call; ``rule`` calls the class's ``backward``."""

    __slots__ = ("fn_cls", "ctx")

    def name(self):
        return self.fn_cls.__name__ + "Backward"

    def apply(self, grads):
        if not self.ctx.materialize_grads and not self.freed:
            if self.versions is not None:
                self._check_versions()
            return self.rule(self, *grads)
        return super().apply(grads)

    def release(self):
        super().release()
        self.ctx._saved = None


def _run_backward(node, *grads):
    res = _call_backward(node.fn_cls, node.ctx, grads)
    n_in = len(node.next_functions)
    if len(res) != n_in:
        raise RuntimeError(f"{node.fn_cls.__name__}.backward returned {len(res)} gradients, but forward "
                           f"took {n_in} arguments: return one per argument (None where there is none)")
    out = []
    for g, (nxt, _) in zip(res, node.next_functions):
        out.append(None if nxt is None else _as_tensor(g))
    return tuple(out)


def _call_backward(cls, ctx, grads):
    res = cls.backward(ctx, *grads)
    return res if isinstance(res, tuple) else (res,)


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
        if STATE.hooked:
            return _apply_in_program(cls, ctx, args, kwargs)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            raw = cls.forward(ctx, *args, **kwargs)  # (keywords: d2s's extension; they get no gradient)
        single = not isinstance(raw, tuple)
        outs = (raw,) if single else raw
        dirty = {id(t) for t in ctx._dirty}
        # Fresh tensor objects sharing the data, so an argument returned as-is keeps its own
        # history; an input marked dirty (changed in place) is returned itself and takes the node.
        outs = tuple(o if isinstance(o, Tensor) and id(o) in dirty else
                     Tensor._make(o._data, o._var) if isinstance(o, Tensor) else o for o in outs)
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
            non_diff = {id(t) for t in ctx._non_diff}
            for i, o in enumerate(node.outputs):
                if o.dtype.is_floating_point and id(o) not in non_diff and \
                        not any(o._data is t._data for t in ctx._non_diff if isinstance(t, Tensor)):
                    o.requires_grad = True
                    o.grad_fn = node
                    o._out_idx = i
                    if id(o) in dirty:
                        o._version += 1
        return outs[0] if single else outs


# ------------------------------------------------------------------ in programs
_CALLS = {}  # the op's "fn" attr -> _Call
_KEYS = itertools.count()


class _Call:
    """The Python side of one traced Function call: the class, its ``ctx``, where the op's
    inputs come from (``arg_pos``: the forward argument of each tensor input; ``saved``: the
    number of ``ctx.saved_tensors``; ``attrs``: ``(name, treedef, count)`` of each ``ctx``
    attribute holding tensors), and which outputs are tensors."""

    __slots__ = ("cls", "ctx", "n_args", "arg_pos", "saved", "attrs", "out_pos", "n_out")


def _apply_in_program(cls, ctx, args, kwargs):
    """``cls.apply(*args)`` while a program is built or traced: the forward traced (converted
    when it has tensor control flow), its outputs passed through a ``custom_function`` op."""
    arg_pos = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and (a.requires_grad or (a.is_symbolic and a.dtype.is_floating_point))
                                 for a in args)
    try:
        with no_grad():
            raw = _forward(cls)(ctx, *args, **kwargs)
    except SymbolicValueError as e:
        raise SymbolicValueError(
            f"{e}\n{cls.__name__}.forward reads a tensor's value, so it cannot be traced into a program "
            f"(its backward would be lost): write it in d2s ops, or leave the function calling "
            f"{cls.__name__}.apply eager with @d2s.jit.not_to_static") from None
    single = not isinstance(raw, tuple)
    outs = (raw,) if single else tuple(raw)
    out_pos = [k for k, o in enumerate(outs) if isinstance(o, Tensor)]
    if not out_pos:
        return raw
    saved = [t for t in ctx._saved if isinstance(t, Tensor)]
    if len(saved) != len(ctx._saved):
        saved_layout = tuple(isinstance(t, Tensor) for t in ctx._saved)
    else:
        saved_layout = None
    attrs, kept = [], []
    for name, value in list(vars(ctx).items()):
        if name.startswith("_") or name in ("needs_input_grad", "materialize_grads"):
            continue
        leaves, tree = pytree.tree_flatten(value)
        tensors = [x for x in leaves if isinstance(x, Tensor)]
        if tensors:
            attrs.append((name, tree, [isinstance(x, Tensor) for x in leaves], leaves))
            kept.extend(tensors)
    call = _Call()
    call.cls, call.ctx, call.n_args, call.arg_pos = cls, ctx, len(args), arg_pos
    call.saved, call.attrs, call.out_pos, call.n_out = (len(saved), saved_layout), attrs, out_pos, len(outs)
    key = f"{cls.__qualname__}#{next(_KEYS)}"
    _CALLS[key] = call
    tensors_out = [outs[k] for k in out_pos]
    res = apply("custom_function", *[args[k] for k in arg_pos], *saved, *kept, *tensors_out, fn=key,
                n_out=len(tensors_out))
    non_diff = {id(t) for t in ctx._non_diff}
    outs = list(outs)
    for k, r in zip(out_pos, res):
        outs[k] = r.detach() if id(outs[k]) in non_diff else r
    return outs[0] if single else tuple(outs)


def _forward(cls):
    """``cls.forward``, converted when to_static builds a program (tensor ``if``s and loops in
    it become ops as in any converted function); a plain trace (``build_program``) runs it as
    Python, as it runs the traced function itself."""
    fwd = cls.forward
    if STATE.builder is None or not getattr(STATE.builder, "to_static_enabled", False):
        return fwd
    from ..convert.call import convert_call  # (the converter is a layer above autograd's)
    return convert_call(fwd)


@onnx_converter("custom_function")
def _custom_function_onnx(g, op):
    n = op.attrs["n_out"]
    for src, dst in zip(op.inputs[len(op.inputs) - n:], op.outputs):
        g.node("Identity", [src], [dst])


@grad_rule("custom_function")
def _custom_function_grad(node, *grads):
    """The class's ``backward``, on this program's values of what it reads."""
    call = _CALLS[node.attrs["fn"]]
    inputs = node.inputs
    n_arg = len(call.arg_pos)
    n_saved, saved_layout = call.saved
    ctx = FunctionCtx()
    ctx.__dict__.update(call.ctx.__dict__)
    saved = list(inputs[n_arg:n_arg + n_saved])
    if saved_layout is not None:
        it = iter(saved)
        saved = [next(it) if is_t else None for is_t in saved_layout]
    ctx._saved = tuple(saved)
    pos = n_arg + n_saved
    for name, tree, is_tensor, leaves in call.attrs:
        new = []
        for flag, leaf in zip(is_tensor, leaves):
            if flag:
                new.append(inputs[pos])
                pos += 1
            else:
                new.append(leaf)
        setattr(ctx, name, pytree.tree_unflatten(tree, new))
    needs = [False] * call.n_args
    for j, k in enumerate(call.arg_pos):
        needs[k] = node.next_functions[j][0] is not None
    ctx.needs_input_grad = tuple(needs)
    all_grads = [None] * call.n_out  # (None for an output that is not a tensor)
    for k, g in zip(call.out_pos, grads):
        all_grads[k] = g
    res = _call_backward(call.cls, ctx, all_grads)
    if len(res) != call.n_args:
        raise RuntimeError(f"{call.cls.__name__}.backward returned {len(res)} gradients, but forward took "
                           f"{call.n_args} arguments: return one per argument (None where there is none)")
    out = [None if node.next_functions[j][0] is None else _as_tensor(res[k]) for j, k in enumerate(call.arg_pos)]
    return tuple(out) + (None,) * (len(inputs) - n_arg)
