"""Running extremes, differences and Vandermonde matrices (d2s/ops/cumulative.py) against PyTorch:
cummax/cummin (named tuples, ties, NaN, integers, bool, every dim), diff (n, dim, prepend, append,
bool), vander and torch.linalg.vander (N, increasing, integer promotion, batches): values, dtypes,
float64 gradients, then converted, with dynamic dims, saved and exported to ONNX where ONNX can hold
them (tests/torch_parity.py)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(13)
X = R.standard_normal((3, 6))
TIES = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.0], [2.0, np.nan, 5.0, np.nan, 1.0, 7.0]])
NO_ONNX = "ONNX has no running maximum or minimum"
NO_CUMPROD = "vander is a running product, which ONNX has no operator for"

TORCH_CASES = [
    Case("cummax_cummin", lambda t, x: (t.cummax(x, 1), x.cummax(0), t.cummin(x, dim=-1), x.cummin(dim=0).indices,
                                        t.cummax(x, 1).values), X, onnx=NO_ONNX),
    Case("cummax_ties_nan", lambda t, x: (t.cummax(x, 1), t.cummin(x, 1), t.cummax(x, 0)), TIES, grad=False,
         onnx=NO_ONNX),
    Case("cummax_ints_bool", lambda t, i, b: (t.cummax(i, 0), t.cummin(i, 0), t.cummax(b, 0), t.cummin(b, 0)),
         np.array([3, 1, 4, 1, 5, 9, 2, 6]), np.array([False, True, False, True]), onnx=NO_ONNX),
    Case("cummax_0d_and_3d", lambda t, s, x: (t.cummax(s, 0), t.cummin(x, 1)), np.array(2.5),
         R.standard_normal((2, 3, 4)), onnx=NO_ONNX),
    Case("diff", lambda t, x: (t.diff(x), x.diff(dim=0), t.diff(x, n=2), t.diff(x, 3, 1), t.diff(x, n=0),
                               t.diff(x, n=7)), X),
    Case("diff_prepend_append", lambda t, x, p, a: (t.diff(x, prepend=p, append=a), t.diff(x, dim=0, prepend=x[:1] * 2),
                                                    x.diff(append=a, n=2)),
         X, R.standard_normal((3, 2)), R.standard_normal((3, 1))),
    # n=0 gives input itself: prepend and append are not joined
    Case("diff_n0_ignores_prepend_append", lambda t, x, p, a: (t.diff(x, n=0, prepend=p, append=a),
                                                               x.diff(0, 0, x[:1]), t.diff(x, n=0, append=a)),
         X, R.standard_normal((3, 2)), R.standard_normal((3, 1))),
    Case("diff_ints_bool", lambda t, i, b: (t.diff(i), t.diff(b), t.diff(i, n=2)),
         np.array([1, 4, 9, 16, 25], np.int32), np.array([True, True, False, True])),
    Case("vander", lambda t, x: (t.vander(x), t.vander(x, N=3), t.vander(x, 4, True), t.vander(x, N=0),
                                 t.vander(x, N=1, increasing=True)), R.standard_normal(4),
         grad=False, onnx=NO_CUMPROD),  # (PyTorch's own vander backward fails: its cumprod runs in place)
    Case("vander_ints", lambda t, i, b: (t.vander(i), t.vander(b, 3)), np.array([2, -1, 3], np.int32),
         np.array([True, False]), onnx=NO_CUMPROD),
    Case("linalg_vander", lambda t, x, b, i: (t.linalg.vander(x), t.linalg.vander(x, N=2), t.linalg.vander(b, N=5),
                                              t.linalg.vander(i)),
         R.standard_normal(3), R.standard_normal((2, 3)), np.array([2, 3], np.int32), onnx=NO_CUMPROD),
]

# torch.gradient: every dim or some, a step per dim, uneven coordinates, edge orders 1 and 2
_GRAD_COORDS = np.array([0.0, 1.0, 3.0, 7.0, 7.5])
TORCH_CASES += [
    Case("gradient", lambda t, x, c: (t.gradient(x), t.gradient(x, spacing=2.0, dim=1, edge_order=2),
                                      t.gradient(x, spacing=[2.0, 3.0]), t.gradient(x, dim=[0]),
                                      t.gradient(x, spacing=(c,), dim=1),
                                      t.gradient(x, spacing=(c,), dim=-1, edge_order=2),
                                      t.gradient(x[0, :3].float(), edge_order=2)),
         np.array([[1.0, 2.0, 4.0, 8.0, 9.0], [10.0, 20.0, 40.0, 80.0, 3.0], [0.5, -1.0, 2.0, 0.0, 1.0]]),
         _GRAD_COORDS, grad=[0], dynamic="the differentiated dims' sizes are read when the program is built"),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


@pytest.mark.parametrize("call, msg", [
    (lambda: d2s.diff(d2s.tensor(1.0)), "one-dimensional"),
    (lambda: d2s.diff(d2s.zeros(3), n=-1), "non-negative"),
    (lambda: d2s.diff(d2s.zeros(3, 2), prepend=d2s.zeros(2)), "as many dims"),
    (lambda: d2s.vander(d2s.zeros(2, 2)), "one-dimensional"),
    (lambda: d2s.linalg.vander(d2s.zeros(3), N=1), "greater than 1"),
    (lambda: d2s.cummax(d2s.zeros(3), 1), "out of range|Dimension"),
])
def test_errors_name_the_op_and_the_problem(call, msg):
    with pytest.raises(Exception, match=msg):
        call()
