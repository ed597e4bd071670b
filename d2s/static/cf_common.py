"""The vocabulary the control-flow builders share (``conditionals``, ``while_loops``,
``scans``, ``switches``): their error, pytrees of tensors, types, the builder they append to,
sub-blocks traced from functions, captures merged into block inputs, and the autograd node of
a structured op (its gradient rule is keyed by the op's name, as any op's)."""
import numpy as np

from d2s_runtime.device import to_host
from d2s_runtime.ops import TensorType

from .. import ops as d, pytree
from .._state import STATE
from ..autograd.node import record
from ..tensor import Tensor
from ..user_errors import at_user_line


_MAX_WIDEN = 32  # rebuilds of a loop body before giving up on a fixed point of its types


class ControlFlowError(TypeError):
    """Branches or loop bodies whose outputs do not fit together (structure, dtype, rank)."""


def tree_flatten(obj):
    """(tensor leaves, treedef) of a pytree (see ``d2s.pytree``): other values stay in the
    treedef as constants, so two trees match only when those values are equal too."""
    return pytree.tree_flatten(obj, leaf_types=Tensor)


def _is_symbolic(x):
    return isinstance(x, Tensor) and x.is_symbolic


def _type_of(t):
    if t.is_symbolic:
        return t._var.type
    return TensorType(t.array.shape, t.array.dtype.name)


def _widen(a, b):
    """The least type holding both ``a`` and ``b`` (dims that differ become unknown)."""
    return TensorType([x if x == y else None for x, y in zip(a.shape, b.shape)], a.dtype)


def _compatible(a, b):
    return a.dtype == b.dtype and a.ndim == b.ndim


def _builder():
    b = STATE.builder
    if b is None:
        raise RuntimeError("a symbolic tensor was used outside the program it belongs to")
    return b


def _sym(b, x):
    """The symbolic tensor in program ``b`` standing for op input ``x`` (for autograd edges)."""
    if x.is_symbolic:
        return x
    if b.reads_as_param(x):
        return b.param(x)
    return b.symbolic(b.program.block.lookup(b.constant(to_host(x.array))))


class _CFOp:
    """What ``autograd.node.record`` needs of an op: its name (the gradient rule's key)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def _record(name, op, inputs, outputs, **extra):
    """Attach an autograd node for control-flow op ``op`` when some input requires grad."""
    # In a forward-only build (to_static) nothing the caller passes requires grad, so an input
    # that does was made to inside the function (d2s.func.grad, d2s.grad): record it then too
    if not STATE.grad_enabled or not any(t.requires_grad for t in inputs):
        return
    record(_CFOp(name), tuple(inputs), {"op": op, **extra}, tuple(outputs))


def _lay_out(b, tensors, lays):
    """Record the memory layouts ``lays`` (d2s/layouts.py) of symbolic ``tensors`` (a loop's
    carried values) in builder ``b``."""
    from .. import layouts  # (layouts learns from kernels through d2s.views, which imports static)
    for t, lay in zip(tensors, lays):
        if lay is not None and isinstance(t, Tensor) and t.is_symbolic and not layouts.is_row_major(lay):
            b.layouts[t._var.name] = lay


def _trace_block(b, fn, in_types, convert_outputs=None):
    """Build ``fn`` into a fresh sub-block whose inputs have ``in_types``.

    Returns (block, output treedef, output leaves as names in the block, their types,
    captures {outer name: inner name})."""
    with b.sub_block() as blk:
        args = []
        for t in in_types:
            v = b._new_var(t)
            blk.inputs.append(v.name)
            args.append(b.symbolic(v))
        out = fn(args)
        if convert_outputs is not None:
            out = convert_outputs(out)
        leaves, treedef = tree_flatten(out)
        names = [b.var_of(t) for t in leaves]
        blk.outputs = names
        types = [blk.lookup(n).type for n in names]
    b.block_leaves[blk] = leaves
    return blk, treedef, names, types


def _merge_captures(b, blocks, n_explicit):
    """Give every block the same inputs: the explicit ones, then the union of all captures.

    Returns the outer names of the captures (in the current block) and their tensors."""
    # first-seen order, without a quadratic membership scan (programs may capture hundreds)
    order = list(dict.fromkeys(name for blk in blocks for name in b.captures.get(blk, {})))
    tensors = []
    for name in order:
        src = None
        for blk in blocks:
            found = b.capture_tensors.get(blk, {}).get(name)
            src = found if found is not None else src
        tensors.append(src)
    for blk in blocks:
        caps = b.captures.setdefault(blk, {})
        explicit = blk.inputs[:n_explicit]
        inner = []
        for name in order:
            if name not in caps:  # captured by another block only: an unused input here
                v = b._new_var(b.defined_in_var(name).type, blk)
                caps[name] = v.name
            inner.append(caps[name])
        blk.inputs = explicit + inner
    outer = [b.resolve(name, tensor=t) for name, t in zip(order, tensors)]
    tensors = [t if t is not None else b.symbolic(b.block.lookup(n)) for t, n in zip(tensors, outer)]
    return outer, tensors


def _new_outputs(b, types):
    vs = [b._new_var(t) for t in types]
    return vs, [b.symbolic(v) for v in vs]


def _alias_error(message):
    return at_user_line(message)


def _as_pred(pred, what):
    t = pred._var.type
    if any(s != 1 for s in t.shape):
        raise ControlFlowError(f"{what}: the predicate must be a scalar (one element), got a tensor of type {t}")
    if t.ndim:
        pred = d.reshape(pred, [])
    if t.dtype != "bool":
        pred = d.ne(pred, 0)
    return pred


_INT_DTYPES = ("int32", "int64")


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _index_dtype(what, *bounds):
    """The dtype of a loop index or switch index: that of the integer tensors among
    ``bounds`` (int64 when all are Python ints)."""
    from d2s_runtime.dtypes import result_type
    dts = []
    for v in bounds:
        if isinstance(v, Tensor):
            if str(v.dtype) not in _INT_DTYPES:
                raise ControlFlowError(f"{what}: bounds and indices must be integers, got a {v.dtype} tensor")
            if v.ndim != 0:
                raise ControlFlowError(f"{what}: bounds and indices must be scalars, got shape {list(v.shape)}")
            dts.append(str(v.dtype))
        elif isinstance(v, np.ndarray) or isinstance(v, np.generic):
            if np.asarray(v).dtype.kind not in "iu" or np.ndim(v) != 0:
                raise ControlFlowError(f"{what}: bounds and indices must be integer scalars, got {v!r}")
            dts.append("int64" if np.asarray(v).dtype.itemsize > 4 else "int32")
        elif not _is_int(v):
            raise ControlFlowError(f"{what}: bounds and indices must be integers, got {type(v).__name__} {v!r}")
    return result_type(*dts) if dts else "int64"
