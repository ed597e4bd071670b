"""``d2s.linalg``: PyTorch's ``torch.linalg`` functions that d2s has.

The norms and ``vander`` are compositions of d2s ops; ``inv``, ``det``, ``slogdet`` and ``solve``
call the matrix primitives of ``d2s/ops/matrices.py``. Each runs eagerly, inside ``to_static``
and in saved programs, with gradients (ONNX export where ONNX has the operator). Add a function
here with a docstring and a test (the norms': ``tests/test_linalg.py``; the matrix functions':
``tests/ops/test_matrices.py``; ``vander``'s: ``tests/ops/test_cumulative.py``).
"""
from .ops.support import dim_args as _A
from . import return_types as _return_types
from .ops import cumulative as _cumulative, matrices as _matrices, reduce as _reduce

__all__ = ["vector_norm", "matrix_norm", "norm", "inv", "det", "slogdet", "solve", "vander", "matrix_power"]


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
    ``'fro'`` (default), 1 / -1 (largest / smallest column sum of ``|A|``), inf / -inf (row sums).
    ``'nuc'``, 2 and -2 need singular values and raise NotImplementedError.

    Args:
        A: a floating point tensor with at least 2 dims.
        ord: ``'fro'``, 1, -1, inf or -inf.
        dim: the two dims holding the matrices (default the last two).
        keepdim: keep the reduced dims with size 1.
        dtype: cast ``A`` to this dtype first.

    Returns:
        The norms, a tensor of ``A``'s dtype.
    """
    _A.no_extra("linalg.matrix_norm", unsupported)
    return _reduce._matrix_norm("linalg.matrix_norm", A, ord, list(dim), bool(keepdim), dtype)


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
        return _reduce._matrix_norm("linalg.norm", A, "fro" if ord is None else ord, dims, bool(keepdim), dtype)
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


def _no_out(fn, out):
    if out is not None:
        raise TypeError(f"d2s.linalg.{fn}(): out= is not supported; use the returned tensor")
