"""d2s.fori_loop / d2s.switch / d2s.map, weakly typed Python numbers in carries and branch
outputs, numpy and list xs, None/empty carries, to_static of lambdas and functools.partial.

Each function is compared eager vs to_static (and vs a numpy reference) on inputs taking every
branch and zero, one or many iterations; gradients are checked against float64 finite
differences (first and second order); ONNX export is checked with onnxruntime."""
import functools
import warnings

import numpy as np
import pytest

import d2s
from d2s.autograd import gradcheck
from d2s.jit import InputSpec, to_static
from d2s.static import build_program
from d2s.static.control_flow import ControlFlowError
from d2s_runtime import Executor

RNG = np.random.default_rng(15)


def _leaves(obj):
    if isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _leaves(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _leaves(o)
    else:
        yield obj


def assert_same(got, want, rtol=1e-6):
    """Same structure, Python types, dtypes, shapes and values."""
    g, w = list(_leaves(got)), list(_leaves(want))
    assert len(g) == len(w), (got, want)
    for a, b in zip(g, w):
        assert type(a) is type(b), (type(a), type(b))
        if isinstance(a, d2s.Tensor):
            assert a.dtype == b.dtype, (a.dtype, b.dtype)
            assert a.shape == b.shape, (a.shape, b.shape)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=1e-12)
        else:
            assert a == b


def _op_types(program):
    out = []

    def walk(block):
        for op in block.ops:
            out.append(op.type)
            for sub in op.blocks.values():
                walk(sub)

    walk(program.block)
    return out


def _second_order(fn, x, *rest):
    """The first derivative's weighted sum, as a function to gradcheck (second order)."""
    def g(x, *rest):
        # finite differences call this under no_grad with plain tensors: the inner gradient
        # still needs a graph from a leaf that requires grad
        if not x.requires_grad:
            x = x.detach().requires_grad_()
        with d2s.enable_grad():
            (gx,) = d2s.grad(fn(x, *rest).sum(), [x], create_graph=True)
            return (gx * d2s.cos(x)).sum()
    return g


# ------------------------------------------------------------------ fori_loop
def fori_static_bounds(x, lo, hi):
    return d2s.fori_loop(lo, hi, lambda i, c: c * d2s.sin(x) + i * x, x)


@pytest.mark.parametrize("lo,hi", [(0, 0), (0, 1), (0, 4), (2, 5), (3, 1)])
def test_fori_loop_python_bounds_eager_static_and_reference(lo, hi):
    x = d2s.tensor(RNG.standard_normal(3))
    want = x.numpy().copy()
    for i in range(lo, hi):
        want = want * np.sin(x.numpy()) + i * x.numpy()
    eager = fori_static_bounds(x, lo, hi)
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-12)
    sf = to_static(fori_static_bounds)
    assert_same(sf(x, lo, hi), eager)
    # a loop that stays a loop: one scan op over the indices, whatever the trip count
    ops = _op_types(sf.get_program(x, lo, hi))
    assert ops.count("scan") == 1 and "while" not in ops


def fori_tensor_bound(x, n):
    return d2s.fori_loop(0, n, lambda i, c: c * d2s.cos(x) + i * x, x)


@pytest.mark.parametrize("n", [-2, 0, 1, 5])
def test_fori_loop_tensor_bound_is_a_while_op(n):
    x = d2s.tensor(RNG.standard_normal(3))
    sf = to_static(fori_tensor_bound, input_spec=[InputSpec([3], "float64"), InputSpec([], "int64")])
    want = x.numpy().copy()
    for i in range(0, n):
        want = want * np.cos(x.numpy()) + i * x.numpy()
    eager = fori_tensor_bound(x, d2s.tensor(n))
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-12)
    assert_same(sf(x, d2s.tensor(n)), eager)
    assert len(sf.programs) == 1 and "while" in _op_types(sf.programs[0])


def test_fori_loop_gradients_first_and_second_order():
    x = d2s.tensor(RNG.standard_normal(3))
    for fn, extra in ((functools.partial(fori_static_bounds, lo=0, hi=4), ()),
                      (fori_tensor_bound, (d2s.tensor(3),))):
        for f in (fn, to_static(fn)):
            assert gradcheck(f, (x, *extra))
            assert gradcheck(_second_order(f, x), (x, *extra))


