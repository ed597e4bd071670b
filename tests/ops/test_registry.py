"""Every runtime op is complete on the d2s side: traits, a gradient rule (or a reason it has
none), an ONNX form (or a reason), a float64 gradcheck (or a reason) and a documented public
wrapper (or a reason it has none). Adding an op without these fails here."""
import numpy as np
import pytest

import d2s
import d2s.onnx  # noqa: F401  (registers the control-flow converters)
import d2s.static  # noqa: F401  (registers the control-flow gradient rules)
from d2s import ops
from d2s.nn import functional as F
from d2s.autograd import gradcheck
from d2s.autograd.registry import GRAD_RULES, NONDIFF, SAMPLES
from d2s.dispatch import apply
from d2s.ops.matrices import _well_conditioned
from d2s.onnx.registry import CONSTANTS, CONTROL_FLOW, CONVERTERS, UNSUPPORTED
from d2s_runtime.ops import OPS, OpDef
from d2s_runtime.ops.registry import TRAITS

R = np.random.default_rng(0)


def randn(*shape):
    return R.standard_normal(shape)


_FIXED = {}


def fixed(*shape):
    """The same random weights on every call (a case's function runs many times)."""
    if shape not in _FIXED:
        _FIXED[shape] = randn(*shape)
    return _FIXED[shape]


def positive(*shape):
    return R.uniform(0.5, 2.0, shape)


def spread(*shape):
    """Distinct values far from each other (no ties for max/min, no kinks near finite steps)."""
    n = int(np.prod(shape))
    return (R.permutation(n) * 0.37 - n * 0.15).reshape(shape) + 0.05


_W46 = fixed(4, 6)  # (drawn here: converted code refuses numpy draws, which a program would freeze)


def _reshape_to_symbolic_dims(x):
    # a dynamic batch dim makes x.shape[0] symbolic: the reshape is a reshape_dims op, and
    # backward runs its rule in the static backward program
    return d2s.reshape(x, [x.shape[0], -1]) * _W46


_reshape_dims_static = d2s.jit.to_static(_reshape_to_symbolic_dims,
                                         input_spec=[d2s.jit.InputSpec([None, 2, 3], "float64")])


# ------------------------------------------------------------------ test data, one row per op
# op -> (public wrapper or a reason it has none, gradcheck case (fn, inputs) or a reason)
_INTERNAL = "internal op, emitted by other ops' wrappers or rules; no public wrapper"
_LISTS = ("a tensor-list op of converted loops (symbolic only); its rule is checked against eager gradients by "
          "tests/test_convert_lists.py and tests/test_control_flow.py::test_tensor_array_gradients_eager_and_static")
_ND = "not differentiable"
_ZERO_GRAD = ("PyTorch defines its gradient as zero (the draws do not depend on the parameters); finite "
              "differences of a random draw are no derivative. tests/ops/test_random.py checks the zeros")

