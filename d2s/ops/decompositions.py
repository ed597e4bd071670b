"""Matrix decompositions with PyTorch's conventions and gradients (runtime:
``d2s_runtime/ops/decompositions.py``): ``linalg_svd``, ``linalg_eigh``, ``linalg_qr`` and
``linalg_matrix_exp``, and the compositions built on them. ``torch.linalg``'s names are in
``d2s/linalg.py`` (svd, svdvals, eigh, eigvalsh, qr, pinv, matrix_rank, lstsq,
solve_triangular, matrix_exp, cond, tensorinv, tensorsolve, the ``_ex`` forms); here are
``torch``'s own: ``svd`` (``U, S, V``, ``some``), ``qr`` (``some``), ``pinverse``, ``matrix_exp``,
``cholesky_solve`` and ``cholesky_inverse``, also Tensor methods.

The gradient rules are PyTorch's (FunctionsManual.cpp): svd's through ``U, S, Vh`` (with
``full_matrices=True`` only the first ``k`` columns of ``U`` and rows of ``Vh`` carry one, as
PyTorch's), eigh's through the skew part of ``V^T gV`` over eigenvalue gaps, qr's for
``m >= n`` (``mode='r'``, and ``m < n``, raise as PyTorch's or say so), and matrix_exp's as the
upper-right block of the exponential of ``[[A^T, G], [0, A^T]]``. Like PyTorch's, svd's and
eigh's gradients are infinite where singular values or eigenvalues repeat.
"""
from .. import return_types
from ..autograd.registry import grad_rule, non_differentiable
from ..dispatch import apply
from ..onnx.registry import onnx_unsupported
from ..tensor import tensor_method
from .creation import ones_like, zeros, zeros_like
from .elementwise import cast, eq, where
from .linalg import diag_embed, diagonal, matmul, tril, triu
from .matrices import _mT
from .reduce import any as any_, argmax
from .shape import concat, pad, unsqueeze
from ._util import _as_tensor



# ------------------------------------------------------------------ the primitives
def _checked(name, A, square=False):
    """``A`` as a tensor, refused (as PyTorch refuses it) unless it holds float matrices: the
    eager path runs the kernel without the shape rule, and numpy would accept integers."""
    A = _as_tensor(A)
    dt = str(A.dtype)
    if dt not in ("float32", "float64"):
        raise RuntimeError(f"{name}: expected a float32 or float64 tensor, got {dt}; cast it first (A.double())")
    if A.ndim < 2:
        raise RuntimeError(f"{name}: expected matrices (..., m, n), got a tensor of {A.ndim} dims")
    if square and not A.is_symbolic and A.shape[-1] != A.shape[-2]:  # (a program's shape rule checks its own)
        raise RuntimeError(f"{name}: expected square matrices (..., n, n), got shape {tuple(A.shape)}")
    return A


def _svd(A, full_matrices):
    return apply("linalg_svd", _checked("linalg.svd", A), full_matrices=bool(full_matrices))


@grad_rule("linalg_svd")
def _svd_grad(ctx, gU, gS, gVh):
    U, S, Vh = ctx.outputs
    if gU is None and gS is None and gVh is None:
        return (None,)
    k = S.shape[-1]
    if ctx.attrs.get("full_matrices", True):  # only the first k columns (rows) carry a gradient
        U, Vh = U[..., :k], Vh[..., :k, :]
        gU = None if gU is None else gU[..., :k]
        gVh = None if gVh is None else gVh[..., :k, :]
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        return (matmul(U * unsqueeze(gS, -2), Vh),)
    s2 = S * S
    gaps = unsqueeze(s2, -2) - unsqueeze(s2, -1) + diag_embed(ones_like(s2))  # (1 on the diagonal)
    inner = None
    if gU is not None:
        uhgu = matmul(_mT(U), gU)
        inner = (uhgu - _mT(uhgu)) * unsqueeze(S, -2)
    if gVh is not None:
        vhgv = matmul(Vh, _mT(gVh))
        part = unsqueeze(S, -1) * (vhgv - _mT(vhgv))
        inner = part if inner is None else inner + part
    gA = inner / gaps
    if gS is not None:
        gA = gA + diag_embed(gS)
    if m > n and gU is not None:
        gA = matmul(U, gA)
        gu_sinv = gU / unsqueeze(S, -2)
        gA = matmul(gA + gu_sinv - matmul(U, matmul(_mT(U), gu_sinv)), Vh)
    elif m < n and gVh is not None:
        gA = matmul(gA, Vh)
        sinv_gvh = gVh / unsqueeze(S, -1)
        gA = matmul(U, gA + sinv_gvh - matmul(matmul(sinv_gvh, _mT(Vh)), Vh))
    else:
        gA = matmul(U, matmul(gA, Vh))
    return (gA,)


