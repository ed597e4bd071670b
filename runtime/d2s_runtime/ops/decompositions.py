"""Matrix decompositions of batches of float matrices (LAPACK through numpy.linalg), with
``torch.linalg``'s conventions: ``linalg_svd`` (``U, S, Vh``; singular values descending;
``full_matrices``), ``linalg_eigh`` (eigenvalues ascending, eigenvectors as columns; ``UPLO``),
``linalg_qr`` (``mode`` ``'reduced'``, ``'complete'`` or ``'r'``), ``linalg_lu`` (``P, L, U``) and
``linalg_matrix_exp``
(scaling and squaring of a degree-18 Taylor polynomial, which for ``||A / 2^s|| <= 1/2`` is
within 1e-22 of the series).

The signs of singular vectors and eigenvectors are LAPACK's, as PyTorch's CPU build returns
them for the same routine (gesdd, syevd, geqrf); code should not rely on them (PyTorch's docs
say the same).
"""
import math

import numpy as np

from . import lapack
from .registry import ShapeError, TensorType, defop
from .rules import fmt_shape


def _float_matrices(name, a):
    if a.dtype not in ("float32", "float64"):
        raise ShapeError(f"{name}: needs a float32 or float64 tensor, got {a.dtype}; cast it first (x.double())")
    if a.ndim < 2:
        raise ShapeError(f"{name}: needs matrices (..., m, n), got {fmt_shape(a.shape)}")


def _square(name, a):
    _float_matrices(name, a)
    if None not in a.shape[-2:] and a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{name}: needs square matrices (..., n, n), got {fmt_shape(a.shape)}")


def _host(xp, a):
    return a if xp is np else xp.asnumpy(a)


def _back(xp, a, dtype):
    a = a.astype(dtype, copy=False)
    return a if xp is np else xp.asarray(a)


def _min(a, b):
    return None if a is None or b is None else min(a, b)


# ------------------------------------------------------------------ svd
def _svd_infer(a, full_matrices=True):
    _float_matrices("linalg.svd", a)
    m, n = a.shape[-2], a.shape[-1]
    k = _min(m, n)
    batch = a.shape[:-2]
    u = batch + (m, m if full_matrices else k)
    vh = batch + (n if full_matrices else k, n)
    return TensorType(u, a.dtype), TensorType(batch + (k,), a.dtype), TensorType(vh, a.dtype)


@defop("linalg_svd", _svd_infer, n_out=3, fresh=True)
def _linalg_svd(xp, a, full_matrices=True):
    """``U, S, Vh`` with ``a = U diag(S) Vh`` (singular values descending); ``full_matrices``:
    ``U`` m x m and ``Vh`` n x n, else m x k and k x n (k = min(m, n))."""
    h = _host(xp, a)
    m, n = h.shape[-2:]
    if h.size == 0:  # LAPACK refuses empty matrices; PyTorch returns identity-like factors
        k = min(m, n)
        batch = h.shape[:-2]
        eye = lambda r, c: np.broadcast_to(np.eye(r, c, dtype=h.dtype), batch + (r, c)).copy()  # noqa: E731
        u = eye(m, m if full_matrices else k)
        vh = eye(n if full_matrices else k, n)
        return _back(xp, u, h.dtype), _back(xp, np.zeros(batch + (k,), h.dtype), h.dtype), _back(xp, vh, h.dtype)
    u, s, vh = np.linalg.svd(h, full_matrices=full_matrices)
    return _back(xp, u, h.dtype), _back(xp, s, h.dtype), _back(xp, vh, h.dtype)


# ------------------------------------------------------------------ eigh
def _eigh_infer(a, UPLO="L"):
    _square("linalg.eigh", a)
    if UPLO not in ("L", "U"):
        raise ShapeError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    return TensorType(a.shape[:-1], a.dtype), TensorType(a.shape, a.dtype)


@defop("linalg_eigh", _eigh_infer, n_out=2, fresh=True)
def _linalg_eigh(xp, a, UPLO="L"):
    """``L, Q``: the eigenvalues (ascending) and orthonormal eigenvectors (columns) of each
    symmetric matrix, read from its lower (``UPLO='L'``) or upper triangle."""
    h = _host(xp, a)
    if h.shape[-1] == 0:
        return _back(xp, np.zeros(h.shape[:-1], h.dtype), h.dtype), _back(xp, np.zeros(h.shape, h.dtype), h.dtype)
    w, v = np.linalg.eigh(h, UPLO=UPLO)
    return _back(xp, w, h.dtype), _back(xp, v, h.dtype)


