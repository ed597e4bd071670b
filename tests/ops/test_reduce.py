"""Reductions against PyTorch (tests/torch_parity.py): PyTorch's signatures (dim/keepdim, numpy's
axis/keepdims aliases, positional use, dtype=), return structures (max/min with a dim give
``(values, indices)``), dtypes, NaN and tie rules, float64 gradients; each case also converted,
with dynamic dims, saved and exported to ONNX. Then the errors PyTorch raises, and results used
under tensor control flow in converted code."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(0)
X = R.standard_normal((3, 4))                                  # float64, distinct values
X32 = R.standard_normal((2, 3, 4)).astype("float32")
TIES = R.integers(0, 3, (4, 5)).astype("float64")              # many equal values
NAN = X.copy()
NAN[0, 1] = NAN[2, 3] = NAN[2, 0] = np.nan                     # NaN in two rows
INF = np.array([[1.0, np.inf, -np.inf, 2.0], [-np.inf, -np.inf, 0.5, 0.5]])
I64 = R.integers(-5, 6, (3, 4))
I32 = I64.astype("int32")
BOOL = R.random((3, 4)) > 0.5
EMPTY0 = np.zeros((0, 3))                                      # an empty dim to reduce
ZROWS = np.array([[0.0, 0.0, 0.0], [3.0, -4.0, 0.0], [1.0, 1.0, 1.0]])   # a zero row and a constant row
ZEROS = np.array([[2.0, 0.0, 3.0, 0.0, 1.5], [0.5, -1.0, 2.0, 0.0, 3.0], [1.2, 0.7, -0.3, 2.0, 1.1]])
WIDE = np.array([[-1000.0, 0.0, 1000.0, 3.0], [-5.0, -800.0, 2.0, -900.0]])
LOGITS = R.standard_normal((6, 5)).astype("float32")
LABELS = R.integers(0, 5, 6)

_NOT_IN_ONNX = "ONNX has no form of this op (the export refuses it; see test_onnx_refusals)"

TORCH_CASES = [
    # ---------------------------------------------------------------- sum
    Case("sum_all", lambda t, x: x.sum(), X),
    Case("sum_dim", lambda t, x: x.sum(1), X),
    Case("sum_dim_kw_keepdim", lambda t, x: t.sum(x, dim=-1, keepdim=True), X),
    Case("sum_dims_tuple", lambda t, x: x.sum((0, 2)), X32, rtol=1e-5, atol=1e-6),
    Case("sum_dim_list_empty_is_all", lambda t, x: x.sum(dim=[]), X),
    Case("sum_axis_alias", lambda t, x: x.sum(axis=0, keepdims=True), X),
    Case("sum_int32_is_int64", lambda t, x: (x.sum(), x.sum(0)), I32),
    Case("sum_bool_is_int64", lambda t, x: (x.sum(), t.sum(x, 1)), BOOL),
    Case("sum_dtype_float64", lambda t, x: x.sum(1, dtype=t.float64), X32),
    Case("sum_dtype_int32", lambda t, x: t.sum(x, dtype=t.int32), I64),
    Case("sum_empty", lambda t, x: (x.sum(0), x.sum()), EMPTY0),
    Case("sum_nan", lambda t, x: x.sum(1), NAN),
    # ---------------------------------------------------------------- mean, nansum, nanmean
    Case("mean_all", lambda t, x: x.mean(), X),
    Case("mean_positional_keepdim", lambda t, x: x.mean(-1, True), X),
    Case("mean_dims", lambda t, x: t.mean(x, dim=(0, 2), keepdim=False), X32, rtol=1e-5, atol=1e-6),
    Case("mean_int_with_dtype", lambda t, x: x.mean(1, dtype=t.float32), I64),
    Case("mean_float32_dtype_float64", lambda t, x: x.mean(dtype=t.float64), X32),
    Case("mean_empty_is_nan", lambda t, x: (x.mean(0), x.mean()), EMPTY0),
    Case("nansum", lambda t, x: (x.nansum(), t.nansum(x, 1), x.nansum(dim=0, keepdim=True)), NAN),
    Case("nansum_int", lambda t, x: t.nansum(x, 1), I32),
    Case("nanmean", lambda t, x: (x.nanmean(), t.nanmean(x, dim=1), x.nanmean(0, True)), NAN),
    Case("count_nonzero", lambda t, x: (t.count_nonzero(x), x.count_nonzero(0), t.count_nonzero(x, dim=(0, 1))),
         I64),
    Case("count_nonzero_float", lambda t, x: x.count_nonzero(1), ZROWS),
    # ---------------------------------------------------------------- prod
    Case("prod_all", lambda t, x: x.prod(), X),
    Case("prod_dim_keepdim", lambda t, x: x.prod(1, True), X),
    Case("prod_with_zeros", lambda t, x: (x.prod(1), x.prod(0)), ZEROS),
    Case("prod_int32_bool", lambda t, x, b: (x.prod(1), b.prod(), t.prod(x, 0, dtype=t.float64)), I32, BOOL),
    # ---------------------------------------------------------------- max, min
    Case("max_all", lambda t, x: x.max(), X),
    Case("max_dim_named_tuple", lambda t, x: x.max(1), X),
    Case("max_dim_kw_keepdim", lambda t, x: t.max(x, dim=0, keepdim=True), X),
    Case("max_dim_positional_keepdim", lambda t, x: t.max(x, -1, True), X32),
    Case("max_axis_alias", lambda t, x: x.max(axis=1), X),
    Case("max_fields_and_indexing", lambda t, x: (x.max(1).values, x.max(1).indices, x.max(1)[0], x.max(1)[1]), X),
    Case("max_unpacked", lambda t, x: tuple(reversed(x.max(0))), X),
    Case("max_ties_first_index_grad_to_it", lambda t, x: x.max(1), TIES),
    Case("max_all_ties_share_grad", lambda t, x: x.max(), TIES),
    Case("max_nan_propagates", lambda t, x: (x.max(1), x.max(0)), NAN),
    Case("max_all_nan", lambda t, x: x.max(), NAN),
    Case("max_inf", lambda t, x: x.max(1), INF),
    Case("max_int", lambda t, x: (x.max(), x.max(1)), I64),
    Case("max_bool", lambda t, x: x.max(0), BOOL),
    Case("max_other_tensor", lambda t, x, y: t.max(x, y), X, X[::-1].copy()),
    Case("max_0d", lambda t, x: x.sum().max(0), X),
    Case("max_empty_other_dim", lambda t, x: x.max(1), EMPTY0),
    Case("min_all", lambda t, x: x.min(), X),
    Case("min_dim", lambda t, x: t.min(x, 1), X),
    Case("min_ties_nan", lambda t, x, y: (x.min(0), y.min(1)), TIES, NAN),
    Case("min_other_tensor", lambda t, x, y: x.min(y), X, X[::-1].copy()),
    Case("accuracy_idiom", lambda t, out, y: (out.max(1)[1] == y).float().mean(), LOGITS, LABELS),
    Case("accuracy_unpacked", lambda t, out, y: _unpacked_accuracy(out, y), LOGITS, LABELS),
    Case("amax_amin", lambda t, x: (x.amax(), x.amax(1), t.amin(x, dim=(0, 1)), x.amin(-1, keepdim=True)), X32),
    Case("amax_ties_share_grad", lambda t, x: (x.amax(1), t.amin(x, 0)), TIES),
    Case("amax_nan_values", lambda t, x: (x.amax(1), x.amin(0)), NAN, grad=False),
    Case("aminmax", lambda t, x: t.aminmax(x, dim=1), X),
    Case("aminmax_all", lambda t, x: x.aminmax(), I64),
    # ---------------------------------------------------------------- argmax, argmin
    Case("argmax_all", lambda t, x: (x.argmax(), t.argmin(x)), X),
    Case("argmax_dim", lambda t, x: (x.argmax(1), t.argmax(x, dim=0, keepdim=True), x.argmin(dim=-1)), X),
    Case("argmax_ties_first", lambda t, x: (x.argmax(1), x.argmin(0), x.argmax()), TIES),
    Case("argmax_nan", lambda t, x: (x.argmax(1), x.argmin(1), x.argmax(), x.argmin(0)), NAN),
    Case("argmax_inf", lambda t, x: (x.argmax(1), x.argmin(1)), INF),
    Case("argmax_int", lambda t, x: (x.argmax(0), x.argmin(1)), I32),
    # ---------------------------------------------------------------- any, all
    Case("any_all", lambda t, x: (x.any(), x.all(), x.any(1), t.all(x, dim=0, keepdim=True)), BOOL),
    Case("any_all_dims", lambda t, x: (x.any(dim=(0, 1)), t.all(x, (0,)), x.all(axis=1)), I64),
    Case("any_all_float", lambda t, x: (x.any(1), x.all(1)), ZROWS),
    # ---------------------------------------------------------------- var, std
    Case("var_std_all", lambda t, x: (x.var(), x.std()), X),
    Case("var_std_dim", lambda t, x: (x.var(1), t.std(x, dim=0), x.std(-1, keepdim=True)), X),
    Case("var_unbiased_false", lambda t, x: (x.var(0, unbiased=False), t.std(x, 1, False, True)), X),
    Case("std_unbiased_first", lambda t, x: (x.std(False), t.var(x, True)), X),
    Case("var_correction", lambda t, x: (x.var(dim=1, correction=0), t.std(x, correction=2), x.var(1, correction=3)),
         X),
    Case("std_constant_rows_grad_zero", lambda t, x: x.std(1), ZROWS),
    Case("var_float32", lambda t, x: (x.var((0, 2)), x.std(1)), X32, rtol=1e-5, atol=1e-6),
    Case("var_single_element_nan", lambda t, x: x[:, :1].var(1), X),
    Case("std_mean_var_mean", lambda t, x: (t.std_mean(x, 1), t.var_mean(x), t.var_mean(x, 0, keepdim=True)), X),
    # ---------------------------------------------------------------- norm
    Case("norm_default", lambda t, x: (x.norm(), t.norm(x, dim=1), x.norm(dim=(0, 1), keepdim=True)), X),
    Case("norm_p", lambda t, x: (x.norm(1), t.norm(x, p=3, dim=0), x.norm(float("inf"), 1), x.norm(p=-float("inf"))),
         X),
    Case("norm_p0_and_fro", lambda t, x: (x.norm(0, 1), t.norm(x, "fro", (0, 1))), ZROWS),
    Case("norm_zero_row_grad_zero", lambda t, x: (x.norm(dim=1), t.norm(x, 3, 1)), ZROWS),
    Case("norm_float32_keepdim", lambda t, x: x.norm(2, -1, True), X32, rtol=1e-5, atol=1e-6),
    Case("norm_dtype", lambda t, x: t.norm(x, dim=1, dtype=t.float64), X32),
    # ---------------------------------------------------------------- logsumexp, softmax
    Case("logsumexp", lambda t, x: (x.logsumexp(1), t.logsumexp(x, dim=-1, keepdim=True), x.logsumexp((0, 1))), X),
    Case("logsumexp_int", lambda t, x: t.logsumexp(x, 1), I64),
    Case("logsumexp_wide", lambda t, x: x.logsumexp(1), WIDE),
    Case("softmax_dim", lambda t, x: (x.softmax(1), t.softmax(x, dim=0), x.log_softmax(-1), t.log_softmax(x, 0)), X),
    Case("softmax_dtype", lambda t, x: (x.softmax(-1, dtype=t.float64), t.log_softmax(x, 1, t.float64)), X32),
    Case("F_softmax", lambda t, x: (t.nn.functional.softmax(x, dim=1), t.nn.functional.log_softmax(x, dim=0)), X32,
         rtol=1e-6, atol=1e-6),
    # ---------------------------------------------------------------- cumsum, cumprod, logcumsumexp
    Case("cumsum", lambda t, x: (x.cumsum(1), t.cumsum(x, dim=0)), X),
    Case("cumsum_dtypes", lambda t, x, b: (x.cumsum(0), b.cumsum(1), t.cumsum(x, 1, dtype=t.float64)), I32, BOOL),
    Case("cumprod", lambda t, x: (x.cumprod(1), t.cumprod(x, dim=0)), X, onnx=_NOT_IN_ONNX),
    Case("cumprod_zeros_grad", lambda t, x: (x.cumprod(1), x.cumprod(-1)), ZEROS, onnx=_NOT_IN_ONNX),
    Case("cumprod_dtypes", lambda t, x, b: (x.cumprod(1), b.cumprod(0), t.cumprod(x, 0, dtype=t.float64)), I32, BOOL,
         onnx=_NOT_IN_ONNX),
    Case("logcumsumexp", lambda t, x: (x.logcumsumexp(1), t.logcumsumexp(x, dim=0)), X, onnx=_NOT_IN_ONNX),
    Case("logcumsumexp_wide", lambda t, x: x.logcumsumexp(1), WIDE, onnx=_NOT_IN_ONNX),
    Case("logcumsumexp_inf", lambda t, x: x.logcumsumexp(1), INF, grad=False, onnx=_NOT_IN_ONNX),
]


def _unpacked_accuracy(out, y):
    _, pred = out.max(1)
    return (pred == y).float().mean(), pred


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)
