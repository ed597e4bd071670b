"""The executor: results vs numpy/eager on several inputs, scheduling, liveness, sub-blocks."""
import numpy as np
import pytest

import d2s
from d2s.static import build_program
from d2s.static.builder import ProgramBuilder
from d2s_runtime import ExecutionError
from device_helpers import Executor, host  # on the test's device, outputs copied to the host
from d2s_runtime.executor import topo_order
from d2s_runtime.ir import Block, Op, Program
from d2s_runtime.ops import OPS, BlockLayout, OpDef, TensorType


class _BodyLayout(BlockLayout):
    """A test op's layout: one block, ``body``."""

    def block_keys(self, op):
        return frozenset({"body"})


def _register_structured(monkeypatch, name, run):
    """Register a structured op ``name`` (no shape rule) run by ``run(ctx, op, values)``."""
    opdef = OpDef(name, None, None, None, "a test op", layout=_BodyLayout())
    opdef.rules["run"] = run
    monkeypatch.setitem(OPS, name, opdef)


# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py), and
# on the python and the native backend (tests/backend_fixture.py; native on "cpu" only)
pytestmark = pytest.mark.usefixtures("device", "backend")

RNG = np.random.default_rng(0)


def _inputs(*shapes):
    return [RNG.standard_normal(s).astype("float32") for s in shapes]


def _f(x, y):
    return d2s.exp(x * y) + x.sum() - d2s.tanh(y) / 2.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_eager_on_several_inputs(seed, backend):
    x, y = _inputs((3, 4), (3, 4))
    prog = build_program(_f, d2s.tensor(x), d2s.tensor(y))
    ex = Executor(prog)
    (out,) = ex.run(x, y)
    ref = _f(d2s.tensor(x), d2s.tensor(y)).numpy()
    # native exp/tanh and sums may differ from numpy's by a few ulp (README: "Native backend")
    if backend == "python":
        np.testing.assert_allclose(out, ref, rtol=1e-6)
    else:
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert out.dtype == np.float32


def test_value_and_gradient_program_matches_numpy():
    b = ProgramBuilder()
    with b:
        x = b.add_input((5, 3), "float32", requires_grad=True)
        y = (x @ x.T).sum()
        (g,) = d2s.grad(y, x)
        b.program.outputs = [b.var_of(y), b.var_of(g)]
    ex = Executor(b.program)
    for _ in range(3):
        (xv,) = _inputs((5, 3))
        val, grad = ex.run(xv)
        np.testing.assert_allclose(val, (xv @ xv.T).sum(), rtol=1e-5)
        np.testing.assert_allclose(grad, np.broadcast_to(2 * xv.sum(0), xv.shape), rtol=1e-5)


def test_params_are_read_at_every_call():
    w = d2s.tensor(np.ones((4, 2), "float32"), requires_grad=True)
    prog = build_program(lambda x: x @ w, d2s.tensor(np.zeros((3, 4), "float32")))
    assert len(prog.params) == 1
    ex = Executor(prog)
    (x,) = _inputs((3, 4))
    w1, w2 = _inputs((4, 2), (4, 2))
    np.testing.assert_allclose(ex.run(x, params={prog.params[0]: w1})[0], x @ w1, rtol=1e-6)
    np.testing.assert_allclose(ex.run(x, params={prog.params[0]: w2})[0], x @ w2, rtol=1e-6)
    with pytest.raises(KeyError, match="no value for param"):
        ex.run(x)


def test_large_constants_come_from_program_constants():
    c = np.arange(40, dtype="float32").reshape(5, 8)
    prog = build_program(lambda x: x + c, d2s.tensor(np.zeros((5, 8), "float32")))
    assert prog.constants
    (x,) = _inputs((5, 8))
    np.testing.assert_allclose(Executor(prog).run(x)[0], x + c)