CASES = {
    "add": (ops.add, (ops.add, [randn(3, 1), randn(1, 4)])),
    "sub": (ops.sub, (ops.sub, [randn(3, 4), randn(4)])),
    "mul": (ops.mul, (ops.mul, [randn(3, 4), randn(3, 1)])),
    "div": (ops.div, (ops.div, [randn(3, 4), positive(4)])),
    "pow": (ops.pow, (ops.pow, [positive(3, 4), randn(4)])),
    "mod": (ops.mod, (ops.mod, [positive(3, 4) * 3, np.full(4, 0.7)])),
    "floordiv": (ops.floordiv, _ND),
    "maximum": (ops.maximum, (ops.maximum, [spread(3, 4), spread(3, 4) + 0.11])),
    "minimum": (ops.minimum, (ops.minimum, [spread(3, 4), spread(3, 4) + 0.11])),
    "neg": (ops.neg, (ops.neg, [randn(5)])),
    "exp": (ops.exp, (ops.exp, [randn(5)])),
    "log": (ops.log, (ops.log, [positive(5)])),
    "sqrt": (ops.sqrt, (ops.sqrt, [positive(5)])),
    "sin": (ops.sin, (ops.sin, [randn(5)])),
    "cos": (ops.cos, (ops.cos, [randn(5)])),
    "tanh": (ops.tanh, (ops.tanh, [randn(5)])),
    "sigmoid": (ops.sigmoid, (ops.sigmoid, [randn(5)])),
    # (through erf(x / sqrt(2)): the rules give the whole derivative in x, none through the erf)
    "gelu_from_erf": (F.gelu, (F.gelu, [randn(3, 4) * 2])),
    "gelu_from_erf_grad": (_INTERNAL, (lambda x, g: apply("gelu_from_erf_grad", x, ops.erf(x * 0.5 ** 0.5), g),
                                       [randn(3, 4) * 2, randn(3, 4)])),
    "relu": (ops.relu, (ops.relu, [spread(6)])),
    "abs": (ops.abs, (ops.abs, [spread(6)])),
    "sign": (ops.sign, (ops.sign, [positive(6) - 1.25])),
    "floor": (ops.floor, (ops.floor, [positive(6) * 3])),
    "clip": (ops.clip, (lambda x: ops.clip(x, -0.5, 0.5), [spread(8) * 0.1])),
    "clamp": (ops.clamp, (lambda x, lo, hi: ops.clamp(x, lo, hi), [spread(3, 4) * 0.1, spread(4) * 0.05 - 0.2,
                                                                      spread(3, 1) * 0.05 + 0.2])),
    "log1p": (ops.log1p, (ops.log1p, [positive(5) - 0.4])),
    "log2": (ops.log2, (ops.log2, [positive(5)])),
    "log10": (ops.log10, (ops.log10, [positive(5)])),
    "rsqrt": (ops.rsqrt, (ops.rsqrt, [positive(5)])),
    "asin": (ops.asin, (ops.asin, [R.uniform(-0.9, 0.9, 5)])),
    "acos": (ops.acos, (ops.acos, [R.uniform(-0.9, 0.9, 5)])),
    "atanh": (ops.atanh, (ops.atanh, [R.uniform(-0.9, 0.9, 5)])),
    "acosh": (ops.acosh, (ops.acosh, [positive(5) + 1.0])),
    "erfinv": (ops.erfinv, (ops.erfinv, [R.uniform(-0.9, 0.9, 5)])),
    "lgamma": (ops.lgamma, (ops.lgamma, [positive(3, 4)])),
    "polygamma": (ops.digamma, (ops.digamma, [positive(3, 4)])),
    "unfold": (ops.unfold, (lambda x: ops.unfold(x, 1, 2, 1), [randn(3, 4)])),
    "linalg_svd": (d2s.linalg.svd, (lambda a: (lambda u, s, vh: ((u * s.unsqueeze(-2)) @ vh, u.abs(), vh.abs()))(
        *d2s.linalg.svd(a, full_matrices=False)), [randn(4, 3)])),
    "linalg_eigh": (d2s.linalg.eigh, (lambda a: (lambda w, q: (w, q.abs()))(*d2s.linalg.eigh(a + a.mT)),
                                      [randn(4, 4)])),
    "lu_pivots": (d2s.linalg.lu_factor, _ND),
    "linalg_lu": (d2s.linalg.lu, (lambda a: (lambda p, l, u: (l, u))(*d2s.linalg.lu(a)), [randn(2, 3, 3)])),
    "linalg_qr": (d2s.linalg.qr, (lambda a: tuple(d2s.linalg.qr(a)), [randn(4, 3)])),
    "linalg_matrix_exp": (d2s.linalg.matrix_exp, (d2s.linalg.matrix_exp, [randn(3, 3) * 0.5])),
    "linalg_pinv": (d2s.linalg.pinv, (d2s.linalg.pinv, [randn(4, 3)])),
    "linalg_matrix_rank": (d2s.linalg.matrix_rank, _ND),
    "gcd": (ops.gcd, _ND), "lcm": (ops.lcm, _ND), "signbit": (ops.signbit, _ND),
    "nextafter": (ops.nextafter, _ND),
    "frexp": (ops.frexp, (lambda x: ops.frexp(x * 3).mantissa * fixed(3, 4), [randn(3, 4)])),
    "fmin": (ops.fmin, (ops.fmin, [spread(3, 4), spread(4) + 0.11])),
    "fmod": (ops.fmod, (ops.fmod, [positive(3, 4) * 3, np.full(4, -0.7)])),
    "truncdiv": ("d2s.div(a, b, rounding_mode='trunc')", _ND),
    "einsum": (ops.einsum, (lambda a, b, c: ops.einsum("bij,bjk,k->bi", a, b, c), [randn(2, 3, 4), randn(1, 4, 5),
                                                                                  randn(5)])),
    "tril": (ops.tril, (lambda x: ops.tril(x, -1) * fixed(2, 3, 4), [randn(2, 3, 4)])),
    "triu": (ops.triu, (lambda x: ops.triu(x, 1) * fixed(3, 4), [randn(3, 4)])),
    "diagonal": (ops.diagonal, (lambda x: ops.diagonal(x, 1, 2, 0) * fixed(4, 2), [randn(3, 4, 3)])),
    "diag_embed": (ops.diag_embed, (lambda x: ops.diag_embed(x, -1, 0, 2) * fixed(4, 2, 4), [randn(2, 3)])),
    "diagonal_scatter": (ops.diagonal_scatter, (lambda x, v: ops.diagonal_scatter(x, v, 1) * fixed(3, 4),
                                                [randn(3, 4), randn(3)])),
    "where": (ops.where, (lambda a, b: ops.where(np.array([True, False, True]), a, b), [randn(2, 3), randn(3)])),
    "cast": (ops.cast, (lambda x: ops.cast(x * 1.0, "float64"), [randn(4)])),
    "eq": (ops.eq, _ND), "ne": (ops.ne, _ND), "lt": (ops.lt, _ND), "le": (ops.le, _ND), "gt": (ops.gt, _ND),
    "ge": (ops.ge, _ND),
    "bitwise_and": (ops.bitwise_and, _ND), "bitwise_or": (ops.bitwise_or, _ND),
    "bitwise_xor": (ops.bitwise_xor, _ND), "logical_not": (ops.bitwise_not, _ND),
    "matmul": (ops.matmul, (ops.matmul, [randn(2, 3, 4), randn(4, 2)])),
    "reduce_sum": (ops.sum, (lambda x: ops.sum(x, 1), [randn(3, 4)])),
    "reduce_mean": (ops.mean, (lambda x: ops.mean(x, [0, 2], keepdims=True), [randn(2, 3, 4)])),
    "reduce_max": (ops.max, (lambda x: ops.max(x, 0), [spread(3, 4)])),
    "reduce_min": (ops.min, (lambda x: ops.min(x), [spread(3, 4)])),
    "reduce_prod": (ops.prod, (lambda x: ops.prod(x, 1), [positive(3, 4)])),
    "reduce_any": (ops.any, _ND), "reduce_all": (ops.all, _ND),
    "argmax": (ops.argmax, _ND), "argmin": (ops.argmin, _ND),
    "cumprod": (ops.cumprod, (lambda x: ops.cumprod(x, 1) * fixed(3, 4),
                              [np.array([[1.5, 0.0, 2.0, 0.0], [0.5, -1.2, 0.0, 3.0], [1.1, 0.9, -0.7, 1.3]])])),
    "logcumsumexp": (ops.logcumsumexp, (lambda x: ops.logcumsumexp(x, 0) * fixed(3, 4), [randn(3, 4)])),
    "max_dim": (ops.max, (lambda x: ops.max(x, 1).values, [spread(3, 4)])),
    "min_dim": (ops.min, (lambda x: ops.min(x, 0, keepdim=True)[0], [spread(3, 4)])),
    "argsort": (ops.argsort, _ND),
    "sort": (ops.sort, (lambda x: ops.sort(x, 1, descending=True).values * fixed(3, 4), [spread(3, 4)])),
    "topk": (ops.topk, (lambda x: ops.topk(x, 2, 0).values * fixed(2, 4), [spread(3, 4)])),
    "kthvalue": (ops.kthvalue, (lambda x: (ops.kthvalue(x, 2, 1).values, ops.median(x, 0).values, ops.median(x)),
                                [spread(3, 4)])),
    # distinct values (the mode is the smallest): a finite step would break a tie of equal ones
    "mode": (ops.mode, (lambda x: ops.mode(x, 1).values, [spread(3, 4)])),
    "reshape": (ops.reshape, (lambda x: ops.reshape(x, [4, 3]) * np.arange(12.0).reshape(4, 3), [randn(3, 4)])),
    "reshape_like": (_INTERNAL, (lambda x, y: apply("reshape_like", x, y) * np.arange(6.0).reshape(3, 2),
                                 [randn(2, 3), randn(3, 2)])),
    "reshape_dims": (_INTERNAL, (_reshape_dims_static, [randn(4, 2, 3)])),
    "transpose": (ops.transpose, (lambda x: ops.transpose(x, [2, 0, 1]) * fixed(4, 2, 3), [randn(2, 3, 4)])),
    "expand_dims": (ops.unsqueeze, (lambda x: ops.unsqueeze(x, 1) * fixed(3, 1, 4), [randn(3, 4)])),
    "squeeze": (ops.squeeze, (lambda x: ops.squeeze(x, 1) * fixed(3, 4), [randn(3, 1, 4)])),
    "broadcast_to": (ops.broadcast_to, (lambda x: ops.broadcast_to(x, [2, 3, 4]) * fixed(2, 3, 4), [randn(3, 1)])),
    "concat": (ops.concat, (lambda a, b: ops.concat([a, b], 1) * fixed(2, 5), [randn(2, 2), randn(2, 3)])),
    "split_like": (_INTERNAL, (lambda g, a, b: apply("split_like", g, a, b, axis=0)[1] * fixed(3, 2),
                               [randn(5, 2), randn(2, 2), randn(3, 2)])),
    "stack": (ops.stack, (lambda a, b: ops.stack([a, b], 1) * fixed(3, 2), [randn(3), randn(3)])),
    "split": (ops.split, (lambda x: ops.split(x, [1, 3], 1)[1] * fixed(2, 3), [randn(2, 4)])),
    "getitem": (ops.getitem, (lambda x: x[np.array([0, 2, 0]), 1:], [randn(3, 4)])),
    "setitem": (ops.setitem, (lambda x, v: apply("setitem", x, v, np.array([0, 2]), index=[["t", 0]]) * fixed(3, 4),
                              [randn(3, 4), randn(4)])),
    "index_add": (_INTERNAL, (lambda x, v: apply("index_add", x, v, np.array([0, 2, 0]), index=[["t", 0]]),
                              [randn(3, 4), randn(3, 4)])),
    "pad": (ops.pad, (lambda x: ops.pad(x, [1, 2], mode="reflect") * fixed(2, 6), [randn(2, 3)])),
    "pad_grad": (_INTERNAL, (lambda g: apply("pad_grad", g, pads=[[0, 0], [1, 2]], mode="reflect"), [randn(2, 6)])),
    "identity": (ops.identity, (ops.identity, [randn(4)])),
    "custom_function": ("d2s.autograd.Function.apply emits it in programs",
                        "its gradient is the user's backward, checked by tests/autograd/test_function.py"),
    "stop_gradient": (ops.stop_gradient, "it exists to stop gradients"),
    "detached_write": (_INTERNAL, "its gradient (identity to the tensor written) is by design not the derivative of "
                                  "its value (a write autograd does not see); tests/test_views.py compares it with "
                                  "PyTorch's (the detach_write cases)"),
    "to_device": (ops.to_device, (lambda x: ops.to_device(x, "cpu"), [randn(4)])),
    "shape": (ops.shape, _ND), "dim": (_INTERNAL, _ND), "constant": (_INTERNAL, _ND),
    "full": (ops.full, _ND), "full_like": (ops.full_like, _ND), "full_dims": (_INTERNAL, _ND),
    "arange": (ops.arange, _ND), "arange_dyn": (_INTERNAL, _ND), "linspace": (ops.linspace, _ND),
    "eye": (ops.eye, _ND), "rand": (ops.rand, _ND), "randn": (ops.randn, _ND), "randint": (ops.randint, _ND),
    "randint_dyn": (_INTERNAL, _ND),
    "repeat_index": (ops.repeat_interleave, _ND),
    "randperm": (ops.randperm, _ND), "randperm_dyn": (_INTERNAL, _ND), "multinomial": (ops.multinomial, _ND),
    "random_like": (ops.rand_like, _ND),
    "bernoulli": (ops.bernoulli, _ZERO_GRAD), "normal": (ops.normal, _ZERO_GRAD),
    "scatter": (ops.scatter, (lambda x, s: ops.scatter(x, 1, np.array([[0, 2], [1, 3], [3, 0]]), s),
                              [randn(3, 4), randn(3, 2)])),
    "scatter_reduce": (ops.scatter_reduce, (lambda x, s: ops.scatter_reduce(x, 1, np.array([[0, 2], [1, 1], [3, 0]]),
                                                                            s, "mean"), [randn(3, 4), randn(3, 2)])),
    "index_check": (_INTERNAL, _ND),
    "index_add_dim": (ops.index_add, (lambda x, s: ops.index_add(x, 0, np.array([0, 2, 0]), s),
                                      [randn(3, 4), randn(3, 4)])),
    "index_copy_dim": (ops.index_copy, (lambda x, s: ops.index_copy(x, 1, np.array([2, 0]), s),
                                        [randn(3, 4), randn(3, 2)])),
    "nonzero": (ops.nonzero, _ND), "searchsorted": (ops.searchsorted, _ND),
    "cummax": (ops.cummax, (lambda x: ops.cummax(x, 1).values * fixed(3, 4), [spread(3, 4)])),
    "cummin": (ops.cummin, (lambda x: ops.cummin(x, 0).values * fixed(3, 4), [spread(3, 4)])),
    "bincount": (ops.bincount, _ND), "bincount_weighted": (ops.bincount, _ND), "histc": (ops.histc, _ND),
    "linalg_inv": (ops.inverse, (lambda x: ops.inverse(_well_conditioned(x)) * fixed(2, 3, 3), [randn(2, 3, 3)])),
    "linalg_cholesky": (ops.cholesky, (lambda x: ops.cholesky(x @ x.mT + 3 * d2s.eye(3, dtype=x.dtype)) * fixed(3, 3),
                                       [randn(3, 3)])),
    "linalg_slogdet": (ops.slogdet, (lambda x: ops.slogdet(_well_conditioned(x)).logabsdet, [randn(3, 3)])),
    "linalg_inv_ex": (d2s.linalg.inv_ex, (lambda x: d2s.linalg.inv_ex(_well_conditioned(x)).inverse * fixed(2, 3, 3),
                                          [randn(2, 3, 3)])),
    "linalg_cholesky_ex": (d2s.linalg.cholesky_ex, (lambda x: d2s.linalg.cholesky_ex(
        x @ x.mT + 3 * d2s.eye(3, dtype=x.dtype)).L * fixed(3, 3), [randn(3, 3)])),
    # (left=False: the op's trans form)
    "linalg_solve_ex": (d2s.linalg.solve_ex, (lambda x, b: (
        d2s.linalg.solve_ex(_well_conditioned(x), b).result
        + d2s.linalg.solve_ex(_well_conditioned(x), b.mT, left=False).result.mT) * fixed(2, 3, 3),
        [randn(2, 3, 3), randn(3, 3)])),
    "linalg_solve": (d2s.linalg.solve, (lambda x, b: d2s.linalg.solve(_well_conditioned(x), b) * fixed(2, 3, 2),
                                        [randn(2, 3, 3), randn(3, 2)])),
    "bitwise_left_shift": (ops.bitwise_left_shift, _ND), "bitwise_right_shift": (ops.bitwise_right_shift, _ND),
    "masked_scatter": (ops.masked_scatter, (lambda x, s: ops.masked_scatter(x, np.array([True, False, True, True]), s),
                                            [randn(3, 4), randn(10)])),
    "masked_scatter_grad": (_INTERNAL, (lambda g, s: apply("masked_scatter_grad", g, np.array([True, False, True]), s),
                                        [randn(2, 3), randn(5)])),
    "softmax": (ops.softmax, (lambda x: ops.softmax(x, 1) * fixed(3, 4), [randn(3, 4)])),
    "log_softmax": (ops.log_softmax, (lambda x: ops.log_softmax(x, 0) * fixed(3, 4), [randn(3, 4)])),
    "logsumexp": (ops.logsumexp, (lambda x: ops.logsumexp(x, 1), [randn(3, 4)])),
    "cumsum": (ops.cumsum, (lambda x: ops.cumsum(x, 1) * fixed(3, 4), [randn(3, 4)])),
    "gather": (ops.gather, (lambda x: ops.gather(x, 1, np.array([[0, 2], [1, 1], [3, 0]])), [randn(3, 4)])),
    "scatter_add": (ops.scatter_add, (lambda x, s: ops.scatter_add(x, 1, np.array([[0, 2], [1, 1], [3, 0]]), s),
                                      [randn(3, 4), randn(3, 2)])),
    "one_hot": (ops.one_hot, _ND),
    "conv2d": (ops.conv2d, (lambda x, w: ops.conv2d(x, w, stride=2, padding=1, dilation=(1, 2), groups=2),
                            [randn(1, 4, 5, 6), randn(4, 2, 3, 2)])),
    "conv2d_grad_input": (_INTERNAL, (lambda g, w, x: apply("conv2d_grad_input", g, w, x, stride=2, padding=1),
                                      [randn(1, 3, 3, 3), randn(3, 2, 3, 3), randn(1, 2, 5, 5)])),
    "conv2d_grad_weight": (_INTERNAL, (lambda g, x, w: apply("conv2d_grad_weight", g, x, w, stride=2, padding=1),
                                       [randn(1, 3, 3, 3), randn(1, 2, 5, 5), randn(3, 2, 3, 3)])),
    "conv_transpose2d": (ops.conv_transpose2d, (lambda x, w: ops.conv_transpose2d(x, w, stride=2, padding=1,
                                                                                  output_padding=1, groups=2),
                                                [randn(1, 4, 3, 2), randn(4, 1, 3, 2)])),
    "im2col": (F.unfold, (lambda x: F.unfold(x, (2, 3), padding=1, stride=(1, 2)), [randn(1, 2, 4, 5)])),
    "col2im": (F.fold, (lambda x: F.fold(x, (4, 5), (2, 3), padding=1, stride=(1, 2)), [randn(1, 12, 15)])),
    "max_pool2d": (ops.max_pool2d, (lambda x: ops.max_pool2d(x, 3, 2, 1, ceil_mode=True), [spread(1, 2, 6, 5)])),
    "max_pool2d_grad": (_INTERNAL, "its rule refuses (second derivatives of max_pool2d are not supported)"),
    "max_pool2d_indices": (ops.max_pool2d, _ND),
    "avg_pool2d": (ops.avg_pool2d, (lambda x: ops.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                                    [randn(1, 2, 6, 5)])),
    "avg_pool2d_grad": (_INTERNAL, (lambda g: apply("avg_pool2d_grad", g, fixed(1, 2, 6, 5), kernel_size=[3, 3],
                                                    stride=[2, 2], padding=[1, 1], ceil_mode=True,
                                                    count_include_pad=False), [randn(1, 2, 4, 3)])),
    "adaptive_avg_pool2d": (ops.adaptive_avg_pool2d, (lambda x: ops.adaptive_avg_pool2d(x, (3, 2)), [randn(1, 2, 5, 5)])),
    "adaptive_avg_pool2d_grad": (_INTERNAL, (lambda g: apply("adaptive_avg_pool2d_grad", g, fixed(1, 2, 5, 5),
                                                             output_size=[3, 2]), [randn(1, 2, 3, 2)])),
    "adaptive_max_pool2d": (ops.adaptive_max_pool2d, (lambda x: ops.adaptive_max_pool2d(x, (3, 2)),
                                                      [spread(1, 2, 5, 5)])),
    "adaptive_max_pool2d_grad": (_INTERNAL, "its rule refuses (second derivatives of adaptive_max_pool2d are not "
                                            "supported)"),
    "adaptive_max_pool2d_indices": (ops.adaptive_max_pool2d, _ND),
    "interpolate": (ops.interpolate, (lambda x: ops.interpolate(x, scale_factor=1.5, mode="bilinear"),
                                      [randn(1, 2, 3, 4)])),
    "interpolate_grad": (_INTERNAL, (lambda g: apply("interpolate_grad", g, fixed(1, 2, 3, 4), size=[5, 6], mode="linear",
                                                     align_corners=True), [randn(1, 2, 5, 6)])),
    "pixel_shuffle": (ops.pixel_shuffle, (lambda x: ops.pixel_shuffle(x, 2) * fixed(1, 1, 4, 6), [randn(1, 4, 2, 3)])),
    "pixel_unshuffle": (ops.pixel_unshuffle, (lambda x: ops.pixel_unshuffle(x, 2) * fixed(1, 8, 1, 2),
                                              [randn(1, 2, 2, 4)])),
    # every output of normalize weighted: the statistics' gradients are checked too
    "normalize": (F.layer_norm, (lambda x: [o * fixed(*o.shape) for o in apply("normalize", x, axes=[0, 2])],
                                 [randn(2, 3, 4)])),
    "normalize_grad": (_INTERNAL, (lambda g, y, v, gm, gv: apply("normalize_grad", g, y, v, gm, gv, axes=[0, 2]),
                                   [randn(2, 3, 4), randn(2, 3, 4), positive(1, 3, 1), randn(1, 3, 1),
                                    randn(1, 3, 1)])),
    "dropout_mask": (ops.dropout, _ND),
    "print": (ops.print, _ND), "assert": ("the assert statement of converted code", _ND),
    "guard": ("d2s.jit.trace's guards", _ND),
    "list_new": (_INTERNAL, _ND), "list_len": (_INTERNAL, _ND), "list_index_check": (_INTERNAL, _ND),
    "list_push": (_INTERNAL, _LISTS), "list_pop": (_INTERNAL, _LISTS), "list_get": (_INTERNAL, _LISTS),
    "list_stack": (_INTERNAL, _LISTS),
    "stack_new": (_INTERNAL, _ND), "stack_push": (_INTERNAL, _ND), "stack_pop": (_INTERNAL, _ND),
    "stack_rows": (_INTERNAL, _ND),
}


