"""LAPACK's unblocked factorizations, step by step in numpy, for the matrices numpy's LAPACK
refuses (a singular matrix, one that is not positive-definite): PyTorch's ``*_ex`` functions
return what LAPACK leaves behind for those, and numpy only raises.

``lu_factor`` is ``getf2`` (partial pivoting, the first largest ``|a|`` as ``idamax`` picks
it; a zero pivot column is recorded in ``info`` and skipped), ``lu_solve`` is ``getrs`` (the
row swaps, then the unit lower and the upper triangular solves, dividing by a zero pivot as
IEEE does: the infinities and NaNs PyTorch returns; ``lu_solve_transposed`` solves with the
transpose, as PyTorch's ``solve_ex(left=False)`` does), and ``cholesky`` is the left-looking
``potf2`` PyTorch's LAPACK runs on small matrices (it stops at the first leading minor that is
not positive, leaving that column's updated diagonal in place and the rest of the lower
triangle as the input's).
"""
import numpy as np


def lu_factor(a):
    """``(LU, pivots, info)`` of one (m, n) matrix (min(m, n) steps): ``pivots[j]`` the row swapped with row j
    (0-based), ``info`` the 1-based index of the first zero pivot (0: none)."""
    lu = np.array(a, copy=True)
    n = min(lu.shape[-2:])
    piv = np.arange(n)
    info = 0
    for j in range(n):
        p = j + int(np.argmax(np.abs(lu[j:, j])))
        piv[j] = p
        if lu[p, j] != 0:
            if p != j:
                lu[[j, p]] = lu[[p, j]]
            lu[j + 1:, j] /= lu[j, j]
        elif info == 0:
            info = j + 1
        lu[j + 1:, j + 1:] -= np.outer(lu[j + 1:, j], lu[j, j + 1:])
    return lu, piv, info


def lu_solve(lu, piv, b):
    """X with ``A X = b`` from :func:`lu_factor`'s ``(LU, pivots)`` of A; ``b`` (n, k)."""
    x = np.array(b, copy=True)
    n = lu.shape[-1]
    for j in range(n):
        p = piv[j]
        if p != j:
            x[[j, p]] = x[[p, j]]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(1, n):
            x[i] -= lu[i, :i] @ x[:i]
        for i in range(n - 1, -1, -1):
            x[i] = (x[i] - lu[i, i + 1:] @ x[i + 1:]) / lu[i, i]
    return x


def lu_solve_transposed(lu, piv, b):
    """X with ``A.T X = b`` from :func:`lu_factor`'s ``(LU, pivots)`` of A (``getrs`` with
    ``trans='T'``: ``U.T``, then ``L.T``, then the row swaps in reverse)."""
    x = np.array(b, copy=True)
    n = lu.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(n):
            x[i] = (x[i] - lu[:i, i] @ x[:i]) / lu[i, i]
        for i in range(n - 2, -1, -1):
            x[i] -= lu[i + 1:, i] @ x[i + 1:]
    for j in range(n - 1, -1, -1):
        p = piv[j]
        if p != j:
            x[[j, p]] = x[[p, j]]
    return x


def cholesky(a):
    """``(L, info)`` of one symmetric matrix, read from its lower triangle: ``info`` the order
    of the first leading minor that is not positive-definite (0: none)."""
    low = np.tril(a)
    n = low.shape[-1]
    for j in range(n):
        d = low[j, j] - low[j, :j] @ low[j, :j]
        if not d > 0:  # (also a NaN)
            low[j, j] = d
            return low, j + 1
        d = np.sqrt(d)
        low[j, j] = d
        low[j + 1:, j] = (low[j + 1:, j] - low[j + 1:, :j] @ low[j, :j]) / d
    return low, 0