@pytest.mark.on_devices("cpu")  # read-only views are numpy's; a device array (cupy) cannot be made read-only
@pytest.mark.parametrize("mode", ["interp", "codegen"])
def test_outputs_aliasing_constants_cannot_corrupt_later_runs(mode, device):
    # an output that is (a view of) a program constant or literal is read-only: writing into
    # it in place would otherwise change every later run's result
    from d2s_runtime.passes import optimize
    table = np.arange(20, dtype="float32")
    prog = build_program(lambda x: (x + 1, d2s.tensor(table).reshape([4, 5]), d2s.ones([2]) * 3),
                         d2s.tensor(_inputs(3)[0]))
    for p in (prog, optimize(prog)):  # optimize folds `ones * 3` into a literal
        ex = Executor(p, mode=mode)
        x = _inputs(3)[0]
        _, view, lit = ex.run(x)
        for out in (view, lit):
            if not out.flags.writeable:
                with pytest.raises(ValueError, match="read-only"):
                    out[...] = -1.0
        assert not view.flags.writeable
        again = ex.run(x)
        np.testing.assert_array_equal(again[1], table.reshape(4, 5))
        np.testing.assert_array_equal(again[2], [3.0, 3.0])
        np.testing.assert_array_equal(again[0], x + 1)


def _table_or_input(x, table):
    return d2s.cond(x.sum() > 0, lambda: d2s.tensor(table), lambda: x * 2.0)


@pytest.mark.on_devices("strict", "gpu")  # numpy outputs are read-only views instead (the test above)
@pytest.mark.parametrize("mode", ["interp", "codegen", "parallel"])
def test_device_outputs_aliasing_constants_are_copies(mode, device):
    # a device array cannot be made read-only: outputs that may alias a constant are copies,
    # so a caller writing into one leaves later runs unchanged
    from d2s_runtime import Executor as DeviceExecutor
    from d2s_runtime.executor import constant_aliased_outputs
    from d2s_runtime.passes import optimize
    table = np.arange(20, dtype="float32")
    x = _inputs(20)[0]
    progs = [build_program(lambda x: (x + 1, d2s.tensor(table).reshape([4, 5]), d2s.ones([2]) * 3), d2s.tensor(x)),
             build_program(lambda x: (x + 1, _table_or_input(x, table)), d2s.tensor(x))]
    progs.append(optimize(progs[0]))  # `ones * 3` folded into a literal
    kw = {"parallel": True} if mode == "parallel" else {"mode": mode}
    # the reshaped table, the cond passing it through, the folded literal; not x + 1 nor ones * 3
    for p, aliased in zip(progs, [(1,), (1,), (1, 2)]):
        assert constant_aliased_outputs(p) == aliased
        ex = DeviceExecutor(p, device=device, **kw)
        for xv in (np.abs(x), -np.abs(x)):  # each branch of the cond
            want = [host(o) for o in ex.run(xv)]
            for run in (ex.run, lambda xv: ex.unchecked_runner()([ex.xp.asarray(xv)], [])):
                for out in run(xv)[1:]:
                    out[...] = -1.0
                for got, w in zip(ex.run(xv), want):
                    np.testing.assert_array_equal(host(got), w)


def test_bad_inputs_give_clear_errors():
    prog = build_program(lambda x: x * 2.0, d2s.tensor(np.zeros((2, 3), "float32")))
    ex = Executor(prog)
    with pytest.raises(TypeError, match="takes 1 input"):
        ex.run()
    with pytest.raises(ValueError, match=r"expects shape f32\[2,3\]"):
        ex.run(np.zeros((3, 2), "float32"))
    int_prog = build_program(lambda x: x + 1, d2s.tensor(np.zeros((2,), "int64")))
    with pytest.raises(TypeError, match="expects dtype int64"):
        Executor(int_prog).run(np.zeros((2,), "float32"))
    # a same-kind cast is accepted (float64 data into a float32 program)
    assert ex.run(np.ones((2, 3)))[0].dtype == np.float32


def _hand_program(order):
    """x -> a = neg x ; b = exp a ; c = add a b, ops listed in ``order``."""
    p = Program()
    gb = p.block
    for n in "xabc":
        gb.add_var(n, TensorType((3,), "float32"))
    ops = {"a": Op("neg", ["x"], ["a"]), "b": Op("exp", ["a"], ["b"]), "c": Op("add", ["a", "b"], ["c"])}
    gb.ops = [ops[k] for k in order]
    gb.inputs = ["x"]
    p.inputs = ["x"]
    p.outputs = gb.outputs = ["c"]
    return p


def test_kahn_order_repairs_a_shuffled_block():
    (x,) = _inputs((3,))
    ref = -x + np.exp(-x)
    for order in ("abc", "cba", "bca"):
        # atol: -x + exp(-x) cancels near x = 0.57, where exp's last ulp (native) is all that is left
        np.testing.assert_allclose(Executor(_hand_program(order)).run(x)[0], ref, rtol=1e-6, atol=1e-6)


