"""Shape ops: reshape, transpose, squeeze, broadcast_to, concat/stack/split, pad, identity,
... (runtime: ``d2s_runtime/ops/shape_ops.py`` and ``grad_ops.py``): for each op its public
wrapper, its gradient rule and its ONNX converter, side by side."""
import builtins

import numpy as np

from d2s_runtime.device import get_xp
from d2s_runtime.ops import ShapeError

from .._state import STATE
from .. import views as _views
from ..autograd.registry import grad_rule, non_differentiable, shape_only
from ..dispatch import apply
from ..onnx.registry import i64, onnx_converter, onnx_unsupported, promoted, elementwise as onnx_elementwise
from ..tensor import Tensor, tensor, tensor_method
from ..user_errors import at_user_line
from .creation import full
from .elementwise import add, logical_or
from ._util import (_as_tensor, _axes, _dims_of_shape_tensor, _is_diff, _is_symbolic, _shape, _shape_arg,
                    _static_dims, _static_shape, unbroadcast)


_GRAD_OP = "gradient ops belong to backward programs; export the forward program"


# ------------------------------------------------------------------ dim arguments
def _dim_arg(op, dim, axis, default=None):
    """PyTorch's ``dim=`` with numpy's ``axis=`` accepted as an alias (not both)."""
    if axis is not None:
        if dim is not None and dim != axis:
            raise TypeError(f"{op}: got both dim={dim!r} and its numpy alias axis={axis!r}; give one (dim=)")
        return axis
    return default if dim is None else dim


