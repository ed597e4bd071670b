"""Matrix multiplication with NumPy's ``matmul`` semantics (1-d operands, batch broadcasting); the
inverse, determinant, log-determinant and linear solve of batches of square matrices (LAPACK)."""
import numpy as np

from .. import blas
from ..dtypes import promote, result_type
from . import lapack
from .registry import ShapeError, TensorType, deflowering, defop
from .rules import broadcast_shapes, fmt_shape


class LinAlgError(ValueError, RuntimeError):
    """A matrix a linear-algebra op cannot factor (singular, not positive-definite). A
    RuntimeError, as PyTorch's ``torch.linalg.LinAlgError`` is; ``except ValueError`` catches it
    too."""


def _matmul_infer(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands must have at least 1 dim, got {fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
    sa = (1,) + a.shape if a.ndim == 1 else a.shape
    sb = b.shape + (1,) if b.ndim == 1 else b.shape
    k1, k2 = sa[-1], sb[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"matmul: shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)} do not align "
                         f"({k1} != {k2}); transpose or reshape an operand")
    batch = broadcast_shapes("matmul", sa[:-2], sb[:-2])
    out = batch + (sa[-2], sb[-1])
    if a.ndim == 1:
        out = out[:-2] + out[-1:]
    if b.ndim == 1:
        out = out[:-1]
    return TensorType(out, result_type(a.dtype, b.dtype))


@defop("matmul", _matmul_infer, promotes=None, ufunc="matmul", out_ok=True, fresh=True)
def _matmul(xp, a, b):
    """Matrix product with numpy's ``matmul`` semantics (operands promoted to one dtype)."""
    if a.dtype is not b.dtype:
        a, b = promote((a, b))
    # (numpy: on the BLAS threads the machine has free, where that cannot change the result)
    return blas.matmul(a, b) if xp is np else xp.matmul(a, b)


@deflowering("matmul", "native")
def _matmul_native(e, a, b):
    """numba's ``np.dot`` (BLAS) on 1-d and 2-d operands; a bias/activation chain reading the
    result runs in place in its buffer (native/plan.py: donors); batched operands (more than 2
    dims) one MKL gemm per 2-d slice of the result (native/builders.py)."""
    return e.matmul(a, b)


# ------------------------------------------------------------------ einsum
def parse_equation(equation):
    """``(input subscripts, output subscripts)`` of a canonical einsum equation
    (``"ij,jk->ik"``: letters only, one per dim, an explicit output)."""
    if not isinstance(equation, str) or "->" not in equation:
        raise ShapeError(f"einsum: equation {equation!r} is not canonical (letters, commas and '->')")
    lhs, out = equation.split("->")
    ins = lhs.split(",")
    for s in ins + [out]:
        if not all(c.isascii() and c.isalpha() for c in s) or len(set(s)) != len(s):
            raise ShapeError(f"einsum: subscripts {s!r} of {equation!r} must be distinct letters")
    if not set(out) <= set("".join(ins)):
        raise ShapeError(f"einsum: output subscripts {out!r} of {equation!r} name letters no input has")
    return ins, out


def _letter_sizes(equation, ins, shapes):
    """Each letter's size: operands agree, or have 1 (broadcast); None where unknown."""
    sizes = {}
    for sub, shape in zip(ins, shapes):
        if len(sub) != len(shape):
            raise ShapeError(f"einsum: operand with shape {fmt_shape(shape)} has {len(shape)} dims, but its "
                             f"subscripts {sub!r} in {equation!r} name {len(sub)}")
        for c, d in zip(sub, shape):
            prev = sizes.get(c, 1)
            if d == 1 or d == prev:
                continue
            if prev == 1:
                sizes[c] = d
            elif d is None or prev is None:
                sizes[c] = prev if d is None else d
            else:
                raise ShapeError(f"einsum: subscript {c!r} of {equation!r} has sizes {prev} and {d}, which do not "
                                 f"broadcast")
        for c in sub:
            sizes.setdefault(c, 1)
    return sizes


def _einsum_infer(*types, equation):
    ins, out = parse_equation(equation)
    if len(ins) != len(types):
        raise ShapeError(f"einsum: {equation!r} names {len(ins)} operands, got {len(types)}")
    sizes = _letter_sizes(equation, ins, [t.shape for t in types])
    return TensorType(tuple(sizes[c] for c in out), result_type(*(t.dtype for t in types)))


def _contract(xp, a, sa, b, sb, keep, sizes):
    """Operands ``a`` (subscripts ``sa``) and ``b`` contracted over their shared letters not in
    ``keep``, as one batched matrix product: ``(batch, left, shared) @ (batch, shared, right)``."""
    batch = [c for c in sa if c in sb and c in keep]
    shared = [c for c in sa if c in sb and c not in keep]
    left = [c for c in sa if c not in sb]
    right = [c for c in sb if c not in sa]
    a = xp.transpose(a, [sa.index(c) for c in batch + left + shared])
    b = xp.transpose(b, [sb.index(c) for c in batch + shared + right])
    # shared dims broadcast to their full size; batch dims broadcast through matmul
    nb = len(batch)
    a = xp.broadcast_to(a, a.shape[:nb + len(left)] + tuple(sizes[c] for c in shared))
    b = xp.broadcast_to(b, b.shape[:nb] + tuple(sizes[c] for c in shared) + b.shape[nb + len(shared):])
    m = int(np.prod(a.shape[nb:nb + len(left)], dtype=np.int64))
    k = int(np.prod([sizes[c] for c in shared], dtype=np.int64))
    n = int(np.prod(b.shape[nb + len(shared):], dtype=np.int64))
    product = blas.matmul if xp is np else xp.matmul
    prod = product(a.reshape(a.shape[:nb] + (m, k)), b.reshape(b.shape[:nb] + (k, n)))
    out = prod.reshape(prod.shape[:nb] + a.shape[nb:nb + len(left)] + b.shape[nb + len(shared):])
    return out, "".join(batch + left + right)


def _sum_letters(xp, x, sub, keep):
    """``x`` summed over the letters of ``sub`` not in ``keep``."""
    axes = tuple(i for i, c in enumerate(sub) if c not in keep)
    if not axes:
        return x, sub
    return x.sum(axis=axes), "".join(c for c in sub if c in keep)


@defop("einsum", _einsum_infer, promotes=None, fresh=True)
def _einsum(xp, *operands, equation):
    """Einstein summation over a canonical equation (distinct letters per operand, an explicit
    output; ``d2s.einsum`` brings PyTorch's forms to it): operands contracted left to right,
    each pair as one batched matrix product (BLAS), letters summed as soon as no later operand
    or the output needs them. Sizes of 1 broadcast."""
    ins, out = parse_equation(equation)
    operands = promote(list(operands)) if len({o.dtype for o in operands}) > 1 else operands
    sizes = {}
    for sub, x in zip(ins, operands):
        for c, d in zip(sub, x.shape):
            if d != 1 or c not in sizes:
                sizes[c] = d
    cur, sub = operands[0], ins[0]
    for k in range(1, len(operands)):
        keep = set(out).union(*ins[k + 1:])
        cur, sub = _sum_letters(xp, cur, sub, keep | set(ins[k]))
        nxt, nsub = _sum_letters(xp, operands[k], ins[k], keep | set(sub))
        cur, sub = _contract(xp, cur, sub, nxt, nsub, keep, sizes)
    own = len(operands) > 1  # a product is a new array; a lone operand is the caller's
    if len(sub) > len(out):
        cur, sub = _sum_letters(xp, cur, sub, set(out))
        own = True
    cur = xp.transpose(cur, [sub.index(c) for c in out])
    full = tuple(sizes[c] for c in out)
    if cur.shape != full:  # an output letter only size-1 operands had here, broadcast by a summed one
        cur, own = xp.broadcast_to(cur, full), False
    return cur if own else xp.array(cur, copy=True)


# ------------------------------------------------------------------ diagonals, triangles
def _diag_axes(op, ndim, dim1, dim2):
    for d in (dim1, dim2):
        if not -ndim <= d < ndim:
            raise ShapeError(f"{op}: dim {d} is out of range for a tensor with {ndim} dims")
    d1, d2 = dim1 % ndim, dim2 % ndim
    if d1 == d2:
        raise ShapeError(f"{op}: dim1 and dim2 cannot be the same dim ({dim1} and {dim2})")
    return d1, d2


def _diag_len(n, m, offset):
    if n is None or m is None:
        return None
    return max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))


