"""d2s.linalg against torch.linalg (tests/torch_parity.py): vector_norm, matrix_norm and norm with
their ords, dims, keepdim and dtype, float64 gradients (0 where a norm is 0), converted, with
dynamic dims, saved and exported to ONNX (2, -2 and 'nuc', from singular values, not exported: ONNX has
no SVD); bad ords and dims raise clearly."""
import math

import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(2)
X = R.standard_normal((3, 4))
B = R.standard_normal((2, 3, 4)).astype("float32")
Z = np.array([[0.0, 0.0, 0.0], [3.0, -4.0, 0.0], [1.0, -1.0, 1.0]])
V = R.standard_normal(5)
INF = math.inf

TORCH_CASES = [
    Case("vector_norm_default", lambda t, x: (t.linalg.vector_norm(x), t.linalg.vector_norm(x, dim=1)), X),
    Case("vector_norm_ords", lambda t, x: tuple(t.linalg.vector_norm(x, o, dim=-1) for o in (1, 3, INF, -INF, 0, -1)),
         X),
    Case("vector_norm_dims_keepdim", lambda t, x: (t.linalg.vector_norm(x, 2, (0, 2), True),
                                                   t.linalg.vector_norm(x, ord=1, dim=[1], keepdim=False)), B,
         rtol=1e-5, atol=1e-6),
    Case("vector_norm_zero_row_grad", lambda t, x: (t.linalg.vector_norm(x, dim=1), t.linalg.vector_norm(x, 3, 1)), Z),
    Case("vector_norm_dtype", lambda t, x: t.linalg.vector_norm(x, dim=1, dtype=t.float64), B),
    Case("matrix_norm", lambda t, x: tuple(t.linalg.matrix_norm(x, o) for o in ("fro", 1, -1, INF, -INF)), X),
    Case("matrix_norm_batched_dims", lambda t, x: (t.linalg.matrix_norm(x), t.linalg.matrix_norm(x, 1, dim=(0, 2)),
                                                   t.linalg.matrix_norm(x, INF, keepdim=True)), B,
         rtol=1e-5, atol=1e-6),
    # 2 / -2 / 'nuc' from the singular values (full-rank matrices: at a zero singular value the
    # gradient is a choice of subgradient)
    Case("matrix_norm_singular_values", lambda t, x, b: (t.linalg.matrix_norm(x, 2), t.linalg.matrix_norm(x, -2),
                                                         t.linalg.matrix_norm(x, "nuc"), t.linalg.norm(x, 2),
                                                         t.linalg.matrix_norm(b, "nuc", dim=(0, 2), keepdim=True),
                                                         t.linalg.matrix_norm(b, -2, dim=(-1, -2))), X, B,
         rtol=1e-6, atol=1e-7, onnx="standard ONNX has no singular value decomposition"),
    Case("norm", lambda t, x, v: (t.linalg.norm(x), t.linalg.norm(x, 1), t.linalg.norm(x, dim=0),
                                  t.linalg.norm(x, INF, dim=(0, 1)), t.linalg.norm(v, 3), t.linalg.norm(x, "fro")),
         X, V),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


@pytest.mark.parametrize("call, err, match", [
    (lambda x: d2s.linalg.matrix_norm(x, 3), ValueError, "ord must be one of"),
    (lambda x: d2s.linalg.matrix_norm(x[0]), RuntimeError, "at least 2 dims"),
    (lambda x: d2s.linalg.vector_norm(x, "fro"), ValueError, "matrix norm"),
    (lambda x: d2s.linalg.vector_norm(x.long()), RuntimeError, "floating point"),
    (lambda x: d2s.linalg.norm(x.reshape(1, 3, 4), 1), RuntimeError, "1-d or 2-d"),
    (lambda x: d2s.linalg.norm(x, dim=(0, 1, 1)), RuntimeError, "one or two ints"),
    (lambda x: d2s.linalg.vector_norm(x, out=x), TypeError, "out= is not supported"),
])
def test_errors_name_the_problem(call, err, match):
    with pytest.raises(err, match=match):
        call(d2s.tensor(X))


def test_linalg_is_a_lazy_public_module():
    import d2s.linalg as linalg
    assert d2s.linalg is linalg and set(linalg.__all__) <= set(dir(linalg))
    assert all((getattr(linalg, n).__doc__ or "").strip() for n in linalg.__all__)
