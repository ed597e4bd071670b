"""d2s.logaddexp: eager values and dtypes against NumPy, float64 gradients (first and second
order) against finite differences, ONNX against onnxruntime, converted against eager."""
import numpy as np
import pytest

import d2s

# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py)
pytestmark = pytest.mark.usefixtures("device")
from d2s.autograd import gradcheck
from d2s_runtime.ops import ShapeError

R = np.random.default_rng(1)


@pytest.mark.parametrize("a,b", [
    (R.standard_normal((3, 1)), R.standard_normal((1, 4))),
    (np.array([1000.0, -1000.0, 0.0]), np.array([1000.0, -999.0, -np.inf])),  # no overflow, -inf
    (np.array([np.inf, -np.inf, np.inf]), np.array([np.inf, -np.inf, 1.0])),
])
def test_values_match_numpy(a, b):
    for dt in ("float32", "float64"):
        got = d2s.logaddexp(d2s.tensor(a, dtype=dt), d2s.tensor(b, dtype=dt))
        assert got.dtype == dt
        np.testing.assert_allclose(got.numpy(), np.logaddexp(a.astype(dt), b.astype(dt)), rtol=1e-6)


def test_dtypes_and_scalars():
    i = d2s.tensor([1, 2, 3])
    assert d2s.logaddexp(i, i).dtype == "float32"  # integer inputs compute in float32
    assert d2s.logaddexp(d2s.tensor([0.5], dtype="float64"), 1).dtype == "float64"
    x = d2s.tensor([0.0, 1.0])
    np.testing.assert_allclose(x.logaddexp(2.0).numpy(), np.logaddexp([0.0, 1.0], 2.0).astype("float32"))


def test_shape_error_names_the_op():
    with pytest.raises(ShapeError, match="logaddexp"):
        d2s.logaddexp(d2s.zeros(3), d2s.zeros(4))


def test_gradcheck_float64():
    a, b = R.standard_normal((3, 1)), R.standard_normal((1, 4))
    assert gradcheck(d2s.logaddexp, [a, b])
    assert gradcheck(lambda x: d2s.logaddexp(x, 0.5), [R.standard_normal(5)])


def test_second_derivative():
    # d/da logaddexp(a, b) = sigmoid(a - b): its derivative checked against finite differences
    def first(a, b):
        with d2s.enable_grad():  # gradcheck's finite-difference calls run under no_grad
            if not a.requires_grad:
                a = d2s.tensor(a.numpy(), requires_grad=True)
            (ga,) = d2s.grad(d2s.logaddexp(a, b).sum(), [a], create_graph=True)
        return ga

    assert gradcheck(first, [R.standard_normal(4), R.standard_normal(4)])


def test_onnx_matches_onnxruntime():
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from d2s.onnx import program_to_onnx
    from d2s.static import InputSpec, build_program
    from d2s_runtime import Executor

    program = build_program(lambda a, b: d2s.logaddexp(a, b) * 2, InputSpec([None, 3]), InputSpec([3]))
    model, ins, outs = program_to_onnx(program)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for a, b in [(R.standard_normal((2, 3)), R.standard_normal(3)),
                 (np.array([[np.inf, -np.inf, 5.0]]), np.array([np.inf, -np.inf, -np.inf]))]:
        a, b = a.astype("float32"), b.astype("float32")
        (want,) = Executor(program).run(a, b)
        (got,) = sess.run(outs, dict(zip(ins, [a, b])))
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_allclose(want, 2 * np.logaddexp(a, b), rtol=1e-6)


def test_converted_matches_eager():
    def f(x, y):
        if x.sum() > 0:
            out = d2s.logaddexp(x, y)
        else:
            out = x.logaddexp(y * 2)
        for _ in range(3):
            out = d2s.logaddexp(out, x)
        return out

    g = d2s.jit.to_static(f)
    for x in (R.standard_normal(4) + 2, R.standard_normal(4) - 2):
        x = d2s.tensor(x.astype("float32"))
        y = d2s.tensor(R.standard_normal(4).astype("float32"))
        np.testing.assert_allclose(g(x, y).numpy(), f(x, y).numpy(), rtol=1e-6)


def test_converted_gradient_matches_eager():
    def loss(x, y):
        return d2s.logaddexp(x, y).sum()

    g = d2s.jit.to_static(loss)
    x0, y0 = R.standard_normal(4), R.standard_normal(4)
    grads = []
    for fn in (loss, g):
        x = d2s.tensor(x0, requires_grad=True)
        y = d2s.tensor(y0, requires_grad=True)
        fn(x, y).backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-6)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-6)