def _diagonal_infer(x, offset=0, dim1=0, dim2=1):
    d1, d2 = _diag_axes("diagonal", x.ndim, dim1, dim2)
    rest = tuple(d for i, d in enumerate(x.shape) if i not in (d1, d2))
    return TensorType(rest + (_diag_len(x.shape[d1], x.shape[d2], offset),), x.dtype)


@defop("diagonal", _diagonal_infer, view=True, movement=True)
def _diagonal(xp, x, offset=0, dim1=0, dim2=1):
    """The diagonal ``offset`` of the matrices over dims ``dim1``, ``dim2``, as the last dim
    (a read-only view, as NumPy's)."""
    return xp.diagonal(x, offset, dim1, dim2)


def _diag_index(xp, n, offset):
    i = xp.arange(n)
    return (i, i + offset) if offset >= 0 else (i - offset, i)


def _diagonal_scatter_infer(x, src, offset=0, dim1=0, dim2=1):
    want = _diagonal_infer(x, offset, dim1, dim2)
    if len(src.shape) != len(want.shape) or any(a is not None and b is not None and a != b
                                                for a, b in zip(src.shape, want.shape)):
        raise ShapeError(f"diagonal_scatter: src has shape {fmt_shape(src.shape)}, the diagonal has "
                         f"{fmt_shape(want.shape)}")
    return TensorType(x.shape, result_type(x.dtype, src.dtype))


