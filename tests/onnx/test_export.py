"""ONNX export: every op converter against onnxruntime (rtol 1e-5), symbolic dims, control flow
as If/Loop, and clear errors for ops with no ONNX form."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import d2s  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.dispatch import apply  # noqa: E402
from d2s.onnx import ExportError, export, program_to_onnx  # noqa: E402
from d2s.autograd.registry import SAMPLES  # noqa: E402
from d2s.onnx.registry import CONVERTERS  # noqa: E402
from d2s.static import InputSpec, build_program  # noqa: E402
from d2s_runtime import Executor  # noqa: E402

RNG = np.random.default_rng(0)


def f32(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype("float32")


def i64(*shape, lo=-5, hi=6):
    return RNG.integers(lo, hi, size=shape).astype("int64")


def boolean(*shape):
    return RNG.random(shape) > 0.5


def _specs(arrays, dynamic):
    """InputSpecs with dim 0 dynamic (where ``dynamic`` and the input has dims)."""
    return [InputSpec([None if dynamic and i == 0 else d for i, d in enumerate(a.shape)], a.dtype.name)
            for a in arrays]


def run_both(fn, arrays, dynamic=True, extra_batches=()):
    """Build ``fn``'s program, export it, run d2s and onnxruntime on ``arrays`` (and on
    ``extra_batches``, other input lists) and compare; returns the program."""
    program = build_program(fn, *_specs(arrays, dynamic))
    program.verify()
    model, in_names, out_names = program_to_onnx(program)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    exe = Executor(program)
    for batch in [arrays, *extra_batches]:
        want = exe.run(*batch)
        got = sess.run(out_names, dict(zip(in_names, batch)))
        for w, g in zip(want, got):
            assert g.dtype == w.dtype, (g.dtype, w.dtype)
            assert g.shape == w.shape, (g.shape, w.shape)
            if w.dtype.kind == "f":
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_array_equal(g, w)
    return program


# (id, fn, input factory) -- each case runs on two batch sizes through one dynamic-batch program
class _Pair(d2s.autograd.Function):
    """A custom Function: its outputs pass through a custom_function op in programs."""

    @staticmethod
    def forward(ctx, x):
        return x * 2, x + 1

    @staticmethod
    def backward(ctx, ga, gb):
        return ga * 2 + gb


CASES = [
    ("add", lambda a, b: a + b, lambda n: [f32(n, 3), f32(n, 3)]),
    ("add_scalar_int", lambda a: a + 2, lambda n: [i64(n, 3)]),
    ("add_mixed_dtypes", lambda a, b: a + b, lambda n: [i64(n, 3), f32(n, 3)]),
    ("sub_broadcast", lambda a, b: a - b, lambda n: [f32(n, 3), f32(3)]),
    ("mul", lambda a, b: a * b, lambda n: [f32(n, 3), f32(n, 1)]),
    ("div", lambda a, b: a / b, lambda n: [f32(n, 3), f32(n, 3, lo=0.5, hi=2)]),
    ("div_int", lambda a, b: a / b, lambda n: [i64(n, 3), i64(n, 3, lo=1, hi=4)]),
    ("floordiv_float", lambda a, b: a // b, lambda n: [f32(n, 4, lo=-9, hi=9), f32(n, 4, lo=0.5, hi=3)]),
    ("floordiv_int", lambda a, b: a // b, lambda n: [i64(n, 4, lo=-9, hi=9), np.array([2, -3, 4, -1])]),
    ("mod_float", lambda a, b: a % b, lambda n: [f32(n, 4, lo=-9, hi=9), np.array([2.5, -3, 1.5, -0.75], "float32")]),
    ("mod_int", lambda a, b: a % b, lambda n: [i64(n, 4, lo=-9, hi=9), np.array([2, -3, 4, -1])]),
    ("pow", lambda a: a ** 2.0 + d2s.abs(a) ** 0.5, lambda n: [f32(n, 3)]),
    ("pow_int", lambda a: a ** 3, lambda n: [i64(n, 3)]),
    ("neg_abs_sign_floor", lambda a: -d2s.abs(a) + d2s.sign(a) + a.floor() if hasattr(a, "floor")
     else -d2s.abs(a) + d2s.sign(a) + apply("floor", a), lambda n: [f32(n, 5)]),
    ("unary_float", lambda a: d2s.exp(a) + d2s.sin(a) + d2s.cos(a) + d2s.tanh(a) + d2s.sigmoid(a) + d2s.relu(a),
     lambda n: [f32(n, 5)]),
    ("log_sqrt", lambda a: d2s.log(a) + d2s.sqrt(a), lambda n: [f32(n, 5, lo=0.1, hi=3)]),
    ("exp_of_int", lambda a: d2s.exp(a), lambda n: [i64(n, 3, lo=-3, hi=3)]),
    ("relu_int", lambda a: d2s.relu(a), lambda n: [i64(n, 3)]),
    ("max_min", lambda a, b: d2s.maximum(a, b) - d2s.minimum(a, 0.5), lambda n: [f32(n, 3), f32(n, 3)]),
    ("compare", lambda a, b: ((a == b) | (a < b)) ^ ((a >= b) & (a != b)) | (a <= b) & (a > 0),
     lambda n: [i64(n, 4, lo=0, hi=3), i64(n, 4, lo=0, hi=3)]),
    ("logical_not", lambda a: ~a, lambda n: [boolean(n, 3)]),
    ("bitwise_int", lambda a, b: (a & b) | (a ^ b) | ~a, lambda n: [i64(n, 3), i64(n, 3)]),
    ("where", lambda c, a, b: d2s.where(c, a, b), lambda n: [boolean(n, 3), f32(n, 3), f32(1, 3)]),
    ("where_scalar", lambda a: d2s.where(a > 0, a, 0.0), lambda n: [f32(n, 3)]),
    ("cast", lambda a: d2s.cast(a, "int64") + d2s.cast(a > 0, "int32"), lambda n: [f32(n, 3, lo=-5, hi=5)]),
    ("cast_to_bool", lambda a: d2s.cast(a, "bool"), lambda n: [i64(n, 3, lo=0, hi=2)]),
    ("clip", lambda a: d2s.clip(a, -0.5, 0.5) + d2s.clip(a, min=0.0) + d2s.clip(a, max=1.0), lambda n: [f32(n, 4)]),
    ("clip_int", lambda a: d2s.clip(a, -1, 2), lambda n: [i64(n, 4)]),
    ("full_dims", lambda a: d2s.zeros([a.shape[0], 2]) + d2s.full([a.shape[0]], 1.5).sum(), lambda n: [f32(n, 3)]),
    ("arange_dyn", lambda a: d2s.arange(a.shape[0]) * 2 + d2s.arange(1, a.shape[0] + 1), lambda n: [f32(n, 3)]),
    ("clip_int_float_bounds", lambda a: d2s.clip(a, -0.5, 2.5), lambda n: [i64(n, 4)]),
    ("matmul", lambda a, b: a @ b, lambda n: [f32(n, 3), f32(3, 4)]),
    ("matmul_batched", lambda a, b: a @ b, lambda n: [f32(n, 2, 3), f32(n, 3, 4)]),
    ("matmul_vector", lambda a, b: a @ b, lambda n: [f32(n, 3), f32(3)]),
    ("reduce_all_axes", lambda a: a.sum() + a.mean() + a.max() + a.min() + a.prod() * 0.01, lambda n: [f32(n, 3)]),
    ("reduce_axis", lambda a: a.sum(axis=1) + a.mean(axis=-1) + a.amax(axis=1) + a.amin(axis=1) + a.prod(axis=1),
     lambda n: [f32(n, 3)]),
    ("reduce_keepdims", lambda a: a.sum(axis=(0, 2), keepdims=True) + a.mean(axis=0, keepdims=True),
     lambda n: [f32(n, 2, 3)]),
    ("reduce_int", lambda a: a.sum(axis=1) + a.prod(axis=1) + a.amax(axis=0).sum(), lambda n: [i64(n, 3, lo=-3, hi=3)]),
    ("reduce_bool", lambda a: a.sum(axis=1), lambda n: [boolean(n, 3)]),
    ("mean_of_int", lambda a: a.mean(axis=1, dtype=d2s.float32), lambda n: [i64(n, 3)]),
    ("any_all", lambda a: d2s.any(a > 0, axis=1) | d2s.all(a > -1, axis=1), lambda n: [f32(n, 3)]),
    ("any_all_global", lambda a: d2s.any(a > 1.5) & d2s.all(a < 3), lambda n: [f32(n, 3)]),
    ("argmax_argmin", lambda a: d2s.argmax(a, axis=1) + d2s.argmin(a, axis=0).sum() + d2s.argmax(a),
     lambda n: [f32(n, 5)]),
    ("argmax_keepdims", lambda a: d2s.argmax(a, axis=1, keepdims=True) + d2s.argmin(a, keepdims=True),
     lambda n: [f32(n, 5)]),
    ("logsumexp", lambda a: d2s.logsumexp(a, axis=1) + d2s.logsumexp(a), lambda n: [f32(n, 4)]),
    ("softmax", lambda a: F.softmax(a, axis=-1) + F.log_softmax(a, axis=1), lambda n: [f32(n, 4)]),
    ("reshape", lambda a: a.reshape(-1, 2) * 2, lambda n: [f32(n, 4)]),
    ("reshape_dims", lambda a: d2s.reshape(a, (a.shape[0], 2, -1)), lambda n: [f32(n, 6)]),
    ("reshape_like", lambda a, b: apply("reshape_like", a, b), lambda n: [f32(n, 6), f32(n, 2, 3)]),
    ("dim", lambda a: a.sum(axis=1) / a.shape[0], lambda n: [f32(n, 3)]),
    ("flatten", lambda a: d2s.flatten(a, 1), lambda n: [f32(n, 2, 3)]),
    ("transpose", lambda a: d2s.transpose(a) + 0, lambda n: [f32(n, 3)]),
    ("permute", lambda a: d2s.permute(a, 2, 0, 1) * 1.5, lambda n: [f32(n, 2, 3)]),
    ("squeeze_unsqueeze", lambda a: d2s.unsqueeze(d2s.squeeze(a, 1), -1) + d2s.squeeze(a, axis=1).sum(),
     lambda n: [f32(n, 1, 3)]),
    ("squeeze_static", lambda a: d2s.squeeze(a) * 2, lambda n: [f32(n, 1, 3)]),
    ("broadcast_to", lambda a: d2s.broadcast_to(a, (2, 4, 3)), lambda n: [f32(4, 3)]),
    ("concat_stack", lambda a, b: d2s.concat([a, b], axis=1).sum() + d2s.stack([a, b], axis=1),
     lambda n: [f32(n, 3), f32(n, 3)]),
    ("concat_mixed", lambda a, b: d2s.concat([a, b], axis=0), lambda n: [i64(n, 3), f32(2, 3)]),
    ("split", lambda a: d2s.split(a, [1, 3], axis=1)[1] * 2, lambda n: [f32(n, 4)]),
    ("getitem_basic", lambda a: a[0] + a[:, 1:3].sum(axis=1).sum() + a[-1, ::2].sum(), lambda n: [f32(n, 5)]),
    ("getitem_neg_step", lambda a: a[::-1, ::-2], lambda n: [f32(n, 5)]),
    ("getitem_none_ellipsis", lambda a: a[..., None, 1] + a[:, None, :, 0] + a[None, :, 2:4, 0].sum(),
     lambda n: [f32(n, 4, 3)]),
    ("getitem_index_array", lambda a, i: a[i] + a[:, i].sum(), lambda n: [f32(n, 4), np.array([0, 2, 1, 0])]),
    ("getitem_index_matrix", lambda a, i: a[1, i], lambda n: [f32(n, 4), np.array([[0, 3], [1, 1]])]),
    ("getitem_mask", lambda a: a[a > 0], lambda n: [f32(n, 4)]),
    ("getitem_row_mask", lambda a, m: a[m], lambda n: [f32(n, 4), boolean(n)]),
    ("embedding", lambda i, w: F.embedding(i, w), lambda n: [i64(n, 3, lo=0, hi=7), f32(7, 4)]),
    ("setitem", lambda a, v: _setitem(a, (slice(None), slice(1, 3)), v), lambda n: [f32(n, 4), f32(2)]),
    ("setitem_int", lambda a: _setitem(a, (0,), 5.0), lambda n: [f32(n, 4)]),
    ("index_add", lambda a, v, i: apply("index_add", a, v, i, index=[["t", 0]]),
     lambda n: [f32(n, 3), f32(4, 3), np.array([0, 1, 0, 1])]),
    ("cumsum", lambda a: d2s.cumsum(a, 1) + apply("cumsum", a, axis=0, reverse=True), lambda n: [f32(n, 4)]),
    ("cumsum_int", lambda a: d2s.cumsum(a, 1), lambda n: [i64(n, 4)]),
    ("gather", lambda a, i: d2s.gather(a, 1, i), lambda n: [f32(n, 4), np.tile(np.array([[0, 3], [2, 2]]), (n // 2, 1))]),
    ("scatter_add", lambda a, i, s: apply("scatter_add", a, i, s, axis=1),
     lambda n: [f32(n, 4), np.tile(np.array([[0, 3], [0, 0]]), (n // 2, 1)), f32(n, 2)]),
    ("one_hot", lambda i: d2s.one_hot(i, 5), lambda n: [i64(n, lo=0, hi=5)]),
    ("scatter", lambda a, i, s: d2s.scatter(a, 1, i, s), lambda n: [f32(n, 4), np.tile(np.array([[0, 3], [2, 1]]), (n // 2, 1)),
                                                               f32(n, 2)]),
    ("scatter_reduce", lambda a, i, s: d2s.scatter_reduce(a, 1, i, s, "amax"),
     lambda n: [f32(n, 4), np.tile(np.array([[0, 3], [0, 0]]), (n // 2, 1)), f32(n, 2)]),
    ("index_add_copy", lambda a, s: (d2s.index_add(a, 1, np.array([0, 2, 0]), s), d2s.index_copy(a, 1, np.array([3, 1, 0]), s)),
     lambda n: [f32(n, 4), f32(n, 3)]),
    ("nonzero", lambda a: d2s.nonzero(a > 0), lambda n: [f32(n, 3)]),
    ("masked_scatter", lambda a, s: d2s.masked_scatter(a, a > 0, s), lambda n: [f32(n, 3), f32(3 * n)]),
    ("searchsorted", lambda s, v: (d2s.searchsorted(s, v), d2s.searchsorted(s, v, right=True)),
     lambda n: [np.sort(f32(n, 5), axis=1), f32(n, 3)]),
    ("conv2d", lambda x, w: F.conv2d(x, w, stride=1, padding=1), lambda n: [f32(n, 2, 5, 5), f32(3, 2, 3, 3)]),
    ("conv2d_strided", lambda x, w: F.conv2d(x, w, stride=2), lambda n: [f32(n, 2, 6, 6), f32(3, 2, 2, 2)]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2) + 0, lambda n: [f32(n, 2, 4, 4)]),
    ("max_pool2d_padded", lambda x: F.max_pool2d(x, 3, stride=2, padding=1), lambda n: [f32(n, 1, 5, 5)]),
    # convolution, pooling, resampling and normalization (tests/nn/test_conv.py etc. check them against PyTorch)
    ("conv2d_grouped_dilated_same", lambda x, w: F.conv2d(x, w, padding="same", dilation=(1, 2), groups=2),
     lambda n: [f32(n, 4, 6, 7), f32(4, 2, 2, 4)]),
    ("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=2),
     lambda n: [f32(n, 4, 3, 2), f32(4, 1, 3, 2)]),
    ("unfold_fold", lambda x: F.fold(F.unfold(x, (2, 3), padding=1, stride=(1, 2)), (4, 5), (2, 3), padding=1,
                                     stride=(1, 2)), lambda n: [f32(n, 2, 4, 5)]),
    ("max_pool2d_ceil_indices", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
     lambda n: [f32(n, 2, 6, 5)]),
    ("avg_pool2d_modes", lambda x: (F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                                    F.avg_pool2d(x, 2, ceil_mode=True), F.avg_pool2d(x, 3, 1, 1, divisor_override=4)),
     lambda n: [f32(n, 2, 5, 5)]),
    ("adaptive_pools", lambda x: (F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool2d(x, (2, 3)),
                                  F.adaptive_avg_pool2d(x, (4, 5)), F.adaptive_max_pool2d(x, 1),
                                  F.adaptive_max_pool2d(x, (3, 2))), lambda n: [f32(n, 2, 6, 6)]),
    ("interpolate_modes", lambda x: (F.interpolate(x, scale_factor=2), F.interpolate(x, size=(5, 7), mode="bilinear"),
                                     F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True),
                                     F.interpolate(x, size=(7, 3), mode="nearest-exact")), lambda n: [f32(n, 2, 3, 4)]),
    ("pixel_shuffle", lambda x: F.pixel_unshuffle(F.pixel_shuffle(x, 2) * 2.0, 2) + F.pixel_shuffle(x, 2).sum(),
     lambda n: [f32(n, 8, 2, 3)]),
    ("normalization", lambda x, w: (F.layer_norm(x, (5,), w), F.group_norm(x, 2, None, None),
                                    F.batch_norm(x, None, None, training=True)), lambda n: [f32(n, 4, 3, 5), f32(5)]),
    ("creation", lambda a: a + d2s.arange(3) + d2s.eye(3)[0] + d2s.full((3,), 2.0) + d2s.linspace(0, 1, 3),
     lambda n: [f32(n, 3)]),
    ("full_like", lambda a, i: d2s.zeros_like(a) + d2s.ones_like(a) * 2 + apply("full_like", i, value=3),
     lambda n: [f32(n, 3), i64(n, 3)]),
    ("tensor_list", lambda a: _tensor_list(a), lambda n: [f32(n, 3)]),
    ("stop_gradient", lambda a: d2s.stop_gradient(a) * 2, lambda n: [f32(n, 3)]),
    ("detached_write", lambda a, b: apply("detached_write", a, b) * 2, lambda n: [f32(n, 3), f32(n, 3)]),
    ("custom_function", lambda a: _Pair.apply(a)[0] - _Pair.apply(a)[1], lambda n: [f32(n, 3)]),
    # arithmetic on two bool tensors is logic in NumPy; ONNX's Add/Mul/Max/Min take no bool
    ("bool_arith", lambda a, b: (a + b, a * b, d2s.maximum(a, b), d2s.minimum(a, b)),
     lambda n: [boolean(n, 3), boolean(n, 3)]),
    ("broadcast_to_dynamic", lambda a, b: d2s.broadcast_to(b, a.shape) * a
     + d2s.broadcast_to(b > 0, [a.shape[0], 1, 3]).sum(axis=1), lambda n: [f32(n, 3), f32(3)]),
    ("pad", lambda a: (d2s.pad(a, (1, 2), value=1.5), d2s.pad(a, (1, 2, 0, 1), mode="reflect"),
                       d2s.pad(a, [(0, 1), (2, 2)], mode="replicate"), d2s.pad(a, (3, 1), mode="circular")),
     lambda n: [f32(n, 4)]),
    ("pad_int", lambda a: d2s.pad(a, (1, 1), value=7), lambda n: [i64(n, 3)]),
    # element-wise math (d2s/ops/elementwise.py, pointwise.py)
    ("log_family", lambda a: (d2s.log1p(a), d2s.log2(a), d2s.log10(a), d2s.rsqrt(a)), lambda n: [f32(n, 4, lo=0.1)]),
    ("inverse_trig", lambda a: (d2s.asin(a), d2s.acos(a), d2s.atanh(a), d2s.acosh(a + 2.0)),
     lambda n: [f32(n, 4, lo=-0.9, hi=0.9)]),
    ("clamp_tensor_bounds", lambda a, lo, hi: (d2s.clamp(a, lo, hi), d2s.clamp(a, min=lo), d2s.clamp(a, max=hi)),
     lambda n: [f32(n, 4), f32(4, lo=-1, hi=0), f32(n, 1, lo=0, hi=1)]),
    ("fmin_fmod", lambda a, b: (d2s.fmin(a, b), d2s.fmod(a, b)), lambda n: [f32(n, 4), f32(n, 4, lo=0.5, hi=2)]),
    ("int_division", lambda a, b: (a // b, a % b, d2s.fmod(a, b), d2s.div(a, b, rounding_mode="trunc"),
                                   d2s.div(a.astype("float32"), b, rounding_mode="trunc")),
     lambda n: [np.array([-2 ** 31, -2 ** 31, 2 ** 31 - 1, -7, 7, -7, 0, 5] * (n // 2 + 1))[:n * 2].astype("int32")
                .reshape(n, 2), np.array([[-1, 3]] * n, "int32")]),
    ("linalg", lambda a, b, i: (d2s.einsum("bij,jk->bik", a, b), d2s.einsum("bij->bj", a), d2s.tril(a, -1),
                                d2s.triu(a.astype("float64"), 1), d2s.triu(i), d2s.tril(i > 0)),
     lambda n: [f32(n, 3, 4), f32(4, 2), i64(n, 3, 3)]),
    ("diagonals", lambda a, v: (d2s.diagonal(a, 1, 2, 0), d2s.trace(a[0]), d2s.diag_embed(v, -1),
                                d2s.diagonal_scatter(a, d2s.diagonal(a) * 2)),
     lambda n: [f32(n, 3, 4), f32(n, 3)]),
    ("identity_shape", lambda a: (d2s.identity(a) * 2, d2s.shape(a), d2s.shape(a[0, 0])), lambda n: [f32(n, 3)]),
    # windows along a dynamic dim (their count computed in the graph) and along static ones
    ("unfold", lambda a: (a.unfold(0, 3, 2), a.unfold(1, 2, 1), a.unfold(-1, 5, 5), a.unfold(0, 1, 4).unfold(1, 2, 3)),
     lambda n: [f32(n, 5)]),
]


def _tensor_list(a):
    lst = apply("list_new", a[0])
    for k in range(3):
        lst = apply("list_push", lst, a[k] * k)
    rest, last = apply("list_pop", lst)
    got = apply("list_get", lst, d2s.tensor(1))
    return apply("list_stack", rest) + last + got, apply("list_len", lst)


def _setitem(a, idx, v):
    a = a + 0
    a[idx] = v
    return a


# ops declared with an example call next to them (d2s.autograd.registry.sample_call): exported
# too, with fixed shapes
CASES += [(f"{name}_sample", fn, lambda n, shapes=shapes: [f32(*s) for s in shapes])
          for name, (fn, shapes) in sorted(SAMPLES.items())]


@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_op_matches_onnxruntime(name, fn, make):
    dynamic = name not in ("broadcast_to",) and not name.endswith("_sample")
    run_both(fn, make(4), dynamic=dynamic, extra_batches=[make(6)] if dynamic else [])


def test_every_converter_is_exercised():
    seen = set()
    for name, fn, make in CASES:
        arrays = make(4)
        prog = build_program(fn, *_specs(arrays, name != "broadcast_to" and not name.endswith("_sample")))
        for b in prog.blocks:
            seen.update(op.type for op in b.ops)
    from d2s_runtime.ops import OPS
    untested = sorted(t for t in CONVERTERS if t in OPS and t not in seen
                      and t not in ("to_device", "erf"))  # to_device: a GPU program; erf: no d2s op yet
    assert not untested, f"converters with no test case: {untested}"


def test_dynamic_dims_stay_symbolic(tmp_path):
    def f(x, y):
        return (x @ y).sum(axis=1)

    program = build_program(f, InputSpec([None, 3]), InputSpec([3, None]))
    model, ins, outs = program_to_onnx(program, input_names=["x", "y"], output_names=["s"])
    dims = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input]
    assert dims == [["x_dim0", 3], [3, "y_dim1"]]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, m in ((1, 2), (7, 5)):
        x, y = f32(n, 3), f32(3, m)
        np.testing.assert_allclose(sess.run(["s"], {"x": x, "y": y})[0], (x @ y).sum(1), rtol=1e-5)


def test_export_writes_a_checked_file_with_params(tmp_path):
    lin = d2s.nn.Linear(4, 2)

    @d2s.jit.to_static
    def f(x):
        return F.relu(lin(x)) * 2

    path = str(tmp_path / "m.onnx")
    ins, outs = export(f, path, [InputSpec([None, 4], name="x")])
    assert ins == ["x"]
    onnx.checker.check_model(path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for n in (1, 5):
        x = f32(n, 4)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], f(d2s.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("maker,opname", [
    (lambda a: a + d2s.randn(3), "randn"),
    (lambda a: F.dropout(a, 0.5, training=True), "dropout_mask"),
    (lambda a: apply("conv2d_grad_input", a, d2s.ones((3, 2, 1, 1)), d2s.ones((1, 2, 2, 2))), "conv2d_grad_input"),
])
def test_ops_without_onnx_form_are_named(maker, opname):
    program = build_program(maker, InputSpec([1, 3, 2, 2]) if opname == "conv2d_grad_input" else InputSpec([2, 3]))
    with pytest.raises(ExportError, match=f"op '{opname}'"):
        program_to_onnx(program)


def test_program_params_must_be_given():
    w = d2s.tensor(f32(3, 2), requires_grad=True)
    program = build_program(lambda x: x @ w, InputSpec([None, 3]))
    with pytest.raises(ExportError, match="no values for program params"):
        program_to_onnx(program)
    model, ins, outs = program_to_onnx(program, {program.params[0]: w.numpy()})
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = f32(5, 3)
    np.testing.assert_allclose(sess.run(None, {ins[0]: x})[0], x @ w.numpy(), rtol=1e-5)


# ------------------------------------------------------------------ control flow
def _op_types(model):
    found = []

    def walk(nodes):
        for n in nodes:
            found.append(n.op_type)
            for a in n.attribute:
                if a.g is not None:
                    walk(a.g.node)
    walk(model.graph.node)
    return found


def _export_and_compare(fn, specs, batches):
    program = build_program(fn, *specs)
    model, ins, outs = program_to_onnx(program)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    exe = Executor(program)
    for batch in batches:
        for w, g in zip(exe.run(*batch), sess.run(outs, dict(zip(ins, batch)))):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return _op_types(model)


def test_cond_becomes_if_and_takes_both_branches():
    def f(x):
        return d2s.cond(x.sum() > 0, lambda a: (a * 2, a.sum()), lambda a: (a - 1, a.max()), x)

    types = _export_and_compare(f, [InputSpec([None, 3])], [[f32(2, 3, lo=0.1)], [f32(5, 3, hi=-0.1)]])
    assert "If" in types


def test_nested_cond_inside_while_becomes_if_inside_loop():
    def f(x, limit):
        def body(i, v):
            v = d2s.cond(v.sum() > 0, lambda a: a * 0.5, lambda a: a * 0.25, v)
            return i + 1, v
        return d2s.while_loop(lambda i, v: v.abs().max() > limit, body, (d2s.zeros([], dtype="int64"), x))

    batches = [[f32(2, 3, lo=4, hi=20), np.array(1.0, 'float32')], [f32(4, 3, lo=-20, hi=-4), np.array(0.5, 'float32')],
               [f32(3, 3, lo=-0.1, hi=0.1), np.array(1.0, 'float32')]]  # the last runs zero iterations
    types = _export_and_compare(f, [InputSpec([None, 3]), InputSpec([])], batches)
    assert "Loop" in types and "If" in types


def test_scan_becomes_loop_forward_and_reverse():
    w = f32(4, 4) * 0.5

    def f(x):
        def step(c, xt):
            c = d2s.tanh(c @ w + xt)
            return c, c.sum()
        c, ys = d2s.scan(step, d2s.zeros([4]), x)
        c2, ys2 = d2s.scan(lambda a, xt: (a + xt, a * xt), d2s.zeros([]), ys, reverse=True)
        return c, ys, c2, ys2

    types = _export_and_compare(f, [InputSpec([None, 4])], [[f32(5, 4)], [f32(1, 4)]])
    assert types.count("Loop") == 2


def test_to_static_if_and_while_export(tmp_path):
    path = tmp_path / "cf.py"
    path.write_text(
        "import d2s\n"
        "@d2s.jit.to_static\n"
        "def f(x):\n"
        "    if x.mean() > 0:\n"
        "        x = x * 2\n"
        "    else:\n"
        "        x = -x\n"
        "    s = d2s.zeros([])\n"
        "    while s < 10:\n"
        "        s = s + x.abs().sum()\n"
        "    return x, s\n")
    from d2s.cli import load_target
    f = load_target(f"{path}::f")
    out = str(tmp_path / "cf.onnx")
    export(f, out, [InputSpec([None, 3], name="x")])
    model = onnx.load(out)
    assert {"If", "Loop"} <= set(_op_types(model))
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    for x in (f32(2, 3, lo=0.5), f32(6, 3, hi=-0.01)):
        for want, got in zip(f(d2s.tensor(x)), sess.run(None, {"x": x})):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-5)


def test_scan_with_a_length_and_no_xs():
    def f(x):
        return d2s.scan(lambda c, _: (c * 2, c + 1), x, None, length=3)

    assert "Loop" in _export_and_compare(f, [InputSpec([None])], [[f32(4)], [f32(1)]])