def test_fori_loop_pytree_carry_and_index_dtype():
    def f(x, n, index_dtype):
        def body(i, c):
            return {"s": c["s"] + x[i], "seen": (c["seen"][0] + 1, i)}
        return d2s.fori_loop(0, n, body, {"s": 0.0, "seen": (0, d2s.tensor(-1, dtype=index_dtype))})

    x = d2s.tensor(RNG.standard_normal(5).astype("float32"))
    # the index is int64 for Python bounds and the bound's dtype for a tensor bound
    for n, index_dtype in ((0, "int64"), (3, "int64"), (d2s.tensor(3, dtype="int32"), "int32"),
                           (d2s.tensor(0, dtype="int32"), "int32")):
        eager = f(x, n, index_dtype)
        assert eager["seen"][1].dtype == index_dtype and eager["s"].dtype == "float32"
        assert_same(to_static(f)(x, n, index_dtype), eager)
    np.testing.assert_allclose(f(x, 3, "int64")["s"].numpy(), x.numpy()[:3].sum(), rtol=1e-6)


def test_fori_loop_rejects_non_integer_bounds():
    with pytest.raises(ControlFlowError, match="d2s.fori_loop: bounds and indices must be integers"):
        d2s.fori_loop(0, 2.5, lambda i, c: c, 0.0)
    with pytest.raises(ControlFlowError, match="integers, got a float32 tensor"):
        d2s.fori_loop(0, d2s.tensor(2.0), lambda i, c: c, 0.0)


# ------------------------------------------------------------------ switch
BRANCHES = [lambda a: a * 2.0, lambda a: d2s.sin(a) * a, lambda a: d2s.exp(-a), lambda a: a - 1.0]


def switch_fn(i, x):
    return d2s.switch(i, BRANCHES, x)


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 3, 9])
def test_switch_clamps_the_index_eager_and_static(index):
    x = d2s.tensor(RNG.standard_normal(4))
    want = BRANCHES[min(max(index, 0), 3)](x)
    assert_same(switch_fn(index, x), want)  # a Python index
    assert_same(switch_fn(d2s.tensor(index), x), want)  # a concrete tensor index
    sf = to_static(switch_fn, input_spec=[InputSpec([], "int64"), InputSpec([4], "float64")])
    assert_same(sf(d2s.tensor(index), x), want)
    # one program for every index: one n-ary switch op
    types = _op_types(sf.programs[0])
    assert len(sf.programs) == 1 and types.count("switch") == 1 and types.count("cond") == 0


def test_switch_gradients_first_and_second_order():
    sf = to_static(switch_fn, input_spec=[InputSpec([], "int64"), InputSpec([4], "float64")])
    x = d2s.tensor(RNG.standard_normal(4))
    for index in range(4):
        i = d2s.tensor(index)
        for f in (switch_fn, sf):
            fx = (lambda x, i=i, f=f: f(i, x))
            assert gradcheck(fx, (x,))
            assert gradcheck(_second_order(fx, x), (x,))


def test_switch_pytree_operands_and_single_branch():
    def f(i, d):
        return d2s.switch(i, [lambda d: (d["a"] + d["b"], d["a"]), lambda d: (d["a"] * d["b"], d["b"])], d)

    d = {"a": d2s.tensor([1.0, 2.0]), "b": d2s.tensor([3.0, 4.0])}
    for i in (0, 1):
        assert_same(to_static(f)(d2s.tensor(i), d), f(i, d))

    def one(i, x):
        return d2s.switch(i, [lambda a: a + 1.0], x)

    x = d2s.tensor([1.0, 2.0])
    assert_same(to_static(one)(d2s.tensor(5), x), x + 1.0)


