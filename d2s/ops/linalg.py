"""Linear algebra (runtime: ``d2s_runtime/ops/linalg.py``): matmul and its PyTorch relatives
(mm, bmm, mv, dot, inner, outer, the add*mm family), einsum, diagonals and triangles, trace,
cross and kron, each with its gradient rule and ONNX converter beside its public wrapper."""
import itertools

import numpy as np

from d2s_runtime.ops.linalg import parse_equation

from ..autograd.registry import grad_rule, shape_only
from ..dispatch import apply
from ..onnx.registry import elementwise as onnx_elementwise, i64, onnx_converter, promoted
from ..tensor import Tensor, tensor, tensor_method
from .creation import zeros_like
from .elementwise import _dtype_of, mul
from .shape import reshape, stack, transpose, unsqueeze
from .reduce import _vector_norm
from .indexing import index_select
from ._util import _as_tensor, _is_diff, _shape, _static_shape, unbroadcast


@tensor_method()
def matmul(input, other):
    """Matrix product ``input @ other`` with PyTorch's rules (1-d operands, batched leading dims
    broadcast)."""
    return apply("matmul", input, other)


@grad_rule("matmul")
def _matmul_grad(ctx, g):
    a, b = ctx.inputs
    sa, sb = _shape(a), _shape(b)
    ga = gb = None
    if len(sa) == 1 and len(sb) == 1:
        return (g * b if _is_diff(a) else None, g * a if _is_diff(b) else None)
    if len(sa) == 1:  # (k) @ (..., k, n) -> (..., n)
        if _is_diff(a):
            ga = unbroadcast(matmul(unsqueeze(g, -2), transpose(b, -1, -2)), (1,) + tuple(sa))
            ga = reshape(ga, list(sa))
        if _is_diff(b):
            gb = unbroadcast(unsqueeze(a, -1) * unsqueeze(g, -2), sb)
        return ga, gb
    if len(sb) == 1:  # (..., m, k) @ (k) -> (..., m)
        if _is_diff(a):
            ga = unbroadcast(unsqueeze(g, -1) * b, sa)
        if _is_diff(b):
            gb = reshape(unbroadcast(matmul(transpose(a, -1, -2), unsqueeze(g, -1)), tuple(sb) + (1,)), list(sb))
        return ga, gb
    if len(sb) == 2 and len(sa) > 2 and _flat_ok(sa) and _flat_ok(_shape(g)):
        # (..., m, k) @ (k, n): every leading dim is rows of one product, so both gradients
        # are single 2-d products (as PyTorch's linear computes them): the weight's one
        # product as deep as all rows, not one thin product per leading index and a sum
        rows_g = reshape(g, [-1, sb[-1]])
        if _is_diff(a):
            ga = reshape(matmul(rows_g, transpose(b, -1, -2)), [-1 if d is None else d for d in sa])
        if _is_diff(b):
            gb = matmul(transpose(reshape(a, [-1, sa[-1]]), -1, -2), rows_g)
        return ga, gb
    if _is_diff(a):
        ga = unbroadcast(matmul(g, transpose(b, -1, -2)), sa)
    if _is_diff(b):
        gb = unbroadcast(matmul(transpose(a, -1, -2), g), sb)
    return ga, gb


def _flat_ok(shape):
    """Whether a (..., m, k) value of static ``shape`` reshapes to (-1, k) and back: its last
    dim known, at most one dim not."""
    return shape[-1] is not None and sum(d is None for d in shape) <= 1


onnx_elementwise("matmul", "MatMul")


# ------------------------------------------------------------------ PyTorch's fixed-rank products
def _ndim(v):
    return len(_shape(v))


def _need(op, *checks):
    """Raise PyTorch's error where an operand has the wrong number of dims."""
    for what, v, nd in checks:
        if _ndim(v) != nd:
            raise ValueError(f"{op}: {what} must be a {nd}-d tensor ({('vector', 'matrix', 'batch of matrices')[nd - 1]}), "
                             f"got shape {tuple(_shape(v))}")