# ops declared with an example call (sample_call, next to the op) need no row above
for _name, (_wrapper, _shapes) in SAMPLES.items():
    # a structured op (cond, while, ...) is built only in a program: its sample is checked converted
    _checked = d2s.jit.to_static(_wrapper) if OPS[_name].structured else _wrapper
    CASES.setdefault(_name, (_wrapper, (_checked, [randn(*s) for s in _shapes])))


def test_every_op_has_a_row():
    assert sorted(set(OPS) - set(CASES)) == [], "ops without a row in CASES or a sample_call declaration"
    assert sorted(set(CASES) - set(OPS)) == [], "rows of CASES for ops that no longer exist"


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_is_complete(name):
    op = OPS[name]
    assert isinstance(op, OpDef) and all(hasattr(op, t) for t in TRAITS), f"{name}: not a registered OpDef"
    differentiable = name in GRAD_RULES
    assert differentiable or NONDIFF.get(name), \
        f"{name}: no gradient rule and no non_differentiable(...) declaration with a reason"
    assert not (differentiable and name in NONDIFF), f"{name}: both a gradient rule and a non-differentiable mark"
    assert (name in CONVERTERS or UNSUPPORTED.get(name) or name in CONSTANTS or name in CONTROL_FLOW), \
        f"{name}: no ONNX converter and no onnx_unsupported(...) reason"
    wrapper, check = CASES[name]
    if callable(wrapper):
        doc = (wrapper.__doc__ or "").strip()
        assert doc, f"{name}: its public wrapper d2s.{wrapper.__name__} has no docstring"
    else:
        assert wrapper, f"{name}: no public wrapper and no reason"
    if differentiable:
        assert check is not _ND, f"{name}: has a gradient rule, so it needs a gradcheck case (or a reason)"
    if isinstance(check, tuple):
        fn, inputs = check
        assert gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)
    else:
        assert isinstance(check, str) and check


