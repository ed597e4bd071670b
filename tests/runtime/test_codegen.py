"""The code-generating backend (runtime/d2s_runtime/codegen.py): every program compiled into
one Python function gives the interpreter's outputs (values, dtypes, array types) on several
inputs: plain ops, 0-d scalar math, reductions, cond/while/scan nested in each other,
zero-trip loops, tensor lists and static backward, the memory plan; errors name the failing
op; untrusted var names and attrs never reach the generated source."""
import builtins

import numpy as np
import pytest

import d2s
from d2s.static import InputSpec, build_program, gradients
from d2s.static.builder import ProgramBuilder
from d2s_runtime import ExecutionError, Executor
from d2s_runtime.ops import OPS, BlockLayout, OpDef
from d2s_runtime.ir import Block, Op, Program
from d2s_runtime.ops import TensorType
from d2s_runtime.passes import optimize

from hostile_programs import PAYLOAD, hostile_program


class _BodyLayout(BlockLayout):
    """A test op's layout: one block, ``body``."""

    def block_keys(self, op):
        return frozenset({"body"})


def _register_structured(monkeypatch, name, run):
    """Register a structured op ``name`` (no shape rule) run by ``run(ctx, op, values)``."""
    opdef = OpDef(name, None, None, None, "a test op", layout=_BodyLayout())
    opdef.rules["run"] = run
    monkeypatch.setitem(OPS, name, opdef)


RNG = np.random.default_rng(7)


def _same(program, inputs_list, params=None):
    """Codegen and interpreter agree on every inputs tuple; returns the codegen executor."""
    cg = Executor(program, params=params)
    it = Executor(program, params=params, mode="interp")
    assert cg.mode == "codegen" and it.mode == "interp"
    for inputs in inputs_list:
        got, want = cg.run(*inputs), it.run(*inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert type(g) is np.ndarray and type(w) is np.ndarray
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)
    return cg


def _f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


# ------------------------------------------------------------------ straight-line programs
def test_elementwise_reductions_and_matmul():
    def fn(x, w):
        h = d2s.tanh(x @ w) * 2.0 - x.sum(axis=1, keepdims=True)
        return h.mean(), h.amax(axis=0), *h.max(0), d2s.exp(h).sum(), (h > 0).sum(), d2s.relu(h)

    prog = build_program(fn, InputSpec([None, 4]), InputSpec([4, 4]))
    _same(prog, [(_f32(3, 4), _f32(4, 4)), (_f32(1, 4), _f32(4, 4)), (_f32(5, 4), _f32(4, 4))])


def test_scalar_math_on_0d_values_of_each_dtype():
    def fn(i, n, a):
        q = (i * 3 + n) // 2 - i % 3
        r = i / n  # int / int -> float64
        s = -(a * a) / (a + 1.5) - a ** 2
        return q, r, s, i < n, i >= n, i == n, d2s.maximum(a, s), q.sum()

    prog = build_program(fn, d2s.tensor(0), d2s.tensor(0), d2s.tensor(0.0))
    _same(prog, [(np.array(i), np.array(n), np.array(a, "float32"))
                 for i, n, a in [(0, 5, 0.5), (7, 2, -3.0), (-4, 3, 2.25)]])


def test_int32_sums_accumulate_in_int64_as_the_kernel_does():
    prog = build_program(lambda x: (x.sum(), x.sum(axis=0)), InputSpec([3, 2], "int32"))
    cg = _same(prog, [(np.arange(6, dtype="int32").reshape(3, 2),)])
    assert cg.run(np.ones((3, 2), "int32"))[0].dtype == np.int64


def test_0d_outputs_and_inputs_are_arrays():
    prog = build_program(lambda a, b: (a, a + b, b * 2), d2s.tensor(1.0), d2s.tensor(2.0))
    cg = _same(prog, [(np.array(1.0, "float32"), np.array(2.0, "float32"))])
    outs = cg.run(np.array(3.0, "float32"), np.array(4.0, "float32"))
    assert all(type(o) is np.ndarray and o.shape == () for o in outs)