@tensor_method()
def mm(input, mat2):
    """The matrix product of two 2-d tensors."""
    _need("mm", ("input", input, 2), ("mat2", mat2, 2))
    return matmul(input, mat2)


@tensor_method()
def bmm(input, mat2):
    """Batched matrix products of two 3-d tensors with the same batch size (no broadcasting)."""
    _need("bmm", ("input", input, 3), ("mat2", mat2, 3))
    b1, b2 = _shape(input)[0], _shape(mat2)[0]
    if b1 is not None and b2 is not None and b1 != b2:
        raise ValueError(f"bmm: batch sizes differ ({b1} and {b2}); bmm does not broadcast (matmul does)")
    return matmul(input, mat2)


@tensor_method()
def mv(input, vec):
    """The product of a 2-d tensor and a 1-d one."""
    _need("mv", ("input", input, 2), ("vec", vec, 1))
    return matmul(input, vec)


@tensor_method()
def dot(input, other):
    """The dot product of two 1-d tensors of one dtype (a 0-d tensor)."""
    _need("dot", ("input", input, 1), ("other", other, 1))
    if _dtype_of(input) != _dtype_of(other):
        raise TypeError(f"dot: expected both vectors to have the same dtype, got {_dtype_of(input)} and "
                        f"{_dtype_of(other)}")
    return matmul(input, other)


vdot = dot


@tensor_method()
def inner(input, other):
    """Sum over the last dims of both: shape ``input.shape[:-1] + other.shape[:-1]`` (a product
    when either is 0-d)."""
    na, nb = _ndim(input), _ndim(other)
    if na == 0 or nb == 0:
        return input * other
    free = _letters(na + nb - 2, avoid="z")
    la, lb = free[:na - 1], free[na - 1:]
    return einsum(f"{la}z,{lb}z->{la}{lb}", input, other)


@tensor_method("outer", "ger")
def outer(input, vec2):
    """The outer product of two 1-d tensors (``input[i] * vec2[j]``)."""
    _need("outer", ("input", input, 1), ("vec2", vec2, 1))
    return mul(unsqueeze(input, 1), unsqueeze(vec2, 0))


ger = outer


def _add_scaled(op, input, prod, beta, alpha):
    """``beta * input + alpha * prod``; with beta 0 the input is not read (NaN in it does not
    show), as in PyTorch, but its shape must still broadcast to the product's."""
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        # prod's values, broadcast with input's shape; input gets a zero gradient, as PyTorch's
        return apply("where", False, input, prod)
    return (input if beta == 1 else input * beta) + prod


