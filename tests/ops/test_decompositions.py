"""Matrix decompositions (d2s/ops/decompositions.py, d2s/linalg.py) against PyTorch:
torch.linalg.svd (full and reduced, tall, wide, batched), svdvals, eigh (UPLO, ascending),
eigvalsh, qr (reduced, complete, 'r'), matrix_exp, pinv (rtol, atol, hermitian), matrix_rank,
lstsq (drivers, tall and wide), lu (P, L, U; square and rectangular), solve_triangular (upper/lower, left/right, unitriangular), and
torch.svd/qr/pinverse/matrix_exp: values, return structures, dtypes and float64 gradients, then
converted and saved (tests/torch_parity.py). Singular vectors and eigenvectors are compared
through sign-free quantities where their signs are not fixed (products, absolute values); the
signs themselves are LAPACK's, as PyTorch's CPU build gives."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(77)
TALL = R.standard_normal((5, 3))
WIDE = R.standard_normal((3, 5))
BATCH = R.standard_normal((2, 4, 4))
SYM = (lambda a: a + a.T)(R.standard_normal((4, 4)))
NO_ONNX = "standard ONNX has no matrix decompositions"
STATIC_SHAPES = "the case reads sizes while building (Python ints from shapes)"


def _svd_parts(t, a):
    U, S, Vh = t.linalg.svd(a, full_matrices=False)
    return S, (U * S.unsqueeze(-2)) @ Vh, U.abs(), Vh.abs(), U @ U.mT


def _svd_full(t, a):
    U, S, Vh = t.linalg.svd(a)
    return S, U.abs(), Vh.abs(), U.mT @ U


def _eigh_parts(t, a):
    L, Q = t.linalg.eigh(a)
    L2, Q2 = t.linalg.eigh(a, UPLO="U")
    return L, Q.abs(), (Q * L.unsqueeze(-2)) @ Q.mT, L2, t.linalg.eigvalsh(a), t.linalg.eigvalsh(a, "U")


def _qr_parts(t, a):
    Q, R = t.linalg.qr(a)
    # (mode='r' has no gradient, in PyTorch as here: tests/ops/test_decompositions.py::test_qr_backward_refusals)
    return Q, R, t.linalg.qr(a.detach(), mode="r").R, t.linalg.qr(a.detach(), mode="r").Q


def _qr_complete(t, a):
    Q, R = t.linalg.qr(a, mode="complete")
    return Q @ R, Q.mT @ Q, R


def _torch_names(t, a):
    U, S, V = t.svd(a)
    U0, S0, V0 = t.svd(a, compute_uv=False)
    Uf, Sf, Vf = t.svd(a, some=False)
    Q, R = t.qr(a)
    return (S, (U * S) @ V.mT, U0, S0, V0, Sf, Uf.abs(), Vf.abs(), Q, R, t.qr(a, some=False).R, t.pinverse(a),
            a.pinverse(rcond=0.1))


def _lstsq(t, a, b):
    r = t.linalg.lstsq(a, b)
    r2 = t.linalg.lstsq(a, b, driver="gelsd")
    r3 = t.linalg.lstsq(a, b, rcond=None, driver="gelss")
    return r, r2, r3.residuals, r3.solution


def _solve_triangular(t, a, b):
    return (t.linalg.solve_triangular(a, b, upper=True), t.linalg.solve_triangular(a, b, upper=False),
            t.linalg.solve_triangular(a, b.mT, upper=True, left=False),
            t.linalg.solve_triangular(a, b, upper=False, unitriangular=True))


TRI = np.triu(R.standard_normal((4, 4))) + np.tril(R.standard_normal((4, 4)), -1) + 4 * np.eye(4)

TORCH_CASES = [
    Case("svd_tall", _svd_parts, TALL, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("svd_wide", _svd_parts, WIDE, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("svd_batched", _svd_parts, BATCH, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("svd_full", _svd_full, TALL, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("svd_named", lambda t, a: t.linalg.svd(a, full_matrices=False).S, TALL, onnx=NO_ONNX),
    Case("svdvals", lambda t, a, b: (t.linalg.svdvals(a), t.linalg.svdvals(b)), TALL, BATCH, onnx=NO_ONNX,
         rtol=1e-5, atol=1e-6),
    Case("svd_float32", lambda t, a: t.linalg.svdvals(a), TALL.astype(np.float32), onnx=NO_ONNX, rtol=1e-5, atol=1e-5),
    Case("eigh", _eigh_parts, SYM, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("eigh_batched", lambda t, a: t.linalg.eigvalsh(a @ a.mT), BATCH, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("eigh_named", lambda t, a: t.linalg.eigh(a).eigenvalues, SYM, onnx=NO_ONNX),
    Case("qr", _qr_parts, TALL, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("qr_square_batched", lambda t, a: t.linalg.qr(a), BATCH, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("qr_complete", _qr_complete, TALL, grad=False, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("qr_wide_values", lambda t, a: t.linalg.qr(a), WIDE, grad=False, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("matrix_exp", lambda t, a, b: (t.linalg.matrix_exp(a), t.matrix_exp(b * 0.5), (a * 3).matrix_exp()),
         BATCH[0], BATCH, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("pinv", lambda t, a, b, s: (t.linalg.pinv(a), t.linalg.pinv(b), t.linalg.pinv(a, rtol=0.3),
                                     t.linalg.pinv(a, atol=0.5), t.linalg.pinv(s, hermitian=True), t.linalg.pinv(a, 0.2)),
         TALL, WIDE, SYM, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("matrix_rank", lambda t, a, b: (t.linalg.matrix_rank(a), t.linalg.matrix_rank(b), t.linalg.matrix_rank(b, hermitian=True),
                                         t.linalg.matrix_rank(a, atol=1.0), t.linalg.matrix_rank(a, rtol=0.5),
                                         t.linalg.matrix_rank(a, 1.0)),
         TALL, np.outer(TALL[:, 0], TALL[:, 0]), onnx=NO_ONNX),
    Case("lstsq_tall", _lstsq, TALL, R.standard_normal((5, 2)), onnx=NO_ONNX, rtol=1e-5, atol=1e-6,
         static="lstsq's residuals depend on the rank, read eagerly"),
    Case("lstsq_wide", lambda t, a, b: t.linalg.lstsq(a, b), WIDE, R.standard_normal((3, 2)), onnx=NO_ONNX,
         rtol=1e-5, atol=1e-6),
    Case("solve_triangular", _solve_triangular, TRI, R.standard_normal((4, 3)), onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("cholesky_solve_inverse", lambda t, b, l: (t.cholesky_solve(b, l), b.cholesky_solve(l.mT, upper=True),
                                                    t.cholesky_inverse(l), l.mT.cholesky_inverse(upper=True)),
         R.standard_normal((4, 3)), np.linalg.cholesky(TRI @ TRI.T), onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("cond", lambda t, a: (t.linalg.cond(a), t.linalg.cond(a, 2), t.linalg.cond(a, -2)), BATCH, onnx=NO_ONNX,
         rtol=1e-5, atol=1e-6),
    # (PyTorch's own backward of cond with a norm other than 2 fails: it writes into inv_ex's result)
    Case("cond_norms", lambda t, a: tuple(t.linalg.cond(a, p) for p in ("fro", "nuc", 1, -1, float("inf"), float("-inf"))),
         TRI, grad=False, onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("linalg_matmul_ex", lambda t, a, b: (t.linalg.matmul(a, b), t.linalg.inv_ex(a), t.linalg.solve_ex(a, b),
                                              t.linalg.solve_ex(a, b.mT, left=False).result,
                                              t.linalg.cholesky_ex(a @ a.mT), t.linalg.cholesky_ex(a @ a.mT, upper=True).L),
         TRI, R.standard_normal((4, 3)), onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
    Case("tensorinv_tensorsolve", lambda t, a, b: (t.linalg.tensorinv(a.reshape(4, 2, 2), 1), t.linalg.tensorinv(a.reshape(2, 2, 4), 2),
                                                   t.linalg.tensorsolve(a.reshape(4, 2, 2), b),
                                                   t.linalg.tensorsolve(a.reshape(4, 2, 2), b.reshape(2, 2), dims=(0,))),
         TRI, R.standard_normal(4), onnx=NO_ONNX, rtol=1e-5, atol=1e-6, dynamic=STATIC_SHAPES),
    Case("chain_matmul", lambda t, a, b, c: (t.chain_matmul(a, b, c), t.chain_matmul(a, b), t.chain_matmul(a)),
         TALL, WIDE, R.standard_normal((5, 2)), onnx=NO_ONNX,
         dynamic="the order of the products is chosen from the sizes (multi_dot's), read while building"),
    Case("torch_svd_qr_pinverse", _torch_names, TALL, onnx=NO_ONNX, rtol=1e-5, atol=1e-6, grad=False),
    Case("torch_svd_grad", lambda t, a: (t.svd(a).S, (lambda u, s, v: (u * s) @ v.mT)(*t.svd(a))), TALL,
         onnx=NO_ONNX, rtol=1e-5, atol=1e-6),
]

# torch.linalg.lu: LAPACK's partial pivoting (P, L, U), square (with gradients) and rectangular
TORCH_CASES += [
    Case("linalg_lu", lambda t, a, b: (t.linalg.lu(a), t.linalg.lu(b).U), R.standard_normal((3, 3)),
         R.standard_normal((2, 4, 4)), onnx=NO_ONNX),
    Case("linalg_lu_rectangular", lambda t, a: (t.linalg.lu(a), t.linalg.lu(a.mT), t.linalg.lu(a.float()).L),
         R.standard_normal((5, 3)), grad=False, rtol=1e-6, atol=1e-6, onnx=NO_ONNX),
    # the compact form: LU, 1-based pivots, info (a singular matrix reported, not raised)
    Case("linalg_lu_factor", lambda t, a, r, s: (t.linalg.lu_factor(a), t.linalg.lu_factor(r),
                                                 t.linalg.lu_factor(r.mT), t.linalg.lu_factor_ex(s)),
         R.standard_normal((2, 4, 4)), R.standard_normal((5, 3)),
         np.array([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]], np.zeros((3, 3)), np.eye(3) * 2]),
         grad=[0], onnx=NO_ONNX, dynamic="the compact form's sizes are read when the program is built"),
]


def test_lu_factor_raises_for_a_singular_matrix_as_pytorch():
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): U\[1,1\] is zero"):
        d2s.linalg.lu_factor(d2s.tensor(np.stack([np.eye(2), np.zeros((2, 2))])))
    with pytest.raises(d2s.linalg.LinAlgError, match="U.2,2. is zero"):
        d2s.linalg.lu_factor_ex(d2s.tensor([[1.0, 2.0], [2.0, 4.0]]), check_errors=True)


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_conventions():
    a = d2s.tensor(TALL)
    U, S, Vh = d2s.linalg.svd(a)
    assert tuple(U.shape) == (5, 5) and tuple(Vh.shape) == (3, 3)  # full_matrices=True by default
    assert list(S.numpy()) == sorted(S.numpy(), reverse=True)
    L = d2s.linalg.eigvalsh(d2s.tensor(SYM)).numpy()
    assert list(L) == sorted(L)  # ascending


@pytest.mark.parametrize("call, msg", [
    (lambda: d2s.linalg.svd(d2s.zeros(3)), "matrices"),
    (lambda: d2s.linalg.eigh(d2s.zeros(2, 3)), "square"),
    (lambda: d2s.linalg.eigh(d2s.zeros(2, 2), UPLO="X"), "UPLO"),
    (lambda: d2s.linalg.qr(d2s.zeros(2, 2), mode="full"), "mode"),
    (lambda: d2s.linalg.svd(d2s.zeros(2, 2, dtype=d2s.int64)), "float"),
    (lambda: d2s.linalg.lstsq(d2s.zeros(3, 2), d2s.zeros(3), driver="gelsx"), "driver"),
])
def test_errors_name_the_op_and_the_problem(call, msg):
    with pytest.raises(Exception, match=msg):
        call()


def test_qr_backward_refusals():
    a = d2s.tensor(WIDE, requires_grad=True)
    with pytest.raises(NotImplementedError, match="rows"):
        d2s.linalg.qr(a).Q.sum().backward()
    b = d2s.tensor(TALL, requires_grad=True)
    with pytest.raises(RuntimeError, match="mode='r'"):
        d2s.linalg.qr(b, mode="r").R.sum().backward()