def test_params_are_read_at_every_call():
    w = d2s.tensor(np.ones((4, 2), "float32"), requires_grad=True)
    prog = build_program(lambda x: d2s.relu(x @ w) + 1.0, InputSpec([None, 4]))
    w1, w2 = _f32(4, 2), _f32(4, 2)
    for wv in (w1, w2):
        _same(prog, [(_f32(3, 4),)], params={prog.params[0]: wv})


# ------------------------------------------------------------------ control flow
def _cond_in_while(x, n):
    def body(i, v):
        v = d2s.cond(v.sum() > 0, lambda v: v * 0.5 - 1.0, lambda v: v * 0.5 + 1.0, v)
        return i + 1, v

    return d2s.while_loop(lambda i, v: i < n, body, (d2s.tensor(0), x))


@pytest.mark.parametrize("n", [0, 1, 7, 200])
def test_cond_in_while_including_zero_trips(n):
    prog = build_program(_cond_in_while, InputSpec([None]), d2s.tensor(0))
    cg = _same(prog, [(_f32(16), np.array(n)), (_f32(3), np.array(n))])
    assert "while True:" in cg.source and "if " in cg.source
    x = _f32(16)
    np.testing.assert_allclose(cg.run(x, np.array(n))[1], _cond_in_while(d2s.tensor(x), d2s.tensor(n))[1].numpy(),
                               rtol=1e-5)


def test_cond_takes_each_branch_and_nests():
    def fn(x, w):
        def outer_true(a):
            return d2s.cond(a.mean() > 0.5, lambda b: b * w, lambda b: b - w, a)

        return d2s.cond(x.sum() > 0, outer_true, lambda a: d2s.exp(a) + w.sum(), x)

    prog = build_program(fn, InputSpec([None, 3]), InputSpec([3]))
    w = _f32(3)
    _same(prog, [(np.full((2, 3), v, "float32"), w) for v in (2.0, 0.1, -1.0)] + [(_f32(4, 3), w)])


def test_nested_while_with_swapped_carries():
    def fn(x, n):
        def outer(i, a, b):
            def inner(j, c):
                return j + 1, c * 0.9 + 0.1

            _, a = d2s.while_loop(lambda j, c: j < i, inner, (d2s.tensor(0), a))
            return i + 1, b, a  # the carries swap places each iteration

        return d2s.while_loop(lambda i, a, b: i < n, outer, (d2s.tensor(0), x, x * 2.0))

    prog = build_program(fn, InputSpec([3]), d2s.tensor(0))
    _same(prog, [(_f32(3), np.array(n)) for n in (0, 1, 4)])


def test_scan_forward_reverse_empty_and_with_while_inside():
    def fn(xs, w):
        def step(c, x):
            _, y = d2s.while_loop(lambda k, y: k < 2, lambda k, y: (k + 1, y * w + x), (d2s.tensor(0), c))
            return y, y.sum() + x.sum()

        c1, ys = d2s.scan(step, w * 0.0, xs)
        c2, zs = d2s.scan(lambda c, x: (c + x, c * x), w, xs, reverse=True)
        return c1, ys, c2, zs

    prog = build_program(fn, InputSpec([None, 3]), InputSpec([3]))
    cg = _same(prog, [(_f32(n, 3), _f32(3)) for n in (0, 1, 5)])
    assert "for " in cg.source


def test_scan_without_xs_uses_its_length():
    prog = build_program(lambda c: d2s.scan(lambda c, _: (c * 2.0, c.sum()), c, None, length=4), InputSpec([2]))
    _same(prog, [(_f32(2),), (_f32(2),)])


def _ops(block):
    return [t for op in block.ops for t in [op.type] + [u for sub in op.blocks.values() for u in _ops(sub)]]


def test_static_backward_of_while_and_scan_with_their_stacks():
    def fn(x, w, n):
        _, v = d2s.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, d2s.sin(v) * w + 0.5), (d2s.tensor(0), x))
        c, ys = d2s.scan(lambda c, r: (d2s.tanh(c * w + r), c * r), v, d2s.stack([x, v, w]))
        return (ys ** 2).sum() + c.sum()

    grad_program = gradients(build_program(fn, InputSpec([3], "float64"), InputSpec([3], "float64"),
                                           InputSpec([], "int64"))).verify()
    ops = _ops(grad_program.block)
    assert "stack_push" in ops and "stack_pop" in ops and "scan" in ops
    x, w = RNG.standard_normal(3), RNG.standard_normal(3)
    _same(grad_program, [(x, w, np.array(k), np.array(1.0)) for k in (0, 1, 3)])


