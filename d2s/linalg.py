"""``d2s.linalg``: PyTorch's ``torch.linalg`` functions that d2s has.

The decompositions (``svd``, ``svdvals``, ``eigh``, ``eigvalsh``, ``qr``, ``matrix_exp``) call the
primitives of ``d2s/ops/decompositions.py`` (LAPACK through numpy, with PyTorch's conventions
and gradients), and ``pinv``, ``matrix_rank``, ``lstsq`` and ``solve_triangular`` compose them
(tests: ``tests/ops/test_decompositions.py``). The norms, ``vander``, ``matrix_power``, ``cross``, ``diagonal``, ``vecdot`` and ``multi_dot`` are
compositions of d2s ops; ``inv``, ``det``, ``slogdet``, ``cholesky`` and ``solve``
call the matrix primitives of ``d2s/ops/matrices.py``. Each runs eagerly, inside ``to_static``
and in saved programs, with gradients (ONNX export where ONNX has the operator). Add a function
here with a docstring and a test (the norms': ``tests/test_linalg.py``; the others':
``tests/ops/test_matrices.py``; ``vander``'s: ``tests/ops/test_cumulative.py``).
"""
from d2s_runtime.ops.linalg import LinAlgError

from .dispatch import apply as _apply
from .ops.support import dim_args as _A
from . import return_types as _return_types
from .ops import cumulative as _cumulative, decompositions as _decomp, linalg as _linalg, matrices as _matrices
from .ops import reduce as _reduce
from .ops.creation import ones_like as _ones_like, zeros
from .ops.shape import reshape as _reshape

__all__ = ["vector_norm", "matrix_norm", "norm", "inv", "det", "slogdet", "solve", "vander", "matrix_power", "cholesky", "cross",
           "diagonal", "vecdot", "multi_dot", "svd", "svdvals", "eigh", "eigvalsh", "qr", "pinv", "matrix_rank", "lstsq",
           "solve_triangular", "matrix_exp", "cond", "matmul", "tensorinv", "tensorsolve", "inv_ex", "solve_ex",
           "cholesky_ex", "LinAlgError", "lu", "lu_factor",
           "lu_factor_ex"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, **unsupported):
    """The vector ``ord``-norm of ``x`` over ``dim`` (an int, a tuple, or None: every element),
    as ``torch.linalg.vector_norm``: ``sum(|x|**ord)**(1/ord)``, with ``ord`` inf (largest
    ``|x|``), -inf (smallest), 0 (how many are non-zero); its gradient is 0 where the norm is 0.

    Args:
        x: a floating point tensor.
        ord: a number (default 2).
        dim: the dims to reduce; None: all.
        keepdim: keep the reduced dims with size 1.
        dtype: cast ``x`` to this dtype first.

    Returns:
        The norms, a tensor of ``x``'s dtype.
    """
    _A.no_extra("linalg.vector_norm", unsupported)
    return _reduce._vector_norm("linalg.vector_norm", x, ord, _A.dims("linalg.vector_norm", dim), bool(keepdim), dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, **unsupported):
    """The matrix norm of ``A`` over the two dims ``dim``, as ``torch.linalg.matrix_norm``:
    ``'fro'`` (default), 1 / -1 (largest / smallest column sum of ``|A|``), inf / -inf (row sums),
    2 / -2 (largest / smallest singular value), ``'nuc'`` (their sum).

    Args:
        A: a floating point tensor with at least 2 dims.
        ord: ``'fro'``, ``'nuc'``, 1, -1, 2, -2, inf or -inf.
        dim: the two dims holding the matrices (default the last two).
        keepdim: keep the reduced dims with size 1.
        dtype: cast ``A`` to this dtype first.

    Returns:
        The norms, a tensor of ``A``'s dtype.
    """
    _A.no_extra("linalg.matrix_norm", unsupported)
    return _matrix_norm("linalg.matrix_norm", A, ord, list(dim), bool(keepdim), dtype)