@defop("diagonal_scatter", _diagonal_scatter_infer, fresh=True, writes_input=True)
def _diagonal_scatter(xp, x, src, offset=0, dim1=0, dim2=1):
    """A copy of ``x`` whose diagonal (as :func:`diagonal` reads it) holds ``src``."""
    x, src = promote((x, src)) if x.dtype != src.dtype else (x, src)
    out = xp.array(x, copy=True)
    d1, d2 = dim1 % x.ndim, dim2 % x.ndim
    view = xp.moveaxis(out, (d1, d2), (-2, -1))
    rows, cols = _diag_index(xp, src.shape[-1], offset)
    view[..., rows, cols] = src
    return out


def _diag_embed_infer(x, offset=0, dim1=-2, dim2=-1):
    if x.ndim < 1:
        raise ShapeError("diag_embed: needs a tensor with at least 1 dim")
    nd = x.ndim + 1
    d1, d2 = _diag_axes("diag_embed", nd, dim1, dim2)
    n = x.shape[-1]
    size = None if n is None else n + abs(offset)
    dims = list(x.shape[:-1])
    for d in sorted((d1, d2)):
        dims.insert(d, size)
    return TensorType(tuple(dims), x.dtype)


@defop("diag_embed", _diag_embed_infer, fresh=True)
def _diag_embed(xp, x, offset=0, dim1=-2, dim2=-1):
    """Matrices over dims ``dim1``, ``dim2`` of the output, zero but for diagonal ``offset``,
    which holds ``x``'s last dim."""
    n = x.shape[-1]
    size = n + abs(offset)
    out = xp.zeros(x.shape[:-1] + (size, size), dtype=x.dtype)
    rows, cols = _diag_index(xp, n, offset)
    out[..., rows, cols] = x
    nd = x.ndim + 1
    return xp.moveaxis(out, (-2, -1), (dim1 % nd, dim2 % nd))


