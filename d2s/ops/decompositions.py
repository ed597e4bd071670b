"""Matrix decompositions with PyTorch's conventions and gradients (runtime:
``d2s_runtime/ops/decompositions.py``): ``linalg_svd``, ``linalg_eigh``, ``linalg_qr`` and
``linalg_matrix_exp``, and the compositions built on them. ``torch.linalg``'s names are in
``d2s/linalg.py`` (svd, svdvals, eigh, eigvalsh, qr, pinv, matrix_rank, lstsq,
solve_triangular, matrix_exp); here are ``torch``'s own: ``svd`` (``U, S, V``, ``some``),
``qr`` (``some``), ``pinverse`` and ``matrix_exp``, also Tensor methods.

The gradient rules are PyTorch's (FunctionsManual.cpp): svd's through ``U, S, Vh`` (with
``full_matrices=True`` only the first ``k`` columns of ``U`` and rows of ``Vh`` carry one, as
PyTorch's), eigh's through the skew part of ``V^T gV`` over eigenvalue gaps, qr's for
``m >= n`` (``mode='r'``, and ``m < n``, raise as PyTorch's or say so), and matrix_exp's as the
upper-right block of the exponential of ``[[A^T, G], [0, A^T]]``. Like PyTorch's, svd's and
eigh's gradients are infinite where singular values or eigenvalues repeat.
"""
from .. import return_types
from ..autograd.registry import grad_rule
from ..dispatch import apply
from ..onnx.registry import onnx_unsupported
from ..tensor import tensor_method
from .creation import eye, zeros
from .elementwise import cast, gt, where
from .linalg import diag_embed, matmul, tril
from .matrices import _mT
from .reduce import amax, sum as _sum
from .shape import concat, unsqueeze
from ._util import _as_tensor

_EPS = {"float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16}


# ------------------------------------------------------------------ the primitives
def _svd(A, full_matrices):
    return apply("linalg_svd", _as_tensor(A), full_matrices=bool(full_matrices))


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
    gaps = unsqueeze(s2, -2) - unsqueeze(s2, -1) + eye(k, dtype=str(S.dtype))
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
    return apply("linalg_eigh", _as_tensor(A), UPLO=str(UPLO).upper())


@grad_rule("linalg_eigh")
def _eigh_grad(ctx, gL, gV):
    L, V = ctx.outputs
    if gV is None:
        return (None,) if gL is None else (matmul(V * unsqueeze(gL, -2), _mT(V)),)
    vhgv = matmul(_mT(V), gV)
    skew = (vhgv - _mT(vhgv)) * 0.5
    gaps = unsqueeze(L, -2) - unsqueeze(L, -1) + eye(L.shape[-1], dtype=str(L.dtype))
    inner = skew / gaps
    if gL is not None:
        inner = inner + diag_embed(gL)
    return (matmul(V, matmul(inner, _mT(V))),)


def _qr(A, mode):
    return apply("linalg_qr", _as_tensor(A), mode=mode)


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


def _matrix_exp(A):
    return apply("linalg_matrix_exp", _as_tensor(A))


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


# ------------------------------------------------------------------ compositions (d2s/linalg.py's too)
def _tolerance(S, m, n, atol, rtol):
    """PyTorch's cut-off for singular values (S descending, or absolute eigenvalues): ``max(atol,
    rtol * largest)``, rtol defaulting to ``eps * max(m, n)`` when neither is given."""
    if rtol is None:
        rtol = _EPS[str(S.dtype)] * max(m, n) if atol is None or atol == 0 else 0.0
    largest = amax(S, dim=-1, keepdim=True) if S.shape[-1] else S[..., :1]
    tol = largest * rtol
    if atol is not None:
        tol = where(gt(tol, atol), tol, atol)
    return tol


def _pinv(A, atol=None, rtol=None, hermitian=False):
    A = _as_tensor(A)
    m, n = A.shape[-2], A.shape[-1]
    if hermitian:
        L, Q = _eigh(A, "L")
        keep = gt(_abs(L), _tolerance(_abs(L), m, n, atol, rtol))
        inv = where(keep, 1.0 / where(keep, L, 1.0), 0.0)
        return matmul(Q * unsqueeze(inv, -2), _mT(Q))
    U, S, Vh = _svd(A, False)
    keep = gt(S, _tolerance(S, m, n, atol, rtol))
    inv = where(keep, 1.0 / where(keep, S, 1.0), 0.0)
    return matmul(_mT(Vh) * unsqueeze(inv, -2), _mT(U))


def _abs(x):
    return where(gt(x, 0), x, -x)


def _matrix_rank(A, atol=None, rtol=None, hermitian=False):
    A = _as_tensor(A)
    m, n = A.shape[-2], A.shape[-1]
    S = _abs(_eigh(A, "L")[0]) if hermitian else _svd(A, False)[1]
    S = S.detach()
    return _sum(cast(gt(S, _tolerance(S, m, n, atol, rtol)), "int64"), dim=-1)


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