@tensor_method()
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` for 2-d ``mat1``, ``mat2``."""
    return _add_scaled("addmm", input, mm(mat1, mat2), beta, alpha)


@tensor_method()
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)`` for 2-d ``mat`` and 1-d ``vec``."""
    return _add_scaled("addmv", input, mv(mat, vec), beta, alpha)


@tensor_method()
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    return _add_scaled("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@tensor_method()
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]`` (one matrix)."""
    _need("addbmm", ("batch1", batch1, 3), ("batch2", batch2, 3))
    return _add_scaled("addbmm", input, einsum("bij,bjk->ik", batch1, batch2), beta, alpha)


@tensor_method()
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    return _add_scaled("addr", input, outer(vec1, vec2), beta, alpha)


# ------------------------------------------------------------------ einsum
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _letters(n, avoid=""):
    free = [c for c in _ALPHABET if c not in avoid]
    if n > len(free):
        raise ValueError(f"einsum: {n} dims need more subscript letters than there are")
    return "".join(free[:n])


def _einsum_canonical(equation, ranks):
    """PyTorch's einsum forms (spaces, ``...``, an implicit output) as ``(input subscripts,
    output subscripts)`` of explicit letters, one per dim (repeated letters still repeated)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(ranks):
        raise ValueError(f"einsum: {equation!r} names {len(subs)} operands, got {len(ranks)}")
    used = set(c for c in eq if c.isalpha())
    bad = set(eq) - set(_ALPHABET) - set(",->.")
    if bad or any(s.replace("...", "").count(".") for s in subs + [rhs]):
        raise ValueError(f"einsum: {equation!r} has characters other than letters, ',', '->' and '...'")
    ell_dims = 0
    for s, r in zip(subs, ranks):
        if "..." in s:
            ell_dims = max(ell_dims, r - (len(s) - 3))
    ell = _letters(ell_dims, avoid=used)
    out_subs = []
    for s, r in zip(subs, ranks):
        if "..." in s:
            k = r - (len(s) - 3)
            if k < 0:
                raise ValueError(f"einsum: operand subscripts {s!r} name more dims than its {r}")
            s = s.replace("...", ell[ell_dims - k:])
        if len(s) != r:
            raise ValueError(f"einsum: operand subscripts {s!r} of {equation!r} name {len(s)} dims, the operand has {r}")
        out_subs.append(s)
    if arrow:
        out = rhs.replace("...", ell)  # without "...", PyTorch sums the ellipsis dims away
    else:
        counts = {}
        for c in "".join(out_subs):
            counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    if len(set(out)) != len(out):
        raise ValueError(f"einsum: output subscripts {out!r} repeat a letter")
    missing = set(out) - set("".join(out_subs))
    if missing:
        raise ValueError(f"einsum: output subscripts {sorted(missing)} of {equation!r} appear in no operand")
    return out_subs, out


@tensor_method()
def einsum(equation, *operands):
    """Einstein summation with PyTorch's equation forms: ``"ij,jk->ik"``, an implicit output
    (``"ij,jk"``: the letters seen once, in alphabetical order), ``...`` for broadcast leading
    dims, and repeated letters in an operand (its diagonal: ``"ii->i"``). Operands may also be
    given as one list. Contracts as batched matrix products."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if isinstance(equation, Tensor):  # the method form x.einsum(...) is not PyTorch's
        raise TypeError("einsum: the first argument is the equation string (d2s.einsum('ij->ji', x))")
    subs, out = _einsum_canonical(equation, [_ndim(x) for x in operands])
    operands = list(operands)
    for k, (x, s) in enumerate(zip(operands, subs)):
        # a repeated letter: that diagonal, moved to the end
        while len(set(s)) != len(s):
            c = next(c for c in s if s.count(c) > 1)
            i = s.index(c)
            j = s.index(c, i + 1)
            x = diagonal(x, 0, i, j)
            s = s[:i] + s[i + 1:j] + s[j + 1:] + c
        # letters no other operand and not the output name: summed here
        others = out + "".join(t for m, t in enumerate(subs) if m != k)
        alone = [i for i, c in enumerate(s) if c not in others]
        if alone:
            x = apply("reduce_sum", x, axes=alone, keepdims=False)
            s = "".join(c for c in s if c in others)
        operands[k], subs[k] = x, s
    return apply("einsum", *operands, equation=",".join(subs) + "->" + out)


@grad_rule("einsum")
def _einsum_grad(ctx, g):
    # each operand's gradient is the einsum of the output's gradient with the other operands
    # (every letter of a canonical operand is in the output or another operand), summed down
    # where the operand had a size-1 dim that broadcast
    ins, out = parse_equation(ctx.attrs["equation"])
    xs = ctx.inputs
    grads = []
    for k, x in enumerate(xs):
        if not _is_diff(x):
            grads.append(None)
            continue
        rest = [(s, v) for m, (s, v) in enumerate(zip(ins, xs)) if m != k]
        eq = ",".join([out] + [s for s, _ in rest]) + "->" + ins[k]
        gk = apply("einsum", g, *[v for _, v in rest], equation=eq)
        if any(a == 1 and b != 1 for a, b in zip(_shape(gk), _shape(x))):
            # a letter only size-1 operands have besides x (x's own size broadcast them): every
            # element of x along it gets the same gradient
            gk = gk + zeros_like(x)
        grads.append(unbroadcast(gk, _shape(x)))
    return tuple(grads)


@onnx_converter("einsum")
def _einsum_onnx(g, op):
    dt = g.dtype(op.outputs[0])
    if dt == "bool":
        raise g.unsupported(op, "einsum of bool tensors")
    g.node("Einsum", promoted(g, op.inputs, dt), op.outputs, equation=op.attrs["equation"])




# ------------------------------------------------------------------ diagonals
@tensor_method()
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal ``offset`` (above the main one when positive) of the matrices over dims
    ``dim1`` and ``dim2``, as the last dim."""
    return apply("diagonal", input, offset=int(offset), dim1=int(dim1), dim2=int(dim2))


@grad_rule("diagonal")
def _diagonal_grad(ctx, g):
    x = ctx.inputs[0]
    return (apply("diagonal_scatter", zeros_like(x), g, **ctx.attrs),)


shape_only("diagonal", 0)


def _band_onnx(g, offset, like_shape):
    """A bool matrix true on diagonal ``offset``: the difference of two Trilu
    masks of ones (sizes read from ``like_shape``, an int64 shape tensor, at run time)."""
    two = g.tmp()
    g.node("Slice", [like_shape, g.const(i64([-2])), g.const(i64([2 ** 62])), g.const(i64([0]))], [two])
    ones = g.tmp()
    g.node("ConstantOfShape", [two], [ones], value=g.x.numpy_helper.from_array(i64([1])))
    upper, above, band, out = g.tmp(), g.tmp(), g.tmp(), g.tmp()
    g.node("Trilu", [ones, g.const(i64(offset))], [upper], upper=1)
    g.node("Trilu", [ones, g.const(i64(offset + 1))], [above], upper=1)
    g.node("Sub", [upper, above], [band])
    g.node("Cast", [band], [out], to=g.onnx_dtype("bool"))
    return out


@onnx_converter("diagonal")
def _diagonal_onnx(g, op):
    # ONNX has no diagonal: zero all but the diagonal, sum it out, keep its length
    x, dt = op.inputs[0], g.dtype(op.inputs[0])
    nd = len(g.shape(x))
    offset = op.attrs.get("offset", 0)
    d1, d2 = op.attrs.get("dim1", 0) % nd, op.attrs.get("dim2", 1) % nd
    work = "int32" if dt == "bool" else dt  # Where and ReduceSum take no bools
    y = g.tmp()
    g.node("Transpose", [g.cast(x, work)], [y], perm=[i for i in range(nd) if i not in (d1, d2)] + [d1, d2])
    shape = g.tmp()
    g.node("Shape", [y], [shape])
    masked, summed = g.tmp(), g.tmp()
    g.node("Where", [_band_onnx(g, offset, shape), y, g.const(np.zeros((), work))], [masked])
    g.node("ReduceSum", [masked, g.const(i64([-1 if offset >= 0 else -2]))], [summed], keepdims=0)
    n, m = g.tmp(), g.tmp()
    g.node("Gather", [shape, g.const(i64(-2))], [n])
    g.node("Gather", [shape, g.const(i64(-1))], [m])
    # length max(0, min(n, m - offset)) (offset >= 0) or max(0, min(n + offset, m))
    a, b, length, lo = g.tmp(), g.tmp(), g.tmp(), g.tmp()
    if offset >= 0:
        g.node("Identity", [n], [a])
        g.node("Sub", [m, g.const(i64(offset))], [b])
    else:
        g.node("Add", [n, g.const(i64(offset))], [a])
        g.node("Identity", [m], [b])
    g.node("Min", [a, b], [length])
    g.node("Max", [length, g.const(i64(0))], [lo])
    end, out = g.tmp(), g.tmp()
    g.node("Unsqueeze", [lo, g.const(i64([0]))], [end])
    g.node("Slice", [summed, g.const(i64([0])), end, g.const(i64([-1]))], [out])
    if work != dt:
        g.node("Cast", [out], op.outputs, to=g.onnx_dtype(dt))
    else:
        g.node("Identity", [out], op.outputs)


@tensor_method()
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` whose diagonal (as :func:`diagonal` takes it) holds ``src``."""
    return apply("diagonal_scatter", input, src, offset=int(offset), dim1=int(dim1), dim2=int(dim2))


@grad_rule("diagonal_scatter")
def _diagonal_scatter_grad(ctx, g):
    x, src = ctx.inputs
    gx = apply("diagonal_scatter", g, zeros_like(src), **ctx.attrs) if _is_diff(x) else None
    gs = apply("diagonal", g, **ctx.attrs) if _is_diff(src) else None
    return gx, gs


shape_only("diagonal_scatter", 0, 1)


@onnx_converter("diagonal_scatter")
def _diagonal_scatter_onnx(g, op):
    # src padded to the matrices' rows (or columns), spread along the other dim, and taken on the band
    x, src = op.inputs
    dt = g.dtype(op.outputs[0])
    nd = len(g.shape(x))
    offset = op.attrs.get("offset", 0)
    d1, d2 = op.attrs.get("dim1", 0) % nd, op.attrs.get("dim2", 1) % nd
    work = "int32" if dt == "bool" else dt
    perm = [i for i in range(nd) if i not in (d1, d2)] + [d1, d2]
    y, shape, sshape, full, length, amount, pads, padded, spread, picked = (g.tmp() for _ in range(10))
    g.node("Transpose", [g.cast(x, work)], [y], perm=perm)
    g.node("Shape", [y], [shape])
    g.node("Gather", [shape, g.const(i64([-2 if offset >= 0 else -1]))], [full])
    g.node("Shape", [src], [sshape])
    g.node("Gather", [sshape, g.const(i64([-1]))], [length])
    g.node("Sub", [full, length], [amount])
    g.node("Concat", [g.const(i64([0] * (2 * (nd - 1) - 1))), amount], [pads], axis=0)
    g.node("Pad", [g.cast(src, work), pads], [padded])
    g.node("Unsqueeze", [padded, g.const(i64([-1 if offset >= 0 else -2]))], [spread])
    g.node("Where", [_band_onnx(g, offset, shape), spread, y], [picked])
    inverse = [perm.index(i) for i in range(nd)]
    out = g.tmp()
    g.node("Transpose", [picked], [out], perm=inverse)
    if work != dt:
        g.node("Cast", [out], op.outputs, to=g.onnx_dtype(dt))
    else:
        g.node("Identity", [out], op.outputs)


@tensor_method()
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices (over output dims ``dim1``, ``dim2``) that are zero but for diagonal ``offset``,
    which holds ``input``'s last dim."""
    return apply("diag_embed", input, offset=int(offset), dim1=int(dim1), dim2=int(dim2))


