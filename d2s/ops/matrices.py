"""Inverses, determinants, powers, Cholesky factors and linear solves of square matrices, with PyTorch's names (runtime:
``linalg_inv``, ``linalg_det``, ``linalg_slogdet``, ``linalg_cholesky`` and ``linalg_solve`` in
``d2s_runtime/ops/linalg.py``): ``torch.inverse``/``det``/``slogdet``/``logdet``/``matrix_power``/``cholesky`` and
their Tensor methods here; ``torch.linalg.inv``/``det``/``slogdet``/``solve``/``matrix_power``/``cholesky`` in
``d2s/linalg.py``.

Each works on batches (..., n, n) of float32/float64 matrices. Gradients are PyTorch's formulas
for invertible matrices (``d inv(A) = -inv(A) dA inv(A)``, ``d det(A) = det(A) tr(inv(A) dA)``);
a singular matrix has no inverse, and its inverse, solve and the gradient of its determinant raise.
"""
from .. import return_types
from ..autograd.registry import grad_rule, sample_call
from ..dispatch import apply
from ..onnx.registry import onnx_converter, onnx_unsupported
from ..tensor import tensor_method
from .creation import eye, full_like, ones_like
from .elementwise import eq, lt, where
from .linalg import diag_embed, diagonal, matmul, tril
from .shape import clone, squeeze, transpose, unsqueeze
from ._util import _as_tensor, _is_diff, _is_symbolic, _shape, unbroadcast



def _mT(x):
    return transpose(x, -2, -1)


# ------------------------------------------------------------------ inverse
@tensor_method()
def inverse(input):
    """The inverse of each square matrix of ``input`` (..., n, n), as ``torch.inverse`` and
    ``torch.linalg.inv``; a singular matrix raises.

    Args:
        input: a float32 or float64 tensor of square matrices.

    Returns:
        A tensor of ``input``'s shape and dtype.
    """
    return apply("linalg_inv", _as_tensor(input))


@grad_rule("linalg_inv")
def _inv_grad(ctx, g):
    y = _mT(ctx.outputs[0])
    return (-matmul(matmul(y, g), y),)


@grad_rule("linalg_inv_ex")
def _inv_ex_grad(ctx, g, g_info):
    del g_info  # info is an int32 count
    return _inv_grad(ctx, g) if g is not None else (None,)


onnx_unsupported("linalg_inv", "linalg_inv_ex",
                 reason="standard ONNX has no matrix inverse (only com.microsoft's Inverse)")


# ------------------------------------------------------------------ det, slogdet, logdet
@tensor_method()
def det(input):
    """The determinant of each square matrix of ``input`` (..., n, n), as ``torch.det`` and
    ``torch.linalg.det``.

    Args:
        input: a float32 or float64 tensor of square matrices.

    Returns:
        A tensor of shape (...) and ``input``'s dtype.
    """
    return apply("linalg_det", _as_tensor(input))


@grad_rule("linalg_det")
def _det_grad(ctx, g):
    a, d = ctx.inputs[0], ctx.outputs[0]
    scale = unsqueeze(unsqueeze(g * d, -1), -1)
    return (scale * _mT(inverse(a)),)


@onnx_converter("linalg_det")
def _det_onnx(g, op):
    if g.dtype(op.inputs[0]) != "float32":
        raise g.unsupported(op, "onnxruntime computes Det in float32 only; export a float32 model, or compute the "
                                "determinant outside it")
    g.node("Det", op.inputs, op.outputs)


@tensor_method()
def slogdet(input):
    """The sign and the log of the absolute value of the determinant of each square matrix of
    ``input``, as ``torch.slogdet`` and ``torch.linalg.slogdet``: the named tuple
    ``(sign, logabsdet)`` (sign 0 and logabsdet -inf for a singular matrix). Only ``logabsdet``
    carries a gradient.

    Args:
        input: a float32 or float64 tensor of square matrices.

    Returns:
        ``(sign, logabsdet)``, each of shape (...) and ``input``'s dtype.
    """
    return return_types.slogdet(*apply("linalg_slogdet", _as_tensor(input)))