def _triangle(name, fn, doc):
    def infer(x, diagonal=0):
        if x.ndim < 2:
            raise ShapeError(f"{name}: needs a tensor with at least 2 dims, got shape {fmt_shape(x.shape)}")
        return TensorType(x.shape, x.dtype)

    def kernel(xp, x, diagonal=0):
        if x.ndim < 2:
            raise ValueError(f"{name} of a {x.ndim}-d tensor")  # the shape rule words the error
        return fn(xp, x, diagonal)

    defop(name, infer, doc=doc, fresh=True)(kernel)


_triangle("tril", lambda xp, x, k: xp.tril(x, k), "The lower triangle (on and below diagonal ``diagonal``) of the "
          "matrices over the last two dims; zeros above.")
_triangle("triu", lambda xp, x, k: xp.triu(x, k), "The upper triangle (on and above diagonal ``diagonal``) of the "
          "matrices over the last two dims; zeros below.")


# ------------------------------------------------------------------ inverse, determinants, solve
def _square_infer(name, a):
    """The checks every square-matrix op makes: float, at least 2 dims, square (where known)."""
    if a.dtype not in ("float32", "float64"):
        raise ShapeError(f"{name}: needs a float32 or float64 tensor, got {a.dtype}; cast it first (x.double())")
    if a.ndim < 2 or (None not in a.shape[-2:] and a.shape[-1] != a.shape[-2]):
        raise ShapeError(f"{name}: needs square matrices (..., n, n), got {fmt_shape(a.shape)}")


def _square_check(name, a):
    _square_infer(name, TensorType(a.shape, a.dtype.name))


def _singular(name, exc):
    return LinAlgError(f"{name}: the input matrix is singular ({exc}); it has no inverse")


def _inv_infer(a):
    _square_infer("linalg.inv", a)
    return TensorType(a.shape, a.dtype)


@defop("linalg_inv", _inv_infer, fresh=True)
def _linalg_inv(xp, a):
    """The inverse of each square matrix of ``a`` (..., n, n); singular ones raise."""
    _square_check("linalg.inv", a)
    try:
        return xp.linalg.inv(a)
    except np.linalg.LinAlgError as e:
        raise _singular("linalg.inv", e) from None


def _det_infer(a):
    _square_infer("linalg.det", a)
    return TensorType(a.shape[:-2], a.dtype)


@defop("linalg_det", _det_infer, fresh=True)
def _linalg_det(xp, a):
    """The determinant of each square matrix of ``a`` (..., n, n) -> (...)."""
    _square_check("linalg.det", a)
    return xp.asarray(xp.linalg.det(a), dtype=a.dtype)


def _slogdet_infer(a):
    _square_infer("linalg.slogdet", a)
    return TensorType(a.shape[:-2], a.dtype), TensorType(a.shape[:-2], a.dtype)


@defop("linalg_slogdet", _slogdet_infer, n_out=2, fresh=True)
def _linalg_slogdet(xp, a):
    """(sign, log|det|) of each square matrix of ``a`` (..., n, n): sign 0 and log|det| -inf for a
    singular one."""
    _square_check("linalg.slogdet", a)
    sign, logabs = xp.linalg.slogdet(a)
    return xp.asarray(sign, dtype=a.dtype), xp.asarray(logabs, dtype=a.dtype)


def _solve_infer(a, b):
    _square_infer("linalg.solve", a)
    if b.dtype != a.dtype or b.ndim < 2:
        raise ShapeError(f"linalg.solve: B must be matrices of A's dtype ({a.dtype}), got {b.dtype}{fmt_shape(b.shape)}")
    if None not in (a.shape[-1], b.shape[-2]) and a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"linalg.solve: A of {fmt_shape(a.shape)} and B of {fmt_shape(b.shape)} do not align "
                         f"({a.shape[-1]} != {b.shape[-2]})")
    return TensorType(broadcast_shapes("linalg.solve", a.shape[:-2], b.shape[:-2]) + b.shape[-2:], a.dtype)


