"""Graph building: ops append to a program with shapes and dtypes inferred, unknown dims
propagated, params as program params, symbolic dims in reshape, and clear errors when a
symbolic tensor is used as a Python value."""
import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.static import InputSpec, build_program
from d2s.static import SymbolicValueError
from d2s_runtime import Executor

RNG = np.random.default_rng(0)


def _types(program):
    return [program.block.lookup(n).type for n in program.outputs]


def _run(program, *arrays, params=None):
    program.verify()
    return Executor(program, params=params).run(*arrays)


CASES = [
    # name, fn, input specs, expected output (shape, dtype) in the program
    ("add_bcast", lambda a, b: a + b, [([None, 4], "float32"), ([4], "float32")], [((None, 4), "float32")]),
    ("int_scalar", lambda a: a * 2 + 1, [([None], "int64")], [((None,), "int64")]),
    ("promote", lambda a, b: a * b, [([None, 3], "float32"), ([3], "float64")], [((None, 3), "float64")]),
    ("compare", lambda a: (a > 0, (a > 0) & (a < 1)), [([None, 2], "float32")],
     [((None, 2), "bool"), ((None, 2), "bool")]),
    ("matmul", lambda a, b: a @ b, [([None, 3], "float32"), ([3, 5], "float32")], [((None, 5), "float32")]),
    ("reduce", lambda a: (a.sum(), a.mean(axis=0), a.amax(axis=1, keepdims=True)), [([None, 3], "float32")],
     [((), "float32"), ((3,), "float32"), ((None, 1), "float32")]),
    ("transpose", lambda a: a.T, [([None, 3], "float32")], [((3, None), "float32")]),
    ("concat", lambda a, b: d2s.concat([a, b], axis=1), [([None, 3], "float32"), ([None, 2], "float32")],
     [((None, 5), "float32")]),
    ("getitem", lambda a: a[:, 1], [([None, 3], "float32")], [((None,), "float32")]),
    ("cast", lambda a: a.cast("int32"), [([None, 3], "float32")], [((None, 3), "int32")]),
    ("softmax", lambda a: d2s.softmax(a, axis=-1), [([None, 3], "float64")], [((None, 3), "float64")]),
    ("reshape_dim", lambda a: d2s.reshape(a, [a.shape[0], -1]), [([None, 3, 4], "float32")],
     [((None, 12), "float32")]),
    ("reshape_split", lambda a: a.reshape([a.shape[0], 2, -1]), [([None, 4, 3], "float32")],
     [((None, 2, 6), "float32")]),
    ("reshape_computed", lambda a: d2s.reshape(a, [a.shape[0] * 2, 6]), [([None, 4, 3], "float32")],
     [((None, 6), "float32")]),
    ("flatten", lambda a: d2s.flatten(a, 1), [([None, 2, 3], "float32")], [((None, 6), "float32")]),
]


def _data(spec, n):
    shape = tuple(n if d is None else d for d in spec[0])
    if spec[1].startswith("int"):
        return RNG.integers(-3, 4, size=shape).astype(spec[1])
    return RNG.standard_normal(shape).astype(spec[1])


@pytest.mark.parametrize("name,fn,specs,want", CASES, ids=[c[0] for c in CASES])
def test_shapes_dtypes_and_values(name, fn, specs, want):
    program = build_program(fn, *[InputSpec(s, dt) for s, dt in specs])
    assert [(t.shape, t.dtype) for t in _types(program)] == want
    for n in (1, 2, 5):  # the unknown dim at several sizes
        arrays = [_data(s, n) for s in specs]
        eager = fn(*[d2s.tensor(a) for a in arrays])
        eager = eager if isinstance(eager, tuple) else (eager,)
        outs = _run(program, *arrays)
        for o, e in zip(outs, eager):
            assert o.dtype == e.numpy().dtype
            np.testing.assert_allclose(o, e.numpy(), rtol=1e-5, atol=1e-6)


def test_shape_of_symbolic_tensor_reads_unknown_dims_as_tensors():
    seen = {}

    def fn(x):
        s = x.shape
        seen["types"] = [type(d).__name__ for d in s]
        seen["dim"] = s[0]
        return x * s[0]

    program = build_program(fn, InputSpec([None, 3]))
    assert seen["types"] == ["WeakIndex", "int"]  # a Tensor standing for the Python int eager code reads
    assert seen["dim"].is_symbolic and seen["dim"].dtype == "int64" and seen["dim"].ndim == 0
    assert any(op.type == "dim" for op in program.block.ops)
    x = RNG.standard_normal((4, 3)).astype("float32")
    np.testing.assert_allclose(_run(program, x)[0], x * 4)


