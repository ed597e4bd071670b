"""PyTorch's dim-wise indexing against PyTorch (tests/torch_parity.py): gather/scatter,
the index_* family, masks, take, nonzero, searchsorted; values, dtypes, float64 gradients and
the converted, saved and ONNX forms; and PyTorch's errors for an index out of range (numpy
would wrap a negative one: a silently different answer)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(0)
X = R.standard_normal((3, 4))
X3 = R.standard_normal((2, 3, 4))
V = R.standard_normal(6)
I = np.arange(12, dtype="int64").reshape(3, 4)
GI = np.array([[0, 2], [1, 1], [3, 0]])      # gather along dim 1 of (3, 4)
SI = np.array([[0, 2], [1, 3], [3, 0]])      # distinct per row: scatter's result does not depend on the order
IDX = np.array([2, 0, 2])
MASK = X > 0.2
PROD_X = np.array([[0.0, 1.5, -2.0, 0.5], [3.0, 0.0, 1.0, 2.0]])
PROD_I = np.array([[0, 1, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]])
PROD_S = np.array([[0.5, 0.0, 2.0, 1.5], [2.0, 3.0, 0.0, 0.0], [1.5, -1.0, 0.0, 4.0]])
_DATA = "its output size depends on the data"

def _written(x, m):
    y = x.clone()
    y[0, 0] = -1
    y[m] = -100
    y[1, 1:] = 2.7
    return y


TORCH_CASES = [
    # gather / scatter
    Case("gather", lambda t, x, i: t.gather(x, 1, i), X, GI),
    Case("gather_dim0", lambda t, x, i: x.gather(0, i), X, np.array([[2, 0, 1, 1], [0, 0, 2, 1]])),
    Case("gather_kw", lambda t, x, i: t.gather(x, dim=-1, index=i), X, GI),
    Case("gather_smaller", lambda t, x, i: x.gather(1, i), X, np.array([[1], [3]])),
    Case("gather_int", lambda t, x, i: x.gather(1, i), I, GI),
    Case("scatter_src", lambda t, x, i, s: x.scatter(1, i, s), X, SI, R.standard_normal((3, 2))),
    Case("scatter_value", lambda t, x, i: t.scatter(x, 1, i, 9.5), X, SI),
    Case("scatter_value_kw", lambda t, x, i: x.scatter(1, i, value=-1.0), X, SI),
    Case("scatter_reduce_add", lambda t, x, i, s: x.scatter(1, i, s, reduce="add"), X, GI, R.standard_normal((3, 2)),
         grad=False),
    Case("scatter_add", lambda t, x, i, s: x.scatter_add(1, i, s), X, GI, R.standard_normal((3, 2))),
    Case("scatter_add_fn", lambda t, x, i, s: t.scatter_add(x, 0, i, s), X, np.array([[2, 0, 1, 1], [2, 0, 2, 1]]),
         R.standard_normal((2, 4))),
    Case("scatter_add_bigger_src", lambda t, x, i, s: x.scatter_add(1, i, s), X, GI, R.standard_normal((3, 3)),
         grad=[0]),  # torch cannot differentiate src larger than the index
    Case("scatter_reduce_sum", lambda t, x, i, s: x.scatter_reduce(1, i, s, "sum"), X, GI, R.standard_normal((3, 2))),
    Case("scatter_reduce_mean", lambda t, x, i, s: x.scatter_reduce(1, i, s, "mean"), X, GI, R.standard_normal((3, 2)),
         onnx="reduce='mean' has no ONNX form"),
    Case("scatter_reduce_amax", lambda t, x, i, s: x.scatter_reduce(1, i, s, "amax"), X, GI, R.standard_normal((3, 2))),
    Case("scatter_reduce_amin_noself", lambda t, x, i, s: x.scatter_reduce(1, i, s, "amin", include_self=False), X, GI,
         R.standard_normal((3, 2)), onnx="include_self=False has no ONNX form"),
    Case("scatter_reduce_prod", lambda t, x, i, s: x.scatter_reduce(1, i, s, "prod"), X, GI, R.standard_normal((3, 2))),
    # zeros: in the input, a lone zero among a position's src values, two zeros at one position
    Case("scatter_reduce_prod_zeros", lambda t, x, i, s: (x.scatter_reduce(0, i, s, "prod"),
                                                          x.scatter_reduce(0, i, s, "prod", include_self=False)),
         PROD_X, PROD_I, PROD_S, onnx="include_self=False has no ONNX form"),
    Case("scatter_reduce_mean_int", lambda t, x, i, s: x.scatter_reduce(1, i, s, "mean", include_self=False), I, GI,
         np.array([[5, 7], [2, 9], [4, 4]]), onnx="include_self=False has no ONNX form"),
    # index_* family
    Case("index_select", lambda t, x, i: x.index_select(1, i), X, IDX),
    Case("index_select_dim0", lambda t, x, i: t.index_select(x, 0, i), X, IDX),
    Case("index_select_3d", lambda t, x, i: t.index_select(x, -2, i), X3, np.array([1, 1, 0])),
    Case("index_add", lambda t, x, i, s: x.index_add(1, i, s), X, IDX, R.standard_normal((3, 3))),
    Case("index_add_alpha", lambda t, x, i, s: t.index_add(x, 0, i, s, alpha=2.0), X, IDX, R.standard_normal((3, 4))),
    # an integer input takes alpha in its own dtype: 1.5 adds source once, -2.7 subtracts it twice
    Case("index_add_int_float_alpha", lambda t, x, i: (x.index_add(0, i, x, alpha=1.5), x.index_add(1, i, x[:, :3],
                                                                                               alpha=-2.7)), I, IDX),
    Case("index_copy", lambda t, x, i, s: x.index_copy(1, i, s), X, np.array([3, 0]), R.standard_normal((3, 2))),
    Case("index_copy_dim0", lambda t, x, i, s: t.index_copy(x, 0, i, s), X, np.array([2, 0]), R.standard_normal((2, 4))),
    Case("index_fill", lambda t, x, i: x.index_fill(1, i, -2.0), X, np.array([0, 3])),
    Case("index_fill_negative", lambda t, x, i: t.index_fill(x, 0, i, 7), X, np.array([-1])),
    Case("index_fill_tensor", lambda t, x, i, v: x.index_fill(1, i, v.sum()), X, np.array([1]), np.array([0.5, 1.5])),
    # masks
    Case("masked_fill", lambda t, x, m: x.masked_fill(m, 0.0), X, MASK),
    Case("masked_fill_broadcast", lambda t, x, m: x.masked_fill(m, -1e9), X, np.array([True, False, True, False])),
    Case("masked_fill_tensor_value", lambda t, x, m, v: t.masked_fill(x, m, v.sum()), X, MASK, np.array([0.25, 1.0])),
    Case("masked_fill_int", lambda t, x, m: x.masked_fill(m, 7), I, MASK),
    # a Python number written into uint8 / int8 converts as PyTorch converts it: -1 is 255, 2.7 is 2
    Case("setitem_small_ints", lambda t, x, m: _written(x, m), np.array([[1, 2, 3], [4, 5, 6]], dtype="uint8"),
         np.array([[True, False, False], [False, False, True]]), grad=False),
    Case("setitem_int8", lambda t, x, m: _written(x, m), np.array([[1, -2, 3], [4, 5, -6]], dtype="int8"),
         np.array([[True, False, False], [False, False, True]]), grad=False),
    Case("masked_fill_attention", lambda t, s: s.masked_fill(t.triu(t.ones(4, 4, dtype=t.bool), 1) if hasattr(t, "triu")
                                                        else t.tensor(np.triu(np.ones((4, 4), bool), 1)),
                                                        float("-inf")).softmax(-1), R.standard_normal((2, 4, 4))),
    Case("masked_scatter", lambda t, x, m, s: x.masked_scatter(m, s), X, MASK, R.standard_normal(12)),
    Case("masked_scatter_broadcast", lambda t, x, m, s: t.masked_scatter(x, m, s), X, np.array([True, False, False, True]),
         R.standard_normal((2, 4))),
    Case("masked_select", lambda t, x, m: x.masked_select(m), X, MASK),
    Case("masked_select_broadcast", lambda t, x, m: t.masked_select(x, m), X, np.array([False, True, True, False])),
    # take, take_along_dim
    Case("take", lambda t, x, i: t.take(x, i), X, np.array([[0, 11], [-1, 5]])),
    Case("take_along_dim", lambda t, x, i: t.take_along_dim(x, i, dim=1), X, GI),
    Case("take_along_dim_argmax", lambda t, x: t.take_along_dim(x, x.argmax(1, keepdim=True), 1) if _keepdim_ok(t)
         else t.take_along_dim(x, x.argmax(1).unsqueeze(1), 1), X),
    Case("take_along_dim_broadcast", lambda t, x, i: t.take_along_dim(x, i, 1), X, np.array([[0, 2]])),
    Case("take_along_dim_flat", lambda t, x, i: t.take_along_dim(x, i), X, np.array([0, 11, 4])),
    # nonzero, where, argwhere
    Case("nonzero", lambda t, x: (x > 0.5).nonzero(), X),
    Case("nonzero_tuple", lambda t, x: t.nonzero(x > 0.5, as_tuple=True), X),
    Case("where_one_arg", lambda t, x: t.where(x > 0.5), X),
    Case("where_three_args", lambda t, x, y: t.where(x > 0, x, y), X, X * 2),
    Case("argwhere", lambda t, x: t.argwhere(x > 0.5), X),
    Case("nonzero_int", lambda t, x: t.nonzero(x), np.array([[0, 3], [1, 0]])),
    # searchsorted, bucketize
    Case("searchsorted", lambda t, s, v: (t.searchsorted(s, v), t.searchsorted(s, v, right=True),
                                          t.searchsorted(s, v, side="right")), np.array([1.0, 2.0, 2.0, 5.0]),
         np.array([[0.5, 2.0], [2.5, 9.0]])),
    Case("searchsorted_rows", lambda t, s, v: t.searchsorted(s, v), np.sort(R.standard_normal((3, 5)), axis=1),
         R.standard_normal((3, 2))),
    Case("searchsorted_int32", lambda t, s, v: t.searchsorted(s, v, out_int32=True), np.array([1, 3, 5]),
         np.array([0, 3, 6])),
    Case("bucketize", lambda t, x, b: (t.bucketize(x, b), t.bucketize(x, b, right=True)), np.array([1, 2, 3, 7]),
         np.array([1, 3, 5])),
    # sorter=: the sequence unsorted, with the indices that sort it; results index the sorted order
    Case("searchsorted_sorter", lambda t, s, i, v: (t.searchsorted(s, v, sorter=i), t.searchsorted(s[0], v, sorter=i[0],
                                                                                                    right=True)),
         np.array([[3.0, 1.0, 2.0], [0.0, 5.0, -1.0]]), np.array([[1, 2, 0], [2, 0, 1]]), np.array([[2.0, 0.5], [0.0, 6.0]])),
    # NaN in the sequence (where torch.sort puts it: last): PyTorch's bisection moves right past it
    Case("searchsorted_nan_in_sequence", lambda t, s, v: (t.searchsorted(s, v), t.searchsorted(s, v, right=True),
                                                          t.bucketize(v[0], s[0]), t.searchsorted(s[1], v[1], side="right")),
         np.array([[-1.5, 0.0, np.nan], [1.0, np.nan, np.nan]]), np.array([[-2.0, 0.0, 0.5, 9.0], [1.0, 3.0, np.nan, -1.0]]),
         onnx="ONNX counts the entries below each value, NumPy's order of NaN"),
    Case("searchsorted_empty_rows", lambda t, s, v: (t.searchsorted(s, v), t.searchsorted(s, v, side="right")),
         np.zeros((3, 0), np.float32), np.ones((3, 2), np.float32)),
    Case("nonzero_0d", lambda t, a, b: (t.nonzero(a), t.nonzero(b), t.argwhere(a), t.nonzero(a, as_tuple=True)),
         np.array(5.0), np.array(0), onnx="onnxruntime has no NonZero kernel for float64"),
    # integer indices with index arrays: PyTorch selects the ints first, so a slice between an
    # int and an index array does not move the indexed dim to the front (NumPy's rule would)
    Case("getitem_int_slice_array", lambda t, x: (x[0, :, [1, 2]], x[0, None, :, [1]], x[1, 1:, [0, 3]],
                                                  x[-1, ::2, t.tensor([3])], x[0, ..., [1, 2]],
                                                  x[[0, 1], :, [1, 2]], x[[0, 1], 1:, 0]), X3,
         onnx="two index arrays in one index"),
    Case("getitem_int_slice_mask", lambda t, x, m: x[0, :, m], X3, np.array([True, False, True, True]),
         dynamic="the mask's count of True is data", onnx="a bool mask after other indices"),
    # a Python True adds a dim of 1, as None: its size is known in a program too
    Case("getitem_python_true", lambda t, x: (x[True], x[None, True], x[0, True], x[..., True], x[True, 1:]), X),
    Case("getitem_python_true_shape", lambda t, x: x[True].shape, X, dynamic="the shape holds the input's dims",
         saved="a shape only", onnx="a shape only"),
    Case("setitem_int_slice_array", lambda t, x, v: _set_mixed(x, v), X3, R.standard_normal((3, 2))),
    # embedding
    Case("embedding", lambda t, i, w: t.nn.functional.embedding(i, w), np.array([[0, 2], [1, 0]]),
         R.standard_normal((3, 4))),
]


def _index_put_forms(t, x, v, w):
    rows, cols = t.tensor([0, 2, 3]), t.tensor([1, 0, 1])
    y = x.clone()
    y.index_put_((t.tensor([1, -1]),), w[0] * 2, accumulate=True)  # (in place; a negative index)
    z = x * 1
    z.renorm_(2, 0, 1.0)
    return (t.index_put(x, (rows, cols), v), x.index_put((x[:, :, 0] > 0,), t.tensor(5.0, dtype=x.dtype)),
            x.index_put((rows[:, None], cols[None, :]), w[:1] + 1, accumulate=False), y, z)


# index_put: integer index tensors (broadcast), a bool mask (PyTorch takes no None); accumulate
# adds up repeated positions (PyTorch's), in place too
TORCH_CASES += [
    Case("index_put", _index_put_forms, R.standard_normal((4, 3, 2)), R.standard_normal((3, 2)),
         R.standard_normal((4, 2)), dynamic="index_put reads the indexed dims' sizes when the program is built"),
    Case("index_put_accumulate", lambda t, x, v: (
        t.index_put(x, (t.tensor([0, 2, 0, 3]), t.tensor([1, 1, 1, 0])), v, accumulate=True),
        x.index_put((t.tensor([[1], [3]]), t.tensor([[0, 2]])), v[:2, None], accumulate=True),
        x.index_put((t.tensor([0, 0]),), v[0, None, None] * 0 + 1, True)),
         R.standard_normal((4, 3, 2)), R.standard_normal((4, 2)),
         dynamic="index_put reads the indexed dims' sizes when the program is built"),
]


def _set_mixed(x, v):
    y = x * 1
    y[0, :, [1, 2]] = v * 2
    y[1, None, :, [3]] = -1.0
    return y


def _keepdim_ok(t):
    """argmax's keepdim= (the reduce engineer's); torch has it."""
    try:
        t.argmax(t.zeros(2, 2), 1, keepdim=True)
        return True
    except TypeError:
        return False


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


@pytest.mark.parametrize("call", [
    lambda x: x.gather(1, d2s.tensor([[-1]])),
    lambda x: x.gather(1, d2s.tensor([[4]])),
    lambda x: x.scatter(1, d2s.tensor([[-1]]), 1.0),
    lambda x: x.scatter_add(0, d2s.tensor([[3]]), d2s.ones(1, 1, dtype=d2s.float64)),
    lambda x: x.index_select(0, d2s.tensor([-1])),
    lambda x: x.index_add(1, d2s.tensor([4]), d2s.ones(3, 1, dtype=d2s.float64)),
    lambda x: x.index_copy(0, d2s.tensor([-1]), d2s.ones(1, 4, dtype=d2s.float64)),
    lambda x: x.take(d2s.tensor([12])),
    lambda x: d2s.nn.functional.embedding(d2s.tensor([-1]), x),
    lambda x: d2s.nn.functional.embedding(d2s.tensor([3]), x),
], ids=["gather_neg", "gather_big", "scatter_neg", "scatter_add_big", "index_select_neg", "index_add_big",
        "index_copy_neg", "take_big", "embedding_neg", "embedding_big"])
def test_an_index_out_of_range_raises_as_torch(call):
    x = d2s.tensor(X)
    with pytest.raises(IndexError, match="out of"):
        call(x)
    with pytest.raises(RuntimeError):  # PyTorch's own error type, caught by `except RuntimeError` too
        call(x)


def test_out_of_range_raises_inside_programs_too():
    f = d2s.jit.to_static(lambda x, i: x.gather(1, i))
    with pytest.raises(Exception, match="out of bounds"):
        f(d2s.tensor(X), d2s.tensor([[-1]]))
    g = d2s.jit.to_static(lambda i, w: d2s.nn.functional.embedding(i, w))
    with pytest.raises(Exception, match="out of bounds"):
        g(d2s.tensor([5]), d2s.tensor(X))


@pytest.mark.parametrize("call", [
    lambda x, i: x.scatter_add(1, i, d2s.ones(3, 2)),
    lambda x, i: x.scatter(1, i, d2s.ones(3, 2)),
    lambda x, i: x.scatter_reduce(1, i, d2s.ones(3, 2), "amax"),
    lambda x, i: x.clone().scatter_add_(1, i, d2s.ones(3, 2)),
    lambda x, i: x.index_add(1, d2s.tensor(IDX), d2s.ones(3, 3, dtype=d2s.int64)),
    lambda x, i: x.clone().index_copy_(1, d2s.tensor([1]), d2s.zeros(3, 1)),
], ids=["scatter_add", "scatter", "scatter_reduce", "scatter_add_", "index_add", "index_copy_"])
def test_a_source_of_another_dtype_is_refused_as_by_torch(call):
    """PyTorch refuses a source whose dtype differs from the tensor written into (d2s cast it)."""
    with pytest.raises(RuntimeError, match="same dtype, got float64 and (float32|int64)"):
        call(d2s.tensor(X), d2s.tensor(GI))


def test_in_place_forms_write_into_the_tensor():
    x = d2s.tensor(X.copy())
    i = d2s.tensor(IDX)
    F64 = {"dtype": d2s.float64}  # sources of the input's dtype, as PyTorch requires
    got = [x.clone().masked_fill_(d2s.tensor(MASK), 0.0), x.clone().index_add_(1, i, d2s.ones(3, 3, **F64)),
           x.clone().index_copy_(1, d2s.tensor([1]), d2s.zeros(3, 1, **F64)),
           x.clone().index_fill_(0, d2s.tensor([1]), 2.0),
           x.clone().scatter_(1, d2s.tensor(SI), 3.0), x.clone().scatter_add_(1, d2s.tensor(GI), d2s.ones(3, 2, **F64)),
           x.clone().scatter_reduce_(1, d2s.tensor(GI), d2s.ones(3, 2, **F64), "sum"), x.clone().fill_diagonal_(5.0)]
    want = [x.masked_fill(d2s.tensor(MASK), 0.0), x.index_add(1, i, d2s.ones(3, 3, **F64)),
            x.index_copy(1, d2s.tensor([1]), d2s.zeros(3, 1, **F64)), x.index_fill(0, d2s.tensor([1]), 2.0),
            x.scatter(1, d2s.tensor(SI), 3.0), x.scatter_add(1, d2s.tensor(GI), d2s.ones(3, 2, **F64)),
            x.scatter_reduce(1, d2s.tensor(GI), d2s.ones(3, 2, **F64), "sum"), d2s.tensor(_diag(X, 5.0))]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def _diag(x, v):
    out = x.copy()
    np.fill_diagonal(out, v)
    return out


@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((5, 2), True), ((5, 2), False), ((2, 4), False),
                                          ((3, 3, 3), False)])
def test_fill_diagonal_matches_torch(shape, wrap):
    torch = torch_parity.live_torch()
    a = np.zeros(shape)
    got = d2s.tensor(a).fill_diagonal_(2.0, wrap=wrap).numpy()
    if torch is None:
        want = a.copy()
        np.fill_diagonal(want, 2.0, wrap=wrap)
    else:
        want = torch.tensor(a).fill_diagonal_(2.0, wrap=wrap).numpy()
    np.testing.assert_array_equal(got, want)


def test_masked_fill_refuses_a_mask_larger_than_the_tensor():
    with pytest.raises(ValueError, match="does not broadcast"):
        d2s.zeros(3).masked_fill(d2s.ones(2, 3, dtype=d2s.bool), 1.0)
    with pytest.raises(TypeError, match="bool"):
        d2s.zeros(3).masked_fill(d2s.ones(3), 1.0)


def test_scatter_prod_gradient():
    """scatter(reduce='multiply') is scatter_reduce 'prod': each factor's gradient is the
    product of the others (PyTorch has no gradient for scatter with reduce)."""
    x = d2s.tensor(X, requires_grad=True)
    x.scatter(1, d2s.tensor(GI), 2.0, reduce="multiply").sum().backward()
    want = np.ones_like(X)
    for r, cols in enumerate(GI):
        for c in cols:
            want[r, c] *= 2.0
    np.testing.assert_allclose(x.grad.numpy(), want)


def test_scatter_prod_gradient_of_a_src_bigger_than_the_index():
    """src beyond the index's shape is never read: its gradient is 0, the rest as for the
    cropped src (PyTorch cannot differentiate this case)."""
    big = np.random.default_rng(5).standard_normal((3, 3))
    grads = []
    for s_arr in (big, big[:, :2].copy()):
        s = d2s.tensor(s_arr, requires_grad=True)
        (d2s.tensor(X).scatter_reduce(1, d2s.tensor(GI), s, "prod") * d2s.tensor(X)).sum().backward()
        grads.append(s.grad.numpy())
    np.testing.assert_allclose(grads[0][:, :2], grads[1])
    assert (grads[0][:, 2] == 0).all()


def test_scatter_prod_double_backward_is_refused_clearly():
    x, s = d2s.tensor(X, requires_grad=True), d2s.tensor(R.standard_normal((3, 2)), requires_grad=True)
    y = x.scatter_reduce(1, d2s.tensor(GI), s, "prod").sum()
    with pytest.raises(NotImplementedError, match="double backward of reduce='prod'"):
        d2s.autograd.grad(y, s, create_graph=True)


def _puts(t, x, v):
    y = x.clone()
    y.put_(t.tensor([1, -2]), v[:2] * 3, accumulate=True)
    return (t.put(x, t.tensor([0, -1, 4]), v[:3]), x.put(t.tensor([[0, 0], [5, 1]]), v[:4].reshape(2, 2), True), y)


def _index_reduces(t, x, src):
    y = x.clone()
    y.index_reduce_(1, t.tensor([3, 0]), src[:, :2], "amin", include_self=False)
    return tuple(x.index_reduce(0, t.tensor([0, 2, 0]), src, r, include_self=inc)
                 for r in ("prod", "mean", "amax", "amin") for inc in (True, False)) + (y,)


TORCH_CASES += [
    Case("put", _puts, R.standard_normal((2, 3, 2)), R.standard_normal(4)),
    Case("index_reduce", _index_reduces, R.standard_normal((3, 4)), R.standard_normal((3, 4)), grad=False,
         onnx="scatter_reduce's prod and mean have no ONNX form"),
    # always `size` rows, padded or truncated: a static shape, so it converts and exports
    Case("nonzero_static", lambda t, x, b: (t.nonzero_static(x, size=5), x.nonzero_static(size=2, fill_value=-7),
                                            t.nonzero_static(b, size=4), t.nonzero_static(x * 0, size=1)),
         np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]]), np.array([True, False, True]),
         dynamic="the input's shape is read when the program is built"),
]


def test_index_put_refuses_other_dtypes_and_masks_with_accumulate():
    x = d2s.zeros(3, 2)
    with pytest.raises(RuntimeError, match="destination's dtype"):
        x.index_put((d2s.tensor([0]),), d2s.ones(2, dtype=d2s.float64))
    with pytest.raises(NotImplementedError, match="nonzero"):
        x.index_put((x[:, 0] > 0,), d2s.ones(2), accumulate=True)
    assert x.index_put((d2s.tensor([1]),), 2.0).tolist() == [[0.0, 0.0], [2.0, 2.0], [0.0, 0.0]]