def test_optimized_training_step_with_memory_plan():
    ws = [d2s.tensor(_f32(8, 16) * 0.3, requires_grad=True), d2s.tensor(_f32(16, 4) * 0.3, requires_grad=True)]
    b = ProgramBuilder()
    with b:
        x = b.add_input((32, 8), "float32")
        sym = [b.param(w) for w in ws]
        loss = (d2s.tanh(d2s.relu(x @ sym[0]) @ sym[1]) ** 2).mean()
        grads = d2s.grad(loss, sym)
        with d2s.no_grad():
            new = [p - 0.1 * g for p, g in zip(sym, grads)]
        b.program.outputs = [b.var_of(loss)] + [b.var_of(t) for t in new]
    b.program.block.outputs = list(b.program.outputs)
    prog = optimize(b.program)
    assert prog.annotations.get("memory_plan", {}).get("reuse")
    params = dict(zip(prog.params, [w.numpy() for w in ws]))
    cg = _same(prog, [(_f32(32, 8),), (_f32(32, 8),)], params=params)
    assert "del " in cg.source  # large intermediates are freed after their last use


def test_a_custom_control_flow_rule_runs_through_the_interpreter(monkeypatch):
    def repeat_rule(ctx, op, values):
        v = values
        for _ in range(op.attrs["times"]):
            v = ctx.run_block(op.blocks["body"], v)
        return v

    _register_structured(monkeypatch, "test_repeat_cg", repeat_rule)
    p = Program()
    gb = p.block
    t = TensorType((3,), "float32")
    gb.add_var("x", t)
    gb.add_var("y", t)
    gb.add_var("z", t)
    body = Block(parent=gb)
    body.add_var("c", t)
    body.add_var("d", t)
    body.inputs, body.outputs = ["c"], ["d"]
    body.ops = [Op("exp", ["c"], ["d"])]
    gb.ops = [Op("test_repeat_cg", ["x"], ["y"], {"times": 2}, {"body": body}), Op("neg", ["y"], ["z"])]
    gb.inputs = p.inputs = ["x"]
    p.outputs = gb.outputs = ["z"]
    x = _f32(3) * 0.1
    cg = _same(p, [(x,)])
    np.testing.assert_allclose(cg.run(x)[0], -np.exp(np.exp(x)), rtol=1e-6)


# ------------------------------------------------------------------ aliases, creations, in-place writes
def _count_in_place(monkeypatch):
    """Counts the calls of index_copy_dim's in-place form (see codegen.IN_PLACE_LOWERING)."""
    calls = []
    into = OPS["index_copy_dim"].lowerings["in_place"]

    def counting(xp, x, *args, **attrs):
        calls.append(x.shape)
        return into(xp, x, *args, **attrs)

    monkeypatch.setitem(OPS["index_copy_dim"].lowerings, "in_place", counting)
    return calls


def _cache_loop(read_old):
    """A loop writing row ``i`` of a carried cache each step; ``read_old`` reads the cache's old
    value after the write: directly, through a view made before it, or not at all."""
    def fn(x, cache, n):
        def body(i, c, acc):
            view = c.t()
            new = d2s.index_copy(d2s.stop_gradient(c), 0, i.reshape([1]), x[None] * (i + 1.0))
            if read_old == "direct":
                acc = acc + (c * 2.0).sum() + new.sum()
            elif read_old == "view":
                acc = acc + view.sum() + new.sum()
            else:
                acc = acc + new.sum()
            return i + 1, new, acc

        return d2s.while_loop(lambda i, c, acc: i < n, body, (d2s.tensor(0), cache, d2s.tensor(0.0)))

    return build_program(fn, InputSpec([3]), InputSpec([40, 3]), d2s.tensor(0))  # (not "small": see SMALL_BYTES)