@grad_rule("diag_embed")
def _diag_embed_grad(ctx, g):
    return (apply("diagonal", g, **ctx.attrs),)


shape_only("diag_embed", 0)


@onnx_converter("diag_embed")
def _diag_embed_onnx(g, op):
    # x padded to the matrices' size N, spread along rows (or columns) and kept on the band
    x, dt = op.inputs[0], g.dtype(op.inputs[0])
    nd = len(g.shape(x)) + 1
    offset = op.attrs.get("offset", 0)
    d1, d2 = op.attrs.get("dim1", -2) % nd, op.attrs.get("dim2", -1) % nd
    work = "int32" if dt == "bool" else dt
    padded, size, sizes, spread, masked = g.tmp(), g.tmp(), g.tmp(), g.tmp(), g.tmp()
    pads = [0] * (nd - 1) * 2
    pads[2 * (nd - 1) - 1] = abs(offset)
    g.node("Pad", [g.cast(x, work), g.const(i64(pads))], [padded])
    shape = g.tmp()
    g.node("Shape", [padded], [shape])
    g.node("Slice", [shape, g.const(i64([-1])), g.const(i64([2 ** 62])), g.const(i64([0]))], [size])
    g.node("Concat", [size, size], [sizes], axis=0)
    g.node("Unsqueeze", [padded, g.const(i64([-1 if offset >= 0 else -2]))], [spread])
    g.node("Where", [_band_onnx(g, offset, sizes), spread, g.const(np.zeros((), work))], [masked])
    rest = iter(range(nd - 2))
    perm = [nd - 2 if p == d1 else nd - 1 if p == d2 else next(rest) for p in range(nd)]
    out = g.tmp()
    g.node("Transpose", [masked], [out], perm=perm)
    if work != dt:
        g.node("Cast", [out], op.outputs, to=g.onnx_dtype(dt))
    else:
        g.node("Identity", [out], op.outputs)


