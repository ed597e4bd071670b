"""Shape compositions (d2s/ops/combining.py) against PyTorch: broadcast_tensors/broadcast_shapes,
sum_to_size, ravel, split_with_sizes, Tensor.where, Tensor.stride (after transposes, expands,
slices), rot90 (every k, negative k, dims), unfold (windows, steps, dims, 0-d, writes through the
base, refused writes through it), block_diag, cartesian_prod, combinations, diagflat, dist,
nanmedian, fill and detach, and the in-place shape methods (squeeze_, unsqueeze_, t_,
transpose_, swapdims_, swapaxes_): values, dtypes, float64 gradients, then converted, dynamic,
saved and ONNX where ONNX has the op (tests/torch_parity.py)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(34)
X = R.standard_normal((3, 4))
X3 = R.standard_normal((2, 3, 5))
NANS = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, np.nan, np.nan, np.nan], [4.0, -1.0, np.nan, 0.5]])
STATIC_SHAPES = "the case reads sizes while building (Python ints from shapes)"


def _unfold_windows(t, x):
    return x.unfold(1, 2, 1), x.unfold(0, 2, 1), x.unfold(-1, 3, 2), x.unfold(1, 4, 4), x.unfold(1, 1, 3)


def _unfold_sees_base_writes(t, x):
    y = x * 1
    w = y.unfold(1, 3, 1)
    y.add_(1.0)  # a view: the windows show the write into their base
    return w * 2


def _shape_methods(t, x):
    a = x * 2
    a.unsqueeze_(0)
    b = x * 3
    b.t_()
    c = (x * 1).unsqueeze(1)
    c.squeeze_(1)
    d = x * 1
    d.transpose_(0, 1)
    e = x.reshape(3, 1, 4) * 1
    e.swapdims_(0, 2)
    e.squeeze_()
    f = x * 1
    f.swapaxes_(1, 0)
    return a, b, c, d, e, f


def _cumulative_inplace(t, x):
    a = x * 1
    a.cumsum_(1)
    b = x * 1
    b.cumprod_(dim=0)
    return a, b


def _comparisons_inplace(t, x, y):
    outs = []
    for name in ("ge_", "gt_", "le_", "lt_", "ne_", "eq_", "greater_", "greater_equal_", "less_", "less_equal_",
                 "not_equal_"):
        a = x.clone()
        getattr(a, name)(y)
        outs.append(a)
    c = x.clone()
    c.gt_(0.25)
    outs.append(c)
    return tuple(outs)


TORCH_CASES = [
    Case("broadcast_tensors", lambda t, a, b, c: t.broadcast_tensors(a, b, c), X[:, :1], X[0], np.array(2.0),
         dynamic=STATIC_SHAPES),
    Case("broadcast_shapes", lambda t, a: (a[:12].reshape(t.broadcast_shapes((3, 1), (4,), 1)),
                                           a.reshape(t.broadcast_shapes([2, 1, 1], (1, 3, 4)))),
         R.standard_normal(24), dynamic=STATIC_SHAPES),
    Case("sum_to_size", lambda t, x: (x.sum_to_size(1, 5), x.sum_to_size((3, 1)), x.sum_to_size(2, 3, 5),
                                      x.sum_to_size([5]), x.sum_to_size(1, 1)), X3, dynamic=STATIC_SHAPES),
    Case("ravel_split_with_sizes", lambda t, x: (t.ravel(x), x.ravel(), x.split_with_sizes([1, 3], 1),
                                                 x.split_with_sizes((2, 1)), x.split_with_sizes([4], dim=-1)), X,
         dynamic=STATIC_SHAPES),
    Case("tensor_where", lambda t, x, y: (x.where(x > 0, y), x.where(x < 0, 0.0), y.where(x > 0, x)), X,
         R.standard_normal(4)),
    Case("rot90", lambda t, x: (t.rot90(x), x.rot90(2), t.rot90(x, 3), t.rot90(x, -1), t.rot90(x, 4), x.rot90(1, [1, 2]),
                                t.rot90(x, k=1, dims=(2, 0)), t.rot90(x, 5, [-1, -2])), X3),
    Case("unfold", _unfold_windows, X),
    Case("unfold_3d_0d", lambda t, x, s: (x.unfold(2, 3, 1), x.unfold(0, 1, 1), s.unfold(0, 1, 1), s.unfold(0, 0, 1)),
         X3, np.array(1.5)),
    Case("unfold_sees_base_writes", _unfold_sees_base_writes, X),
    Case("unfold_ints_bools_empty", lambda t, i, b: (i.unfold(0, 3, 2), b.unfold(1, 2, 3), i.unfold(0, 0, 1),
                                                     i[:0].unfold(0, 0, 2), i.unfold(0, 7, 1), i.unfold(-1, 1, 10)),
         np.arange(7), R.standard_normal((2, 5)) > 0),
    Case("unfold_of_unfold", lambda t, x: (x.unfold(2, 2, 1).unfold(1, 2, 2), x.unfold(0, 1, 1).sum(-1) * 2), X3),
    Case("block_diag", lambda t, a, b, c, i: (t.block_diag(a, b, c), t.block_diag(a), t.block_diag(i, a),
                                              t.block_diag(c, i)), X[:2, :3], X[0], np.array(0.5),
         np.array([[1, 2], [3, 4]]), dynamic=STATIC_SHAPES),
    Case("cartesian_prod", lambda t, a, b, c: (t.cartesian_prod(a, b), t.cartesian_prod(a, b, c), t.cartesian_prod(a)),
         X[0], X[1, :3], X[2, :2]),
    Case("combinations", lambda t, x: (t.combinations(x), t.combinations(x, 3), t.combinations(x, r=2, with_replacement=True),
                                       t.combinations(x, 1), t.combinations(x, 5), t.combinations(x[:0])), X[0], dynamic=STATIC_SHAPES),
    Case("combinations_ints", lambda t, i: (t.combinations(i), t.combinations(i, 3, True)), np.array([3, 1, 2]),
         dynamic=STATIC_SHAPES),
    Case("diagflat_dist", lambda t, x, y: (t.diagflat(x), x.diagflat(1), t.diagflat(x[:, :2], -2), t.dist(x, y),
                                           x.dist(y, 1), t.dist(x, y, p=3), t.dist(x, y, float("inf"))),
         X, R.standard_normal(4)),
    Case("dist_p0", lambda t, x, y: t.dist(x, y, 0), X, X[0] * (X[0] > 0), grad=False),
    # (an all-NaN row's index is where PyTorch's sort left a NaN: not compared)
    Case("nanmedian", lambda t, x: (t.nanmedian(x), x[::2].nanmedian(1), t.nanmedian(x, 0, keepdim=True),
                                    t.nanmedian(x, dim=-1).values, t.nanmedian(x[0])), NANS, grad=False),
    Case("nanmedian_of_no_elements_is_nan", lambda t, x: (x.nanmedian(), t.nanmedian(x[:0])),
         np.zeros((0, 3), np.float64), dynamic="the emptiness is read from the shape when the program is built"),
    Case("nanmedian_grad", lambda t, x: (t.nanmedian(x), x.nanmedian(0), t.nanmedian(x, 1, True)),
         np.array([[1.0, 5.0, 3.0, 2.0], [0.5, 7.0, -1.0, 4.0], [6.0, -2.0, 8.0, 9.0]])),
    Case("fill_detach", lambda t, x, v: (t.fill(x, 2.5), t.fill(x, v), t.detach(x) * 2), X, np.array(1.25)),
    Case("shape_methods", _shape_methods, X),
    Case("msort_adjoint_vdot", lambda t, x, y: (t.msort(x), x.msort(), t.adjoint(y), x.adjoint(), x[0].vdot(x[1])),
         X, X3),
    Case("unravel_index", lambda t, i: (t.unravel_index(i, (3, 4)), t.unravel_index(i, [2, 2, 3]), t.unravel_index(i, 12),
                                        t.unravel_index(i.reshape(2, 3), (4, 3))), np.array([0, 5, 11, -1, 7, -12])),
    Case("norms_pad", lambda t, x, y: (t.frobenius_norm(x, [0, 1]), t.frobenius_norm(y, (2,), True),
                                       t.norm_except_dim(x, 2, 0), t.norm_except_dim(y, 3, 1), t.norm_except_dim(x, 2, -1),
                                       t.constant_pad_nd(x, [1, 2]), t.constant_pad_nd(y, (0, 1, 2, 0), 1.5)), X, X3),
    Case("renorm", lambda t, x, y: (t.renorm(x, 2, 0, 1.0), x.renorm(1, 1, 0.5), t.renorm(y, 3, -1, 0.8),
                                    t.renorm(x, float("inf"), 0, 10.0)), X, X3),
    Case("cumulative_inplace", _cumulative_inplace, X, onnx="ONNX has no cumulative product"),
    Case("comparisons_inplace", _comparisons_inplace, np.array([[0.0, 0.5, 1.0], [2.0, -1.0, 0.25]]),
         np.array([0.5, 0.5, 2.0]), grad=False),
    Case("comparisons_inplace_ints", lambda t, i: (i.clone().ge_(2), i.clone().lt_(2.5), i.clone().ne_(i.flip(0))),
         np.array([1, 2, 3, 4])),
]

STATIC_DIM = "the scattered dim's size is read when the program is built"
TORCH_CASES += [
    Case("select_scatter", lambda t, x, r, c: (t.select_scatter(x, r, 0, 1), x.select_scatter(c, 1, -1),
                                               t.select_scatter(x, c, dim=-1, index=0)),
         X, R.standard_normal(4), R.standard_normal(3), dynamic=STATIC_DIM),
    Case("slice_scatter", lambda t, x, a, b: (t.slice_scatter(x, a, 1, 0, 4, 2), x.slice_scatter(b, dim=0, start=1),
                                              t.slice_scatter(x, a, dim=1, start=-3, step=2),
                                              t.slice_scatter(x, x), t.slice_scatter(x, a[:, :0], 1, 3, 1)),
         X, R.standard_normal((3, 2)), R.standard_normal((2, 4)), dynamic=STATIC_DIM),
    Case("scatter_slices_3d_ints", lambda t, x, i: (t.select_scatter(i, i[:, 0] * 2, 1, 2),
                                                    t.slice_scatter(x, x[:, :, 1:3] * 3, 2, 1, 3)),
         X3, np.arange(24).reshape(2, 3, 4), dynamic=STATIC_DIM),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_stride_matches_the_layout():
    x = d2s.zeros(2, 3, 4)
    assert x.stride() == (12, 4, 1) and x.stride(1) == 4 and x.stride(-1) == 1
    assert x.transpose(0, 2).stride() == (1, 4, 12)
    assert x[:, ::2].stride() == (12, 8, 1)
    assert x[:, :1].expand(2, 5, 4).stride() == (12, 0, 1)
    assert d2s.zeros(3).unfold(0, 2, 1).stride() == (1, 1)
    assert d2s.zeros(2, 1, 3).stride() == (3, 3, 1) and d2s.tensor(1.0).stride() == ()


# (view, PyTorch 2.13's storage_offset() on arange(16).reshape(4, 4))
OFFSETS = [(lambda x: x, 0), (lambda x: x[:, 1:3], 1), (lambda x: x[1::2], 4), (lambda x: x.diagonal(1), 1),
           (lambda x: x[2], 8), (lambda x: x.unfold(1, 2, 1)[1:], 4), (lambda x: x.split([1, 3], 1)[1], 1),
           (lambda x: x.mT[1:], 1), (lambda x: x[:, 3], 3), (lambda x: x[1:][:, 2:], 6), (lambda x: x[-1], 12),
           (lambda x: x[1:].clone(), 0), (lambda x: x.t().contiguous(), 0), (lambda x: x[1:2].expand(4, -1), 4)]


@pytest.mark.parametrize("view, offset", OFFSETS)
def test_storage_offset_nbytes_and_itemsize_match_pytorch(view, offset):
    for dt, size in ((d2s.float32, 4), (d2s.int16, 2)):
        v = view(d2s.arange(16, dtype=dt).reshape(4, 4))
        assert v.storage_offset() == offset
        assert v.itemsize == v.element_size() == size and v.nbytes == v.numel() * size


def test_unfold_refuses_writes_through_its_windows():
    x = d2s.arange(6.0)
    w = x.unfold(0, 3, 1)
    with pytest.raises(RuntimeError, match="clone"):
        w.mul_(2)
    with pytest.raises(RuntimeError, match="clone"):
        w[0, 0] = 5.0
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_shape_methods_keep_views_and_versions():
    base = d2s.arange(6.0).reshape(2, 3)
    v = base[0]
    v.unsqueeze_(0)
    v.mul_(10.0)  # still a view of base: the write reaches it
    assert tuple(v.shape) == (1, 3) and base.tolist() == [[0.0, 10.0, 20.0], [3.0, 4.0, 5.0]]
    w = d2s.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w.unsqueeze_(0)
    y = w * 1
    z = y * y  # saves y: reshaping y in place afterwards makes that backward refuse, as PyTorch's
    y.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation|in place|inplace"):
        z.sum().backward()


@pytest.mark.parametrize("call, msg", [
    (lambda: d2s.broadcast_shapes((2, 3), (4,)), "shape mismatch"),
    (lambda: d2s.zeros(2, 3).sum_to_size(4, 3), "not expandable"),
    (lambda: d2s.zeros(2, 3).split_with_sizes([1, 2], 0), "sum exactly"),
    (lambda: d2s.rot90(d2s.zeros(2, 2), 1, [0, 0]), "different"),
    (lambda: d2s.rot90(d2s.zeros(2), 1), "total dims"),
    (lambda: d2s.zeros(3).unfold(0, 4, 1), "maximum size"),
    (lambda: d2s.zeros(3).unfold(0, 2, 0), "step"),
    (lambda: d2s.block_diag(d2s.zeros(1, 1, 1)), "2 or fewer"),
    (lambda: d2s.combinations(d2s.zeros(2, 2)), "1D"),
    (lambda: d2s.fill(d2s.zeros(2), d2s.zeros(2)), "0-dimension"),
    (lambda: d2s.zeros(2, 3).stride(5), "index|range"),
    (lambda: d2s.adjoint(d2s.zeros(3)), "matrices"),
    (lambda: d2s.unravel_index(d2s.tensor([12]), (3, 4)), "range"),
    (lambda: d2s.unravel_index(d2s.tensor([1.0]), (3, 4)), "integer"),
])
def test_errors_name_the_op_and_the_problem(call, msg):
    with pytest.raises(Exception, match=msg):
        call()


@pytest.mark.parametrize("call, error, match", [
    (lambda x: d2s.select_scatter(x, x[0], 0, 3), IndexError, "index 3 is out of range"),
    (lambda x: d2s.select_scatter(x, x[0], 2, 0), IndexError, "dim 2 is out of range"),
    (lambda x: d2s.slice_scatter(x, x, 1, 0, 2), RuntimeError, r"src must have the slice's shape \(3, 2\)"),
    (lambda x: x.slice_scatter(x, step=0), ValueError, "step must be positive"),
])
def test_scatters_refuse_what_pytorch_refuses(call, error, match):
    with pytest.raises(error, match=match):
        call(d2s.tensor(X))