def _eigh(A, UPLO):
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    return apply("linalg_eigh", _checked("linalg.eigh", A, square=True), UPLO=str(UPLO).upper())


@grad_rule("linalg_eigh")
def _eigh_grad(ctx, gL, gV):
    L, V = ctx.outputs
    if gV is None:
        return (None,) if gL is None else (matmul(V * unsqueeze(gL, -2), _mT(V)),)
    vhgv = matmul(_mT(V), gV)
    skew = (vhgv - _mT(vhgv)) * 0.5
    gaps = unsqueeze(L, -2) - unsqueeze(L, -1) + diag_embed(ones_like(L))
    inner = skew / gaps
    if gL is not None:
        inner = inner + diag_embed(gL)
    return (matmul(V, matmul(inner, _mT(V))),)


def _qr(A, mode):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    return apply("linalg_qr", _checked("linalg.qr", A), mode=mode)


@grad_rule("linalg_qr")
def _qr_grad(ctx, gQ, gR):
    Q, R = ctx.outputs
    mode = ctx.attrs.get("mode", "reduced")
    if gQ is None and gR is None:
        return (None,)
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if m < n:
        raise NotImplementedError("linalg.qr: d2s differentiates the QR decomposition of matrices with at least "
                                  f"as many rows as columns; this one is {m} x {n} (transpose it, or use svd)")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    # gA = (gQ + Q copyltu(M)) R^{-T},  M = R gR^T - gQ^T Q,  copyltu(M) = tril(M) + tril(M, -1)^T
    M = 0.0
    if gR is not None:
        M = matmul(R, _mT(gR))
    if gQ is not None:
        M = M - matmul(_mT(gQ), Q)
    sym = tril(M) + _mT(tril(M, -1))
    B = matmul(Q, sym) if gQ is None else gQ + matmul(Q, sym)
    return (_mT(apply("linalg_solve", R, _mT(B))),)


def _lu(A, pivot=True):
    if not pivot:
        raise NotImplementedError("linalg.lu: pivot=False (LU without pivoting) is CUDA-only in PyTorch and not in d2s")
    P, L, U = apply("linalg_lu", _checked("linalg.lu", A))
    return P.detach(), L, U  # (a permutation: no gradient, and PyTorch's P does not require one)


@grad_rule("linalg_lu")
def _lu_grad(ctx, gP, gL, gU):
    # PyTorch's (square A = P L U): gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T
    del gP  # a permutation: piecewise constant
    P, L, U = ctx.outputs
    if gL is None and gU is None:
        return (None,)
    m, n = L.shape[-2], U.shape[-1]
    if m != n:
        raise NotImplementedError(f"linalg.lu: d2s differentiates the LU decomposition of square matrices; this one "
                                  f"is {m} x {n}")
    phi = 0.0
    if gL is not None:
        phi = tril(matmul(_mT(L), gL), -1)
    if gU is not None:
        phi = phi + triu(matmul(gU, _mT(U)))
    left = apply("linalg_solve", _mT(L), phi)  # L^-T phi
    gA = _mT(apply("linalg_solve", U, _mT(left)))  # (...) U^-T
    return (matmul(P, gA),)


onnx_unsupported("linalg_lu", "lu_pivots", reason="ONNX has no LU decomposition")
non_differentiable("lu_pivots", reason="pivots are int32 row numbers")


def _lu_factor(A, pivot=True):
    """``(LU, pivots, info)`` of ``torch.linalg.lu_factor_ex``, from :func:`_lu`'s factors: L's
    strict lower triangle and U in one matrix, LAPACK's 1-based pivots, and the 1-based index
    of U's first zero diagonal entry (0: none)."""
    P, L, U = _lu(A, pivot)
    m, n = L.shape[-2], U.shape[-1]
    k = min(int(m), int(n))
    low = tril(L, -1)
    if int(n) > k:
        low = pad(low, [0, int(n) - k])
    up = pad(U, [0, 0, 0, int(m) - k]) if int(m) > k else U
    zero = eq(diagonal(U, 0, -2, -1), 0)
    first = argmax(cast(zero, "int32"), -1)
    info = cast(where(any_(zero, -1), first + 1, zeros_like(first)), "int32")
    return low + up, apply("lu_pivots", P, k=k), info


def _matrix_exp(A):
    return apply("linalg_matrix_exp", _checked("linalg.matrix_exp", A, square=True))


@grad_rule("linalg_matrix_exp")
def _matrix_exp_grad(ctx, g):
    a = ctx.inputs[0]
    n = a.shape[-1]
    at = _mT(a)
    top = concat([at, g], -1)
    bottom = concat([zeros(*at.shape, dtype=str(a.dtype)), at], -1)
    big = apply("linalg_matrix_exp", concat([top, bottom], -2))
    return (big[..., :n, n:],)