@defop("linalg_solve", _solve_infer, fresh=True)
def _linalg_solve(xp, a, b):
    """X with ``a @ X == b`` for square matrices ``a`` (..., n, n) and matrices ``b`` (..., n, k),
    batch dims broadcast; a singular ``a`` raises."""
    _square_check("linalg.solve", a)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1] or b.dtype != a.dtype:
        raise ShapeError(f"linalg.solve: A of {fmt_shape(a.shape)} and B of {b.dtype}{fmt_shape(b.shape)} do not "
                         f"align")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    try:
        return xp.linalg.solve(xp.broadcast_to(a, batch + a.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:]))
    except np.linalg.LinAlgError as e:
        raise _singular("linalg.solve", e) from None


def _cholesky_infer(a):
    _square_infer("linalg.cholesky", a)
    return TensorType(a.shape, a.dtype)


@defop("linalg_cholesky", _cholesky_infer, fresh=True)
def _linalg_cholesky(xp, a):
    """The lower-triangular Cholesky factor L (``a = L @ L.T``) of each symmetric positive-definite
    matrix of ``a`` (..., n, n), from its lower triangle; a matrix that is not positive-definite
    raises."""
    _square_check("linalg.cholesky", a)
    try:
        return xp.linalg.cholesky(a)
    except np.linalg.LinAlgError as e:
        raise LinAlgError(f"linalg.cholesky: the input is not positive-definite ({e}); the factorization could not "
                          f"be completed") from None


# ------------------------------------------------------------------ the *_ex forms: failures in ``info``
def _host(xp, a):
    return a if xp is np else xp.asnumpy(a)


def _each_matrix(xp, solve, fallback, *arrays, recheck=None):
    """``(results, info)``: numpy's LAPACK ``solve(*arrays)`` on the whole batch when it
    succeeds, info all 0; otherwise matrix by matrix, ``solve`` first and the unblocked
    ``fallback`` (returning ``(result, info)``) where numpy refuses the matrix. ``recheck``
    (result matrices -> bool per matrix) names results numpy gave that the fallback redoes.
    On the host always (cupy's solvers do not report a singular matrix); results go back to
    ``xp``."""
    host = [_host(xp, a) for a in arrays]
    batch = host[0].shape[:-2]
    info = np.zeros(batch, np.int32)
    try:
        out = solve(*host)
        redo = np.zeros(batch, bool) if recheck is None else np.asarray(recheck(out))
        if not redo.any():
            return (out if xp is np else xp.asarray(out)), info
    except np.linalg.LinAlgError:
        redo = None
    results = None if redo is None else np.array(out, copy=True)
    for idx in (np.ndindex(*batch) if redo is None else [tuple(i) for i in np.argwhere(redo)]):
        mats = [a[idx] for a in host]
        try:
            if redo is not None:
                raise np.linalg.LinAlgError
            r, code = solve(*mats), 0
            if recheck is not None and recheck(r):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            r, code = fallback(*mats)
        if results is None:
            results = np.empty(batch + r.shape, r.dtype)
        results[idx] = r
        info[idx] = code
    return (results if xp is np else xp.asarray(results)), info


def _check_info(name, info, what):
    """Raise PyTorch's error for the first failed matrix (``check_errors=True``)."""
    bad = np.flatnonzero(info.reshape(-1))
    if bad.size:
        where = f"(Batch element {bad[0]}): " if info.ndim else ""
        raise LinAlgError(f"{name}: {where}{what(int(info.reshape(-1)[bad[0]]))}")


def _singular_what(k):
    return (f"The diagonal element {k} is zero, the inversion could not be completed because the input matrix is "
            f"singular.")


def _inv_ex_infer(a, check_errors=False):
    _square_infer("linalg.inv_ex", a)
    return TensorType(a.shape, a.dtype), TensorType(a.shape[:-2], "int32")


def _inv_fallback(m):
    lu, piv, info = lapack.lu_factor(m)
    return lapack.lu_solve(lu, piv, np.eye(m.shape[-1], dtype=m.dtype)), info