@grad_rule("linalg_slogdet")
def _slogdet_grad(ctx, g_sign, g_logabs):
    del g_sign  # the sign is piecewise constant: no gradient flows through it
    if g_logabs is None:
        return (None,)
    return (unsqueeze(unsqueeze(g_logabs, -1), -1) * _mT(inverse(ctx.inputs[0])),)


onnx_unsupported("linalg_slogdet", reason="ONNX has no log-determinant (Det would overflow where slogdet does not)")


@tensor_method()
def logdet(input):
    """The log of the determinant of each square matrix of ``input``, as ``torch.logdet``: NaN
    where the determinant is negative, -inf where it is 0.

    Args:
        input: a float32 or float64 tensor of square matrices.

    Returns:
        A tensor of shape (...) and ``input``'s dtype.
    """
    sign, logabs = slogdet(input)
    logabs = where(eq(sign, 0), full_like(logabs, float("-inf")), logabs)
    return where(lt(sign, 0), full_like(logabs, float("nan")), logabs)


# ------------------------------------------------------------------ cholesky
@tensor_method()
def cholesky(input, upper=False):
    """The Cholesky factor of each symmetric positive-definite matrix of ``input`` (..., n, n),
    read from its lower triangle, as ``torch.cholesky``/``torch.linalg.cholesky``: lower-triangular
    L with ``input = L @ L.mT`` (with ``upper``, its transpose U, ``input = U.mT @ U``). A matrix
    that is not positive-definite raises.

    Args:
        input: a float32 or float64 tensor of square matrices.
        upper: return the upper-triangular factor.

    Returns:
        A tensor of ``input``'s shape and dtype.
    """
    lower = apply("linalg_cholesky", _as_tensor(input))
    return _mT(lower) if upper else lower


@grad_rule("linalg_cholesky")
def _cholesky_grad(ctx, g):
    # PyTorch's: inv(L).mH @ phi(L.mH @ gL) @ inv(L), phi = the lower triangle with its diagonal
    # halved, then symmetrized (only A's symmetric part is seen)
    low = ctx.outputs[0]
    low_inv = inverse(low)
    phi = tril(matmul(_mT(low), g))
    phi = phi - 0.5 * diag_embed(diagonal(phi, 0, -2, -1))
    grad = matmul(matmul(_mT(low_inv), phi), low_inv)
    return (0.5 * (grad + _mT(grad)),)


@grad_rule("linalg_cholesky_ex")
def _cholesky_ex_grad(ctx, g, g_info):
    del g_info  # info is an int32 count
    return _cholesky_grad(ctx, g) if g is not None else (None,)


onnx_unsupported("linalg_cholesky", "linalg_cholesky_ex", reason="standard ONNX has no Cholesky factorization")


# ------------------------------------------------------------------ matrix_power
@tensor_method()
def matrix_power(input, n):
    """``input`` (square matrices (..., m, m)) multiplied by itself ``n`` times, as
    ``torch.matrix_power`` and ``torch.linalg.matrix_power``: the identity for ``n = 0``, powers of
    the inverse for ``n < 0`` (float matrices only); the products are PyTorch's (binary powering).

    Args:
        input: a tensor of square matrices.
        n: an int.

    Returns:
        A tensor of ``input``'s shape and dtype.
    """
    a = _as_tensor(input)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"matrix_power: n must be an int, got {type(n).__name__}")
    if a.ndim < 2 or (not any(_is_symbolic(d) for d in a.shape[-2:]) and a.shape[-1] != a.shape[-2]):
        raise ValueError(f"matrix_power: needs square matrices (..., m, m), got shape {tuple(a.shape)}")
    if n == 0:
        return diag_embed(ones_like(a[..., 0]))  # (a.shape, a.dtype; its dims may be known only at run time)
    if n < 0:
        a, n = inverse(a), -n
    if n == 1:
        return clone(a)
    result = square = None
    while n > 0:  # PyTorch's order of products: the powers of two from the lowest bit up
        bit, n = n % 2, n // 2
        square = a if square is None else matmul(square, square)
        if bit:
            result = square if result is None else matmul(result, square)
    return result