# ------------------------------------------------------------------ qr
def _qr_infer(a, mode="reduced"):
    _float_matrices("linalg.qr", a)
    if mode not in ("reduced", "complete", "r"):
        raise ShapeError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    m, n = a.shape[-2], a.shape[-1]
    k = _min(m, n)
    batch = a.shape[:-2]
    if mode == "r":
        return TensorType(batch + (0,), a.dtype), TensorType(batch + (k, n), a.dtype)
    cols = m if mode == "complete" else k
    return TensorType(batch + (m, cols), a.dtype), TensorType(batch + (cols, n), a.dtype)


@defop("linalg_qr", _qr_infer, n_out=2, fresh=True)
def _linalg_qr(xp, a, mode="reduced"):
    """``Q, R`` with ``a = Q R`` (Householder, LAPACK's signs); ``mode='r'`` gives an empty
    ``Q``, as PyTorch's."""
    h = _host(xp, a)
    m, n = h.shape[-2:]
    batch = h.shape[:-2]
    if mode == "r":
        r = np.linalg.qr(h, mode="r") if h.size else np.zeros(batch + (min(m, n), n), h.dtype)
        return _back(xp, np.zeros(batch + (0,), h.dtype), h.dtype), _back(xp, r, h.dtype)
    if h.size == 0:
        cols = m if mode == "complete" else min(m, n)
        q = np.broadcast_to(np.eye(m, cols, dtype=h.dtype), batch + (m, cols)).copy()
        return _back(xp, q, h.dtype), _back(xp, np.zeros(batch + (cols, n), h.dtype), h.dtype)
    q, r = np.linalg.qr(h, mode=mode)
    return _back(xp, q, h.dtype), _back(xp, r, h.dtype)


# ------------------------------------------------------------------ lu
def _lu_infer(a):
    _float_matrices("linalg.lu", a)
    m, n = a.shape[-2], a.shape[-1]
    k = _min(m, n)
    batch = a.shape[:-2]
    return (TensorType(batch + (m, m), a.dtype), TensorType(batch + (m, k), a.dtype),
            TensorType(batch + (k, n), a.dtype))


@defop("linalg_lu", _lu_infer, n_out=3, fresh=True)
def _linalg_lu(xp, a):
    """``P, L, U`` with ``a = P L U`` (partial pivoting, LAPACK's getf2 step by step: the first
    largest pivot of each column), L unit lower-triangular (m, k), U upper (k, n)."""
    h = _host(xp, a)
    m, n = h.shape[-2:]
    k = min(m, n)
    batch = h.shape[:-2]
    P = np.zeros(batch + (m, m), h.dtype)
    L = np.zeros(batch + (m, k), h.dtype)
    U = np.zeros(batch + (k, n), h.dtype)
    for idx in np.ndindex(*batch):
        lu, piv, _ = lapack.lu_factor(h[idx])
        perm = np.arange(m)
        for j, p in enumerate(piv):
            perm[[j, p]] = perm[[p, j]]
        P[idx][perm, np.arange(m)] = 1
        L[idx] = np.tril(lu[:, :k], -1) + np.eye(m, k, dtype=h.dtype)
        U[idx] = np.triu(lu[:k, :])
    return _back(xp, P, h.dtype), _back(xp, L, h.dtype), _back(xp, U, h.dtype)


def _lu_pivots_infer(p, k):
    return TensorType(p.shape[:-2] + (int(k),), "int32")


@defop("lu_pivots", _lu_pivots_infer, fresh=True)
def _lu_pivots(xp, p, k):
    """LAPACK's 1-based pivots (the row swapped with row j at step j, for j < k) of the
    permutation matrix ``p`` that ``linalg_lu`` returns (its swaps replayed)."""
    h = _host(xp, p)
    m = h.shape[-1]
    perm = np.argmax(h, axis=-2)  # p[perm[i], i] = 1
    out = np.zeros(h.shape[:-2] + (int(k),), np.int32)
    for idx in np.ndindex(*h.shape[:-2]):
        cur = np.arange(m)
        for j in range(int(k)):
            q = int(np.flatnonzero(cur == perm[idx][j])[0])
            out[idx + (j,)] = q + 1
            cur[[j, q]] = cur[[q, j]]
    return out if xp is np else xp.asarray(out)


