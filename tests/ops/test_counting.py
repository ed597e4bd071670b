"""Membership, counts and quantiles (d2s/ops/counting.py) against PyTorch: isin (numbers, mixed
dtypes, NaN, invert), bincount (weights' dtypes, minlength, empty input), histc (data range, values
on edges and outside, NaN), quantile and nanquantile (dim, keepdim, q lists, every interpolation,
NaN slices), cov and corrcoef (weights, correction, integer inputs): values, dtypes, float64 gradients, then converted, with dynamic dims, saved and
exported to ONNX (tests/torch_parity.py)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(7)
X = R.standard_normal((3, 5))
NANS = X.copy()
NANS[0, 1] = NANS[2, :] = np.nan
INTS = np.array([0, 3, 1, 1, 7, 3, 0, 3])
NO_ONNX = "bincount has no ONNX form"

TORCH_CASES = [
    # isin
    Case("isin_ints", lambda t, a, b: (t.isin(a, b), t.isin(a, b, invert=True), t.isin(a, 3),
                                       t.isin(a, b, assume_unique=True)),
         np.array([[1, 2, 3], [4, 5, 1]]), np.array([1, 5, 9])),
    Case("isin_mixed_dtypes_and_nan", lambda t, a, b: (t.isin(a, b), t.isin(a, b[:1]), t.isin(b, a)),
         np.array([1.0, np.nan, 2.5, 3.0], dtype=np.float32), np.array([3.0, np.nan, 1.0])),
    Case("isin_keywords", lambda t, a, b: (t.isin(elements=a, test_elements=b), t.isin(a, test_element=2),
                                           t.isin(element=3, test_elements=b)),
         np.array([1, 2, 3]), np.array([3, 4]), dynamic="a Python number"),
    Case("isin_int_vs_float", lambda t, a, b: t.isin(a, b), np.array([1, 2, 3]), np.array([2.0, 2.5])),
    Case("isin_scalar_elements", lambda t, b: t.isin(3, b), np.array([1, 3]), dynamic="a Python number"),
    # bincount
    Case("bincount", lambda t, x: (t.bincount(x), x.bincount(minlength=10), t.bincount(x, minlength=2)), INTS,
         onnx=NO_ONNX),
    Case("bincount_weights", lambda t, x, w, w32, wi: (t.bincount(x, w), t.bincount(x, weights=w32, minlength=9),
                                                       t.bincount(x, wi)),
         INTS, R.standard_normal(8), R.standard_normal(8).astype(np.float32), np.arange(8), grad=False,
         onnx=NO_ONNX),
    Case("bincount_empty", lambda t, x: (t.bincount(x), t.bincount(x, minlength=3)), np.zeros(0, np.int64),
         onnx=NO_ONNX),
    Case("bincount_int32", lambda t, x: t.bincount(x), INTS.astype(np.int32), onnx=NO_ONNX),
    # histc
    Case("histc", lambda t, x: (t.histc(x), x.histc(bins=4), t.histc(x, bins=7, min=-1, max=1),
                                t.histc(x, 3, 0.5, 0.5)), X, grad=False, onnx="histc has no ONNX form"),
    Case("histc_edges_and_nan", lambda t, x: (t.histc(x, bins=4, min=0, max=4), t.histc(x, bins=3, min=0, max=3),
                                              t.histc(x, bins=5, min=1, max=2)),
         np.array([0.0, 1.0, 2.0, 3.0, 4.0, 4.5, -1.0, np.nan, 1.0], np.float32), grad=False,
         onnx="histc has no ONNX form"),
    Case("histc_rounding_at_edges", lambda t, x, y: (t.histc(x, bins=10, min=0, max=1), t.histc(y, bins=10, min=0, max=1),
                                                     t.histc(x, bins=3, min=0.1, max=0.7), t.histc(y, bins=7, min=-0.3, max=0.9)),
         np.arange(0, 1.0001, 0.1), np.arange(0, 1.0001, 0.05).astype(np.float32), grad=False,
         onnx="histc has no ONNX form"),
    # values within rounding of an edge: PyTorch divides rather than searching the edges
    Case("histc_bin_by_division", lambda t, x: (t.histc(x, bins=42, min=-0.73, max=0.18), t.histc(x.float(), 42, -0.73, 0.18)),
         np.array([-0.71, 0.01, 0.1, -0.18, -0.07, -0.24, 0.12, 0.01, -0.73, 0.05, -0.7, -0.07, -0.57, 0.06, -0.24, -0.46,
                   -0.35, -0.7, -0.62, -0.12]), grad=False, onnx="histc has no ONNX form"),
    Case("histc_constant", lambda t, x: t.histc(x, bins=3), np.full((4,), 2.0), grad=False,
         onnx="histc has no ONNX form"),
    # quantile, nanquantile
    Case("quantile", lambda t, x: (t.quantile(x, 0.3), x.quantile(0.5, dim=1), t.quantile(x, 0.25, 0, keepdim=True),
                                   t.quantile(x, 1.0, dim=-1), t.quantile(x, 0.0), t.quantile(x, 0.7, keepdim=True)),
         X),
    Case("quantile_q_tensor", lambda t, x, q: (t.quantile(x, q), t.quantile(x, q, dim=1), x.quantile(q, 0, True)),
         X, np.array([0.1, 0.5, 0.9]), grad=[0]),
    Case("quantile_float32", lambda t, x: (t.quantile(x, 0.4, dim=0), t.quantile(x, 0.45)),
         X.astype(np.float32), rtol=1e-5, atol=1e-6),
    Case("quantile_interpolations", lambda t, x: tuple(
        t.quantile(x, q, dim=1, interpolation=m) for m in ("linear", "lower", "higher", "midpoint", "nearest")
        for q in (0.3, 0.5, 0.625)), R.standard_normal((2, 9))),
    Case("quantile_nan", lambda t, x: (t.quantile(x, 0.5, dim=1), t.quantile(x, 0.5), t.quantile(x, 0.3, dim=0)),
         NANS, grad=False),
    Case("nanquantile", lambda t, x: (t.nanquantile(x, 0.5, dim=1), x.nanquantile(0.3), t.nanquantile(x, 0.9, dim=0),
                                      t.nanquantile(x, 0.2, dim=1, keepdim=True, interpolation="nearest")),
         NANS, grad=False),
    Case("nanquantile_grad", lambda t, x: (t.nanquantile(x, 0.4, dim=1), t.nanquantile(x, 0.6)), X),
    # cov, corrcoef
    Case("cov", lambda t, x, v: (t.cov(x), x.cov(correction=0), t.cov(v), t.cov(x, correction=2), t.cov(x.T[:2])),
         X, R.standard_normal(7)),
    Case("cov_weights", lambda t, x, f, a: (t.cov(x, fweights=f), t.cov(x, aweights=a), t.cov(x, fweights=f, aweights=a),
                                            t.cov(x, fweights=f, aweights=a, correction=0)),
         X, np.array([1, 2, 0, 3, 1]), R.random(5) + 0.1, grad=[0, 2]),
    Case("cov_ints_float32", lambda t, i, x: (t.cov(i), t.cov(x), t.cov(x, aweights=x[0].abs() + 1)),
         np.array([[1, 2, 4], [3, 1, 0]]), X.astype(np.float32), rtol=1e-5, atol=1e-6),
    Case("cov_no_degrees_of_freedom", lambda t, v, x: (t.cov(v, correction=3), t.cov(x[:, :1])),
         np.array([1.0, 2.0, 4.0]), X, grad=False,
         onnx="onnxruntime folds the division by 0 into a fused MatMul whose inf scale it then refuses"),
    Case("corrcoef", lambda t, x, v, i: (t.corrcoef(x), x.corrcoef(), t.corrcoef(v), t.corrcoef(i)),
         X, R.standard_normal(4), np.array([[1, 2, 4], [3, 1, 0], [2, 2, 2]])),
    Case("quantile_1d_and_3d", lambda t, v, x: (t.quantile(v, 0.5), t.quantile(v, 0.5, dim=0, keepdim=True),
                                                t.quantile(x, 0.35, dim=1), t.quantile(x, 0.35, dim=-1, keepdim=True)),
         R.standard_normal(6), R.standard_normal((2, 4, 3))),
]

# torch.histogram (eager only): int bins over the data's range or a given one (equal min and max
# widened), edges given as a tensor, weights, density; values on the edges (the last edge
# counts in the last bin) and outside them
_HIST_EAGER = "eager only: histogram's counts are computed on the host, outside programs"
_HIST = np.array([1.0, 2.0, 1.0, 4.0, 2.5, 3.0, 0.25, 3.999, 2.0])
TORCH_CASES += [
    Case("histogram", lambda t, x, w: (t.histogram(x, 3), x.histogram(bins=4, range=(0.0, 3.0)),
                                       t.histogram(x, bins=5, weight=w, density=True),
                                       t.histogram(x[:2] * 0 + 2, bins=2),
                                       t.histogram(x, bins=t.tensor([0.0, 1.5, 2.0, 3.0], dtype=x.dtype), weight=w),
                                       t.histogram(x.float(), 4, density=True)),
         _HIST, np.arange(9.0), grad=False, static=_HIST_EAGER),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_bincount_in_a_program_has_a_length_known_when_it_runs():
    @d2s.jit.to_static
    def f(x):
        return d2s.bincount(x, minlength=2) * 2

    for data in ([0, 1, 1, 4], [2, 2], []):
        x = d2s.tensor(np.array(data, np.int64))
        assert f(x).tolist() == (d2s.bincount(x, minlength=2) * 2).tolist()


@pytest.mark.parametrize("call, msg", [
    (lambda: d2s.bincount(d2s.tensor([1, -1])), "negative"),
    (lambda: d2s.bincount(d2s.tensor([[1]])), "1-d"),
    (lambda: d2s.bincount(d2s.tensor([1.0])), "integers"),
    (lambda: d2s.bincount(d2s.tensor([True, False])), "integers"),
    (lambda: d2s.bincount(d2s.tensor([1, 2]), d2s.tensor([1.0])), "as long as"),
    (lambda: d2s.histc(d2s.tensor([1, 2])), "floating point"),
    (lambda: d2s.histc(d2s.tensor([1.0]), min=2, max=1), "larger than min"),
    (lambda: d2s.quantile(d2s.tensor([1.0, 2.0]), 1.5), r"range \[0, 1\]"),
    (lambda: d2s.quantile(d2s.tensor([1, 2]), 0.5), "float32 or float64"),
    (lambda: d2s.quantile(d2s.tensor([1.0]), 0.5, interpolation="cubic"), "interpolation"),
    (lambda: d2s.quantile(d2s.tensor([1.0]), d2s.tensor([0.5], dtype=d2s.float64)), "dtype"),
    (lambda: d2s.quantile(d2s.zeros(0), 0.5), "non-empty"),
    (lambda: d2s.cov(d2s.zeros(2, 2, 2)), "two or fewer"),
    (lambda: d2s.cov(d2s.tensor([True, False])), "bool"),
    (lambda: d2s.cov(d2s.zeros(2, 3), fweights=d2s.tensor([1.0, 2.0, 3.0])), "integral"),
    (lambda: d2s.cov(d2s.zeros(2, 3), aweights=d2s.tensor([1, 2, 3])), "floating point"),
    (lambda: d2s.cov(d2s.zeros(2, 3), fweights=d2s.tensor([1, 2])), "observations"),
    (lambda: d2s.cov(d2s.zeros(2, 3), fweights=d2s.tensor([1, -2, 1])), "negative"),
    (lambda: d2s.cov(d2s.zeros(2, 3), fweights=d2s.tensor([0, 0, 0])), "sum to zero"),
])
def test_errors_name_the_op_and_the_problem(call, msg):
    with pytest.raises(Exception, match=msg):
        call()


def _class_weighting_step(x, labels):
    """A training step's bookkeeping, written as model code writes it with torch."""
    counts = d2s.bincount(labels, minlength=3).float()
    weights = counts.sum() / (counts.shape[0] * counts.clamp(min=1))
    high = d2s.quantile(x, 0.9, dim=1, keepdim=True)
    x = d2s.where(x > high, high, x)
    running, where_from = x.cummax(dim=1)
    steps = d2s.diff(x, dim=1, prepend=x[:, :1])
    middle = d2s.tensor_split(x, [1, 3], dim=1)[1]
    gram = x[:, :2].T @ x[:, :2] + d2s.eye(2)
    sign, logdet = d2s.linalg.slogdet(gram)
    return (weights[labels] * running.sum(1), where_from, steps, middle, d2s.linalg.inv(gram), logdet,
            d2s.histc(x, bins=4), d2s.isin(labels, d2s.tensor([0, 2])), (labels << 2) >> 1)