def test_cycle_and_undefined_vars_are_rejected():
    p = _hand_program("abc")
    p.block.ops[0].inputs = ["c"]  # neg reads c, which depends on neg
    with pytest.raises(ValueError, match="cycle"):
        Executor(p)
    p = _hand_program("abc")
    p.block.ops[0].inputs = ["nowhere"]
    with pytest.raises(ValueError, match="nowhere"):
        Executor(p)


def test_effect_ops_keep_their_order():
    p = Program()
    gb = p.block
    for n in "ab":
        gb.add_var(n, TensorType((2,), "float32"))
    gb.ops = [Op("rand", [], ["a"], {"shape": [2]}), Op("randn", [], ["b"], {"shape": [2]})]
    p.outputs = gb.outputs = ["b", "a"]
    order, _, _ = topo_order(gb)
    assert order == [0, 1]


def test_buffers_are_freed_after_last_use():
    prog = build_program(lambda x: d2s.exp(d2s.exp(x) + 1.0) * 2.0, d2s.tensor(np.zeros((4,), "float32")))
    ex = Executor(prog)
    plan = ex._main
    freed = {s for step in plan.steps for s in step.frees}
    # every slot except the output is freed somewhere (inputs included: only our reference goes)
    assert freed | set(plan.output_slots) | set(plan.free_first) == set(range(plan.n_slots))
    assert not (freed & set(plan.output_slots))


def test_an_op_failure_names_the_op_and_shapes():
    p = Program()
    gb = p.block
    gb.add_var("x", TensorType((None, None), "float32"))
    gb.add_var("y", TensorType((None, None), "float32"))
    gb.ops = [Op("matmul", ["x", "x"], ["y"])]
    gb.inputs = p.inputs = ["x"]
    p.outputs = gb.outputs = ["y"]
    with pytest.raises(ExecutionError, match=r"'matmul'.*\(4, 1\)"):
        Executor(p).run(np.ones((4, 1), "float32"))


# ---------------------------------------------------------------- sub-blocks via control-flow rules
def _apply_block_rule(ctx, op, values):
    """A test control-flow op: run the body block ``attrs['times']`` times on its carry."""
    for _ in range(op.attrs["times"]):
        values = ctx.run_block(op.blocks["body"], values)
    return values


def test_control_flow_rule_runs_sub_blocks(monkeypatch):
    _register_structured(monkeypatch, "test_repeat", _apply_block_rule)
    p = Program()
    gb = p.block
    t = TensorType((3,), "float32")
    gb.add_var("x", t)
    gb.add_var("y", t)
    body = Block(parent=gb)
    body.add_var("c", t)
    body.add_var("d", t)
    body.add_var("two", TensorType((), "float32"))
    body.inputs = ["c"]
    body.ops = [Op("constant", [], ["two"], {"value": 2.0, "dtype": "float32", "shape": []}),
                Op("mul", ["c", "two"], ["d"])]
    body.outputs = ["d"]
    gb.ops = [Op("test_repeat", ["x"], ["y"], {"times": 3}, {"body": body})]
    gb.inputs = p.inputs = ["x"]
    p.outputs = gb.outputs = ["y"]
    ex = Executor(p)
    assert id(body) in ex._plans  # sub-block prepared once, up front
    (x,) = _inputs((3,))
    np.testing.assert_allclose(ex.run(x)[0], x * 8)


def test_unknown_op_type_is_rejected():
    p = _hand_program("abc")
    p.block.ops[1] = Op("no_such_op", ["a"], ["b"])
    with pytest.raises(ValueError, match="no_such_op"):
        Executor(p)


# ---------------------------------------------------------------- parallel mode
def test_parallel_mode_matches_serial():
    def f(x, y):
        a = x @ y
        b = y @ x
        return d2s.tanh(a) + b.T, a.sum()

    x, y = _inputs((6, 6), (6, 6))
    prog = build_program(f, d2s.tensor(x), d2s.tensor(y))
    serial = Executor(prog).run(x, y)
    par_ex = Executor(prog, parallel=True, num_threads=2)
    for _ in range(3):
        par = par_ex.run(x, y)
        for s, q in zip(serial, par):
            # the serial run may be native (float32 tanh and sums within a few ulp of numpy)
            np.testing.assert_allclose(s, q, rtol=1e-5, atol=1e-6)
    par_ex.close()