def _matrix_norm(fn, A, ord, dims, keepdim, dtype):
    """``ord`` 2, -2 and ``'nuc'`` from the singular values (the matrices' dims moved last), the
    others by ``ops.reduce``'s sums of absolute values."""
    if not (isinstance(ord, str) and ord == "nuc" or not isinstance(ord, str) and ord in (2, -2)):
        return _reduce._matrix_norm(fn, A, ord, dims, keepdim, dtype)
    A = _reduce._as_tensor(A)
    nd = A.ndim
    if nd < 2 or len(dims) != 2 or int(dims[0]) % nd == int(dims[1]) % nd:
        return _reduce._matrix_norm(fn, A, "fro", dims, keepdim, dtype)  # (its errors for bad dims)
    d0, d1 = int(dims[0]) % nd, int(dims[1]) % nd
    if dtype is not None:
        A = A.to(dtype)
    _reduce._require_float(fn, A, "; norms take floating point tensors only, as in PyTorch")
    s = svdvals(A.movedim((d0, d1), (-2, -1)))
    out = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            out = out.unsqueeze(d)
    return out


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, **unsupported):
    """``torch.linalg.norm``: with ``dim`` an int (or ``A`` 1-d), a vector norm; with two dims (or
    ``A`` 2-d), a matrix norm; with neither ``ord`` nor ``dim``, the 2-norm of all elements.

    Args:
        A: a floating point tensor.
        ord: the norm's order (see :func:`vector_norm` and :func:`matrix_norm`); None: 2 for
            vectors, ``'fro'`` for matrices.
        dim: an int, two ints, or None.
        keepdim: keep the reduced dims with size 1.
        dtype: cast ``A`` to this dtype first.

    Returns:
        The norms, a tensor of ``A``'s dtype.
    """
    _A.no_extra("linalg.norm", unsupported)
    dims = _A.dims("linalg.norm", dim)
    nd = len(getattr(A, "shape", ()))
    if dims is None and ord is None:
        return _reduce._vector_norm("linalg.norm", A, 2, None, bool(keepdim), dtype)
    if dims is None:
        if nd not in (1, 2):
            raise RuntimeError(f"d2s.linalg.norm(): with ord={ord!r} and no dim, the input must be 1-d or 2-d "
                               f"(got {nd} dims); give dim")
        dims = list(range(nd))
    if len(dims) == 1:
        return _reduce._vector_norm("linalg.norm", A, 2 if ord is None else ord, dims, bool(keepdim), dtype)
    if len(dims) == 2:
        return _matrix_norm("linalg.norm", A, "fro" if ord is None else ord, dims, bool(keepdim), dtype)
    raise RuntimeError(f"d2s.linalg.norm(): dim must be one or two ints, got {dim!r}")


def inv(A, *, out=None):
    """The inverse of each square matrix of ``A`` (..., n, n), as ``torch.linalg.inv``; a singular
    matrix raises.

    Args:
        A: a float32 or float64 tensor of square matrices.

    Returns:
        A tensor of ``A``'s shape and dtype.
    """
    _no_out("inv", out)
    return _matrices.inverse(A)