# ------------------------------------------------------------------ solve
def _solve(A, B, *, left=True, out=None, ex=False, check_errors=False):
    """The solution X of ``A @ X = B`` (``X @ A = B`` with ``left=False``), as
    ``torch.linalg.solve``: ``A`` square matrices (..., n, n); ``B`` matrices (..., n, k), or
    vectors (n,) or (..., n) where its shape is ``A``'s but the last dim; batch dims broadcast.
    A singular ``A`` raises.

    Args:
        A: a float32 or float64 tensor of square matrices.
        B: a tensor of ``A``'s dtype.
        left: solve ``A X = B`` (True) or ``X A = B`` (False).
        ex: ``torch.linalg.solve_ex``'s form: return ``(X, info)`` (the ``linalg_solve_ex`` op),
            a singular ``A`` reported in info (raising only with ``check_errors``).

    Returns:
        X, of ``B``'s shape (broadcast with ``A``'s batch dims); with ``ex``, ``(X, info)``.
    """
    name = "solve_ex" if ex else "solve"
    if out is not None:
        raise TypeError(f"d2s.linalg.{name}(): out= is not supported; use the returned tensor")
    a, b = _as_tensor(A), _as_tensor(B)
    if b.dtype != a.dtype:
        raise TypeError(f"d2s.linalg.{name}(): B must have A's dtype ({a.dtype}), got {b.dtype}")
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))

    def solve_op(a, b):
        if ex:
            return apply("linalg_solve_ex", a, b, check_errors=bool(check_errors))
        return apply("linalg_solve", a, b), None

    if not left:
        if vector:
            raise ValueError(f"d2s.linalg.{name}(): left=False needs B to be matrices, got a vector")
        if ex:  # PyTorch factors A itself and solves with its transpose (info: A's)
            x, info = apply("linalg_solve_ex", a, _mT(b), check_errors=bool(check_errors), trans=True)
        else:
            x, info = solve_op(_mT(a), _mT(b))
        x = _mT(x)
    elif vector:
        x, info = solve_op(a, unsqueeze(b, -1))
        x = squeeze(x, -1)
    else:
        x, info = solve_op(a, b)
    return (x, info) if ex else x


@grad_rule("linalg_solve")
def _solve_grad(ctx, g):
    a, b = ctx.inputs
    x = ctx.outputs[0]
    gb = apply("linalg_solve", _mT(a), g)
    ga = -matmul(gb, _mT(x)) if _is_diff(a) else None
    return (unbroadcast(ga, _shape(a)) if ga is not None else None,
            unbroadcast(gb, _shape(b)) if _is_diff(b) else None)


@grad_rule("linalg_solve_ex")
def _solve_ex_grad(ctx, g, g_info):
    del g_info  # info is an int32 count
    if g is None:
        return None, None
    a, b = ctx.inputs
    x = ctx.outputs[0]
    trans = ctx.attrs.get("trans", False)
    # X = A^-1 B: gB = A^-T g, gA = -gB X^T; with trans (X = A^-T B): gB = A^-1 g, gA = -X gB^T
    gb = apply("linalg_solve_ex", a, g, trans=not trans)[0]
    ga = (-matmul(x, _mT(gb)) if trans else -matmul(gb, _mT(x))) if _is_diff(a) else None
    return (unbroadcast(ga, _shape(a)) if ga is not None else None,
            unbroadcast(gb, _shape(b)) if _is_diff(b) else None)


onnx_unsupported("linalg_solve", "linalg_solve_ex", reason="standard ONNX has no linear solve")


def _well_conditioned(x):
    """A random square matrix made safely invertible (the registry's example calls)."""
    return x + eye(x.shape[-1], dtype=x.dtype) * (2.0 * x.shape[-1])


def _det_example(x):
    """:func:`det` of a well-conditioned matrix (the registry's example call)."""
    return det(_well_conditioned(x))


sample_call("linalg_det", _det_example, (2, 3, 3))  # (inv, slogdet, solve: rows in tests/ops/test_registry.py)