@tensor_method()
def diag(input, diagonal=0):
    """A 1-d tensor as the diagonal ``diagonal`` of a square matrix; the diagonal ``diagonal``
    of a 2-d tensor."""
    nd = _ndim(input)
    if nd == 1:
        return diag_embed(input, diagonal, 0, 1)
    if nd == 2:
        return apply("diagonal", input, offset=int(diagonal), dim1=0, dim2=1)
    raise ValueError(f"diag: needs a 1-d or 2-d tensor, got shape {tuple(_shape(input))}")


@tensor_method()
def trace(input):
    """The sum of the main diagonal of a 2-d tensor."""
    _need("trace", ("input", input, 2))
    return apply("reduce_sum", diagonal(input), axes=None, keepdims=False)


# ------------------------------------------------------------------ triangles
@tensor_method()
def tril(input, diagonal=0):
    """The lower triangle of the matrices over the last two dims (on and below diagonal
    ``diagonal``); zeros above."""
    return apply("tril", input, diagonal=int(diagonal))


@tensor_method()
def triu(input, diagonal=0):
    """The upper triangle of the matrices over the last two dims (on and above diagonal
    ``diagonal``); zeros below."""
    return apply("triu", input, diagonal=int(diagonal))


@grad_rule("tril", "triu")
def _triangle_grad(ctx, g):
    return (apply(ctx.op, g, **ctx.attrs),)


