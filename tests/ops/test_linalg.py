"""Linear algebra (d2s/ops/linalg.py) against PyTorch: matmul's 1-d and broadcast cases, mm,
bmm, mv, dot, inner, outer, the add*mm family (beta, alpha; beta=0 ignores NaN), einsum's
equation forms (explicit, implicit, ``...``, repeated letters, broadcast size-1 dims), diagonals
and triangles, trace, cross, kron and tensordot: values, dtypes, float64 gradients, then
converted, with dynamic dims, saved and exported to ONNX (tests/torch_parity.py)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(3)


def rn(*shape):
    return R.standard_normal(shape)


A, B, C = rn(3, 4), rn(4, 5), rn(5)
BA, BB = rn(2, 3, 4), rn(2, 4, 5)
SQ = rn(4, 4)

TORCH_CASES = [
    Case("matmul_ranks", lambda t, a, b, v, w: (t.matmul(v, w), a @ w, v @ b, t.matmul(a, b), w.matmul(a.T)),
         A, B, rn(4), rn(4)),
    Case("matmul_broadcast", lambda t, a, b, v: (a @ b, t.matmul(a, b[0]), t.matmul(v, b), t.matmul(a, v)),
         rn(2, 1, 3, 4), rn(5, 4, 2), rn(4)),
    Case("mm_bmm_mv_dot", lambda t, a, b, ba, bb, v, w: (t.mm(a, b), a.mm(b), t.bmm(ba, bb), ba.bmm(bb), t.mv(a, v),
                                                          a.mv(v), t.dot(v, w), v.dot(w), t.inner(v, w),
                                                          t.inner(a, b.T), t.outer(v, w), v.outer(w), t.ger(v, w)),
         A, B, BA, BB, rn(4), rn(4)),
    Case("add_products", lambda t, x, a, b, ba, bb, v: (t.addmm(x, a, b), t.addmm(x[0], a, b, beta=0.5, alpha=2.0),
                                                        x.addmm(a, b, alpha=-1), t.baddbmm(x, ba, bb, beta=2),
                                                        t.addbmm(x, ba, bb, alpha=0.5), t.addmv(x[:, 0], a, v),
                                                        t.addr(x[:, :4], x[:, 0], v, beta=3)),
         rn(3, 5), A, B, BA, BB, rn(4)),
    Case("add_products_beta_zero_ignores_nan", lambda t, x, a, b: (t.addmm(x, a, b, beta=0), t.addmm(x[0], a, b, beta=0)),
         np.full((3, 5), np.nan), A, B),
    Case("integer_products", lambda t, a, b: (t.mm(a, b), a @ b[:, 0], t.outer(a[0], b[0]), t.einsum("ij,jk->ik", a, b)),
         np.arange(12, dtype="int64").reshape(3, 4) - 5, np.arange(20, dtype="int64").reshape(4, 5) % 7,
         onnx="onnxruntime has no integer MatMul of int64"),
    # einsum: PyTorch's forms
    Case("einsum_explicit", lambda t, a, b, c: (t.einsum("ij,jk->ik", a, b), t.einsum("ij,jk,k->i", a, b, c),
                                                t.einsum("ij->ji", a), t.einsum("ij->", a), t.einsum("i,j->ij", c, c),
                                                t.einsum("ij, jk -> ki", a, b), t.einsum("bij,bjk->bik", *[
                                                    a.unsqueeze(0).expand(2, 3, 4), b.unsqueeze(0).expand(2, 4, 5)]),
                                                t.einsum("ij,jk->ik", [a, b])), A, B, C),
    Case("einsum_implicit_and_ellipsis", lambda t, a, b, x: (t.einsum("ij,jk", a, b), t.einsum("ba,ab", b.T, b),
                                                             t.einsum("...ij,...jk", x, b), t.einsum("b...j->...b", x),
                                                             t.einsum("...ij,jk->...ik", x, b),
                                                             t.einsum("...", a), t.einsum("Ij,jK", a, b)),
         A, B, rn(2, 1, 3, 4)),
    Case("einsum_diagonal_and_sums", lambda t, s, x, a: (t.einsum("ii->i", s), t.einsum("ii", s), t.einsum("iij->ij", x),
                                                         t.einsum("ij->i", a), t.einsum("ii,ij->j", s, a.T)),
         SQ, rn(3, 3, 2), A),
    Case("einsum_broadcast_size_one", lambda t, a, b, c: (t.einsum("ij,jk->ik", a, b[0]), t.einsum("bij,bjk->bik", c, b),
                                                          t.einsum("i,i->i", a[0, :1], c[0, 0])),
         rn(2, 1), rn(1, 3, 4), rn(2, 3, 3)),
    Case("einsum_attention", lambda t, q, k, v: t.einsum("bhqk,bhkd->bhqd", t.einsum("bhqd,bhkd->bhqk", q, k)
                                                         .softmax(-1), v), rn(2, 3, 4, 5), rn(2, 3, 6, 5), rn(2, 3, 6, 5)),
    # diagonals and triangles
    Case("triangles", lambda t, x, s: (t.tril(x), t.triu(x), t.tril(x, -1), t.triu(x, diagonal=2), x.tril(1),
                                       s.triu(-1), t.tril(s, 10), t.triu(s, -10)), A, rn(2, 3, 4)),
    Case("triangles_int_bool", lambda t, a: (t.tril(a), t.triu(a, 1), t.tril(a > 0)),
         np.arange(12, dtype="int32").reshape(3, 4) - 6, grad=False),
    Case("diagonals", lambda t, s, x, v: (t.diagonal(s), t.diagonal(x, 1), x.diagonal(-1), t.diagonal(x, 0, 2, 0),
                                          t.diag(s), t.diag(s, 1), t.diag(v), t.diag(v, -2), t.trace(s), s.trace(),
                                          t.diag_embed(x), t.diag_embed(v, 1, 0, 1), t.diagonal_scatter(x, t.diagonal(x) * 2), t.diagonal_scatter(x, t.diagonal(x, 1, 2, 1) + 1, 1, 2, 1)),
         SQ, rn(2, 3, 4), rn(3)),
    Case("trace_int", lambda t, a: (t.trace(a), t.diag(a)), np.arange(9, dtype="int32").reshape(3, 3)),
    Case("cross_kron_tensordot", lambda t, a, b, m, n: (t.cross(a, b, dim=1), t.cross(a, b), a.cross(b, dim=-1),
                                                        t.kron(m, n), t.kron(m[0], n), t.tensordot(m, n, dims=1),
                                                        t.tensordot(a, b, dims=([0, 1], [0, 1]))),
         rn(4, 3), rn(4, 3), rn(2, 3), rn(3, 2),
         dynamic="kron's result shape is a product of the operands' dims, which must be known when built"),
]

# pairwise distances (torch.cdist): every p, batch dims broadcast, a zero distance's gradient
_P1, _P2 = R.standard_normal((2, 4, 3)), R.standard_normal((1, 5, 3))
TORCH_CASES += [
    # float32 cross products as PyTorch's kernel rounds them (fma(p, q, -(r * s))): bit for bit
    Case("cross_float32_bits", lambda t, a, b: (t.linalg.cross(a, b), t.cross(a.T, b.T, dim=0)),
         np.random.default_rng(5).standard_normal((200, 3)).astype(np.float32),
         np.random.default_rng(6).standard_normal((200, 3)).astype(np.float32), rtol=0, atol=0),
]
TORCH_CASES += [
    Case("cdist_p2", lambda t, a, b: t.cdist(a, b), _P1, _P2),
    Case("cdist_p1", lambda t, a, b: t.cdist(a, b, p=1.0), _P1, _P2),
    Case("cdist_p3_2d", lambda t, a, b: t.cdist(a, b, 3.0), _P1[0], _P2[0]),
    Case("cdist_inf", lambda t, a, b: t.cdist(a, b, float("inf")), _P1, _P2),
    Case("cdist_zero_distance", lambda t, a: t.cdist(a, a), _P1[0]),
    # torch.pdist: the rows' pairs i < j in row-major order, every p, a repeated row (a zero
    # distance: gradient 0), one row (no pairs; no rows: PyTorch's backward crashes, d2s's test below)
    Case("pdist", lambda t, a: (t.pdist(a), t.pdist(a, 1.0), t.pdist(a, p=3.0), t.pdist(a, float("inf")),
                                t.pdist(a, 0), t.nn.functional.pdist(a[:1])),
         _P1[0], dynamic="the number of pairs is read from the rows when the program is built"),
    Case("pdist_repeated_row", lambda t, a: t.nn.functional.pdist(t.cat([a, a[:1]])), _P1[1],
         dynamic="the number of pairs is read from the rows when the program is built"),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_pdist_of_no_rows_is_empty():
    a = d2s.zeros(0, 3, dtype=d2s.float64, requires_grad=True)
    d = d2s.pdist(a)
    assert d.shape == (0,) and d.dtype == d2s.float64
    d.sum().backward()
    assert a.grad.shape == (0, 3)
    with pytest.raises(ValueError, match="only supports 2D"):
        d2s.pdist(d2s.zeros(2, 3, 4))


def test_strict_device_eager_values(device):
    for case in TORCH_CASES:
        torch_parity.compare(torch_parity.run(d2s, case), torch_parity.reference("ops.test_linalg", case.name),
                             case, f"d2s eager on {device}")


@pytest.mark.parametrize("call,msg", [
    (lambda: d2s.mm(d2s.ones(3), d2s.ones(3, 2)), "mm: input must be a 2-d"),
    (lambda: d2s.bmm(d2s.ones(2, 3, 4), d2s.ones(3, 4, 5)), "batch sizes"),
    (lambda: d2s.dot(d2s.ones(3), d2s.ones(3, dtype="float64")), "same dtype"),
    (lambda: d2s.einsum("ij,jk->ik", d2s.ones(2, 3)), "names 2 operands"),
    (lambda: d2s.einsum("ij,jk->ik", d2s.ones(2, 3), d2s.ones(4, 5)), "sizes 3 and 4"),
    (lambda: d2s.einsum("ij->iij", d2s.ones(2, 3)), "repeat"),
    (lambda: d2s.einsum("ij->k", d2s.ones(2, 3)), "appear in no operand"),
    (lambda: d2s.einsum("i#->i", d2s.ones(2, 3)), "characters"),
    (lambda: d2s.tril(d2s.ones(3)), "at least 2 dims"),
    (lambda: d2s.diag(d2s.ones(2, 2, 2)), "1-d or 2-d"),
    (lambda: d2s.diagonal(d2s.ones(2, 2), 0, 1, 1), "same dim"),
])
def test_errors_name_the_op_and_the_problem(call, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        call()


def test_einsum_contracts_by_matrix_products():
    """A batched contraction (attention's ``bhqd,bhkd->bhqk``) is one matmul in the kernel, not
    NumPy's element loop; the result equals numpy.einsum."""
    from d2s_runtime.ops import OPS
    q, k = rn(2, 3, 4, 8), rn(2, 3, 5, 8)
    got = OPS["einsum"].kernel(np, q, k, equation="bhqd,bhkd->bhqk")
    np.testing.assert_allclose(got, np.einsum("bhqd,bhkd->bhqk", q, k), rtol=1e-12)
    np.testing.assert_allclose(got, q @ k.swapaxes(-1, -2), rtol=0, atol=0)