def test_switch_errors():
    x = d2s.tensor([1.0, 2.0])
    with pytest.raises(ControlFlowError, match="at least one branch"):
        d2s.switch(0, [], x)
    with pytest.raises(ControlFlowError, match="must be integers"):
        d2s.switch(1.5, BRANCHES, x)

    def mismatched(i, x):
        return d2s.switch(i, [lambda a: a, lambda a: a.sum()], x)

    with pytest.raises(ControlFlowError, match=r"d2s.switch: the branches return different types"):
        to_static(mismatched)(d2s.tensor(0), x)


# ------------------------------------------------------------------ map
def map_fn(xs):
    return d2s.map(lambda r: {"norm": (r * r).sum(), "first": r[0] * 2.0}, xs)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_map_eager_static_and_reference(n):
    xs = d2s.tensor(RNG.standard_normal((n, 3)))
    eager = map_fn(xs)
    np.testing.assert_allclose(eager["norm"].numpy(), (xs.numpy() ** 2).sum(1), rtol=1e-12)
    np.testing.assert_allclose(eager["first"].numpy(), xs.numpy()[:, 0] * 2.0, rtol=1e-12)
    assert eager["norm"].shape == (n,)
    sf = to_static(map_fn)
    assert_same(sf(xs), eager)
    assert _op_types(sf.get_program(xs)).count("scan") == 1


def test_map_accepts_numpy_and_lists_and_gradients():
    arr = RNG.standard_normal((3, 2))
    assert_same(d2s.map(lambda r: r.sum(), arr), d2s.tensor(arr.sum(1)))
    assert_same(d2s.map(lambda r: r * 2.0, [[1.0, 2.0], [3.0, 4.0]]), d2s.tensor([[2.0, 4.0], [6.0, 8.0]]))
    x = d2s.tensor(RNG.standard_normal((3, 2)))

    def f(x):
        return d2s.map(lambda r: d2s.sin(r).sum() * r, x)

    for fn in (f, to_static(f)):
        assert gradcheck(fn, (x,))
        assert gradcheck(_second_order(fn, x), (x,))


# ------------------------------------------------------------------ ONNX
def _onnx_matches(fn, specs, batches):
    ort = pytest.importorskip("onnxruntime")
    from d2s.onnx.export import program_to_onnx
    program = build_program(fn, *specs)
    program.verify()
    model, in_names, out_names = program_to_onnx(program)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    exe = Executor(program)
    for arrays in batches:
        want = exe.run(*arrays)
        got = sess.run(out_names, dict(zip(in_names, arrays)))
        eager = list(_leaves(fn(*[d2s.tensor(a) for a in arrays])))
        for w, g, e in zip(want, got, eager):
            assert g.dtype == w.dtype == e.numpy().dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(w, e.numpy(), rtol=1e-5, atol=1e-6)
    return model


def test_onnx_export_of_fori_loop_both_forms():
    f32 = lambda *s: RNG.standard_normal(s).astype("float32")  # noqa: E731
    model = _onnx_matches(lambda x: fori_static_bounds(x, 0, 3), [InputSpec([None])], [[f32(4)], [f32(2)]])
    assert [n.op_type for n in model.graph.node].count("Loop") == 1
    model = _onnx_matches(fori_tensor_bound, [InputSpec([None]), InputSpec([], "int64")],
                          [[f32(3), np.array(n, "int64")] for n in (-1, 0, 1, 4)])
    assert "Loop" in [n.op_type for n in model.graph.node]


def test_onnx_export_of_switch_and_map():
    x = RNG.standard_normal(4).astype("float32")
    model = _onnx_matches(switch_fn, [InputSpec([], "int64"), InputSpec([None])],
                          [[np.array(i, "int64"), x] for i in (-1, 0, 1, 2, 3, 7)])
    assert [n.op_type for n in model.graph.node].count("If") == 1  # nested Ifs live in its subgraphs
    _onnx_matches(map_fn, [InputSpec([None, 3])],
                  [[RNG.standard_normal((n, 3)).astype("float32")] for n in (0, 1, 5)])


# ------------------------------------------------------------------ weakly typed Python numbers
def scan_int_carry(x):
    return d2s.scan(lambda c, v: (c + v, c * 2), 0, x)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_python_number_carry_takes_the_dtype_it_meets(n):
    x = d2s.tensor(np.arange(n, dtype="int32"))
    eager = scan_int_carry(x)
    assert eager[0].dtype == "int32" and eager[1].dtype == "int32"
    assert int(eager[0].item()) == int(np.arange(n).sum())
    assert_same(to_static(scan_int_carry)(x), eager)