@pytest.mark.parametrize("read_old", ["no", "direct", "view"])
def test_index_copy_in_a_loop_writes_in_place_only_where_nothing_else_reads_the_old_value(monkeypatch, read_old):
    calls = _count_in_place(monkeypatch)
    prog = _cache_loop(read_old)
    cache = _f32(40, 3)
    before = cache.copy()
    for p in (prog, optimize(prog)):
        _same(p, [(_f32(3), cache, np.array(n)) for n in (0, 1, 5)])
    np.testing.assert_array_equal(cache, before)  # the caller's array: never written
    if read_old == "no":
        assert calls  # the carried cache is written in place after the first step
    elif read_old == "direct":
        assert not calls  # its old value is read after the write: statically not in place


def test_index_copy_in_a_branch_given_one_value_twice_copies(monkeypatch):
    calls = _count_in_place(monkeypatch)

    def fn(x, c, p):
        def then(a, b):
            r = d2s.index_copy(a, 0, d2s.tensor([1]), x[None])
            return r, (b + r).sum()  # b is a's value, read after the write

        return d2s.cond(p > 0, then, lambda a, b: (a * 1.0, b.sum()), c * 1.0, c * 1.0 + 0.0)

    prog = build_program(fn, InputSpec([3]), InputSpec([4, 3]), d2s.tensor(0))
    _same(prog, [(_f32(3), _f32(4, 3), np.array(p)) for p in (1, -1)])
    assert calls  # two values: ``a`` is the branch's to write
    del calls[:]

    def same_twice(x, c, p):
        def then(a, b):
            r = d2s.index_copy(a, 0, d2s.tensor([1]), x[None])
            return r, (b + r).sum()

        d = c * 1.0
        return d2s.cond(p > 0, then, lambda a, b: (a * 1.0, b.sum()), d, d)

    prog = build_program(same_twice, InputSpec([3]), InputSpec([4, 3]), d2s.tensor(0))
    _same(prog, [(_f32(3), _f32(4, 3), np.array(p)) for p in (1, -1)])
    assert not calls


def test_creations_are_made_once_and_outputs_stay_writable():
    def fn(x, n):
        def body(i, v):
            return i + 1, v + d2s.where(d2s.arange(40) < i * 4, d2s.full([40], 0.5), d2s.full([40], -0.5))

        _, v = d2s.while_loop(lambda i, v: i < n, body, (d2s.tensor(0), x))
        return v, d2s.full([40], 2.0), d2s.stop_gradient(d2s.zeros(40))

    prog = optimize(build_program(fn, InputSpec([40]), d2s.tensor(0)))
    assert {"arange", "full"} <= {op.type for b in prog.blocks for op in b.ops}  # (big: not folded)
    cg = _same(prog, [(_f32(40), np.array(n)) for n in (0, 3)])
    compiled = cg.runner.generated.compiled
    assert "while True:" in cg.source
    # the loop's arange and full are made once, when the code is generated: no line runs them
    assert {li.op.type for li in compiled.lines.values()} >= {"where", "full"}  # (the outputs' fulls)
    assert "arange" not in {li.op.type for li in compiled.lines.values()}
    outs = cg.run(_f32(40), np.array(2))
    assert outs[1].flags.writeable and outs[2].flags.writeable  # outputs are made by each run
    outs[1][:] = 7.0
    np.testing.assert_array_equal(cg.run(_f32(40), np.array(2))[1], np.full(40, 2.0, "float32"))


# ------------------------------------------------------------------ modes, errors, safety
def test_modes():
    prog = build_program(lambda x: x * 2.0, InputSpec([2]))
    assert Executor(prog).source.startswith("def program(")
    assert Executor(prog, mode="interp").source is None
    assert Executor(prog, parallel=True).mode == "interp"
    with pytest.raises(ValueError, match="parallel"):
        Executor(prog, parallel=True, mode="codegen")
    with pytest.raises(ValueError, match="mode must be"):
        Executor(prog, mode="jit")