# ------------------------------------------------------------------ matrix_exp
def _matrix_exp_infer(a):
    _square("linalg.matrix_exp", a)
    return TensorType(a.shape, a.dtype)


_TAYLOR_DEGREE = 18


def _expm(m):
    """exp of one float64 matrix: scaled to a 1-norm of at most 1/2, Taylor, squared back."""
    norm = np.abs(m).sum(axis=0).max() if m.size else 0.0
    s = max(0, int(math.ceil(math.log2(norm / 0.5)))) if norm > 0.5 and np.isfinite(norm) else 0
    a = m / (2.0 ** s)
    out = np.eye(m.shape[0])
    term = np.eye(m.shape[0])
    for k in range(1, _TAYLOR_DEGREE + 1):
        term = term @ a / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


@defop("linalg_matrix_exp", _matrix_exp_infer, fresh=True)
def _linalg_matrix_exp(xp, a):
    """The matrix exponential of each square matrix (computed in float64)."""
    h = _host(xp, a)
    flat = h.reshape((-1,) + h.shape[-2:]).astype(np.float64)
    out = np.stack([_expm(m) for m in flat]) if flat.shape[0] else flat.copy()
    return _back(xp, out.reshape(h.shape), h.dtype)


# ------------------------------------------------------------------ pinv
_EPS = {"float32": np.finfo(np.float32).eps, "float64": np.finfo(np.float64).eps}


def _pinv_infer(a, atol=None, rtol=None, hermitian=False):
    (_square if hermitian else _float_matrices)("linalg.pinv", a)
    return TensorType(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)


@defop("linalg_pinv", _pinv_infer, fresh=True)
def _linalg_pinv(xp, a, atol=None, rtol=None, hermitian=False):
    """The pseudo-inverse of each matrix, as PyTorch computes it: singular values (``hermitian``:
    absolute eigenvalues) at most ``max(atol, rtol * largest)`` are dropped, ``rtol`` defaulting
    to ``eps * max(m, n)`` when neither is given."""
    h = _host(xp, a)
    m, n = h.shape[-2:]
    if rtol is None:
        rtol = float(_EPS[h.dtype.name]) * max(m, n) if not atol else 0.0
    if h.size == 0:
        return _back(xp, np.zeros(h.shape[:-2] + (n, m), h.dtype), h.dtype)
    if hermitian:
        s, u = np.linalg.eigh(h)
        mag = np.abs(s)
    else:
        u, s, vh = np.linalg.svd(h, full_matrices=False)
        mag = s
    tol = np.maximum(0.0 if atol is None else atol, rtol * mag.max(axis=-1, keepdims=True))
    with np.errstate(divide="ignore"):
        inv = np.where(mag > tol, 1.0 / np.where(mag > tol, s, 1.0), 0.0).astype(h.dtype)
    if hermitian:
        out = (u * inv[..., None, :]) @ np.swapaxes(u, -1, -2)
    else:
        out = (np.swapaxes(vh, -1, -2) * inv[..., None, :]) @ np.swapaxes(u, -1, -2)
    return _back(xp, out, h.dtype)


def _rank_infer(a, atol=None, rtol=None, hermitian=False):
    (_square if hermitian else _float_matrices)("linalg.matrix_rank", a)
    return TensorType(a.shape[:-2], "int64")


@defop("linalg_matrix_rank", _rank_infer, fresh=True)
def _linalg_matrix_rank(xp, a, atol=None, rtol=None, hermitian=False):
    """How many singular values (``hermitian``: absolute eigenvalues) of each matrix exceed
    ``max(atol, rtol * largest)`` (``rtol`` as :func:`linalg_pinv`'s), as int64."""
    h = _host(xp, a)
    m, n = h.shape[-2:]
    if rtol is None:
        rtol = float(_EPS[h.dtype.name]) * max(m, n) if not atol else 0.0
    if h.size == 0:
        return _back(xp, np.zeros(h.shape[:-2], np.int64), np.int64)
    mag = np.abs(np.linalg.eigvalsh(h)) if hermitian else np.linalg.svd(h, compute_uv=False)
    tol = np.maximum(0.0 if atol is None else atol, rtol * mag.max(axis=-1, keepdims=True))
    return _back(xp, (mag > tol).sum(axis=-1).astype(np.int64), np.int64)