def test_python_number_loop_vars_in_while_and_fori():
    def w(x):
        return d2s.while_loop(lambda i, s: i < x.shape[0], lambda i, s: (i + 1, s + x[i]), (0, 0))

    x = d2s.tensor(np.array([3, 4, 5], "int32"))
    eager = w(x)
    assert (eager[0].dtype, eager[1].dtype) == ("int64", "int32") and int(eager[1].item()) == 12
    assert_same(to_static(w)(x), eager)

    def f(n, start):
        return d2s.fori_loop(0, n, lambda i, c: c + i, start)

    for n in (0, 3):
        for start, dtype in ((0, "int64"), (0.0, "float32")):
            eager = f(n, start)
            assert isinstance(eager, d2s.Tensor) and eager.dtype == dtype
            assert float(eager.item()) == sum(range(n))
            assert_same(to_static(f)(n, start), eager)


def cond_weak(x):
    return d2s.cond(x < 3, lambda: 2.0, lambda: 2.0 * x)


@pytest.mark.parametrize("v", [1.0, 5.0])
def test_python_number_branch_output_is_a_tensor_of_the_other_branch_dtype(v):
    x = d2s.tensor(v, dtype="float64")
    eager = cond_weak(x)
    assert isinstance(eager, d2s.Tensor) and eager.dtype == "float64"
    assert float(eager.item()) == (2.0 if v < 3 else 2.0 * v)
    assert_same(to_static(cond_weak)(x), eager)
    # a tensor, so JAX-style grad accepts it: 0 on the constant branch, 2 on the other
    g = d2s.func.grad(cond_weak)(x)
    assert float(g.item()) == (0.0 if v < 3 else 2.0)
    assert float(d2s.func.grad(to_static(cond_weak))(x).item()) == float(g.item())


def test_weak_branch_outputs_combine_and_mismatches_are_reported():
    t = d2s.cond(True, lambda: 1, lambda: 2)
    assert isinstance(t, d2s.Tensor) and t.dtype == "int64" and int(t.item()) == 1
    ints = d2s.tensor(np.array([1, 2], "int32"))

    def f(p, x):
        return d2s.cond(p, lambda: (1, 0.5, x), lambda: (x[0], 2, x))

    for p in (True, False):
        eager = f(p, ints)
        assert [str(e.dtype) for e in eager] == ["int32", "float32", "int32"]
        assert_same(to_static(f)(d2s.tensor(p), ints), eager)

    def bad(p, x):
        return d2s.cond(p, lambda: 0.5, lambda: x.sum())  # a float does not fit an int32 tensor

    with pytest.raises(ControlFlowError, match="branches return different types"):
        to_static(bad)(d2s.tensor(True), ints)


# ------------------------------------------------------------------ numpy / list xs
def test_scan_over_numpy_arrays_and_nested_lists():
    carry, ys = d2s.scan(lambda c, x: (c + x, c), 0.0, np.arange(3.0))
    assert_same((carry, ys), (d2s.tensor(3.0, dtype="float64"), d2s.tensor([0.0, 0.0, 1.0], dtype="float64")))

    def in_program(x):
        c, ys = d2s.scan(lambda c, v: (c + v * x, c), 0.0, np.arange(3.0))
        return c, ys, d2s.scan(lambda c, v: (c + v[0] * v[1], c), x, [[1.0, 2.0], [3.0, 4.0]])

    x = d2s.tensor(2.0, dtype="float64")
    eager = in_program(x)
    np.testing.assert_allclose(eager[2][0].numpy(), 2.0 + 2.0 + 12.0)
    assert_same(to_static(in_program)(x), eager)
    # a numpy array passed to a converted function is an input, scanned like a tensor
    sf = to_static(lambda xs: d2s.scan(lambda c, v: (c + v, c), 0.0, xs))
    assert_same(sf(np.arange(4.0)), d2s.scan(lambda c, v: (c + v, c), 0.0, np.arange(4.0)))


