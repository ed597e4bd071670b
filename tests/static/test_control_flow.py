"""d2s.cond / while_loop / scan and tensor lists: eager results vs programs (build_program +
Executor) on inputs taking every branch and zero, one or many iterations; nesting, captures,
widening of loop-carried shapes, errors, serialization."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec, TensorArray, build_program
from d2s.static.control_flow import ControlFlowError
from device_helpers import Executor  # on the test's device, outputs copied to the host

# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py)
pytestmark = pytest.mark.usefixtures("device")

RNG = np.random.default_rng(0)


def _check(fn, specs, inputs_list, rtol=1e-5):
    """Build ``fn`` on ``specs``; on each inputs tuple the program equals eager ``fn``."""
    program = build_program(fn, *specs).verify()
    ex = Executor(program)
    for inputs in inputs_list:
        eager = fn(*[d2s.tensor(a) for a in inputs])
        eager = eager if isinstance(eager, (tuple, list)) else (eager,)
        leaves = [e for e in _leaves(eager)]
        outs = ex.run(*inputs)
        assert len(outs) == len(leaves)
        for o, e in zip(outs, leaves):
            np.testing.assert_allclose(o, e.numpy(), rtol=rtol, atol=1e-6)
    return program


def _leaves(obj):
    if isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _leaves(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _leaves(o)
    else:
        yield obj


def _ops(program, block=None):
    block = block or program.block
    out = []
    for op in block.ops:
        out.append(op.type)
        for sub in op.blocks.values():
            out.extend(_ops(program, sub))
    return out


# ------------------------------------------------------------------ cond
def cond_fn(x, w):
    return d2s.cond(x.sum() > 0, lambda a: a * w + 1.0, lambda a: d2s.exp(a) - w, x)


def test_cond_takes_each_branch():
    xs = [np.full((2, 3), v, "float32") for v in (1.0, -1.0)] + [RNG.standard_normal((4, 3)).astype("float32")]
    w = np.float32(2.0) * np.ones(3, "float32")
    program = _check(cond_fn, [InputSpec([None, 3]), InputSpec([3])], [(x, w) for x in xs])
    (op,) = [op for op in program.block.ops if op.type == "cond"]
    assert set(op.blocks) == {"then", "else"}
    assert op.blocks["then"].inputs and len(op.blocks["then"].inputs) == len(op.blocks["else"].inputs) == len(op.inputs) - 1


def test_cond_eager_with_concrete_pred_is_python_if_and_differentiable():
    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    y = d2s.cond(x.sum() > 0, lambda a: (a * a).sum(), lambda a: a.sum(), x)
    (g,) = d2s.grad(y, [x])
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    assert d2s.cond(False, lambda: 1, lambda: 2) == 2


def test_cond_pytree_operands_and_outputs():
    def fn(x, y):
        def t(d):
            return {"s": d["a"] + d["b"], "p": (d["a"] * 2, d["b"])}

        def f(d):
            return {"s": d["a"] - d["b"], "p": (d["a"], d["b"] * 3)}

        return d2s.cond(x.max() > y.max(), t, f, {"a": x, "b": y})

    _check(fn, [InputSpec([3]), InputSpec([3])],
           [(np.array([3.0, 0, 0], "float32"), np.ones(3, "float32")),
            (np.zeros(3, "float32"), np.ones(3, "float32"))])


def test_cond_captures_outer_values_as_explicit_inputs():
    def fn(x):
        h = x * 3.0  # read by the branches without being passed in
        k = x + 1.0
        return d2s.cond(x[0] > 0, lambda: h * 2.0, lambda: k)

    program = _check(fn, [InputSpec([2])], [(np.array([1.0, 2.0], "float32"),), (np.array([-1.0, 2.0], "float32"),)])
    (op,) = [op for op in program.block.ops if op.type == "cond"]
    assert len(op.inputs) >= 3  # pred and the two captures
    for blk in op.blocks.values():
        assert len(blk.inputs) == len(op.inputs) - 1


def test_cond_branch_shapes_widen_to_unknown():
    def fn(x):
        return d2s.cond(x.sum() > 0, lambda a: a[:2], lambda a: a[1:], x)

    program = _check(fn, [InputSpec([4])], [(np.arange(4, dtype="float32"),), (-np.arange(4, dtype="float32") - 1,)])
    assert program.block.lookup(program.outputs[0]).type.shape == (None,)


def test_cond_mismatched_branches_name_both_types():
    def dtype_clash(x):
        return d2s.cond(x.sum() > 0, lambda a: a, lambda a: a.cast("int64"), x)

    with pytest.raises(ControlFlowError) as info:
        build_program(dtype_clash, InputSpec([2]))
    assert "true_fn" in str(info.value) and "f32[2]" in str(info.value) and "i64[2]" in str(info.value)

    def structure_clash(x):
        return d2s.cond(x.sum() > 0, lambda a: (a, a), lambda a: a, x)

    with pytest.raises(ControlFlowError, match="false_fn"):
        build_program(structure_clash, InputSpec([2]))


def test_cond_python_scalar_outputs_become_tensors():
    fn = lambda x: d2s.tensor(1.0) * d2s.cond(x.sum() > 0, lambda: 1.0, lambda: x.sum())  # noqa: E731
    _check(fn, [InputSpec([2])], [(np.ones(2, "float32"),), (-np.ones(2, "float32"),)])


# ------------------------------------------------------------------ while
def collatz(n):
    def body(i, n):
        return i + 1, d2s.where(n % 2 == 0, n // 2, 3 * n + 1)

    return d2s.while_loop(lambda i, n: n > 1, body, [d2s.tensor(0), n])


@pytest.mark.parametrize("n", [1, 2, 6, 27])  # zero, one and many iterations
def test_while_data_dependent_trip_count(n):
    program = build_program(collatz, InputSpec([], "int64")).verify()
    assert "while" in _ops(program)
    i, m = Executor(program).run(np.array(n))
    ei, em = collatz(d2s.tensor(n))
    assert int(i) == int(ei) and int(m) == int(em) == 1


def test_while_python_counter_unrolls_and_tensor_counter_builds_op():
    def py_counter(x):
        return d2s.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2.0), [0, x])[1]

    program = _check(py_counter, [InputSpec([2])], [(np.ones(2, "float32"),)])
    assert "while" not in _ops(program) and _ops(program).count("mul") == 3

    def tensor_counter(x, n):
        return d2s.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 2.0), [0, x])[1]

    program = _check(tensor_counter, [InputSpec([2]), InputSpec([], "int64")],
                     [(np.ones(2, "float32"), np.array(k)) for k in (0, 1, 5)])
    assert "while" in _ops(program)


def test_while_single_loop_var_and_dict_loop_vars():
    fn = lambda x: d2s.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 3.0, x)  # noqa: E731
    _check(fn, [InputSpec([2])], [(np.ones(2, "float32"),), (np.full(2, 60.0, "float32"),)])

    def dict_loop(x):
        out = d2s.while_loop(lambda s: s["k"] < 4, lambda s: {"k": s["k"] + 1, "v": s["v"] + s["k"].cast("float32")},
                             {"k": d2s.tensor(0), "v": x})
        return out["v"]

    _check(dict_loop, [InputSpec([3])], [(np.zeros(3, "float32"),)])


def test_while_captures_outer_values():
    def fn(x, w):
        b = w * 0.5  # captured by the body
        return d2s.while_loop(lambda v: v.sum() < 50.0, lambda v: v * w + b, [x])[0]

    program = _check(fn, [InputSpec([2]), InputSpec([2])],
                     [(np.ones(2, "float32"), np.full(2, 1.5, "float32")),
                      (np.full(2, 30.0, "float32"), np.full(2, 2.0, "float32"))])
    (op,) = [op for op in program.block.ops if op.type == "while"]
    w_name, b_name = program.inputs[1], op.inputs[2]
    assert op.inputs[0] == program.inputs[0] and w_name in op.inputs[1:]  # the carry, then captures
    assert len(op.inputs) >= 3  # x; w, b (and the constant 50.0)
    assert len(op.blocks["cond"].inputs) == len(op.blocks["body"].inputs) == len(op.inputs)


def test_while_widens_a_growing_loop_var():
    def fn(x):
        def body(i, acc):
            return i + 1, d2s.concat([acc, acc[:1] * 2.0])

        return d2s.while_loop(lambda i, acc: i < x.shape[0] + 2, body, [d2s.tensor(0), x])[1]

    program = build_program(fn, InputSpec([3])).verify()
    assert program.block.lookup(program.outputs[0]).type.shape == (None,)
    x = np.array([1.0, 2.0, 3.0], "float32")
    np.testing.assert_allclose(Executor(program).run(x)[0], fn(d2s.tensor(x)).numpy())


def test_while_body_changing_dtype_is_a_clear_error():
    with pytest.raises(ControlFlowError, match="dtypes"):
        build_program(lambda x: d2s.while_loop(lambda v: v.sum() < 3.0, lambda v: v.cast("float64"), [x]),
                      InputSpec([2]))


def test_while_eager_is_python_loop_with_autograd():
    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    (y,) = d2s.while_loop(lambda v: v.sum() < 10.0, lambda v: [v * 2.0], [x])
    (g,) = d2s.grad(y.sum(), [x])
    np.testing.assert_allclose(g.numpy(), [4.0, 4.0])  # two doublings


# ------------------------------------------------------------------ scan
def cumulative(xs, w):
    return d2s.scan(lambda c, x: (c * 0.5 + x * w, d2s.tanh(c)), d2s.zeros([3]), xs)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_scan_matches_eager(n):
    w = np.linspace(0.5, 1.5, 3).astype("float32")
    program = build_program(cumulative, InputSpec([None, 3]), InputSpec([3])).verify()
    assert [program.block.lookup(o).type.shape for o in program.outputs] == [(3,), (None, 3)]
    xs = RNG.standard_normal((n, 3)).astype("float32")
    carry, ys = Executor(program).run(xs, w)
    ec, eys = cumulative(d2s.tensor(xs), d2s.tensor(w))
    np.testing.assert_allclose(carry, ec.numpy(), rtol=1e-5, atol=1e-6)
    assert ys.shape == eys.shape == (n, 3)
    np.testing.assert_allclose(ys, eys.numpy(), rtol=1e-5, atol=1e-6)


def test_scan_reverse_and_pytrees():
    def fn(a, b):
        def step(c, x):
            return {"s": c["s"] + x[0] * x[1]}, (c["s"], x[1] - 1.0)
        return d2s.scan(step, {"s": d2s.zeros([2])}, (a, b), reverse=True)

    _check(fn, [InputSpec([4, 2]), InputSpec([4, 2])],
           [(RNG.standard_normal((4, 2)).astype("float32"), RNG.standard_normal((4, 2)).astype("float32"))])


# ------------------------------------------------------------------ nesting
def nested(x):
    def body(i, v):
        v = d2s.cond(v.sum() > 5.0, lambda a: a - 2.0, lambda a: a * 2.0 + 1.0, v)
        return i + 1, v

    i, v = d2s.while_loop(lambda i, v: i < 6, body, [d2s.tensor(0), x])
    c, ys = d2s.scan(lambda c, r: (c + r.sum(), d2s.while_loop(lambda t: t.sum() < 1.0, lambda t: [t + 0.25], [r])[0]),
                     d2s.tensor(0.0), d2s.reshape(v, [-1, 1]))
    return v, c, ys


def test_nested_cond_in_while_and_while_in_scan():
    program = _check(nested, [InputSpec([3])],
                     [(np.array(v, "float32"),) for v in ([0.1, 0.2, 0.3], [3.0, 2.0, 1.0], [-4.0, 0.0, 9.0])])
    ops = _ops(program)
    assert ops.count("while") == 2 and "cond" in ops and "scan" in ops


def test_cond_inside_cond_captures_through_two_levels():
    def fn(x, y):
        z = y * 2.0
        inner = lambda: d2s.cond(x[1] > 0, lambda: z + x, lambda: z - x)  # noqa: E731
        return d2s.cond(x[0] > 0, inner, lambda: x * 0.0)

    _check(fn, [InputSpec([2]), InputSpec([2])],
           [(np.array(v, "float32"), np.ones(2, "float32")) for v in ([1, 1], [1, -1], [-1, 1])])


# ------------------------------------------------------------------ tensor lists
def test_tensor_array_eager():
    ta = TensorArray()
    for k in range(3):
        ta.append(d2s.tensor([float(k), k + 0.5]))
    assert len(ta) == 3
    np.testing.assert_allclose(ta.stack().numpy(), [[0, 0.5], [1, 1.5], [2, 2.5]])
    np.testing.assert_allclose(ta[-1].numpy(), [2, 2.5])
    np.testing.assert_allclose(ta.pop().numpy(), [2, 2.5])
    assert int(ta.length()) == 2
    with pytest.raises(IndexError):
        TensorArray().pop()


def test_tensor_array_carried_through_a_while_loop():
    def fn(x):
        def body(i, v, acc):
            acc.append(v)
            return i + 1, v * 2.0, acc

        _, _, acc = d2s.while_loop(lambda i, v, acc: v.sum() < 40.0, body,
                                   [d2s.tensor(0), x, TensorArray.like(x)])
        return acc.stack(), acc.length()

    program = _check(fn, [InputSpec([2])], [(np.array(v, "float32"),) for v in ([1, 1], [30, 30], [0.5, 2])])
    assert {"list_new", "list_push", "list_stack", "list_len"} <= set(_ops(program))


def test_list_ops_run_as_plain_ops_and_report_errors():
    program = build_program(lambda x: d2s.static.tensor_array.apply("list_pop", d2s.static.tensor_array.apply(
        "list_new", x))[1], InputSpec([2])).verify()
    # the IndexError Python's list.pop raises, passed through the executor unwrapped
    with pytest.raises(IndexError, match="pop from empty list"):
        Executor(program).run(np.ones(2, "float32"))


def test_control_flow_program_serializes_and_reloads(tmp_path):
    import d2s_runtime
    program = build_program(nested, InputSpec([3])).verify()
    d2s_runtime.save_program(program, str(tmp_path / "m"))
    loaded, _, _ = d2s_runtime.load_program(str(tmp_path / "m"))
    loaded.verify()
    x = np.array([3.0, 2.0, 1.0], "float32")
    for a, b in zip(Executor(loaded).run(x), Executor(program).run(x)):
        np.testing.assert_allclose(a, b)


def test_tensor_array_gradients_eager_and_static():
    def fn(x):
        ta = TensorArray.like(x)
        ta.append(x * 2.0)
        ta.append(x * x)
        return ta.stack().sum() + (ta[0] * 3.0).sum() + (ta.pop() * 5.0).sum()

    x = np.array([1.0, 2.0])
    want = 2 + 2 * x + 6 + 10 * x  # d/dx of 2x + x^2 + 6x + 5x^2, summed
    xt = d2s.tensor(x, requires_grad=True)
    (g,) = d2s.grad(fn(xt), [xt])
    np.testing.assert_allclose(g.numpy(), want)
    from d2s.static import gradients
    grad_program = gradients(build_program(fn, InputSpec([2], "float64"))).verify()
    np.testing.assert_allclose(Executor(grad_program).run(x, np.array(1.0))[0], want)


def test_namedtuples_as_operands_loop_vars_carries_and_outputs():
    # regression: a namedtuple was kept whole as a constant, leaking the branch's or body's
    # symbolic tensors out of its sub-block
    from collections import namedtuple
    State = namedtuple("State", "h c")

    def fn(x, xs):
        s = d2s.cond(x.sum() > 0, lambda s: State(s.h + 1, s.c), lambda s: State(s.h, s.c - 1), State(x, x * 2))
        s = d2s.while_loop(lambda s: s.h.abs().sum() < 10, lambda s: State(s.h * 2 + 0.1, s.c + 1), s)
        c, ys = d2s.scan(lambda c, r: (State(c.h + r, c.c * r), State(c.h, c.c)), s, xs)
        assert isinstance(c, State) and isinstance(ys, State)
        return c.h + c.c, ys.h.sum(0) + ys.c.sum(0)

    _check(fn, [InputSpec([2]), InputSpec([3, 2])],
           [(RNG.standard_normal(2).astype(np.float32), RNG.standard_normal((3, 2)).astype(np.float32)),
            (-np.ones(2, np.float32), RNG.standard_normal((3, 2)).astype(np.float32))])


def test_python_number_loop_vars_take_the_dtype_the_body_gives_them():
    # regression: a Python number became a float32/int64 loop var and a body promoting it
    # (as eager Python does) failed with a dtype mismatch
    def fn(x, xs):
        s, y = d2s.while_loop(lambda s, y: y.sum() < 10, lambda s, y: (s + y.sum(), y * 2), (0.0, x))
        k, _ = d2s.while_loop(lambda k, y: y.sum() < 10, lambda k, y: (k + 0.5, y * 2), (0, x))
        c, ys = d2s.scan(lambda c, r: (c + r.sum(), c), 0.0, xs)
        return s, k * x.sum(), c, ys

    x, xs = np.array([0.5, 1.0]), RNG.standard_normal((3, 2))
    program = _check(fn, [InputSpec([2], "float64"), InputSpec([3, 2], "float64")], [(x, xs), (x * 4, xs)])
    whiles = [op for op in program.block.ops if op.type == "while"]
    assert [program.block.lookup(op.outputs[0]).type.dtype for op in whiles] == ["float64", "float32"]