def test_model_code_using_the_new_names_converts_exactly():
    rng = np.random.default_rng(0)
    x = d2s.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    step = d2s.jit.to_static(_class_weighting_step)
    for labels in ([0, 1, 1, 2, 0], [0, 0, 1, 1, 1], [2, 2, 2, 2, 2]):
        labels = d2s.tensor(np.array(labels))
        for want, got in zip(_class_weighting_step(x, labels), step(x, labels)):
            assert want.dtype == got.dtype and np.array_equal(want.numpy(), got.numpy())


def test_gradients_through_the_new_names_convert_exactly():
    def loss(x):
        return d2s.quantile(x, 0.3, dim=1).sum() + x.cummin(1).values.sum() + d2s.linalg.det(x[:, :3]).sum()

    x = d2s.tensor(np.random.default_rng(1).standard_normal((3, 5)), requires_grad=True)
    loss(x).backward()
    eager, x.grad = x.grad.numpy().copy(), None
    d2s.jit.to_static(loss)(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), eager)


def test_bincount_converted_reads_its_length_from_the_data():
    f = d2s.jit.to_static(lambda i: d2s.bincount(i, minlength=3))
    for values in ([0, 2, 2], [4, 1], [1]):
        np.testing.assert_array_equal(f(d2s.tensor(values)).numpy(), np.bincount(values, minlength=3))


def _counts_per_graph(batch):
    size = int(batch.max()) + 1  # PyG's global pooling: the number of graphs from the batch vector
    return d2s.bincount(batch, minlength=size), d2s.bincount(batch, minlength=size + 2)


def test_bincount_converted_with_a_minlength_read_from_the_data():
    f = d2s.jit.to_static(_counts_per_graph)
    for values in ([0, 0, 1, 2, 2], [0, 1, 1, 1], [3]):
        a, b = f(d2s.tensor(values))
        np.testing.assert_array_equal(a.numpy(), np.bincount(values))
        np.testing.assert_array_equal(b.numpy(), np.bincount(values, minlength=max(values) + 3))
    assert f.is_static