# ------------------------------------------------------------------ None / empty carries
@pytest.mark.parametrize("empty", [None, (), {}, [], ((), {"a": None})])
def test_leaf_free_carries(empty):
    def f(x):
        return d2s.scan(lambda c, v: (c, v * 2.0), empty, x)

    x = d2s.tensor(RNG.standard_normal(3))
    eager = f(x)
    assert eager[0] == empty and type(eager[0]) is type(empty)
    assert_same(to_static(f)(x), eager)
    assert gradcheck(lambda x: f(x)[1], (x,))


def test_carry_changing_structure_is_a_clear_error_in_both_modes():
    def f(x):
        return d2s.scan(lambda c, v: (0, v), None, x)

    x = d2s.tensor([1.0, 2.0])
    for fn in (f, to_static(f)):
        with pytest.raises(ControlFlowError, match="carry of the same structure"):
            fn(x)


# ------------------------------------------------------------------ to_static of lambdas and partials
def test_to_static_of_a_lambda_converts_it():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "runs eagerly instead" warning
        f = to_static(lambda x: x * 2.0 if x.sum() > 0 else -x)
        for v in ([1.0, 2.0], [-1.0, -3.0]):
            x = d2s.tensor(v)
            assert_same(f(x), x * 2.0 if sum(v) > 0 else -x)
    assert "convert_ifexp" in f.code
    assert "cond" in _op_types(f.programs[0])


def test_lambdas_sharing_a_line_are_told_apart_by_columns():
    a, b = to_static(lambda x, y: x + y * 2.0), to_static(lambda x, y: x - y if x.sum() > 0 else y)
    x, y = d2s.tensor([1.0, 2.0]), d2s.tensor([3.0, 4.0])
    assert_same(a(x, y), x + y * 2.0)
    assert_same(b(x, y), x - y)
    assert_same(b(-x, y), y)
    outer = to_static(lambda x: (lambda x: x * 3.0)(x) + 1.0)
    assert_same(outer(x), x * 3.0 + 1.0)


def test_multiline_lambda_with_gradients():
    f = to_static(
        lambda x:
            d2s.scan(lambda c, v: (c * v + 1.0, c), d2s.ones([], dtype="float64"), x)[0]
            if x.sum() > 0
            else x.sum()
    )
    for v in ([0.5, 1.5, 2.0], [-0.5, -1.5, 0.3]):
        x = d2s.tensor(v, dtype="float64")
        assert gradcheck(f, (x,))
        assert gradcheck(_second_order(f, x), (x,))
    assert "convert_ifexp" in f.code


def test_lambda_without_source_still_runs_eagerly_with_a_warning():
    ns = {"d2s": d2s}
    exec("f = lambda x: x + 1.0", ns)
    sf = to_static(ns["f"])
    with pytest.warns(UserWarning, match="runs eagerly instead"):
        out = sf(d2s.tensor([1.0]))
    assert_same(out, d2s.tensor([2.0]))


def _scaled(a, x, scale=1.0):
    if x.sum() > 0:
        return a * x * scale
    return x - a


def test_to_static_of_functools_partial():
    a = d2s.tensor(2.0)
    p = to_static(functools.partial(_scaled, a, scale=3.0))
    assert isinstance(p, functools.partial) and hasattr(p.func, "programs")
    for v in ([1.0, 2.0], [-1.0, -2.0]):
        x = d2s.tensor(v)
        assert_same(p(x), _scaled(a, x, scale=3.0))
        assert_same(p(x, scale=0.5), _scaled(a, x, scale=0.5))  # a keyword can still be overridden
    q = to_static(functools.partial(_scaled, a), input_spec=[InputSpec([None])])
    for n in (2, 5):
        x = d2s.tensor(RNG.standard_normal(n).astype("float32"))
        assert_same(q(x), _scaled(a, x), rtol=1e-6)
    assert len(q.func.programs) == 1
    w = d2s.tensor(0.7, dtype="float64")
    g = to_static(functools.partial(_scaled, w))
    assert gradcheck(g, (d2s.tensor([0.3, 0.4], dtype="float64"),))