@defop("linalg_inv_ex", _inv_ex_infer, n_out=2, fresh=True)
def _linalg_inv_ex(xp, a, check_errors=False):
    """``(inverse, info)`` of each square matrix of ``a`` (..., n, n): info (int32, shape (...))
    is 0, or for a singular matrix the 1-based index of the first zero pivot of its LU
    factorization, whose inverse then holds what LAPACK's solve leaves (infinities and NaNs)."""
    _square_check("linalg.inv_ex", a)
    inverse, info = _each_matrix(xp, np.linalg.inv, _inv_fallback, a)
    if check_errors:
        _check_info("linalg.inv_ex", info, _singular_what)
    return inverse, xp.asarray(info)


def _solve_ex_infer(a, b, check_errors=False, trans=False):
    x = _solve_infer(a, b)
    return x, TensorType(a.shape[:-2], "int32")


def _solve_fallback(m, rhs):
    lu, piv, info = lapack.lu_factor(m)
    return lapack.lu_solve(lu, piv, rhs), info


def _solve_transposed_fallback(m, rhs):
    lu, piv, info = lapack.lu_factor(m)
    return lapack.lu_solve_transposed(lu, piv, rhs), info


def _solve_transposed(a, b):
    return np.linalg.solve(np.swapaxes(a, -1, -2), b)


@defop("linalg_solve_ex", _solve_ex_infer, n_out=2, fresh=True)
def _linalg_solve_ex(xp, a, b, check_errors=False, trans=False):
    """``(X, info)`` with ``a @ X == b`` (``trans``: ``a.mT @ X == b``, from ``a``'s own LU
    factorization, as PyTorch's ``solve_ex(left=False)``) as ``linalg_solve``'s, and info as
    ``linalg_inv_ex``'s (of ``a``'s batch shape): a singular matrix's X holds what LAPACK's solve
    leaves."""
    _square_check("linalg.solve_ex", a)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1] or b.dtype != a.dtype:
        raise ShapeError(f"linalg.solve_ex: A of {fmt_shape(a.shape)} and B of {b.dtype}{fmt_shape(b.shape)} do not "
                         f"align")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    full_a, full_b = xp.broadcast_to(a, batch + a.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:])
    if trans:
        x, info = _each_matrix(xp, _solve_transposed, _solve_transposed_fallback, full_a, full_b)
    else:
        x, info = _each_matrix(xp, np.linalg.solve, _solve_fallback, full_a, full_b)
    # info is A's: where B's batch dims broadcast A, every copy of a matrix failed alike
    pick = (0,) * (len(batch) - (a.ndim - 2)) + tuple(slice(0, 1) if s == 1 else slice(None) for s in a.shape[:-2])
    info = info[pick].reshape(a.shape[:-2]) if info.size else np.zeros(a.shape[:-2], np.int32)
    if check_errors:
        _check_info("linalg.solve_ex", info, lambda k: "The solver failed because the input matrix is singular.")
    return x, xp.asarray(info)


def _cholesky_ex_infer(a, check_errors=False):
    _square_infer("linalg.cholesky_ex", a)
    return TensorType(a.shape, a.dtype), TensorType(a.shape[:-2], "int32")


@defop("linalg_cholesky_ex", _cholesky_ex_infer, n_out=2, fresh=True)
def _linalg_cholesky_ex(xp, a, check_errors=False):
    """``(L, info)`` for each symmetric matrix of ``a`` (..., n, n), read from its lower
    triangle: info (int32, shape (...)) is 0, or for a matrix that is not positive-definite the
    order of its first leading minor that is not, with L holding what LAPACK's ``potf2`` leaves
    (the columns before it factored, that column's diagonal updated, the rest ``a``'s lower
    triangle)."""
    _square_check("linalg.cholesky_ex", a)
    # (numpy's LAPACK factors a NaN diagonal into NaNs where PyTorch's reports it)
    low, info = _each_matrix(xp, np.linalg.cholesky, lapack.cholesky, a,
                             recheck=lambda low: (low != low).any(axis=(-2, -1)))
    if check_errors:
        _check_info("linalg.cholesky_ex", info,
                    lambda k: f"The factorization could not be completed because the input is not positive-definite "
                              f"(the leading minor of order {k} is not positive-definite).")
    return low, xp.asarray(info)