def test_loops_nested_deeper_than_python_allows_fall_back_to_the_interpreter():
    def nest(depth):
        def fn(x):
            if depth == 0:
                return x + 1.0
            inner = nest(depth - 1)
            return d2s.while_loop(lambda i, v: i < 1, lambda i, v: (i + 1, inner(v)), (d2s.tensor(0), x))[1]

        return fn

    prog = build_program(nest(22), InputSpec([2]))
    assert Executor(prog).mode == "interp"
    with pytest.raises(Exception, match="compile"):
        Executor(prog, mode="codegen")
    np.testing.assert_allclose(Executor(prog).run(np.zeros(2, "float32"))[0], [1.0, 1.0])


def test_a_failing_op_inside_a_loop_names_the_op_and_shapes():
    def fn(x, n):
        return d2s.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v @ v), (d2s.tensor(0), x))[1]

    prog = build_program(fn, InputSpec([None, None]), d2s.tensor(0))
    ex = Executor(prog)
    assert ex.mode == "codegen"
    np.testing.assert_allclose(ex.run(np.eye(2, dtype="float32"), np.array(3))[0], np.eye(2))
    with pytest.raises(ExecutionError, match=r"'matmul'.*\(4, 1\), .*\(4, 1\)"):
        ex.run(np.ones((4, 1), "float32"), np.array(2))


def test_untrusted_names_and_attrs_never_reach_the_source():
    # every var name (global block, cond branches, while blocks) and an attr key are Python code
    p = hostile_program()
    body = p.block.ops[2].blocks["body"]
    body.ops[0].attrs[PAYLOAD] = PAYLOAD
    # the code-like attr key of reduce_sum reaches its kernel as a value (which rejects it);
    # dropped for running, after checking the source holds nothing of it
    assert "__import__" not in Executor(p, mode="codegen").source
    body.ops[0].attrs.pop(PAYLOAD)
    ex = Executor(p, mode="codegen")
    for piece in ("__import__", "PWNED", "builtins", "#"):
        assert piece not in ex.source
    xv = np.array([1.0, -2.0, 0.5], "float32")
    got = ex.run(xv, np.array(3))
    want = Executor(p, mode="interp").run(xv, np.array(3))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)
    assert not hasattr(builtins, "D2S_PWNED")


def test_untrusted_attrs_steering_structure_are_values_not_source():
    # scan's ``reverse`` holding code is read for its truth value, like the interpreter does
    prog = build_program(lambda c, xs: d2s.scan(lambda c, x: (c + x, c * x), c, xs), InputSpec([2]),
                         InputSpec([3, 2]))
    (op,) = [op for op in prog.block.ops if op.type == "scan"]
    op.attrs["reverse"] = PAYLOAD
    op.attrs["length"] = PAYLOAD
    cg = _same(prog, [(_f32(2), _f32(3, 2))])
    assert "__import__" not in cg.source and "PWNED" not in cg.source
    assert not hasattr(builtins, "D2S_PWNED")


def test_kernel_attrs_holding_code_are_passed_as_values():
    p = Program()
    gb = p.block
    gb.add_var("x", TensorType((2, 3), "float32"))
    gb.add_var("y", TensorType((3, 2), "float32"))
    gb.ops = [Op("transpose", ["x"], ["y"], {"perm": [1, 0], PAYLOAD: 1})]
    gb.inputs = p.inputs = ["x"]
    p.outputs = gb.outputs = ["y"]
    ex = Executor(p, mode="codegen")
    assert "__import__" not in ex.source
    with pytest.raises(ExecutionError, match="'transpose'.*unexpected keyword"):
        ex.run(_f32(2, 3))
    assert not hasattr(builtins, "D2S_PWNED")


def _gpu_unavailable():
    try:
        import cupy
        return None if cupy.cuda.runtime.getDeviceCount() > 0 else "no CUDA GPU"
    except Exception as e:  # not installed, or no driver
        return str(e)


@pytest.mark.skipif(_gpu_unavailable() is not None, reason="needs cupy and a CUDA GPU")
def test_gpu_codegen_matches_cpu():
    import cupy

    prog = build_program(_cond_in_while, InputSpec([None]), d2s.tensor(0))
    gpu = Executor(prog, device="gpu")
    assert gpu.mode == "codegen"
    x = _f32(16)
    for g, c in zip(gpu.run(cupy.asarray(x), cupy.asarray(np.array(9))), Executor(prog).run(x, np.array(9))):
        assert isinstance(g, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(g), c, rtol=1e-5)