def _sizes_arg(sizes):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` and ``f(torch.Size)``: the sizes as a list."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        return list(sizes[0])
    if len(sizes) == 1 and isinstance(sizes[0], Tensor) and sizes[0].ndim == 1:
        return list(_dims_of_shape_tensor(sizes[0]))
    return list(sizes)


# ------------------------------------------------------------------ reshape
@tensor_method()
def reshape(x, *shape, **kwargs):
    """``x`` with a new shape of as many elements (one dim may be -1: inferred); the shape is
    given as ints, as one list/tuple or as ``shape=``, and dims may be symbolic inside a
    program."""
    if kwargs:
        if set(kwargs) != {"shape"} or shape:
            raise TypeError(f"reshape: unexpected arguments {sorted(kwargs)}; give the shape (reshape(x, shape))")
        shape = (kwargs["shape"],)
    shape = _sizes_arg(shape)
    if builtins.any(isinstance(d, Tensor) and d.is_symbolic for d in shape):
        return _reshape_dims(x, shape)
    return apply("reshape", x, shape=_static_dims(shape))


@tensor_method("view")
def _view(x, *shape):
    """``x.view(2, -1)``: reshape (PyTorch's ``view``); ``view(dtype)`` is refused."""
    if len(shape) == 1 and _is_dtype_like(shape[0]):
        raise TypeError(f"view({shape[0]!r}): reinterpreting a tensor's bytes as another dtype is not supported "
                        "by d2s; convert the values with .to(dtype) instead")
    out = reshape(x, *shape)
    if out is not x and not _views.shares_elements(out, x):
        # PyTorch's view never copies: a layout it cannot view this way is refused
        raise at_user_line("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
                           RuntimeError)
    return out


def _is_dtype_like(v):
    if isinstance(v, (str, np.dtype)) or v is float or v is int or v is bool:
        return True
    return isinstance(v, type) and issubclass(v, np.generic)


@tensor_method()
def view_as(x, other):
    """``x`` reshaped to ``other``'s shape."""
    return reshape(x, list(other.shape))


@tensor_method()
def reshape_as(x, other):
    """``x`` reshaped to ``other``'s shape."""
    return reshape(x, list(other.shape))


@tensor_method()
def unflatten(x, dim, sizes):
    """Dim ``dim`` of ``x`` split into dims of ``sizes`` (one may be -1), as ``torch.unflatten``."""
    if not isinstance(x, Tensor):
        x = tensor(x)
    nd = x.ndim
    d = _norm_dim("unflatten", dim, nd)
    sizes = list(sizes)
    if not sizes:
        raise ValueError("unflatten: sizes must not be empty")
    shape = list(x.shape)
    n = shape[d] if nd else 1
    if -1 in sizes and all(isinstance(s_, (int, np.integer)) for s_ in sizes):
        # -1 comes from the dim's own size, as PyTorch's (reshape could not infer it where another
        # dim is 0: (2, 0).unflatten(0, (-1, 2)) is (1, 2, 0))
        rest = int(np.prod([s_ for s_ in sizes if s_ != -1]))
        if rest and (_is_symbolic(n) or int(n) % rest == 0):
            sizes = [(n if _is_symbolic(n) else int(n)) // rest if s_ == -1 else s_ for s_ in sizes]
    return reshape(x, shape[:d] + sizes + shape[d + 1:])


def _norm_dim(op, dim, nd):
    """``dim`` in ``[0, nd)`` (a 0-d tensor takes 0 and -1), or an IndexError as PyTorch's."""
    dim = int(dim)
    lim = builtins.max(nd, 1)
    if not -lim <= dim < lim:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-lim}, {lim - 1}], "
                         f"but got {dim})")
    return dim % lim


def _reshape_dims(x, shape):
    """reshape to a target with symbolic dims: they become inputs of a ``reshape_dims`` op."""
    target, dims, same_as = [], [], []
    for d in shape:
        if isinstance(d, Tensor) and d.is_symbolic:
            target.append(None)
            dims.append(d)
            # (var name, axis) when d is x.shape[axis], read symbolically in the active program
            src = STATE.builder.dim_sources.get(d._var.name) if STATE.builder is not None else None
            same_as.append(src[1] if src is not None and isinstance(x, Tensor) and x.is_symbolic
                           and src[0] == x._var.name else -1)
        else:
            target.append(int(d))
    return apply("reshape_dims", x, *dims, shape=target, same_as=same_as)


@grad_rule("reshape")
def _reshape_grad(ctx, g):
    shape = _shape(ctx.inputs[0])
    if shape.count(None) <= 1:
        return (reshape(g, [-1 if s is None else s for s in shape]),)
    return (apply("reshape_like", g, stop_gradient(ctx.inputs[0])),)


shape_only("reshape", 0)


@onnx_converter("reshape")
def _reshape_onnx(g, op):
    g.node("Reshape", [op.inputs[0], g.const(i64(op.attrs["shape"]))], op.outputs, allowzero=1)


# reshape_dims's gradient rule lives with the control-flow rules (d2s/static/control_flow_grad.py)
@onnx_converter("reshape_dims")
def _reshape_dims_onnx(g, op):
    parts, dims = [], iter(op.inputs[1:])
    for s in op.attrs["shape"]:
        if s is None:
            d = g.tmp()
            g.node("Reshape", [g.cast(next(dims), "int64"), g.const(i64([1]))], [d])
            parts.append(d)
        else:
            parts.append(g.const(i64([s])))
    shape = g.tmp()
    g.node("Concat", parts, [shape], axis=0)
    g.node("Reshape", [op.inputs[0], shape], op.outputs, allowzero=1)


@grad_rule("reshape_like")
def _reshape_like_grad(ctx, g):
    return (apply("reshape_like", g, stop_gradient(ctx.inputs[0])), None)


@onnx_converter("reshape_like")
def _reshape_like_onnx(g, op):
    s = g.tmp()
    g.node("Shape", [op.inputs[1]], [s])
    g.node("Reshape", [op.inputs[0], s], op.outputs, allowzero=1)


@tensor_method()
def flatten(x, start_dim=0, end_dim=-1):
    """``x`` with dims ``start_dim`` to ``end_dim`` merged into one."""
    if not isinstance(x, Tensor):
        x = tensor(x)
    nd = x.ndim
    if nd == 0:
        return reshape(x, [1])
    s, e = _norm_dim("flatten", start_dim, nd), _norm_dim("flatten", end_dim, nd)
    if s > e:
        raise ValueError(f"flatten: start_dim ({start_dim}) cannot come after end_dim ({end_dim})")
    if s == e:
        return x
    shape = list(x.shape)
    n = 1
    for dim in shape[s:e + 1]:
        if isinstance(dim, Tensor):
            n = -1  # an unknown dim inside the flattened range: let reshape infer it
            break
        n *= dim
    return reshape(x, shape[:s] + [n] + shape[e + 1:])


# ------------------------------------------------------------------ transpose
@tensor_method()
def transpose(x, dim0=None, dim1=None):
    """``x`` with dims ``dim0`` and ``dim1`` swapped (``torch.transpose``); with no dims, all
    dims reversed, and with a list, permuted by it (numpy's ``transpose``)."""
    if dim0 is None and dim1 is None:
        return apply("transpose", x, perm=None)
    if isinstance(dim0, (list, tuple)):
        return apply("transpose", x, perm=[int(p) for p in dim0])
    if dim1 is None:
        raise TypeError("transpose: give the two dims to swap (transpose(x, dim0, dim1))")
    nd = x.ndim if hasattr(x, "ndim") else np.ndim(x)
    d0, d1 = _norm_dim("transpose", dim0, nd), _norm_dim("transpose", dim1, nd)
    perm = list(range(nd))
    if nd:
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return apply("transpose", x, perm=perm)


@tensor_method("swapaxes", "swapdims")
def swapaxes(x, axis0, axis1):
    """``x`` with two dims swapped (``torch.swapaxes`` / ``swapdims``)."""
    return transpose(x, axis0, axis1)


swapdims = swapaxes


@tensor_method()
def permute(x, *dims):
    """``x`` with its dims in the order ``dims`` (``permute(2, 0, 1)`` or ``permute((2, 0, 1))``)."""
    dims = _sizes_arg(dims)
    nd = x.ndim if hasattr(x, "ndim") else np.ndim(x)
    if len(dims) != nd:
        raise ValueError(f"permute: {len(dims)} dims given for a tensor of {nd} dims; give one per dim")
    return apply("transpose", x, perm=[_norm_dim("permute", d, nd) for d in dims])


@tensor_method("movedim", "moveaxis")
def movedim(x, source, destination):
    """``x`` with dims ``source`` moved to positions ``destination`` (the others keep their
    order), as ``torch.movedim``."""
    nd = x.ndim if hasattr(x, "ndim") else np.ndim(x)
    src = [_norm_dim("movedim", d, nd) for d in (source if isinstance(source, (list, tuple)) else [source])]
    dst = [_norm_dim("movedim", d, nd) for d in (destination if isinstance(destination, (list, tuple))
                                                  else [destination])]
    if len(src) != len(dst):
        raise ValueError(f"movedim: source ({len(src)} dims) and destination ({len(dst)} dims) must have as many dims")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("movedim: repeated dim in source or destination")
    perm = [None] * nd
    for s_, d_ in zip(src, dst):
        perm[d_] = s_
    rest = iter(d for d in range(nd) if d not in src)
    perm = [p if p is not None else next(rest) for p in perm]
    return apply("transpose", x, perm=perm)


moveaxis = movedim


@tensor_method()
def t(x):
    """The transpose of a 2-d tensor (a 0-d or 1-d tensor as it is), as ``torch.t``."""
    nd = x.ndim if hasattr(x, "ndim") else np.ndim(x)
    if nd > 2:
        raise ValueError(f"t: expects a tensor of at most 2 dims, got {nd}; use transpose(dim0, dim1)")
    return apply("transpose", x, perm=None) if nd == 2 else x


@tensor_method("contiguous")
def _contiguous(x, memory_format=None):
    """``x`` itself where its elements are laid out contiguously, else a contiguous copy (as
    ``torch.Tensor.contiguous``: a write into the copy of a transposed or sliced view leaves its
    base alone, and a later ``view`` of the copy shares its elements)."""
    contiguous = _views.contiguous_layout(x)
    if contiguous is None:
        # in a program, of a value whose layout it cannot tell: x itself or a copy, eagerly (row-major either way)
        return _views.layout_unknown(_views.row_major(identity(x)), x, "contiguous")
    return x if contiguous else _views.row_major(identity(x))


@tensor_method("is_contiguous")
def _is_contiguous(x, memory_format=None):
    """Whether ``x``'s elements lie row-major without gaps (a transpose or strided slice's do not)."""
    contiguous = _views.contiguous_layout(x)
    if contiguous is None:
        raise at_user_line("is_contiguous(): inside to_static, of a value whose memory layout the program cannot "
                           "tell (its sizes are unknown while building, or an op made it from a non-contiguous "
                           "value); call .contiguous() or .clone() first, whose result is contiguous", RuntimeError)
    return contiguous


Tensor.mT = property(lambda self: transpose(self, -2, -1), doc="The last two dims swapped (batched matrix transpose).")
Tensor.mH = Tensor.mT


@grad_rule("transpose")
def _transpose_grad(ctx, g):
    perm = ctx.attrs.get("perm")
    if perm is None:
        return (transpose(g),)
    nd = len(perm)
    inv = [0] * nd
    for i, p in enumerate(perm):
        inv[p % nd] = i
    return (transpose(g, inv),)


shape_only("transpose", 0)


@onnx_converter("transpose")
def _transpose_onnx(g, op):
    nd = len(g.shape(op.inputs[0]))
    perm = op.attrs.get("perm")
    perm = list(reversed(range(nd))) if perm is None else [int(p) % max(nd, 1) for p in perm]
    g.node("Transpose", op.inputs, op.outputs, perm=perm)


# ------------------------------------------------------------------ squeeze, unsqueeze
@tensor_method()
def squeeze(x, dim=None, *, axis=None):
    """Drop dims of size 1 (all of them, or those among ``dim``: an int or a tuple). As in
    PyTorch, a named dim whose size is known not to be 1 is left alone rather than being an
    error."""
    axes = _axes(_dim_arg("squeeze", dim, axis))
    if axes is not None:
        shape = _static_shape(x)
        nd = len(shape)
        axes = [_norm_dim("squeeze", a, nd) for a in axes]
        axes = [a for a in axes if not (nd and shape[a] is not None and shape[a] != 1)]
        if not nd:
            axes = []
    return apply("squeeze", x, axes=axes)


@grad_rule("squeeze")
def _squeeze_grad(ctx, g):
    return (reshape(g, [-1 if s is None else s for s in _shape(ctx.inputs[0])]),)


shape_only("squeeze", 0)


@onnx_converter("squeeze")
def _squeeze_onnx(g, op):
    axes = op.attrs.get("axes")
    shape = g.shape(op.inputs[0])
    if axes is None:  # the dims the shape rule squeezed: those known to be 1
        axes = [i for i, d in enumerate(shape) if d == 1]
    if not axes:  # ONNX squeezes every 1-sized dim when given no axes
        g.node("Identity", op.inputs, op.outputs)
        return
    g.node("Squeeze", [op.inputs[0], g.const(i64(axes))], op.outputs)


@tensor_method()
def unsqueeze(x, dim=None, *, axis=None):
    """``x`` with a new dim of size 1 at ``dim``."""
    dim = _dim_arg("unsqueeze", dim, axis)
    if dim is None:
        raise TypeError("unsqueeze: missing the dim to insert (unsqueeze(x, dim))")
    nd = x.ndim if hasattr(x, "ndim") else np.ndim(x)
    return apply("expand_dims", x, axis=_norm_dim("unsqueeze", dim, nd + 1))


@grad_rule("expand_dims")
def _expand_dims_grad(ctx, g):
    return (squeeze(g, ctx.attrs["axis"]),)


shape_only("expand_dims", 0)


@onnx_converter("expand_dims")
def _expand_dims_onnx(g, op):
    g.node("Unsqueeze", [op.inputs[0], g.const(i64([op.attrs["axis"]]))], op.outputs)


# ------------------------------------------------------------------ broadcast_to
@tensor_method()
def broadcast_to(x, size):
    """``x`` broadcast (NumPy's rules) to ``size``; dims may be symbolic inside a program."""
    shape = _shape_arg(size if isinstance(size, (list, tuple)) else [size])
    if builtins.any(_is_symbolic(d) for d in shape):
        return _broadcast_to_dims(x, shape)
    return apply("broadcast_to", x, shape=_static_dims(shape))


def _broadcast_to_dims(x, shape):
    """broadcast_to a target with dims known only when the program runs (``x.shape`` of a
    dynamic batch): adding zeros of that shape broadcasts the same way, and the gradient of
    ``add`` already sums over the broadcast dims."""
    if not isinstance(x, Tensor):
        x = tensor(x)
    xs = x.shape
    if len(shape) < len(xs):
        raise ValueError(f"broadcast_to: cannot broadcast a {len(xs)}-d tensor to a target of "
                         f"{len(shape)} dims; the target needs at least {len(xs)} dims")
    for xd, td in zip(reversed(xs), reversed(shape)):
        if not _is_symbolic(xd) and not _is_symbolic(td) and xd not in (1, int(td)):
            show = lambda dims: "[" + ", ".join("?" if _is_symbolic(d) else str(d) for d in dims) + "]"
            raise ValueError(f"broadcast_to: shape {show(xs)} does not broadcast to {show(shape)} "
                             f"(dim {xd} vs {td}); only dims of size 1 can be expanded")
    return x + full(shape, False if str(x.dtype) == "bool" else 0, dtype=x.dtype)


@tensor_method("expand")
def _expand(self, *sizes):
    """``t.expand(2, -1, 4)``: broadcast_to where -1 keeps that dim, as in PyTorch."""
    shape = _sizes_arg(sizes)
    lead = len(shape) - self.ndim
    if lead < 0:
        raise ValueError(f"expand: {len(shape)} sizes given for a tensor of {self.ndim} dims; give at least "
                         f"{self.ndim}")
    own = self.shape
    for i, d in enumerate(shape):
        if not isinstance(d, Tensor) and d == -1 and i < lead:
            raise ValueError(f"expand: -1 is not allowed for a new leading dim (dim {i} of {list(shape)})")
    shape = [own[i - lead] if (not isinstance(d, Tensor) and d == -1) else d for i, d in enumerate(shape)]
    return broadcast_to(self, shape)


@tensor_method()
def expand_as(x, other):
    """``x`` broadcast to ``other``'s shape."""
    return broadcast_to(x, list(other.shape))


@grad_rule("broadcast_to")
def _broadcast_to_grad(ctx, g):
    return (unbroadcast(g, _shape(ctx.inputs[0])),)


shape_only("broadcast_to", 0)


@onnx_converter("broadcast_to")
def _broadcast_to_onnx(g, op):
    g.node("Expand", [op.inputs[0], g.const(i64(op.attrs["shape"]))], op.outputs)


# ------------------------------------------------------------------ concat, stack, split
def concat(tensors, dim=None, *, axis=None):
    """The tensors joined along existing dim ``dim`` (``torch.cat``; numpy's ``axis=`` too)."""
    tensors = _seq_args(_tensor_seq("concat", tensors))
    return apply("concat", *tensors, axis=int(_dim_arg("concat", dim, axis, 0)))


def _tensor_seq(op, tensors):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}: expects a list or tuple of tensors, got {type(tensors).__name__}")
    if not tensors:  # (a ShapeError is a ValueError; a program with an empty list raises it too)
        raise ShapeError(f"{op}: needs at least one tensor (expects a non-empty list of tensors)")
    return tensors


def _seq_args(items):
    """Python scalars and lists among concat/stack inputs become tensors (d2s dtype defaults)."""
    return [t if isinstance(t, Tensor) or hasattr(t, "dtype") else tensor(t) for t in items]


@grad_rule("concat")
def _concat_grad(ctx, g):
    axis = ctx.attrs.get("axis", 0)
    sizes = [_shape(x)[axis] for x in ctx.inputs]
    if len(sizes) == 1:
        parts = (g,)
    elif None in sizes:  # sizes known only when the program runs
        parts = apply("split_like", g, *[stop_gradient(x) for x in ctx.inputs], axis=axis)
    else:
        parts = split(g, sizes, axis=axis)
    return tuple(p if _is_diff(x) else None for p, x in zip(parts, ctx.inputs))


@onnx_converter("concat")
def _concat_onnx(g, op):
    g.node("Concat", promoted(g, op.inputs, g.dtype(op.outputs[0])), op.outputs, axis=int(op.attrs.get("axis", 0)))


@grad_rule("split_like")
def _split_like_grad(ctx, *gs):
    return (concat(list(gs), axis=ctx.attrs.get("axis", 0)),) + (None,) * (len(ctx.inputs) - 1)


onnx_unsupported("split_like", reason=_GRAD_OP)


def cat(tensors, dim=None, *, axis=None):
    """``concat`` under PyTorch's name: the tensors joined along existing dim ``dim``."""
    return concat(tensors, dim, axis=axis)


def concatenate(tensors, dim=None, *, axis=None):
    """``concat`` under numpy's name (``torch.concatenate``)."""
    return concat(tensors, dim, axis=axis)


def stack(tensors, dim=None, *, axis=None):
    """The tensors (of one shape) joined along a new dim ``dim``."""
    tensors = _seq_args(_tensor_seq("stack", tensors))
    return apply("stack", *tensors, axis=int(_dim_arg("stack", dim, axis, 0)))


@grad_rule("stack")
def _stack_grad(ctx, g):
    axis = ctx.attrs.get("axis", 0)
    n = len(ctx.inputs)
    parts = split(g, [1] * n, axis=axis) if n > 1 else (g,)
    return tuple(squeeze(p, axis) if _is_diff(x) else None for p, x in zip(parts, ctx.inputs))


@onnx_converter("stack")
def _stack_onnx(g, op):
    axis = int(op.attrs.get("axis", 0))
    ax = g.const(i64([axis]))
    parts = []
    for n in promoted(g, op.inputs, g.dtype(op.outputs[0])):
        t = g.tmp()
        g.node("Unsqueeze", [n, ax], [t])
        parts.append(t)
    g.node("Concat", parts, op.outputs, axis=axis)


@tensor_method()
def split(x, split_size_or_sections=None, dim=None, *, axis=None, split_size=None):
    """A tuple of pieces of ``x`` along ``dim`` (``torch.split``): an int gives pieces of that
    size (the last may be smaller), a list gives pieces of those sizes. ``split_size=`` is
    ``Tensor.split``'s name for it."""
    if split_size is not None:
        if split_size_or_sections is not None:
            raise TypeError("split: got both split_size_or_sections and split_size; pass one")
        split_size_or_sections = split_size
    if split_size_or_sections is None:
        raise TypeError("split: missing split_size_or_sections (an int or a list of sizes)")
    a = _dim_arg("split", dim, axis, 0)
    if isinstance(split_size_or_sections, Tensor) and split_size_or_sections.ndim == 0:
        split_size_or_sections = int(split_size_or_sections)
    if isinstance(split_size_or_sections, (int, np.integer)):
        n = int(split_size_or_sections)
        d = _known_dim("split", x, a)
        if n <= 0 and not (n == 0 and d == 0):
            raise ValueError(f"split: split_size must be positive, got {n}")
        sections = [n] * (d // n) + ([d % n] if d % n else []) if n else [0]
        if not sections:  # an empty dim: one empty piece, as PyTorch gives
            sections = [0]
    else:
        sections = [int(s_) for s_ in split_size_or_sections]
    return tuple(apply("split", x, sections=sections, axis=int(a)))


@grad_rule("split")
def _split_grad(ctx, *gs):
    return (concat(list(gs), axis=ctx.attrs.get("axis", 0)),)


@onnx_converter("split")
def _split_onnx(g, op):
    g.node("Split", [op.inputs[0], g.const(i64(op.attrs["sections"]))], op.outputs,
           axis=int(op.attrs.get("axis", 0)))


@tensor_method()
def chunk(x, chunks, dim=None, *, axis=None):
    """Split ``x`` into ``chunks`` pieces along ``dim`` (as ``torch.chunk``): pieces of
    ``ceil(size / chunks)``, the last one smaller; fewer pieces when the size runs out."""
    a = _dim_arg("chunk", dim, axis, 0)
    chunks = int(chunks)
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be a positive int, got {chunks}")
    d = _known_dim("chunk", x, a)
    if d == 0:  # PyTorch gives `chunks` empty pieces
        return split(x, [0] * chunks, a)
    size = -(-d // chunks)
    return split(x, size, a)


@tensor_method()
def unbind(x, dim=None, *, axis=None):
    """The slices of ``x`` along ``dim``, as a tuple of tensors with that dim removed (the
    inverse of ``stack``)."""
    return _unstack("unbind", x, _dim_arg("unbind", dim, axis, 0))


def unstack(x, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple of tensors with that dim removed (the
    inverse of ``stack``)."""
    return _unstack("unstack", x, axis)


def _unstack(op, x, axis):
    if not isinstance(x, Tensor):
        x = tensor(x)
    nd = x.ndim
    if not -nd <= axis < nd:
        raise IndexError(f"{op}: dim {axis} is out of range for a tensor of shape {tuple(x.shape)}")
    d = _known_dim(op, x, axis)
    if d == 0:
        return ()
    return tuple(squeeze(p, axis) for p in split(x, [1] * d, axis))


def _known_dim(what, x, axis):
    """The size of dim ``axis`` of ``x``; an error when it is known only when the program runs
    (the number of pieces must be a Python int)."""
    shape = _static_shape(x)
    if not -len(shape) <= axis < len(shape):
        raise IndexError(f"{what}: dim {axis} is out of range for a tensor of shape {tuple(shape)}")
    d = shape[axis]
    if d is None:
        raise ValueError(f"{what}: dim {axis} of this tensor is only known when the program runs, but the "
                         "number of pieces must be known when it is built; give the dim a fixed size "
                         "(InputSpec) or index the tensor in a loop instead")
    return int(d)


def add_n(inputs):
    """The element-wise sum of a list of tensors (as ``tf.add_n``), with NumPy broadcasting."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n: needs at least one tensor")
    if len(inputs) == 1:
        return identity(inputs[0])
    out = add(inputs[0], inputs[1])
    for t in inputs[2:]:
        out = add(out, t)
    return out


# ------------------------------------------------------------------ copies and stops
def identity(x):
    """A tensor equal to ``x`` (a copy: writing into it leaves ``x`` alone); gradients pass
    through unchanged."""
    return apply("identity", x)


@grad_rule("identity")
def _identity_grad(ctx, g):
    return (g,)


shape_only("identity", 0)


@onnx_converter("identity")
def _identity_onnx(g, op):
    g.node("Identity", op.inputs, op.outputs)


@tensor_method()
def clone(x):
    """A copy of ``x`` that keeps its autograd history, its values bit for bit (``x * 1``: ``x + 0``
    would turn -0.0 into 0.0) and its layout (an element-wise result is laid out as its input,
    as PyTorch's clone preserves strides: ``x.t().clone().reshape(-1)`` is a copy)."""
    x = x if isinstance(x, Tensor) else tensor(x)
    return apply("mul", x, 1) if x.dtype != "bool" else logical_or(x, False)


def stop_gradient(x):
    """``x``'s value with no gradient flowing back through it."""
    return apply("stop_gradient", x)


non_differentiable("stop_gradient", reason="it exists to stop gradients")
onnx_elementwise("stop_gradient", "Identity")


# detached_write(new, old): ``new``'s values with ``old``'s autograd history, ``old`` after a
# write through ``old.detach()`` or ``old.data`` in a program (autograd does not see it; d2s/views.py
# emits it, no wrapper)
@grad_rule("detached_write")
def _detached_write_grad(ctx, g):
    return (None, g)


shape_only("detached_write", 0, 1)


@onnx_converter("detached_write")
def _detached_write_onnx(g, op):
    g.node("Identity", op.inputs[:1], op.outputs)


def to_device(x, device):
    """``x`` copied to ``device`` ('cpu' or 'gpu'; 'cuda' means 'gpu')."""
    get_xp(device)  # a clear error when the device is unavailable
    return apply("to_device", x, device="gpu" if device == "cuda" else device)


@grad_rule("to_device")
def _to_device_grad(ctx, g):
    return (to_device(g, ctx.inputs[0].device),)


shape_only("to_device", 0)
onnx_elementwise("to_device", "Identity")


# ------------------------------------------------------------------ shape reads
def shape(x):
    """``x``'s shape as a 1-d int64 tensor; inside a program it is read when the program runs,
    so dynamic dims give their actual sizes."""
    return apply("shape", x)


non_differentiable("shape", reason="a shape is integers")


@onnx_converter("shape")
def _shape_onnx(g, op):
    g.node("Shape", op.inputs, op.outputs)


def numel(x):
    """The number of elements of ``x``: an int, or a 0-d int64 tensor when some dim is known
    only when the program runs."""
    if not isinstance(x, Tensor):
        return int(x.size) if hasattr(x, "shape") else int(np.size(x))
    return x.numel()


@tensor_method("nelement")
def _nelement(x):
    """The number of elements (``numel``)."""
    return x.numel()


@tensor_method("dim", "ndimension")
def _dim(x):
    """The number of dims (``x.ndim``)."""
    return x.ndim


# ------------------------------------------------------------------ pad
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "edge": "edge",
              "circular": "wrap", "wrap": "wrap"}


def pad(x, pad, mode="constant", value=0):
    """Pad ``x`` (as ``torch.nn.functional.pad`` or ``numpy.pad``).

    Args:
        x: the tensor.
        pad: either a flat sequence ``(left, right, top, bottom, ...)`` starting from the last
            dim (PyTorch's order), or a sequence of ``(before, after)`` pairs, one per dim from
            the first (NumPy's and TensorFlow's order).
        mode: "constant", "reflect", "replicate" (also "edge") or "circular" (also "wrap").
        value: the fill of "constant" mode.

    Returns:
        The padded tensor, of ``x``'s dtype.
    """
    if not isinstance(x, Tensor):
        x = tensor(x)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: unknown mode {mode!r}; use one of {', '.join(_PAD_MODES)}")
    nd = x.ndim
    pad = list(pad)
    if pad and builtins.all(isinstance(p, (list, tuple)) for p in pad):
        if len(pad) != nd or builtins.any(len(p) != 2 for p in pad):
            raise ValueError(f"pad: {len(pad)} (before, after) pairs given for a tensor of {nd} dims; "
                             "give one pair per dim")
        pads = [[int(b), int(e)] for b, e in pad]
    else:
        if builtins.any(isinstance(p, (list, tuple)) for p in pad):
            raise ValueError("pad: give either a flat list (left, right, top, bottom, ...) or one "
                             "(before, after) pair per dim, not a mix")
        if len(pad) % 2 or len(pad) // 2 > nd:
            raise ValueError(f"pad: a flat pad needs an even number of entries, at most 2 per dim "
                             f"({2 * nd} for this {nd}-d tensor), got {len(pad)}")
        pads = [[0, 0] for _ in range(nd)]
        for k in range(len(pad) // 2):
            pads[nd - 1 - k] = [int(pad[2 * k]), int(pad[2 * k + 1])]
    value = value.item() if isinstance(value, Tensor) else value
    if builtins.any(b < 0 or e < 0 for b, e in pads):
        # negative pads crop, before the other pads apply (to the cropped tensor), as in PyTorch
        shape = x.shape
        for a, (b, e) in enumerate(pads):
            d = shape[a]
            if isinstance(d, int) and d - max(-b, 0) - max(-e, 0) < 0:
                raise ShapeError(f"pad: padding {[b, e]} crops more than dim {a} of size {d} holds")
        x = x[tuple(slice(max(-b, 0), e if e < 0 else None) for b, e in pads)]
        pads = [[max(b, 0), max(e, 0)] for b, e in pads]
    return apply("pad", x, pads=pads, mode=_PAD_MODES[mode], value=value)


@grad_rule("pad")
def _pad_grad(ctx, g):
    return (apply("pad_grad", g, pads=ctx.attrs["pads"], mode=ctx.attrs.get("mode", "constant")),)


@grad_rule("pad_grad")
def _pad_grad_grad(ctx, g):
    # pad_grad is linear in its input and the transpose of pad, so its own gradient is pad
    # (with zeros as the fill: the constant does not depend on the input)
    return (apply("pad", g, pads=ctx.attrs["pads"], mode=ctx.attrs.get("mode", "constant"), value=0),)


shape_only("pad_grad", 0)
onnx_unsupported("pad_grad", reason=_GRAD_OP)
_ONNX_PAD_MODE = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


@onnx_converter("pad")
def _pad_onnx(g, op):
    pads = op.attrs["pads"]
    mode = op.attrs.get("mode", "constant")
    ins = [op.inputs[0], g.const(i64([b for b, _ in pads] + [e for _, e in pads]))]
    if mode == "constant":
        ins.append(g.const(np.asarray(op.attrs.get("value", 0), dtype=g.dtype(op.inputs[0]))))
    g.node("Pad", ins, op.outputs, mode=_ONNX_PAD_MODE[mode])