def test_reshape_dims_case_builds_the_op():
    from d2s.static import build_program
    program = build_program(_reshape_to_symbolic_dims, d2s.jit.InputSpec([None, 2, 3], "float64"))
    assert "reshape_dims" in [op.type for op in program.block.ops]


def test_gradchecks_fail_on_a_wrong_rule():
    """The check above can fail: a rule made wrong on purpose is caught."""
    rule = GRAD_RULES["sin"]
    GRAD_RULES["sin"] = lambda ctx, g: (g * ops.sin(ctx.inputs[0]),)
    try:
        with pytest.raises(AssertionError):
            gradcheck(ops.sin, [randn(4)])
    finally:
        GRAD_RULES["sin"] = rule


def test_every_public_function_has_a_docstring():
    missing = [n for n in ops.__all__ if not (getattr(ops, n).__doc__ or "").strip()]
    assert missing == []


def test_declarations_name_registered_ops():
    for table in (GRAD_RULES, NONDIFF, CONVERTERS, UNSUPPORTED):
        unknown = set(table) - set(OPS) - {"cond", "while", "scan"}
        assert unknown == set(), f"declared for ops the runtime does not have: {sorted(unknown)}"


def test_view_ops_link_their_input():
    """Autograd's view tracking reads the registry's ``view`` trait (no table of its own)."""
    w = d2s.tensor(randn(3, 4), requires_grad=True)
    for name in sorted(n for n, o in OPS.items() if o.view):
        y = {"transpose": lambda: w.T, "reshape": lambda: w.reshape(4, 3), "expand_dims": lambda: w.unsqueeze(0),
             "squeeze": lambda: w.unsqueeze(0).squeeze(0), "broadcast_to": lambda: w.broadcast_to([2, 3, 4]),
             "getitem": lambda: w[1:], "diagonal": lambda: w.diagonal(), "split": lambda: w.split([1, 2], 0)[1],
             "unfold": lambda: w.unfold(1, 2, 1),
             "reshape_dims": lambda: apply("reshape_dims", w, d2s.tensor(4), shape=[None, 3], same_as=[-1])}[name]()
        assert y._base is not None and y._view is not None, name