onnx_unsupported("linalg_svd", "linalg_eigh", "linalg_qr", "linalg_matrix_exp",
                 reason="standard ONNX has no matrix decompositions")


# ------------------------------------------------------------------ pinv and matrix_rank (d2s/linalg.py's too)
def _pinv(A, atol=None, rtol=None, hermitian=False):
    A = _checked("linalg.pinv", A, square=bool(hermitian))
    return apply("linalg_pinv", A, hermitian=bool(hermitian), **_tolerances("linalg.pinv", atol, rtol))


@grad_rule("linalg_pinv")
def _pinv_grad(ctx, g):
    # PyTorch's pinv_backward (the derivative of the pseudo-inverse at constant rank)
    a, p = ctx.inputs[0], ctx.outputs[0]
    m, n = a.shape[-2], a.shape[-1]
    ph, gh = _mT(p), _mT(g)
    if m <= n:
        k = matmul(gh, p)
        kph = matmul(k, ph)
        return (-_mT(matmul(p, k)) + kph - matmul(matmul(a, p), kph) + matmul(matmul(ph, p), gh - matmul(k, a)),)
    k = matmul(p, gh)
    phk = matmul(ph, k)
    return (-_mT(matmul(k, p)) + matmul(matmul(gh - matmul(a, k), p), ph) + phk - matmul(matmul(phk, p), a),)


onnx_unsupported("linalg_pinv", reason="standard ONNX has no matrix decompositions")


def _tolerances(name, atol, rtol):
    for what, v in (("atol", atol), ("rtol", rtol)):
        if v is not None and not isinstance(v, (int, float)):
            raise TypeError(f"{name}: d2s takes {what} as a Python number, got {type(v).__name__}")
    return dict(atol=None if atol is None else float(atol), rtol=None if rtol is None else float(rtol))


def _matrix_rank(A, atol=None, rtol=None, hermitian=False):
    A = _checked("linalg.matrix_rank", A, square=bool(hermitian))
    return apply("linalg_matrix_rank", A, hermitian=bool(hermitian), **_tolerances("linalg.matrix_rank", atol, rtol))


non_differentiable("linalg_matrix_rank", reason="its output is an integer count")
onnx_unsupported("linalg_matrix_rank", reason="standard ONNX has no matrix decompositions")


# ------------------------------------------------------------------ torch's own names
@tensor_method()
def svd(input, some=True, compute_uv=True):
    """``torch.svd``: ``(U, S, V)`` with ``input = U diag(S) V^T`` (note: ``V``, not
    ``torch.linalg.svd``'s ``Vh``); ``some=True`` gives the reduced factors. With
    ``compute_uv=False``, ``U`` and ``V`` are zero-filled m x m and n x n matrices, as PyTorch's."""
    input = _as_tensor(input)
    if not compute_uv:
        S = _svd(input, False)[1]
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return return_types.svd(zeros(*batch, m, m, dtype=str(input.dtype)), S,
                                zeros(*batch, n, n, dtype=str(input.dtype)))
    U, S, Vh = _svd(input, not some)
    return return_types.svd(U, S, _mT(Vh))


@tensor_method()
def qr(input, some=True):
    """``torch.qr``: ``(Q, R)``, reduced with ``some=True`` (``torch.linalg.qr``'s
    ``mode='reduced'``), else complete."""
    Q, R = _qr(input, "reduced" if some else "complete")
    return return_types.qr(Q, R)


@tensor_method()
def pinverse(input, rcond=1e-15):
    """``torch.pinverse``: the pseudo-inverse, dropping singular values below ``rcond`` times the
    largest."""
    return _pinv(input, rtol=rcond)


@tensor_method()
def matrix_exp(input):
    """The matrix exponential of each square matrix of ``input`` (``torch.matrix_exp``), with
    its gradient."""
    return _matrix_exp(input)



@tensor_method()
def cholesky_solve(input, input2, upper=False):
    """The solution of ``A X = input`` for ``A = L L^T`` (``upper``: ``A = U^T U``) given its
    Cholesky factor ``input2``, as ``torch.cholesky_solve``; differentiable in both (the
    factor's gradient is PyTorch's full-matrix one)."""
    L = _as_tensor(input2)
    A = matmul(_mT(L), L) if upper else matmul(L, _mT(L))
    return apply("linalg_solve", A, _as_tensor(input))


@tensor_method()
def cholesky_inverse(L, upper=False):
    """The inverse of ``A = L L^T`` (``upper``: ``U^T U``) from its Cholesky factor, as
    ``torch.cholesky_inverse``."""
    L = _as_tensor(L)
    return apply("linalg_inv", matmul(_mT(L), L) if upper else matmul(L, _mT(L)))
