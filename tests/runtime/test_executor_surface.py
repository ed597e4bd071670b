"""The executor's public surface for callers that check inputs themselves
(``Executor.unchecked_runner``), and the code generator reading op traits and lowerings."""
import numpy as np
import pytest

from d2s_runtime import Executor
from d2s_runtime.ir import Op, Program
from d2s_runtime.ops import TensorType

# each test runs on the python and the native backend (tests/backend_fixture.py)
pytestmark = pytest.mark.usefixtures("backend")

RNG = np.random.default_rng(0)


def _program(x_shape=(3,), dtype="float32"):
    """``(neg(x * w) + c).sum()`` and ``x < 0``: an input, a param, a program constant."""
    p = Program()
    b = p.block
    for name, t in (("x", TensorType(x_shape, dtype)), ("w", TensorType(x_shape, dtype)),
                    ("c", TensorType(x_shape, dtype))):
        b.add_var(name, t)
    p.inputs, p.params, p.constants = ["x"], ["w"], {"c": RNG.standard_normal(x_shape).astype(dtype)}
    b.inputs = ["x", "w", "c"]
    for name, t in (("m", TensorType(x_shape, dtype)), ("n", TensorType(x_shape, dtype)),
                    ("s", TensorType(x_shape, dtype)), ("y", TensorType((), dtype)),
                    ("z", TensorType((), dtype)), ("k", TensorType(x_shape, "bool"))):
        b.add_var(name, t)
    b.ops += [Op("mul", ["x", "w"], ["m"]), Op("neg", ["m"], ["n"]), Op("add", ["n", "c"], ["s"]),
              Op("reduce_sum", ["s"], ["y"], {"axes": None, "keepdims": False}), Op("neg", ["y"], ["z"]),
              Op("lt", ["x", "c"], ["k"])]
    b.outputs = p.outputs = ["y", "z", "k"]
    return p


def _reference(p, x, w):
    s = -(x * w) + p.constants["c"]
    return [s.sum(), -s.sum(), x < p.constants["c"]]


@pytest.mark.parametrize("mode", ["codegen", "interp"])
@pytest.mark.parametrize("shape", [(3,), ()])
def test_unchecked_runner_equals_run(mode, shape):
    p = _program(shape)
    ex = Executor(p, mode=mode)
    assert ex.mode == mode
    runner = ex.unchecked_runner()
    for _ in range(3):
        x, w = (RNG.standard_normal(shape).astype("float32") for _ in range(2))
        got, want, ref = runner([x], [w]), ex.run(x, params={"w": w}), _reference(p, x, w)
        for g, e, r in zip(got, want, ref):
            assert type(g) is type(e) is np.ndarray and g.dtype == e.dtype
            np.testing.assert_array_equal(g, e)
            np.testing.assert_allclose(g, r, rtol=1e-5)


def test_unchecked_runner_in_parallel_mode_runs_through_run():
    p = _program()
    ex = Executor(p, parallel=True)
    try:
        x, w = (RNG.standard_normal(3).astype("float32") for _ in range(2))
        for g, r in zip(ex.unchecked_runner()([x], [w]), _reference(p, x, w)):
            np.testing.assert_allclose(g, r, rtol=1e-5)
    finally:
        ex.close()


def test_scalar_ops_use_infix_and_lowerings_in_generated_code():
    # 0-d values compute with Python operators on numpy scalars: `+` from add's infix trait,
    # unary minus from neg's "python_scalar" lowering; results equal the interpreter's
    p = _program(())
    src = Executor(p, mode="codegen").source
    assert " + " in src and "= -v" in src
    x, w = np.float32(1.5), np.float32(-2.0)
    got = Executor(p, mode="codegen").run(x, params={"w": w})
    want = Executor(p, mode="interp").run(x, params={"w": w})
    for g, e in zip(got, want):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float64"])
@pytest.mark.parametrize("op", ["reduce_mean", "reduce_sum", "reduce_max", "reduce_min"])
def test_full_reductions_give_the_interpreters_dtype(op, dtype):
    # generated code calls some full reductions as array methods (their `method` trait); the
    # mean of integers is float32 here, float64 as ``ndarray.mean``: it must not take that path
    p = Program()
    b = p.block
    b.add_var("x", TensorType((4,), dtype))
    out_dtype = "float32" if op == "reduce_mean" and dtype.startswith("int") else \
        "int64" if op == "reduce_sum" and dtype == "int32" else dtype
    b.add_var("y", TensorType((), out_dtype))
    b.inputs = p.inputs = ["x"]
    b.ops.append(Op(op, ["x"], ["y"], {"axes": None, "keepdims": False}))
    b.outputs = p.outputs = ["y"]
    x = np.array([1, 2, 4, 7], dtype=dtype)
    (got,), (want,) = Executor(p, mode="codegen").run(x), Executor(p, mode="interp").run(x)
    assert got.dtype == want.dtype == np.dtype(out_dtype)
    np.testing.assert_array_equal(got, want)