shape_only("tril", 0)
shape_only("triu", 0)


@onnx_converter("tril", "triu")
def _triangle_onnx(g, op):
    x, dt = op.inputs[0], g.dtype(op.inputs[0])
    k = g.const(i64(op.attrs.get("diagonal", 0)))
    upper = int(op.type == "triu")
    if dt in ("int32", "bool"):  # onnxruntime's Trilu takes float, double and int64
        c, t = g.cast(x, "int64"), g.tmp()
        g.node("Trilu", [c, k], [t], upper=upper)
        g.node("Cast", [t], op.outputs, to=g.onnx_dtype(dt))
        return
    g.node("Trilu", [x, k], op.outputs, upper=upper)




# ------------------------------------------------------------------ cross, kron
@tensor_method()
def cross(input, other, dim=None):
    """The cross product of 3-vectors along ``dim`` (None: the first dim of size 3, as
    PyTorch's ``torch.cross``; ``linalg.cross`` uses -1); operands broadcast."""
    sa, sb = _shape(input), _shape(other)
    nd = max(len(sa), len(sb))
    if dim is None:
        full = [a if a != 1 else b for a, b in itertools.zip_longest(sa[::-1], sb[::-1], fillvalue=1)][::-1]
        dim = next((i for i, d in enumerate(full) if d == 3), None)
        if dim is None:
            raise ValueError(f"cross: no dim of size 3 in shapes {tuple(sa)} and {tuple(sb)}")
    dim = dim % nd

    def part(v, k):
        nv = len(_shape(v))
        idx = (slice(None),) * (dim - (nd - nv)) + (k,)
        return v[idx]

    a0, a1, a2 = (part(input, k) for k in range(3))
    b0, b1, b2 = (part(other, k) for k in range(3))
    return stack([_fms(a1, b2, a2, b1), _fms(a2, b0, a0, b2), _fms(a0, b1, a1, b0)], dim)