def det(A, *, out=None):
    """The determinant of each square matrix of ``A`` (..., n, n), as ``torch.linalg.det``.

    Args:
        A: a float32 or float64 tensor of square matrices.

    Returns:
        A tensor of shape (...) and ``A``'s dtype.
    """
    _no_out("det", out)
    return _matrices.det(A)


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of the determinant of each square matrix of ``A``, as
    ``torch.linalg.slogdet`` (sign 0 and logabsdet -inf for a singular matrix).

    Args:
        A: a float32 or float64 tensor of square matrices.

    Returns:
        The named tuple ``(sign, logabsdet)``, each of shape (...) and ``A``'s dtype.
    """
    _no_out("slogdet", out)
    return _return_types.linalg_slogdet(*_matrices.slogdet(A))


def solve(A, B, *, left=True, out=None):
    """X with ``A @ X = B`` (``X @ A = B`` with ``left=False``), as ``torch.linalg.solve``: ``A``
    square matrices (..., n, n), ``B`` matrices (..., n, k) or vectors (n,) or (..., n); batch dims
    broadcast. A singular ``A`` raises.

    Args:
        A: a float32 or float64 tensor of square matrices.
        B: a tensor of ``A``'s dtype.
        left: solve ``A X = B`` (True) or ``X A = B`` (False).

    Returns:
        X, of ``B``'s shape broadcast with ``A``'s batch dims.
    """
    return _matrices._solve(A, B, left=left, out=out)


def vander(x, *, N=None):
    """The Vandermonde matrices of ``x`` (..., n), as ``torch.linalg.vander``: the last dim holds
    the increasing powers ``x**0, ..., x**(N-1)``, each a running product (PyTorch's values);
    integer inputs give int64.

    Args:
        x: a float or integer tensor (a 0-d one is taken as 1-d).
        N: how many powers (default ``x.shape[-1]``); more than 1.

    Returns:
        A tensor of shape (..., n, N).
    """
    t = _cumulative._as_tensor(x)
    if str(t.dtype) == "bool":
        raise TypeError("d2s.linalg.vander(): supports floating point and integer tensors, but got bool")
    if t.ndim == 0:
        t = t.reshape(1)
    n = t.shape[-1] if N is None else int(N)
    if isinstance(n, int) and n <= 1:
        raise ValueError(f"d2s.linalg.vander(): N must be greater than 1, got {n}")
    return _cumulative._powers(t.unsqueeze(-1), n)


def matrix_power(A, n, *, out=None):
    """``A`` (square matrices (..., m, m)) to the int power ``n``, as ``torch.linalg.matrix_power``
    (the identity for 0, powers of the inverse for negative ``n``).

    Args:
        A: a tensor of square matrices.
        n: an int.

    Returns:
        A tensor of ``A``'s shape and dtype.
    """
    _no_out("matrix_power", out)
    return _matrices.matrix_power(A, n)


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor of each symmetric positive-definite matrix of ``A`` (read from its lower
    triangle), as ``torch.linalg.cholesky``: lower-triangular L with ``A = L @ L.mT`` (``upper``:
    U = L.mT). A matrix that is not positive-definite raises.

    Args:
        A: a float32 or float64 tensor of square matrices.
        upper: return the upper-triangular factor.

    Returns:
        A tensor of ``A``'s shape and dtype.
    """
    _no_out("cholesky", out)
    return _matrices.cholesky(A, upper)


def cross(input, other, *, dim=-1, out=None):
    """The cross product of the 3-vectors along ``dim`` (default the last) of ``input`` and
    ``other``, broadcast together, as ``torch.linalg.cross``.

    Args:
        input, other: tensors whose ``dim`` has size 3.
        dim: the dim holding the vectors.

    Returns:
        The broadcast shape's tensor of cross products.
    """
    _no_out("cross", out)
    if input.ndim != other.ndim:
        raise ValueError(f"d2s.linalg.cross(): inputs must have the same number of dimensions, got {input.ndim} "
                         f"and {other.ndim}")
    return _linalg.cross(input, other, dim=dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices in the last two dims of ``A`` (or ``dim1``/``dim2``), as
    ``torch.linalg.diagonal``: ``torch.diagonal`` with matrix-first defaults.

    Args:
        A: a tensor of at least 2 dims.
        offset: which diagonal (0 main, > 0 above, < 0 below).
        dim1, dim2: the dims holding the matrices.

    Returns:
        A view with those two dims replaced by a last dim holding the diagonal.
    """
    return _linalg.diagonal(A, offset, dim1, dim2)


def vecdot(x, y, *, dim=-1, out=None):
    """The dot products of the vectors along ``dim`` of ``x`` and ``y``, broadcast together, as
    ``torch.linalg.vecdot`` (real tensors: ``(x * y).sum(dim)``).

    Args:
        x, y: tensors.
        dim: the dim holding the vectors.

    Returns:
        The broadcast shape without ``dim``.
    """
    _no_out("vecdot", out)
    return (x * y).sum(dim)


def multi_dot(tensors, *, out=None):
    """The product of the matrices ``tensors`` in the cheapest order, as
    ``torch.linalg.multi_dot`` (the same order as PyTorch's, so the same rounding): the first may
    be a 1-d row vector and the last a 1-d column vector, the others 2-d.

    Args:
        tensors: a sequence of at least 2 tensors.

    Returns:
        The product: 2-d, 1-d where the first or last is 1-d, 0-d where both are.
    """
    _no_out("multi_dot", out)
    mats = list(tensors)
    n = len(mats)
    if n < 2:
        raise ValueError(f"d2s.linalg.multi_dot(): expected at least 2 tensors but got {n}")
    first_1d, last_1d = mats[0].ndim == 1, mats[-1].ndim == 1
    if first_1d:
        mats[0] = mats[0].unsqueeze(0)
    if last_1d:
        mats[-1] = mats[-1].unsqueeze(-1)
    for k, m in enumerate(mats):
        if m.ndim != 2:
            raise ValueError(f"d2s.linalg.multi_dot(): tensor {k} must be 2-d (the first and last may be 1-d), "
                             f"got {m.ndim} dims")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    if n > 2 and any(getattr(d, "is_symbolic", False) for d in dims):
        raise ValueError("d2s.linalg.multi_dot(): the order of the products is chosen from the matrices' sizes, "
                         "but some are known only when the program runs; give them fixed sizes (InputSpec) or "
                         "write the products with @")
    if n == 2:
        out = mats[0] @ mats[1]
    elif n == 3:
        a, b = mats[0].shape
        c, d = mats[2].shape
        # PyTorch's choice: (AB)C unless A(BC) is strictly cheaper
        out = mats[0] @ (mats[1] @ mats[2]) if a * c * (b + d) > b * d * (a + c) else (mats[0] @ mats[1]) @ mats[2]
    else:
        out = _chain(mats, _chain_order([int(d) for d in dims]), 0, n - 1)
    if first_1d and last_1d:
        return out.reshape(())
    if first_1d:
        return out.squeeze(0)
    return out.squeeze(-1) if last_1d else out


def _chain_order(p):
    """The split of each sub-chain that multiplies it cheapest (the textbook matrix-chain dynamic
    program, first cheapest split on ties, as PyTorch's)."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return _chain(mats, split, i, k) @ _chain(mats, split, k + 1, j)


def _no_out(fn, out):
    if out is not None:
        raise TypeError(f"d2s.linalg.{fn}(): out= is not supported; use the returned tensor")


# ------------------------------------------------------------------ decompositions
def svd(A, full_matrices=True, *, driver=None, **unsupported):
    """The singular value decomposition ``A = U diag(S) Vh``, as ``torch.linalg.svd``: the named
    tuple ``(U, S, Vh)``, singular values descending; ``full_matrices=True`` (PyTorch's default)
    gives ``U`` m x m and ``Vh`` n x n, else m x k and k x n. Differentiable (PyTorch's rule; only
    the first k columns of a full ``U`` carry a gradient).

    Args:
        A: a float tensor of matrices (..., m, n).
        full_matrices: whether to return the full factors.
        driver: accepted for PyTorch's signature (a GPU option); must be None.

    Returns:
        ``(U, S, Vh)``.
    """
    _A.no_extra("linalg.svd", unsupported)
    if driver is not None:
        raise ValueError(f"linalg.svd: driver={driver!r} chooses a cuSOLVER routine (GPU only, as PyTorch's); leave it None")
    U, S, Vh = _decomp._svd(A, full_matrices)
    return _return_types.linalg_svd(U, S, Vh)


def svdvals(A, *, driver=None):
    """The singular values of each matrix of ``A`` (descending), as ``torch.linalg.svdvals``."""
    if driver is not None:
        raise ValueError(f"linalg.svdvals: driver={driver!r} is a GPU option; leave it None")
    return _decomp._svd(A, False)[1]


def eigh(A, UPLO="L"):
    """The eigenvalues (ascending) and orthonormal eigenvectors (columns) of each symmetric
    matrix of ``A``, read from its lower (``UPLO='L'``, PyTorch's default) or upper triangle, as
    ``torch.linalg.eigh``: the named tuple ``(eigenvalues, eigenvectors)``. Differentiable."""
    L, Q = _decomp._eigh(A, UPLO)
    return _return_types.linalg_eigh(L, Q)


def eigvalsh(A, UPLO="L"):
    """The eigenvalues (ascending) of each symmetric matrix of ``A``, as ``torch.linalg.eigvalsh``."""
    return _decomp._eigh(A, UPLO)[0]


def qr(A, mode="reduced"):
    """The QR decomposition ``A = Q R``, as ``torch.linalg.qr``: the named tuple ``(Q, R)``;
    ``mode`` ``'reduced'`` (default), ``'complete'`` or ``'r'`` (``Q`` empty). Differentiable for
    matrices with at least as many rows as columns (not with ``mode='r'``, as PyTorch's)."""
    Q, R = _decomp._qr(A, mode)
    return _return_types.linalg_qr(Q, R)


def matrix_exp(A):
    """The matrix exponential of each square matrix of ``A``, as ``torch.linalg.matrix_exp``."""
    return _decomp._matrix_exp(A)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None):
    """The Moore-Penrose pseudo-inverse, as ``torch.linalg.pinv``: singular values (``hermitian``:
    absolute eigenvalues) at most ``max(atol, rtol * largest)`` are dropped, ``rtol`` defaulting
    to ``eps * max(m, n)`` when neither is given (``rcond`` is ``rtol``'s old name)."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("linalg.pinv: rcond is rtol's old name; give one of them")
        rtol = rcond
    return _decomp._pinv(A, atol=atol, rtol=rtol, hermitian=hermitian)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None):
    """The number of singular values (``hermitian``: absolute eigenvalues) above
    ``max(atol, rtol * largest)`` of each matrix, as ``torch.linalg.matrix_rank`` (int64);
    ``tol`` is ``atol``'s old name."""
    if tol is not None:
        atol = tol
    return _decomp._matrix_rank(A, atol=atol, rtol=rtol, hermitian=hermitian)


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of ``A X = B``, as ``torch.linalg.lstsq``: the named tuple
    ``(solution, residuals, rank, singular_values)`` (the minimum-norm solution, through the
    pseudo-inverse with cut-off ``rcond``). As PyTorch's CPU drivers: ``rank`` for 'gelsy' (the
    default), 'gelsd' and 'gelss'; ``singular_values`` for 'gelsd' and 'gelss'; ``residuals``
    (squared, per column) for 'gelsd', 'gelss' and 'gels' when m > n and A has full rank; empty
    otherwise."""
    driver = driver or "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), "
                           f"got {driver!r}")
    A, B = _decomp._as_tensor(A), _decomp._as_tensor(B)
    if B.ndim == A.ndim - 1:
        raise ValueError("linalg.lstsq: B must have as many dims as A ((..., m, k)); unsqueeze a vector to (m, 1)")
    m, n = A.shape[-2], A.shape[-1]
    X = _linalg.matmul(_decomp._pinv(A, rtol=rcond), B)
    empty = _reshape(X, [-1])[:0]  # (an empty result carries X's history, as PyTorch's does)
    rank = _decomp._matrix_rank(A, rtol=rcond) if driver != "gels" else zeros(0, dtype="int64")
    svals = _decomp._svd(A, False)[1].detach() if driver in ("gelsd", "gelss") else empty.detach()
    residuals = empty
    if driver != "gelsy" and m > n and bool((_decomp._matrix_rank(A, rtol=rcond) == min(m, n)).all()):
        diff = _linalg.matmul(A, X) - B
        residuals = (diff * diff).sum(-2)
    return _return_types.linalg_lstsq(X, residuals, rank, svals)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """The solution ``X`` of ``A X = B`` (``left=False``: ``X A = B``) for triangular ``A``, as
    ``torch.linalg.solve_triangular``: only ``A``'s upper (``upper=True``) or lower triangle is
    read, its diagonal taken as ones with ``unitriangular``. Differentiable (the gradient of
    ``A`` lies in that triangle)."""
    A = _decomp._as_tensor(A)
    if upper:
        T = _linalg.triu(A, 1 if unitriangular else 0)
    else:
        T = _linalg.tril(A, -1 if unitriangular else 0)
    if unitriangular:
        T = T + _linalg.diag_embed(_ones_like(_linalg.diagonal(A, 0, -2, -1)))
    return solve(T, B, left=left)


# ------------------------------------------------------------------ more of torch.linalg
def matmul(input, other):
    """``torch.linalg.matmul``: :func:`d2s.matmul`."""
    return _linalg.matmul(input, other)


def cond(A, p=None):
    """The condition number of each square matrix in the matrix norm ``p``, as
    ``torch.linalg.cond``: for ``p`` None or 2 (-2) the ratio of the largest (smallest) singular
    value to the smallest (largest); for 'fro', 'nuc', inf, -inf, 1, -1 ``norm(A) * norm(inv(A))``."""
    if p is None or p == 2 or p == -2:
        S = svdvals(A)
        big, small = S[..., 0], S[..., -1]
        return small / big if p == -2 else big / small
    if p == "nuc":
        return svdvals(A).sum(-1) * svdvals(inv(A)).sum(-1)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def tensorinv(A, ind=2):
    """The inverse of ``A`` as a tensor product (``tensordot(tensorinv(A), A, ind)`` is the
    identity), as ``torch.linalg.tensorinv``: shape ``A.shape[ind:] + A.shape[:ind]``."""
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(int(s) for s in A.shape)
    rows, cols = shape[:ind], shape[ind:]
    n = int(_prod(rows))
    if n != int(_prod(cols)):
        raise RuntimeError(f"linalg.tensorinv: expected prod(A.shape[:ind]) == prod(A.shape[ind:]), got {shape}")
    return _reshape(inv(_reshape(A, [n, n])), list(cols) + list(rows))


def tensorsolve(A, B, dims=None):
    """The ``X`` with ``tensordot(A, X, X.ndim) == B``, as ``torch.linalg.tensorsolve``
    (``dims``: dims of ``A`` moved to the end first)."""
    if dims is not None:
        nd = A.ndim
        moved = [d % nd for d in dims]
        A = A.permute([d for d in range(nd) if d not in moved] + moved)
    rest = tuple(int(s) for s in A.shape[B.ndim:])
    n = int(_prod(tuple(int(s) for s in B.shape)))
    return _reshape(solve(_reshape(A, [n, -1]), _reshape(B, [n])), list(rest))


def _prod(shape):
    out = 1
    for s in shape:
        out *= s
    return out


def inv_ex(A, *, check_errors=False, out=None):
    """The inverse of each square matrix of ``A`` with a failure report, as
    ``torch.linalg.inv_ex``: a singular matrix does not raise (unless ``check_errors``) but is
    reported in ``info``.

    Where PyTorch's LAPACK finds an exactly zero pivot, so does d2s, and the inverse holds what
    LAPACK's solve leaves there (infinities and NaNs, PyTorch's values). A matrix singular only
    up to rounding may factor with a tiny pivot in one LAPACK and a zero one in another: there
    info and the (meaningless) values can differ from PyTorch's.

    Args:
        A: a float32 or float64 tensor of square matrices (..., n, n).
        check_errors: raise :class:`LinAlgError` (a RuntimeError) for the first singular matrix.

    Returns:
        The named tuple ``(inverse, info)``: ``inverse`` of ``A``'s shape and dtype, ``info`` int32
        of shape (...): 0, or the 1-based index of the first zero pivot of the matrix's LU
        factorization (PyTorch's value).
    """
    _no_out("inv_ex", out)
    return _return_types.linalg_inv_ex(*_apply("linalg_inv_ex", _decomp._as_tensor(A), check_errors=bool(check_errors)))


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """:func:`solve` with a failure report, as ``torch.linalg.solve_ex``: a singular ``A`` does
    not raise (unless ``check_errors``) but is reported in ``info``, and the result holds what
    LAPACK's solve leaves (as :func:`inv_ex`'s inverse; ``left=False`` factors ``A.mT``, as
    PyTorch does).

    Args:
        A: a float32 or float64 tensor of square matrices (..., n, n).
        B: a tensor of ``A``'s dtype: matrices (..., n, k) or vectors, as :func:`solve`'s.
        left: solve ``A X = B`` (True) or ``X A = B`` (False).
        check_errors: raise :class:`LinAlgError` (a RuntimeError) for a singular matrix.

    Returns:
        The named tuple ``(result, info)``: ``result`` as :func:`solve`'s, ``info`` int32 of
        ``A``'s batch shape, as :func:`inv_ex`'s.
    """
    return _return_types.linalg_solve_ex(*_matrices._solve(A, B, left=left, out=out, ex=True,
                                                           check_errors=check_errors))


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """The Cholesky factor of each symmetric matrix of ``A`` (read from its lower triangle) with
    a failure report, as ``torch.linalg.cholesky_ex``: a matrix that is not positive-definite
    does not raise (unless ``check_errors``) but is reported in ``info``, and its factor holds
    what PyTorch's LAPACK leaves (the columns before the failing one factored, that column's
    diagonal entry the non-positive value found, the rest of the lower triangle ``A``'s).

    Args:
        A: a float32 or float64 tensor of square matrices (..., n, n).
        upper: return the upper-triangular factor (the transpose).
        check_errors: raise :class:`LinAlgError` (a RuntimeError) for the first failing matrix.

    Returns:
        The named tuple ``(L, info)``: ``L`` of ``A``'s shape and dtype, ``info`` int32 of shape
        (...): 0, or the order of the first leading minor that is not positive-definite.
    """
    _no_out("cholesky_ex", out)
    low, info = _apply("linalg_cholesky_ex", _decomp._as_tensor(A), check_errors=bool(check_errors))
    return _return_types.linalg_cholesky_ex(low.mT if upper else low, info)


def chain_matmul(*matrices):
    """``torch.chain_matmul`` (``torch.linalg.multi_dot`` of 2-d matrices given one by one; a
    single matrix is returned as it is)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if any(m.ndim != 2 for m in matrices):
        raise RuntimeError("chain_matmul(): expected 2D tensors, got dims " + str([m.ndim for m in matrices]))
    if len(matrices) == 1:
        return matrices[0]
    return multi_dot(matrices)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """The older ``torch.triangular_solve`` (``Tensor.triangular_solve``): the named tuple
    ``(solution, cloned_coefficient)`` with ``A X = b`` (``A.mT X = b`` with ``transpose``) for
    triangular ``A`` (only its ``upper`` or lower triangle read), and a copy of ``A``; see
    :func:`solve_triangular`, which takes its arguments the other way round."""
    _no_out("triangular_solve", out)
    A = _decomp._as_tensor(A)
    if transpose:
        x = solve_triangular(A.mT, b, upper=not upper, unitriangular=unitriangular)
    else:
        x = solve_triangular(A, b, upper=upper, unitriangular=unitriangular)
    return _return_types.triangular_solve(x, A.clone())


def lu(A, *, pivot=True, out=None):
    """The LU decomposition with partial pivoting, as ``torch.linalg.lu``: the named tuple
    ``(P, L, U)`` with ``A = P @ L @ U``, ``P`` a permutation matrix, ``L`` unit
    lower-triangular (m, k) and ``U`` upper-triangular (k, n), k = min(m, n). The pivots are
    LAPACK's (the first largest entry of each column), so P, L and U are PyTorch's; gradients for
    square matrices (PyTorch's formula).

    Args:
        A: a float32 or float64 tensor of matrices (..., m, n).
        pivot: True (PyTorch's False is CUDA-only).

    Returns:
        The named tuple ``(P, L, U)``.
    """
    _no_out("lu", out)
    return _return_types.linalg_lu(*_decomp._lu(A, pivot))


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """The LU decomposition in LAPACK's compact form, as ``torch.linalg.lu_factor_ex``: the
    named tuple ``(LU, pivots, info)``: L's strict lower triangle and U in one (m, n) matrix,
    the 1-based row swaps (int32, (..., k)) and info (int32, (...)): 0, or the 1-based index of
    U's first zero diagonal entry (a singular matrix is reported, not raised, unless
    ``check_errors``; eagerly only). Differentiable in ``LU`` as :func:`lu` is.

    Args:
        A: a float32 or float64 tensor of matrices (..., m, n).
        pivot: True (PyTorch's False is CUDA-only).
        check_errors: raise :class:`LinAlgError` for a singular matrix.

    Returns:
        The named tuple ``(LU, pivots, info)``.
    """
    _no_out("lu_factor_ex", out)
    LU, pivots, info = _decomp._lu_factor(A, pivot)
    if check_errors:
        _raise_if_singular("linalg.lu_factor_ex", info)
    return _return_types.linalg_lu_factor_ex(LU, pivots, info)


def lu_factor(A, *, pivot=True, out=None):
    """The LU decomposition in LAPACK's compact form, as ``torch.linalg.lu_factor``: the named
    tuple ``(LU, pivots)`` of :func:`lu_factor_ex`; a singular matrix raises (eagerly), as
    PyTorch's does."""
    _no_out("lu_factor", out)
    LU, pivots, info = _decomp._lu_factor(A, pivot)
    _raise_if_singular("linalg.lu_factor", info)
    return _return_types.linalg_lu_factor(LU, pivots)


def _raise_if_singular(name, info):
    if info.is_symbolic:
        return  # (a program cannot stop on its data; info holds the answer)
    flat = info.numpy().reshape(-1)
    bad = [i for i, v in enumerate(flat) if v > 0]
    if bad:
        k = int(flat[bad[0]])
        where = f"(Batch element {bad[0]}): " if info.ndim else ""
        raise LinAlgError(f"{name}: {where}U[{k},{k}] is zero and using it on lu_solve would result in a division by "
                          f"zero. If you still want to perform the factorization, consider calling linalg.lu(A, "
                          f"pivot) or linalg.lu_factor_ex(A, pivot)")
