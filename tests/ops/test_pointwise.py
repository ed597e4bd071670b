"""Transcendental functions, rounding, predicates and nan_to_num (d2s/ops/pointwise.py) against
PyTorch: values and dtypes (integer inputs give float32; rounding keeps integers), float64
gradients (a zero gradient through rounding, as PyTorch's), edge values (NaN, +-inf, signed
zeros, ties of round), then converted, with dynamic dims, saved and exported to ONNX
(tests/torch_parity.py)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(11)
X = R.standard_normal((3, 4))
U = R.uniform(-0.9, 0.9, (3, 4))       # inside (-1, 1): asin, acos, atanh, erfinv
EDGE = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-300, 7.0])
ROUND = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1.2345, -1.2355, 2.675, 1e15 + 0.5, 123.456, -0.04])
INTS = np.array([[3, -2, 0, 7], [1, 5, -9, 4]], "int32")
NO_DOUBLE = ("onnxruntime has no float64 kernel of ONNX's Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh "
             "and Erf; the float32 case exports them")


def _float_funcs(t, x, u):
    return (t.expm1(x), t.log1p(x.abs()), t.log2(x.abs() + 0.1), t.log10(x.abs() + 0.1), t.exp2(x),
            t.rsqrt(x.abs() + 0.1), t.tan(x), t.atan(x), t.sinh(x), t.cosh(x), t.asinh(x), t.acosh(x * x + 1.5),
            t.asin(u), t.acos(u), t.atanh(u), t.erf(x), t.erfc(x), t.sigmoid(x), t.tanh(x))


def _methods(x, u):
    return (x.expm1(), x.abs().log1p(), x.exp2(), x.tan(), x.arctan(), u.arcsin(), u.arccos(), x.sinh(),
            u.erfinv(), x.erf(), x.erfc(), x.sigmoid(), x.tanh(), x.atan2(u), x.hypot(u))


TORCH_CASES = [
    Case("float_functions_f64", _float_funcs, X, U, onnx=NO_DOUBLE),
    Case("float_functions_f32", _float_funcs, X.astype("float32"), U.astype("float32"), grad=False, rtol=2e-6,
         atol=1e-6),
    Case("float_functions_of_ints", lambda t, a: (t.expm1(a), t.log1p(a.abs()), t.exp2(a), t.rsqrt(a.abs() + 1),
                                                  t.atan(a), t.erf(a), t.sinh(a), t.asinh(a)), INTS, rtol=2e-6),
    Case("methods", lambda t, x, u: _methods(x, u), X, U, onnx="erfinv has no ONNX form"),
    Case("erfinv", lambda t, u: (t.erfinv(u), (u * 1.2).erfinv()), U, onnx="ONNX has no inverse error function"),
    Case("erf_family_edges", lambda t, x: (t.erf(x), t.erfc(x), t.erfinv(t.tanh(x)), t.expm1(x), t.log1p(x)),
         np.concatenate([EDGE, [-1.0, 1.0, 30.0, -30.0, 5.9, 1e-8]]), grad=False,
         onnx="ONNX has no inverse error function"),
    Case("atan2_hypot", lambda t, a, b: (t.atan2(a, b), t.arctan2(b, a), t.hypot(a, b)), X, U, onnx=NO_DOUBLE),
    Case("atan2_hypot_f32", lambda t, a, b: (t.atan2(a, b), t.arctan2(b, a), t.hypot(a, b)),
         X.astype("float32"), U.astype("float32"), grad=False, rtol=2e-6),
    Case("atan2_hypot_edges", lambda t, a, b: (t.atan2(a, b), t.hypot(a, b)),
         np.array([0.0, 1.0, -1.0, np.inf, -np.inf, np.inf, 2.0, -3.0, 3e38, np.nan, -np.inf, 0.0], "float32"),
         np.array([-1.0, 0.0, 0.0, np.inf, np.inf, -np.inf, -np.inf, np.inf, 3e38, 1.0, -5.0, 0.0], "float32")),
    # atan2's gradient at the origin is 0 in PyTorch (not 0 / 0)
    Case("atan2_grad_at_origin", lambda t, a, b: t.atan2(a, b), np.array([0.0, 0.0, 1.0, 0.0]),
         np.array([0.0, -0.0, 0.0, 2.0]), onnx=NO_DOUBLE),
    # rounding: half to even, decimals, integers unchanged, a zero gradient
    Case("rounding", lambda t, x: (t.floor(x), t.ceil(x), t.trunc(x), t.round(x), t.frac(x), t.fix(x),
                                   x.floor(), x.round(), t.sign(x)), ROUND * 3.3),
    Case("round_decimals", lambda t, x: (t.round(x, decimals=2), t.round(x, decimals=-1), x.round(decimals=1),
                                         t.round(x.float(), decimals=2)), ROUND),
    Case("rounding_edges", lambda t, x: (t.floor(x), t.ceil(x), t.trunc(x), t.round(x), t.sign(x), t.frac(x)),
         EDGE, grad=False),
    Case("rounding_ints", lambda t, a: (t.floor(a), t.ceil(a), t.trunc(a), t.round(a), t.sign(a), a.round()), INTS),
    Case("sign_bool", lambda t, b: (t.sign(b), t.sign(b.int())), np.array([True, False, True])),
    # predicates and nan_to_num
    Case("predicates", lambda t, x, a: (t.isnan(x), t.isinf(x), t.isfinite(x), x.isnan(), t.isnan(a), t.isinf(a),
                                        t.isfinite(a)), EDGE, INTS),
    Case("nan_to_num", lambda t, x: (t.nan_to_num(x), t.nan_to_num(x, nan=1.5), t.nan_to_num(x, posinf=9.0),
                                     x.nan_to_num(0.0, 7.0, -7.0), t.nan_to_num(x.float())), EDGE),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_strict_device_eager_values(device):
    """The kernels (the erf series included) use only the array namespace."""
    for case in TORCH_CASES:
        torch_parity.compare(torch_parity.run(d2s, case), torch_parity.reference("ops.test_pointwise", case.name),
                             case, f"d2s eager on {device}")


def test_rounding_refuses_bools_and_frac_refuses_ints():
    with pytest.raises(Exception, match="bool"):
        d2s.floor(d2s.tensor([True]))
    with pytest.raises(TypeError, match="float"):
        d2s.frac(d2s.tensor([1, 2]))
    with pytest.raises(TypeError, match="decimals"):
        d2s.round(d2s.tensor([1.5]), decimals=1.0)


def test_erfinv_inverts_erf_to_the_last_bits():
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 2001), 1 - np.logspace(-15, -1, 50)])
    x = d2s.erfinv(d2s.tensor(y)).numpy()
    np.testing.assert_allclose(d2s.erf(d2s.tensor(x)).numpy(), y, rtol=0, atol=4e-16)


# ------------------------------------------------------------------ GELU (erf, then one op over x and it)
def test_gelu_computed_by_blocks_equals_the_whole_array_bitwise():
    from d2s_runtime.ops import pointwise as rt
    from d2s_runtime.ops import special
    x = R.standard_normal((70, 1000)).astype("float32") * 4
    x[0, :6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 50.0]
    g = R.standard_normal(x.shape).astype("float32")
    assert x.size > rt._GELU_BLOCK
    e = special.erf(np, x * np.float32(rt._SQRT1_2))
    with np.errstate(invalid="ignore"):
        whole_y, whole_g = rt._gelu_values(x, e), rt._gelu_grad_values(np, x, e, g)
    xd = d2s.tensor(x, requires_grad=True)
    y = d2s.nn.functional.gelu(xd)
    assert y.grad_fn is not None
    y.backward(d2s.tensor(g))
    np.testing.assert_array_equal(y.detach().numpy(), whole_y)
    np.testing.assert_array_equal(xd.grad.numpy(), whole_g)
    # a transposed input, and a gradient broadcast against x, take the other paths
    np.testing.assert_array_equal(d2s.nn.functional.gelu(d2s.tensor(x).T).numpy(), whole_y.T)
    col = x[:, :1]
    got = d2s.dispatch.apply("gelu_from_erf_grad", d2s.tensor(col), d2s.tensor(e[:, :1]), d2s.tensor(g)).numpy()
    with np.errstate(invalid="ignore"):
        want = rt._gelu_grad_values(np, np.broadcast_to(col, g.shape), np.broadcast_to(e[:, :1], g.shape), g)
    np.testing.assert_array_equal(got, want)


def test_gelu_second_derivative_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = R.standard_normal((4, 5)) * 3
    xt = torch.tensor(x, requires_grad=True)
    (gt,) = torch.autograd.grad(torch.nn.functional.gelu(xt).sin().sum(), xt, create_graph=True)
    (ggt,) = torch.autograd.grad((gt * gt).sum(), xt)
    xd = d2s.tensor(x, requires_grad=True)
    (gd,) = d2s.autograd.grad(d2s.nn.functional.gelu(xd).sin().sum(), xd, create_graph=True)
    (ggd,) = d2s.autograd.grad((gd * gd).sum(), xd)
    np.testing.assert_allclose(gd.detach().numpy(), gt.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ggd.numpy(), ggt.numpy(), rtol=1e-10, atol=1e-12)


def test_gelu_converted_equals_eager_values_and_gradients():
    # (ONNX: the op's sample is exported by tests/onnx/test_export.py)
    def f(x):
        return d2s.nn.functional.gelu(x * 2.0)

    static = d2s.jit.to_static(f)
    for shape in ((3, 5), (40, 1000)):  # the second computed by blocks
        x = d2s.tensor(R.standard_normal(shape).astype("float32"), requires_grad=True)
        y = static(x)
        y.sum().backward()
        gs = x.grad.numpy().copy()
        x.grad = None
        ye = f(x)
        ye.sum().backward()
        np.testing.assert_array_equal(y.detach().numpy(), ye.detach().numpy())
        np.testing.assert_array_equal(gs, x.grad.numpy())