def _fms(p, q, r, s):
    """``p * q - r * s`` as PyTorch's cross kernel computes it (its compiler contracts it into
    ``fma(p, q, -(r * s))``): for float32 and narrower, ``p * q`` exact in float64 less the
    rounded ``r * s``, rounded once (``r * s`` plain: an ulp off in a quarter of the elements).
    Wider floats take the plain form (NumPy has no fused multiply-add)."""
    rs = r * s
    dt = str(rs.dtype)
    if dt not in ("float32", "float16", "bfloat16"):
        return p * q - rs
    return (p.to("float64") * q.to("float64") - rs.to("float64")).to(dt)


@tensor_method()
def kron(input, other):
    """The Kronecker product: every element of ``input`` times the whole of ``other``, in blocks
    (shape ``input.shape * other.shape``, the shorter shape padded with leading 1s)."""
    sa, sb = list(_shape(input)), list(_shape(other))
    nd = max(len(sa), len(sb))
    a = reshape(input, [1] * (nd - len(sa)) + sa) if len(sa) < nd else input
    b = reshape(other, [1] * (nd - len(sb)) + sb) if len(sb) < nd else other
    sa, sb = [1] * (nd - len(sa)) + sa, [1] * (nd - len(sb)) + sb
    if None in sa or None in sb:
        raise ValueError("kron: the operands' shapes must be known when the program is built")
    a = reshape(a, [d for da in sa for d in (da, 1)])
    b = reshape(b, [d for db in sb for d in (1, db)])
    return reshape(a * b, [da * db for da, db in zip(sa, sb)])


@tensor_method()
def tensordot(a, b, dims=2):
    """Sum of products over ``dims`` (an int: the last ``dims`` of a with the first of b; or two
    lists of dims)."""
    na, nb = _ndim(a), _ndim(b)
    if isinstance(dims, int):
        da, db = list(range(na - dims, na)), list(range(dims))
    else:
        da, db = ([dims[0]] if isinstance(dims[0], int) else list(dims[0]),
                  [dims[1]] if isinstance(dims[1], int) else list(dims[1]))
    letters = _letters(na + nb)
    sa, sb = list(letters[:na]), list(letters[na:])
    for i, j in zip(da, db):
        sb[j % nb] = sa[i % na]
    out = [c for c in sa if c not in sb] + [c for c in sb if c not in sa]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


# ------------------------------------------------------------------ distances
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The ``p``-norm distance between each row of ``x1`` (..., P, M) and each row of ``x2``
    (..., R, M): a (..., P, R) tensor, as ``torch.cdist`` (batch dims broadcast). Computed from
    the differences themselves for every ``p`` (PyTorch may use a matrix product for p = 2 on
    large inputs, which rounds differently), with a zero gradient where a distance is 0."""
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"cdist: compute_mode {compute_mode!r} is not one of PyTorch's")
    a, b = _as_tensor(x1), _as_tensor(x2)
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"cdist: x1 and x2 must have at least 2 dims (rows of points), got {a.ndim} and {b.ndim}")
    if float(p) < 0:
        raise ValueError(f"cdist: p must be non-negative, got {p}")
    diff = unsqueeze(a, -2) - unsqueeze(b, -3)  # (..., P, R, M)
    return _vector_norm("cdist", diff, float(p), [-1], False)


def pdist(input, p=2.0):
    """The ``p``-norm distance between every pair of rows ``i < j`` of (N, M) ``input``, in
    row-major order of the pairs (N * (N - 1) / 2 of them), as ``torch.pdist``: computed from the
    differences, with a zero gradient where a distance is 0 (as :func:`cdist`)."""
    x = _as_tensor(input)
    if x.ndim != 2:
        raise ValueError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if float(p) < 0:
        raise ValueError(f"pdist only supports non-negative p values, got {p}")
    n = _static_shape(x)[0]
    if n is None:
        raise ValueError("pdist: the number of rows must be known when the program is built")
    rows, cols = np.triu_indices(n, 1)
    diff = index_select(x, 0, tensor(rows)) - index_select(x, 0, tensor(cols))
    return _vector_norm("pdist", diff, float(p), [-1], False)
