"""Inverses, determinants and solves (d2s/ops/matrices.py, d2s.linalg) against PyTorch: torch.inverse,
det, slogdet, logdet and their methods, torch.linalg.inv/det/slogdet/solve on single and batched
matrices, float32 and float64, negative and zero determinants, solve's vector and broadcast forms
and ``left=False``: values, dtypes, float64 gradients, then converted, with dynamic dims, saved and
exported to ONNX where ONNX has the operator (tests/torch_parity.py); matrix_power's positive,
negative and zero powers, integer matrices; torch.linalg.cross, diagonal, vecdot and multi_dot
(PyTorch's order of products); cholesky (lower, upper, only the lower triangle read)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(5)


def well(*shape):
    """Random square matrices far from singular (so gradients are well defined)."""
    n = shape[-1]
    return R.standard_normal(shape) + 3 * np.eye(n)


A3, BATCH = well(3, 3), well(2, 4, 4)
NEG = np.array([[0.0, 2.0, 1.0], [3.0, 1.0, 0.5], [1.0, 0.0, 4.0]])  # det < 0
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
NO_ONNX = "ONNX has no such operator"

TORCH_CASES = [
    Case("inverse", lambda t, a, b: (t.inverse(a), a.inverse(), t.linalg.inv(b), b.inverse()), A3, BATCH,
         onnx=NO_ONNX),
    Case("inverse_float32", lambda t, a: t.linalg.inv(a), well(2, 3, 3).astype(np.float32), rtol=1e-4, atol=1e-5,
         onnx=NO_ONNX),
    Case("det", lambda t, a, b, n: (t.det(a), a.det(), t.linalg.det(b), t.linalg.det(n)), A3, BATCH, NEG,
         rtol=1e-5, onnx="float64: onnxruntime computes Det in float32 only (det_float32 exports)"),
    Case("det_float32", lambda t, a: t.linalg.det(a), well(2, 3, 3).astype(np.float32), rtol=1e-4, atol=1e-4),
    Case("slogdet", lambda t, a, b, n: (t.slogdet(a), a.slogdet(), t.linalg.slogdet(b), t.linalg.slogdet(n)),
         A3, BATCH, NEG, onnx=NO_ONNX),
    Case("slogdet_singular", lambda t, s: (t.linalg.slogdet(s), t.det(s), t.logdet(s)), SINGULAR, grad=False,
         onnx=NO_ONNX, atol=1e-12),
    Case("logdet", lambda t, a, n: (t.logdet(a), a.logdet(), t.logdet(n)), A3, NEG, grad=[0], onnx=NO_ONNX),
    Case("solve_matrices", lambda t, a, b: (t.linalg.solve(a, b), t.linalg.solve(a, b[..., :1])), A3,
         R.standard_normal((3, 2)), onnx=NO_ONNX),
    Case("solve_vectors", lambda t, a, v, bv: (t.linalg.solve(a, v), t.linalg.solve(a[None].expand(2, 3, 3), bv)),
         A3, R.standard_normal(3), R.standard_normal((2, 3)), onnx=NO_ONNX,
         dynamic="a batch of vectors is told from a batch of matrices by its static shape"),
    Case("solve_broadcast", lambda t, a, b: (t.linalg.solve(a, b), t.linalg.solve(a[0], b)), BATCH,
         R.standard_normal((3, 1, 4, 2)), onnx=NO_ONNX),
    Case("solve_right", lambda t, a, b: t.linalg.solve(a, b, left=False), A3, R.standard_normal((2, 3)),
         onnx=NO_ONNX),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_solve_solves_and_inverse_inverts():
    a = d2s.tensor(well(4, 4))
    b = d2s.tensor(R.standard_normal((4, 3)))
    np.testing.assert_allclose((a @ d2s.linalg.solve(a, b)).numpy(), b.numpy(), atol=1e-12)
    np.testing.assert_allclose((a @ d2s.linalg.inv(a)).numpy(), np.eye(4), atol=1e-12)


@pytest.mark.parametrize("call, msg", [
    (lambda: d2s.linalg.inv(d2s.tensor(SINGULAR)), "singular"),
    (lambda: d2s.linalg.solve(d2s.tensor(SINGULAR), d2s.ones(2, dtype=d2s.float64)), "singular"),
    (lambda: d2s.linalg.inv(d2s.zeros(2, 3)), "square"),
    (lambda: d2s.linalg.det(d2s.tensor([[1, 2], [3, 4]])), "float32 or float64"),
    (lambda: d2s.linalg.solve(d2s.tensor(A3), d2s.ones(3)), "dtype"),
    (lambda: d2s.linalg.solve(d2s.tensor(A3), d2s.ones(4, 1, dtype=d2s.float64)), "align"),
    (lambda: d2s.linalg.inv(d2s.tensor(A3), out=d2s.tensor(A3)), "out="),
    (lambda: d2s.linalg.cross(d2s.zeros(2, 3), d2s.zeros(3)), "same number of dimensions"),
    (lambda: d2s.linalg.multi_dot([d2s.zeros(2, 3)]), "at least 2"),
    (lambda: d2s.linalg.multi_dot([d2s.zeros(2, 3), d2s.zeros(1, 3, 2)]), "2-d"),
])
def test_errors_name_the_op_and_the_problem(call, msg):
    with pytest.raises(Exception, match=msg):
        call()


def test_a_float64_determinant_does_not_export(tmp_path):
    with pytest.raises(Exception, match="float32 only"):
        d2s.onnx.export(lambda a: d2s.linalg.det(a), str(tmp_path / "det.onnx"), [d2s.tensor(A3)])


POWER_CASES = [
    Case("matrix_power", lambda t, a, b: (t.matrix_power(a, 2), a.matrix_power(3), t.linalg.matrix_power(b, 5),
                                          t.linalg.matrix_power(a, 1), t.matrix_power(b, 6), t.matrix_power(a, 13)),
         A3 / 3, BATCH / 4),
    Case("matrix_power_negative", lambda t, a, b: (t.matrix_power(a, -1), t.linalg.matrix_power(b, -3)), A3, BATCH,
         onnx=NO_ONNX),
    Case("matrix_power_zero", lambda t, a, b: (t.matrix_power(a, 0), t.linalg.matrix_power(b, 0)), A3, BATCH,
         grad=False),
    Case("matrix_power_ints", lambda t, a: (t.matrix_power(a, 3), t.matrix_power(a, 0), a.matrix_power(4)),
         np.array([[1, 2], [3, 4]])),
]
TORCH_CASES += POWER_CASES  # (the list test_matches_torch runs: extended in place)


def test_matrix_power_needs_an_int_and_square_matrices():
    with pytest.raises(TypeError, match="int"):
        d2s.matrix_power(d2s.eye(2), 2.0)
    with pytest.raises(ValueError, match="square"):
        d2s.matrix_power(d2s.zeros(2, 3), 2)


LINALG_CASES = [
    Case("linalg_cross_diagonal_vecdot", lambda t, a, b, m: (t.linalg.cross(a, b), t.linalg.cross(a[:, None], b[None], dim=-1),
                                                             t.linalg.diagonal(m), t.linalg.diagonal(m, offset=1),
                                                             t.linalg.diagonal(m, dim1=0, dim2=2, offset=-1),
                                                             t.linalg.vecdot(a, b), t.linalg.vecdot(m, m[0], dim=-2)),
         R.standard_normal((4, 3)), R.standard_normal((4, 3)), R.standard_normal((2, 3, 4))),
    Case("multi_dot", lambda t, a, b, c, d, v, w: (t.linalg.multi_dot([a, b]), t.linalg.multi_dot([a, b, c]),
                                                   t.linalg.multi_dot((a, b, c, d)), t.linalg.multi_dot([v, a, b]),
                                                   t.linalg.multi_dot([a, b, c, d, w]), t.linalg.multi_dot([v, a, b, c, w[:2]])),
         R.standard_normal((10, 3)), R.standard_normal((3, 8)), R.standard_normal((8, 2)), R.standard_normal((2, 6)),
         R.standard_normal(10), R.standard_normal(6),
         dynamic="the order of the products is chosen from the sizes, which must be known when the program is built"),
]
TORCH_CASES += LINALG_CASES


def spd(*shape):
    """Random symmetric positive-definite matrices."""
    m = R.standard_normal(shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


CHOLESKY_CASES = [
    Case("cholesky", lambda t, a, b: (t.linalg.cholesky(a), t.linalg.cholesky(b, upper=True), t.cholesky(a), a.cholesky(),
                                      a.cholesky(upper=True)), spd(3, 3), spd(2, 4, 4), onnx=NO_ONNX),
    # only the lower triangle is read: an asymmetric input's upper triangle is ignored, gradient too
    Case("cholesky_lower_triangle", lambda t, a: t.linalg.cholesky(a), spd(3, 3) + np.triu(np.ones((3, 3)), 1),
         onnx=NO_ONNX),
    Case("cholesky_float32", lambda t, a: t.linalg.cholesky(a), spd(2, 3, 3).astype(np.float32), rtol=1e-5, atol=1e-6,
         onnx=NO_ONNX),
]
TORCH_CASES += CHOLESKY_CASES


def test_cholesky_of_a_matrix_that_is_not_positive_definite_raises():
    with pytest.raises(ValueError, match="positive-definite"):
        d2s.linalg.cholesky(d2s.tensor([[1.0, 2.0], [2.0, 1.0]]))


# ------------------------------------------------------------------ inv_ex, solve_ex, cholesky_ex
# Exactly singular matrices (their LU meets an exactly zero pivot in any LAPACK): info is the
# pivot's 1-based index, and the inverse / solution holds the infinities and NaNs LAPACK's solve
# leaves, as PyTorch's does. A matrix singular only up to rounding is not compared (its info
# depends on the LAPACK's order of operations).
SINGULARS = np.array([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]],
                      [[1.0, 2.0, 1.0], [2.0, 4.0, 1.0], [3.0, 6.0, 1.0]],
                      [[2.0, 0.0, 1.0], [1.0, 0.0, 3.0], [4.0, 0.0, 5.0]],
                      [[2.0, 1.0, 0.5], [0.0, 0.0, 0.0], [1.0, 3.0, 2.0]],
                      [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
                      [[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]]])  # (the last invertible)
NOT_PD = np.array([[[1.0, 2.0, 3.0], [2.0, 1.0, 0.0], [3.0, 0.0, 1.0]],  # fails at order 2
                   [[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]],  # order 2: an exact 0
                   [[4.0, 2.0, 2.0], [2.0, 5.0, 1.0], [2.0, 1.0, -3.0]],  # order 3
                   [[-1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]],  # order 1
                   [[4.0, 2.0, 2.0], [2.0, 5.0, 1.0], [2.0, 1.0, 6.0]],  # positive-definite
                   [[4.0, 2.0, 2.0], [2.0, np.nan, 1.0], [2.0, 1.0, 6.0]]])  # a NaN: order 2
EX_FORMS = dict(grad=False, onnx=NO_ONNX)

EX_CASES = [
    Case("inv_ex_singular", lambda t, a: (t.linalg.inv_ex(a), t.linalg.inv_ex(a[0]), t.linalg.inv_ex(a[4])),
         SINGULARS, **EX_FORMS),
    Case("inv_ex_singular_float32", lambda t, a: t.linalg.inv_ex(a.reshape(2, 3, 3, 3)),
         SINGULARS.astype(np.float32), rtol=1e-5, atol=1e-6, **EX_FORMS),
    Case("inv_ex_2x2", lambda t, a: t.linalg.inv_ex(a), np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]],
                                                                  [[0.0, 1.0], [0.0, 2.0]], [[0.0, 1.0], [3.0, 2.0]]]),
         **EX_FORMS),
    Case("inv_ex_invertible", lambda t, a, b: (t.linalg.inv_ex(a), t.linalg.inv_ex(b, check_errors=True).inverse),
         A3, BATCH, onnx=NO_ONNX),
    Case("solve_ex_singular", lambda t, a, b, v: (t.linalg.solve_ex(a, b), t.linalg.solve_ex(a, v),
                                                  t.linalg.solve_ex(a[0], b), t.linalg.solve_ex(a, b[0]),
                                                  t.linalg.solve_ex(a, b.mT, left=False)),
         SINGULARS, R.standard_normal((6, 3, 2)), R.standard_normal((6, 3)), **EX_FORMS,
         dynamic="a batch of vectors is told from a batch of matrices by its static shape"),
    Case("solve_ex_broadcast", lambda t, a, b: (t.linalg.solve_ex(a, b), t.linalg.solve_ex(a[:1], b),
                                                t.linalg.solve_ex(a[2], b)),
         SINGULARS[:4], R.standard_normal((2, 1, 3, 2)), **EX_FORMS),
    Case("solve_ex_invertible", lambda t, a, b, c: (t.linalg.solve_ex(a, b, check_errors=True),
                                                    t.linalg.solve_ex(a, c, left=False), t.linalg.solve_ex(a[0], c.mT)),
         BATCH, R.standard_normal((4, 2)), R.standard_normal((2, 2, 4)), onnx=NO_ONNX,
         dynamic="a batch of vectors is told from a batch of matrices by its static shape"),
    Case("cholesky_ex_not_positive_definite", lambda t, a: (t.linalg.cholesky_ex(a),
                                                            t.linalg.cholesky_ex(a, upper=True),
                                                            t.linalg.cholesky_ex(a[0]), t.linalg.cholesky_ex(a[4])),
         NOT_PD, **EX_FORMS),
    Case("cholesky_ex_float32", lambda t, a: t.linalg.cholesky_ex(a.reshape(2, 3, 3, 3)), NOT_PD.astype(np.float32),
         rtol=1e-5, atol=1e-6, **EX_FORMS),
    Case("cholesky_ex_positive_definite", lambda t, a: (t.linalg.cholesky_ex(a),
                                                        t.linalg.cholesky_ex(a, check_errors=True)),
         spd(2, 3, 3), onnx=NO_ONNX),
]
TORCH_CASES += EX_CASES


@pytest.mark.parametrize("call, match", [
    (lambda a: d2s.linalg.inv_ex(a, check_errors=True), r"\(Batch element 0\): The diagonal element 3 is zero"),
    (lambda a: d2s.linalg.inv_ex(a[4], check_errors=True), r"inv_ex: The diagonal element 1 is zero"),
    (lambda a: d2s.linalg.solve_ex(a, a, check_errors=True), "singular"),
    (lambda a: d2s.linalg.cholesky_ex(a[1:], check_errors=True), "leading minor of order 2 is not positive-definite"),
    (lambda a: d2s.linalg.inv(a), "singular"),
])
def test_ex_forms_raise_with_check_errors_as_pytorch(call, match):
    # torch.linalg.LinAlgError is a RuntimeError: code catching that catches d2s's too
    with pytest.raises(RuntimeError, match=match) as info:
        call(d2s.tensor(SINGULARS))
    assert isinstance(info.value, d2s.linalg.LinAlgError)


def test_ex_forms_report_in_info_inside_a_converted_function():
    @d2s.jit.to_static
    def f(a):
        inv, info = d2s.linalg.inv_ex(a)
        return d2s.where(info[:, None, None] == 0, inv, d2s.zeros_like(inv))

    out = f(d2s.tensor(SINGULARS)).numpy()
    np.testing.assert_array_equal(out[:5], 0)
    np.testing.assert_allclose(out[5], np.linalg.inv(SINGULARS[5]), rtol=1e-12)


def _triangular_solves(t, a, b):
    upper = a.triu() + t.eye(3, dtype=a.dtype) * 3
    return (t.triangular_solve(b, upper), t.triangular_solve(b, upper, transpose=True).solution,
            t.triangular_solve(b, upper.mT, upper=False), t.triangular_solve(b, a, True, True, True).solution)


TORCH_CASES += [
    Case("triangular_solve", _triangular_solves, A3, R.standard_normal((3, 2)), onnx=NO_ONNX),
]