def test_known_dims_stay_ints():
    def fn(x):
        assert x.shape == (2, 3)
        return x.reshape([x.shape[0] * x.shape[1]])

    program = build_program(fn, InputSpec([2, 3]))
    assert _types(program)[0].shape == (6,)
    assert not any(op.type == "dim" for op in program.block.ops)


def test_reshape_with_symbolic_dims_matches_eager_and_its_gradient():
    def fn(x):
        n = x.shape[0]
        return (d2s.reshape(x, [n, -1]) * d2s.reshape(x, [n * 3, 4]).sum()).sum()

    program = build_program(fn, InputSpec([None, 3, 4], "float64"))
    from d2s.static import gradients
    grad_program = gradients(program).verify()
    for n in (1, 3):
        x = RNG.standard_normal((n, 3, 4))
        xt = d2s.tensor(x, requires_grad=True)
        y = fn(xt)
        (gx,) = d2s.grad(y, [xt])
        np.testing.assert_allclose(_run(program, x)[0], y.numpy())
        np.testing.assert_allclose(Executor(grad_program).run(x, np.array(1.0))[0], gx.numpy())


def test_nn_model_parameters_become_program_params():
    d2s.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    program = build_program(model, InputSpec([None, 4]))
    params = dict(model.named_parameters())
    assert len(program.params) == len(params) == 4
    assert sorted(tuple(program.block.lookup(n).type.shape) for n in program.params) == \
        sorted(tuple(p.shape) for p in params.values())
    assert _types(program)[0].shape == (None, 2)
    assert not program.constants  # weights are read at every call, never folded in
    builder_params = {}
    # the builder remembers which concrete Parameter each param var reads
    for op in program.block.ops:
        builder_params.update({n: None for n in op.inputs if n in program.params})
    assert set(builder_params) == set(program.params)


def test_nn_model_program_runs_with_fed_params():
    d2s.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
    from d2s.static import ProgramBuilder
    builder = ProgramBuilder()
    with builder:
        x = builder.add_input((None, 3), "float32")
        y = model(x)
        builder.program.outputs = [builder.var_of(y)]
    program = builder.program
    feed = {name: t.numpy() for name, t in builder.param_tensors.items()}
    for n in (1, 4):
        xs = RNG.standard_normal((n, 3)).astype("float32")
        np.testing.assert_allclose(_run(program, xs, params=feed)[0], model(d2s.tensor(xs)).numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_concrete_tensors_become_constants():
    big = RNG.standard_normal((8, 8)).astype("float32")
    program = build_program(lambda x: x @ d2s.tensor(big) + d2s.tensor([1.0]), InputSpec([None, 8]))
    assert len(program.constants) == 1 and not program.params
    x = RNG.standard_normal((2, 8)).astype("float32")
    np.testing.assert_allclose(_run(program, x)[0], x @ big + 1, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("use", [bool, int, float, lambda t: t.item(), lambda t: t.numpy()],
                         ids=["bool", "int", "float", "item", "numpy"])
def test_symbolic_value_error_names_the_user_line(use):
    def fn(x):
        s = x.sum()
        return use(s)  # the line the error must point at

    with pytest.raises(SymbolicValueError) as info:
        build_program(fn, InputSpec([None, 2]))
    msg = str(info.value)
    assert "symbolic" in msg and __file__ in msg
    # the innermost line of user code: the call itself, or the lambda making it
    assert "return use(s)" in msg or "lambda t: t." in msg
    assert "d2s.cond" in msg


def test_python_if_on_symbolic_tensor_points_at_the_if():
    def fn(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(SymbolicValueError, match=r"if x\.sum\(\) > 0"):
        build_program(fn, InputSpec([3]))


def test_shape_error_while_building_names_op_and_shapes():
    with pytest.raises(ValueError) as info:
        build_program(lambda a, b: a @ b, InputSpec([None, 3]), InputSpec([4, 2]))
    assert "matmul" in str(info.value) and __file__ in str(info.value)


def test_tensor_args_give_their_shape_and_python_args_pass_through():
    program = build_program(lambda x, k: x * k, d2s.ones([2, 3], dtype="float64"), 3)
    assert program.block.lookup(program.inputs[0]).type.shape == (2, 3)
    assert len(program.inputs) == 1
    np.testing.assert_allclose(_run(program, np.ones((2, 3)))[0], 3 * np.ones((2, 3)))
