"""dtypes: PyTorch's aliases, conversions (``type``, ``type_as``, ``half``, ``to``), finfo/iinfo,
and the narrow dtypes (float16, uint8, int8, int16) end to end: eager equal to PyTorch, and the
converted, saved and ONNX forms equal to eager; bfloat16 and dtypes numpy-only refused clearly."""
import os

import numpy as np
import pytest

import d2s
import d2s_runtime
import torch_parity
from torch_parity import Case

R = np.random.default_rng(0)
X = R.standard_normal((3, 4))
U8 = R.integers(0, 255, (3, 4)).astype("uint8")
I8 = R.integers(-100, 100, (3, 4)).astype("int8")
I16 = R.integers(-3000, 3000, (3, 4)).astype("int16")
F16 = R.standard_normal((3, 4)).astype("float16")
_F16_ONNX = "onnxruntime's CPU provider lacks some float16 kernels"

TORCH_CASES = [
    # conversions
    Case("shorthands", lambda t, x: (x.double(), x.float(), x.long(), x.int(), x.bool(), x.half(), x.short(), x.byte(),
                                     x.char()), X * 10, grad=False),
    Case("type_dtype", lambda t, x: (x.type(t.float64), x.type(t.int32), x.type(t.float32)), X, grad=False),
    Case("type_as", lambda t, x, y: (x.type_as(y), y.type_as(x)), X, np.arange(3)),
    Case("to_dtype", lambda t, x, y: (x.to(t.float32), x.to(y), x.to("cpu", t.float32), x.to(dtype=t.int64),
                                      x.to(t.float64)), X, np.arange(3, dtype="int32"), grad=[0]),
    Case("double_grad", lambda t, x: (x.float() * 2).double(), X),
    Case("queries", lambda t, x, y: (x.is_floating_point(), y.is_floating_point(), t.is_floating_point(x),
                                     t.is_tensor(x), t.is_tensor(3), x.is_complex(), x.element_size(),
                                     y.element_size()), X, np.arange(3),
         saved="it returns Python values", onnx="it returns Python values", dynamic="it returns Python values"),
    # the narrow dtypes through common ops
    Case("uint8_ops", lambda t, x: (x + 1, x * 2, x.sum(), x.sum(1), x // 3, x / 2, x.max(), x > 100, x.float() / 255,
                                    x.reshape(4, 3), x[1:], t.cat([x, x]), x.flip(0)), U8),
    Case("int8_ops", lambda t, x: (x + 1, x - x, x.sum(0), x / 2, x.abs(), x.min(), x.to(t.int64), x.T,
                                   t.where(x > 0, x, 0)), I8),
    Case("int16_ops", lambda t, x, y: (x + y, x * 3, x.cumsum(1), x.sum(), x.unsqueeze(0), x.float()), I16, U8),
    Case("float16_ops", lambda t, x: (x + 1, x * x, x.sum(), x.mean(), x.exp(), x.float(), x.transpose(0, 1), x.max(),
                                      x.softmax(-1)), F16, rtol=2e-3, atol=2e-3, onnx=_F16_ONNX),
    Case("float16_mix", lambda t, x, y: (x + y, x * 2.5, (x + 1).double()), F16, X.astype("float32"),
         rtol=2e-3, atol=2e-3, onnx=_F16_ONNX),
    Case("float16_grad", lambda t, x: (x.half() * 3).float().sum(), X, rtol=2e-3, atol=2e-3),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_aliases_are_torchs():
    assert (d2s.long, d2s.int, d2s.float, d2s.double, d2s.half, d2s.short) == \
        ("int64", "int32", "float32", "float64", "float16", "int16")
    assert (d2s.uint8, d2s.int8, d2s.int16, d2s.float16) == ("uint8", "int8", "int16", "float16")
    assert repr(d2s.half) == "d2s.float16" and d2s.half.is_floating_point and not d2s.uint8.is_signed
    assert d2s.zeros(2, dtype=d2s.int).dtype == d2s.int32 and d2s.zeros(2, dtype=d2s.float).dtype == d2s.float32
    assert d2s.zeros(2, dtype="torch.float16").dtype == d2s.float16  # the name as torch prints it


def test_type_names_follow_pytorchs_shape():
    assert d2s.zeros(2).type() == "d2s.FloatTensor"
    assert d2s.zeros(2, dtype=d2s.long).type() == "d2s.LongTensor"
    assert d2s.zeros(2, dtype=d2s.uint8).type() == "d2s.ByteTensor"
    assert d2s.zeros(2).type("torch.LongTensor").dtype == d2s.int64
    assert d2s.zeros(2).type(d2s.DoubleTensor if isinstance(d2s.DoubleTensor, str) else "d2s.DoubleTensor").dtype \
        == d2s.float64


@pytest.mark.parametrize("use", [lambda: d2s.zeros(2, dtype=d2s.bfloat16), lambda: d2s.ones(2).bfloat16(),
                                 lambda: d2s.ones(2).to(d2s.bfloat16), lambda: d2s.tensor([1.0], dtype="bfloat16"),
                                 lambda: d2s.ones(2).type("torch.BFloat16Tensor")])
def test_bfloat16_is_refused_when_used(use):
    assert d2s.bfloat16 is not None  # the name exists: model files naming it import
    with pytest.raises(TypeError, match="bfloat16.*numpy"):
        use()


def test_finfo_and_iinfo_match_torch():
    torch = torch_parity.live_torch()
    want_f = {"float16": (0.0009765625, 65504.0, 6.103515625e-05, 16), "float32": (1.1920928955078125e-07,
              3.4028234663852886e+38, 1.1754943508222875e-38, 32), "float64": (2.220446049250313e-16,
              1.7976931348623157e+308, 2.2250738585072014e-308, 64)}
    for name, (eps, mx, tiny, bits) in want_f.items():
        f = d2s.finfo(getattr(d2s, name))
        assert (f.eps, f.max, f.min, f.tiny, f.bits) == (eps, mx, -mx, tiny, bits)
        if torch is not None:
            t = torch.finfo(getattr(torch, name))
            assert (f.eps, f.max, f.min, f.tiny, f.resolution) == (t.eps, t.max, t.min, t.tiny, t.resolution)
    for name in ("uint8", "int8", "int16", "int32", "int64"):
        i = d2s.iinfo(getattr(d2s, name))
        assert (i.max, i.min, i.bits) == (int(np.iinfo(name).max), int(np.iinfo(name).min), np.iinfo(name).bits)
        if torch is not None:
            t = torch.iinfo(getattr(torch, name))
            assert (i.max, i.min, i.bits) == (t.max, t.min, t.bits)
    assert d2s.finfo().eps == d2s.finfo(d2s.float32).eps
    with pytest.raises(TypeError):
        d2s.finfo(d2s.int64)
    with pytest.raises(TypeError):
        d2s.iinfo(d2s.float32)


@pytest.mark.parametrize("dtype", ["float16", "uint8", "int8", "int16"])
def test_narrow_dtypes_convert_save_and_run_under_the_runtime(dtype, tmp_path):
    """Issue 28: such arrays were accepted, computed eagerly, then `.dtype` raised and to_static
    refused. Now: eager, converted (dynamic batch), saved and loaded by d2s_runtime alike."""
    x = d2s.tensor(np.arange(12).reshape(3, 4).astype(dtype))
    assert x.dtype == dtype

    def f(t):
        return t * 2 + 1, (t[:, :2] + t[:, 2:]).sum(1)

    eager = f(x)
    static = d2s.jit.to_static(f, input_spec=[d2s.jit.InputSpec([None, 4], dtype)])
    got = static(x)
    for g, w in zip(got, eager):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    d2s.jit.save(static, os.path.join(tmp_path, "m"))
    outs = d2s_runtime.load(os.path.join(tmp_path, "m"))(x.numpy())
    for g, w in zip(outs, eager):
        assert np.asarray(g).dtype == w.numpy().dtype
        np.testing.assert_array_equal(g, w.numpy())


@pytest.mark.parametrize("dtype", ["float16", "uint8"])
def test_the_native_backend_refuses_narrow_dtypes_with_the_reason(dtype):
    from d2s_runtime.native import lower_program
    from d2s_runtime.native.lower import NativeUnsupported
    program = d2s.static.build_program(lambda t: t + 1, d2s.jit.InputSpec([3], dtype))
    with pytest.raises(NativeUnsupported, match=f"{dtype}, which the native backend does not lower"):
        lower_program(program)
    ex = d2s_runtime.Executor(program, backend="native")
    np.testing.assert_array_equal(ex.run(np.ones(3, dtype))[0], np.full(3, 2, dtype))


def test_other_numpy_dtypes_are_refused_at_the_door():
    for dt in ("uint16", "uint32", "uint64", "complex64", "float128" if hasattr(np, "float128") else "complex128"):
        with pytest.raises(TypeError, match="not supported"):
            d2s.tensor(np.zeros(2, dtype=dt))
