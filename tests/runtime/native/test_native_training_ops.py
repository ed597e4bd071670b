"""Native lowerings of the ops training programs need (runtime/d2s_runtime/native/, the hooks in
ops/indexing.py, ops/nn_ops.py, ops/tensor_list.py) against the Python backend: indexing with
0-d integer tensors and its gradient (``index_add``), ``gather`` and its gradient
(``scatter_add``, repeated indices accumulating in numpy's order), ragged stacks (push/pop of
several ranks, stacks fed to and returned by a program, forks, pop from an empty stack), and
the benchmark's programs (an MLP training step with cross-entropy on integer labels, the Elman
RNN forward+backward through a tensor ``while``) run fully native with the Python backend's
values. Gathers, indexing, stacks, argmax/argmin and cumsum are bit-identical; programs with matmuls within float32
rounding (BLAS vs BLAS in another order)."""
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

import d2s  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.static import InputSpec, build_program, gradients  # noqa: E402
from d2s_runtime import Executor, native  # noqa: E402
from d2s_runtime.ir import Block, Op, Program  # noqa: E402
from d2s_runtime.ops import TensorType  # noqa: E402

from thread_helpers import run_in_threads  # noqa: E402

from .helpers import check, compile_native  # noqa: E402

RNG = np.random.default_rng(7)
BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("native_cache")


def _f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


# ------------------------------------------------------------------ indexing, gather, scatter_add
def _indexing(x, xi, xd, t, u, idx, idx0):
    a = x[t] * 2.0 + x[1, u] + x[-1] + x[2, t]
    g1 = d2s.gather(x, 1, idx)
    g2 = d2s.gather(xi, 0, idx0)
    g3 = d2s.gather(xd, 1, idx[:3, :2])
    return (a * a).sum() + (g1 * g1).sum(), g2, g1, g3, xi[u], xd[u, t]


def test_tensor_indexing_gather_and_their_gradients(cache):
    prog = gradients(build_program(_indexing, InputSpec([4, 5]), InputSpec([3, 2], "int64"),
                                   InputSpec([3, 4], "float64"), InputSpec([], "int64"), InputSpec([], "int32"),
                                   InputSpec([4, 3], "int64"), InputSpec([2, 2], "int32"))).verify()
    ops = {op.type for op in prog.block.ops}
    assert {"gather", "scatter_add", "index_add", "getitem"} <= ops
    fn = compile_native(prog, cache)
    xi = np.arange(6).reshape(3, 2) * 7 - 11
    cases = []
    for t, u in ((0, 1), (3, -2), (-4, 2), (-1, -1)):
        # repeated positions: scatter_add accumulates them in numpy's order (gather's positions
        # are PyTorch's: in [0, size), a negative one raises)
        idx = RNG.integers(0, 4, size=(4, 3))
        idx[0] = [2, 2, 2]
        cases.append((_f32(4, 5), xi, RNG.standard_normal((3, 4)), np.array(t), np.array(u, "int32"), idx,
                      RNG.integers(0, 3, size=(2, 2)).astype("int32"),
                      # the cotangents of the float outputs
                      np.array(1.0, "float32"), _f32(4, 3), RNG.standard_normal((3, 2)), np.array(-2.0)))
    check(prog, fn, cases)
    # out-of-range positions raise IndexError on both backends
    bad = list(cases[0])
    bad[3] = np.array(4)
    with pytest.raises(Exception, match="out of"):  # the executor wraps numpy's IndexError
        Executor(prog).run(*bad)
    with pytest.raises(IndexError):
        fn(*bad)
    for wrong in (5, -1):  # past the end, or negative: both backends raise, as PyTorch
        bad = list(cases[0])
        bad[5] = np.full((4, 3), wrong)
        with pytest.raises(IndexError):
            fn(*bad)
        with pytest.raises(Exception, match="out of bounds"):
            Executor(prog).run(*bad)


# ------------------------------------------------------------------ argmax, argmin, cumsum
def _args_and_cumsums(x, i, m):
    return (d2s.argmax(x), d2s.argmax(x, axis=1), d2s.argmax(x, axis=0, keepdims=True), d2s.argmin(x, axis=-1),
            d2s.argmin(i), d2s.argmax(i, axis=0), d2s.cumsum(x, 1), d2s.cumsum(x, 0), d2s.cumsum(i, 1),
            d2s.cumsum(m, 0), d2s.cumsum(x * 2.0, 1).sum())


def test_argmax_argmin_and_cumsum_are_exact(cache):
    prog = build_program(_args_and_cumsums, InputSpec([None, 4]), InputSpec([3, 5], "int32"),
                         InputSpec([4], "bool"))
    assert {"argmax", "argmin", "cumsum"} <= {op.type for op in prog.block.ops}
    # the reversed cumsum (cumsum's gradient) of the first input and of the bool one
    g = prog.block
    for src, out, axis, dt in ((g.inputs[0], "rev_x", 1, "float32"), (g.inputs[2], "rev_m", 0, "int64")):
        g.add_var(out, TensorType(g.lookup(src).type.shape, dt))
        g.ops.append(Op("cumsum", [src], [out], {"axis": axis, "reverse": True}))
        prog.outputs = g.outputs = list(prog.outputs) + [out]
    prog.verify()
    fn = compile_native(prog, cache)
    sp = np.array([0.0, -0.0, 1.5, np.nan, np.inf, -np.inf, 1.5, 1e30, -7.0, 1e30, 0.5, np.nan], "float32")
    ints = RNG.integers(-2 ** 31, 2 ** 31 - 1, size=(3, 5)).astype("int32")  # cumsum widens to int64
    ints[0, :2] = ints.max()  # ties: the first one wins
    cases = [(_f32(5, 4) * 1e4, ints, np.array([True, False, True, True])),
             (sp.reshape(3, 4), ints[::-1].copy(), np.zeros(4, bool)),
             (np.ones((1, 4), "float32"), np.zeros((3, 5), "int32"), np.ones(4, bool))]
    check(prog, fn, cases, exact=tuple(range(10)) + (11, 12), rtol=1e-6)


def test_logsumexp_within_float_rounding(cache):
    def f(x, y):
        return (d2s.logsumexp(x, axis=1), d2s.logsumexp(x, axis=0, keepdims=True), d2s.logsumexp(x),
                d2s.logsumexp(y, axis=-1))

    prog = build_program(f, InputSpec([None, 4]), InputSpec([2, 3], "float64"))
    assert "logsumexp" in {op.type for op in prog.block.ops}
    fn = compile_native(prog, cache)
    sp = np.array([[0.0, -np.inf, 1.5, 80.0], [-np.inf] * 4, [np.nan, 1.0, 2.0, 3.0]], "float32")
    y = np.array([[1e300, 1e300, -1.0], [-np.inf, np.inf, 0.0]])
    check(prog, fn, [(_f32(5, 4) * 10, RNG.standard_normal((2, 3))), (sp, y)], rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------ ragged stacks
def _stack_program():
    """buf/shapes fed in (the Python format), a new stack of rank-2 elements and one of 0-d
    elements: pushes, pops, a fork (two pushes on one version) and stacks as outputs."""
    p = Program()
    g = p.block
    f32 = "float32"
    types = {"fb": ((None,), f32), "fs": ((None, 2), "int64"), "x": ((None, 3), f32), "s": ((), f32),
             "nb": ((None,), f32), "ns": ((None, 2), "int64"), "b1": ((None,), f32), "s1": ((None, 2), "int64"),
             "b2": ((None,), f32), "s2": ((None, 2), "int64"), "b3": ((None,), f32), "s3": ((None, 2), "int64"),
             "p3": ((None, 3), f32), "b4": ((None,), f32), "s4": ((None, 2), "int64"),
             "b5": ((None,), f32), "s5": ((None, 2), "int64"), "p5": ((None, None), f32),
             "b6": ((None,), f32), "s6": ((None, 2), "int64"), "y": ((None, 3), f32),
             "zb": ((None,), f32), "zs": ((None, 0), "int64"), "zb1": ((None,), f32), "zs1": ((None, 0), "int64"),
             "zb2": ((None,), f32), "zs2": ((None, 0), "int64"), "zb3": ((None,), f32), "zs3": ((None, 0), "int64"),
             "q": ((), f32), "fb1": ((None,), f32), "fs1": ((None, 2), "int64"), "fb2": ((None,), f32),
             "fs2": ((None, 2), "int64"), "fp": ((None, None), f32)}
    for n, (shape, dt) in types.items():
        g.add_var(n, TensorType(shape, dt))
    g.ops = [
        Op("stack_new", ["x"], ["nb", "ns"]),
        Op("stack_push", ["nb", "ns", "x"], ["b1", "s1"]),
        Op("mul", ["x", "s"], ["y"]),
        Op("stack_push", ["b1", "s1", "y"], ["b2", "s2"]),
        Op("stack_pop", ["b2", "s2"], ["b3", "s3", "p3"], {"shape": [None, 3]}),
        Op("stack_push", ["b3", "s3", "y"], ["b4", "s4"]),     # a fork: b3 is pushed to twice
        Op("stack_push", ["b3", "s3", "x"], ["b6", "s6"]),
        Op("stack_pop", ["b6", "s6"], ["b5", "s5", "p5"], {"shape": [None, None]}),
        Op("stack_new", ["s"], ["zb", "zs"]),
        Op("stack_push", ["zb", "zs", "s"], ["zb1", "zs1"]),
        Op("stack_push", ["zb1", "zs1", "s"], ["zb2", "zs2"]),
        Op("stack_pop", ["zb2", "zs2"], ["zb3", "zs3", "q"], {"shape": []}),
        Op("stack_push", ["fb", "fs", "x"], ["fb1", "fs1"]),   # a stack fed in
        Op("stack_pop", ["fb1", "fs1"], ["fb2", "fs2", "fp"], {"shape": [None, None]}),
    ]
    p.inputs = g.inputs = ["fb", "fs", "x", "s"]
    p.outputs = g.outputs = ["p3", "b4", "s4", "b5", "s5", "p5", "zb3", "zs3", "q", "fb2", "fs2", "fp", "b3", "s3"]
    return p.verify() if hasattr(p, "verify") else p


def test_stack_ops(cache):
    prog = _stack_program()
    fn = compile_native(prog, cache)
    cases = []
    for n in (0, 1, 4):
        elems = [_f32(k + 1, 2) for k in range(3)]
        fb = np.concatenate([e.reshape(-1) for e in elems]).astype("float32")
        fs = np.array([e.shape for e in elems], "int64").reshape(3, 2)
        cases.append((fb, fs, _f32(n, 3), np.array(1.5 * n - 2, "float32")))
    cases.append((np.zeros(0, "float32"), np.zeros((0, 2), "int64"), _f32(2, 3), np.array(-0.0, "float32")))
    check(prog, fn, cases)


def test_stack_push_of_transposed_and_strided_values(cache):
    """A pushed element that is not contiguous (a transposed view, a strided slice) is stored in
    C order, as the Python backend stores it: the pops give back the same matrices."""
    p = Program()
    g = p.block
    f32 = "float32"
    types = {"x": ((4, 6), f32), "xt": ((6, 4), f32), "xs": ((2, 6), f32), "nb": ((None,), f32),
             "ns": ((None, 2), "int64"), "b1": ((None,), f32), "s1": ((None, 2), "int64"), "b2": ((None,), f32),
             "s2": ((None, 2), "int64"), "b3": ((None,), f32), "s3": ((None, 2), "int64"), "p3": ((2, 6), f32),
             "b4": ((None,), f32), "s4": ((None, 2), "int64"), "p4": ((6, 4), f32)}
    for n, (shape, dt) in types.items():
        g.add_var(n, TensorType(shape, dt))
    g.ops = [
        Op("transpose", ["x"], ["xt"], {"perm": [1, 0]}),
        Op("getitem", ["x"], ["xs"], {"index": [["s", None, None, 2], ["s", None, None, None]]}),
        Op("stack_new", ["x"], ["nb", "ns"]),
        Op("stack_push", ["nb", "ns", "xt"], ["b1", "s1"]),
        Op("stack_push", ["b1", "s1", "xs"], ["b2", "s2"]),
        Op("stack_pop", ["b2", "s2"], ["b3", "s3", "p3"], {"shape": [2, 6]}),
        Op("stack_pop", ["b3", "s3"], ["b4", "s4", "p4"], {"shape": [6, 4]}),
    ]
    p.inputs = g.inputs = ["x"]
    p.outputs = g.outputs = ["p3", "p4", "b2", "s2"]
    prog = p.verify()
    fn = compile_native(prog, cache)
    x = _f32(4, 6)
    check(prog, fn, [(x,)])
    p3, p4, buf, _ = fn(x)
    assert np.array_equal(p4, x.T) and np.array_equal(p3, x[::2])
    assert np.array_equal(buf, np.concatenate([x.T.reshape(-1), x[::2].reshape(-1)]))


def test_pop_from_an_empty_stack_raises(cache):
    p = Program()
    g = p.block
    for n, (shape, dt) in {"x": ((2,), "float32"), "b": ((None,), "float32"), "s": ((None, 1), "int64"),
                           "b1": ((None,), "float32"), "s1": ((None, 1), "int64"), "y": ((2,), "float32")}.items():
        g.add_var(n, TensorType(shape, dt))
    g.ops = [Op("stack_new", ["x"], ["b", "s"]), Op("stack_pop", ["b", "s"], ["b1", "s1", "y"], {"shape": [2]})]
    p.inputs = g.inputs = ["x"]
    p.outputs = g.outputs = ["y"]
    fn = compile_native(p, cache)
    with pytest.raises(Exception, match="pop from an empty stack"):  # the executor names the op
        Executor(p).run(np.zeros(2, "float32"))
    with pytest.raises(IndexError, match="pop from an empty stack"):
        fn(np.zeros(2, "float32"))


def _rows_program():
    """A stack made in the top block (its buffer pooled from call to call) whose rows are an
    output: the rows are a view of the pooled buffer, which the caller must copy."""
    p = Program()
    g = p.block
    for n, (shape, dt) in {"x": ((2, 3), "float32"), "y": ((2, 3), "float32"), "b": ((None,), "float32"),
                           "s": ((None, 2), "int64"), "b1": ((None,), "float32"), "s1": ((None, 2), "int64"),
                           "b2": ((None,), "float32"), "s2": ((None, 2), "int64"),
                           "r": ((None, 3), "float32")}.items():
        g.add_var(n, TensorType(shape, dt))
    g.ops = [Op("stack_new", ["x"], ["b", "s"]), Op("stack_push", ["b", "s", "x"], ["b1", "s1"]),
             Op("stack_push", ["b1", "s1", "y"], ["b2", "s2"]), Op("stack_rows", ["b2"], ["r"], {"width": 3})]
    p.inputs = g.inputs = ["x", "y"]
    p.outputs = g.outputs = ["r"]
    return p


def test_pooled_stack_buffers_never_reach_the_caller(cache):
    prog = _rows_program()
    lowered = native.lower_program(prog)
    assert "L.stack_buf_view" in lowered.source  # the rows are read in place
    fn = native.compile_lowered(lowered, cache_dir=str(cache))
    outs = []
    for k in range(4):
        x, y = _f32(2, 3), _f32(2, 3)
        (r,) = fn(x, y)
        np.testing.assert_array_equal(r, np.concatenate([x, y]))
        outs.append((r, r.copy()))
    for r, kept in outs:  # later calls, which reuse the stack's buffer, changed no earlier result
        np.testing.assert_array_equal(r, kept)
    assert not any(np.may_share_memory(a, b) for i, (a, _) in enumerate(outs) for b, _ in outs[i + 1:])


def test_calls_in_parallel_threads_each_get_their_own_stack_buffers(cache):
    """The compiled function releases the GIL: calls running at once must not share a pool."""
    prog = _rows_program()
    fn = native.compile_lowered(native.lower_program(prog), cache_dir=str(cache))
    wrong = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(200):
            x, y = (rng.standard_normal((2, 3)).astype("float32") for _ in range(2))
            (r,) = fn(x, y)
            if not np.array_equal(r, np.concatenate([x, y])):
                wrong.append(seed)

    run_in_threads(worker)
    assert not wrong


def test_stacks_read_by_other_ops_are_not_lowered():
    p = Program()
    g = p.block
    for n, (shape, dt) in {"x": ((2,), "float32"), "b": ((None,), "float32"), "s": ((None, 1), "int64"),
                           "y": ((None,), "float32")}.items():
        g.add_var(n, TensorType(shape, dt))
    g.ops = [Op("stack_new", ["x"], ["b", "s"]), Op("neg", ["b"], ["y"])]
    p.inputs = g.inputs = ["x"]
    p.outputs = g.outputs = ["y"]
    with pytest.raises(native.NativeUnsupported, match="reads a tensor stack"):
        native.lower_program(p)


# ------------------------------------------------------------------ the benchmark's programs
def _bench():
    sys.path.insert(0, str(BENCH))
    try:
        import bench_native
    finally:
        sys.path.remove(str(BENCH))
    return bench_native


def _static_program(fn, args):
    st = d2s.jit.to_static(fn)
    with d2s.no_grad():
        st(*args)
    (prog,) = st.programs
    return prog


def _feeds(prog, args):
    flat = []

    def walk(a):
        if isinstance(a, (list, tuple)):
            for b in a:
                walk(b)
        else:
            flat.append(np.asarray(a.numpy()))
    walk(args)
    assert len(flat) == len(prog.inputs)
    return flat


def test_mlp_training_step_with_integer_labels_runs_native(cache):
    def mlp_loss(params, x, y):
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i + 2 < len(params):
                h = d2s.relu(h)
        return F.cross_entropy(h, y)

    vg = d2s.func.value_and_grad(mlp_loss)

    def step(params, x, y):
        loss, grads = vg(params, x, y)
        return loss, [p - 0.01 * g for p, g in zip(params, grads)]

    sizes = (12, 16, 16, 5)
    params = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        params += [d2s.tensor(_f32(i, o) / np.sqrt(i)), d2s.tensor(_f32(o) * 0.1)]
    y = RNG.integers(0, 5, 8)
    y[:3] = 2  # repeated classes
    args = (params, d2s.tensor(_f32(8, 12)), d2s.tensor(y))
    prog = _static_program(step, args)
    fn = compile_native(prog, cache)
    feeds = _feeds(prog, args)
    other = [f.copy() for f in feeds]
    other[-2] = _f32(8, 12) * 3
    other[-1] = RNG.integers(0, 5, 8)
    check(prog, fn, [feeds, other], rtol=2e-5, atol=2e-6)


def test_bench_mlp_and_elman_rnn_programs_run_native(cache):
    B = _bench()
    funcs = B.d2s_functions()
    for name, inputs in (("mlp", B.mlp_inputs(batch=6, sizes=(10, 8, 8, 4))), ("rnn", B.rnn_inputs(T=5, B=3, D=4, H=6))):
        args = B._d2s_args(name, inputs)
        prog = _static_program(funcs[name], args)
        lowered = native.lower_program(prog)  # fully native: no NativeUnsupported
        if name == "rnn":
            assert "L.stack_push" in lowered.source and "L.stack_pop" in lowered.source
        fn = native.compile_lowered(lowered, cache_dir=str(cache))
        feeds = _feeds(prog, args)
        cases = [feeds]
        if name == "rnn":
            for n in (0, 1, 3):  # zero-trip and shorter loops
                short = list(feeds)
                short[-1] = np.array(n, "int64")
                cases.append(short)
        check(prog, fn, cases, rtol=2e-5, atol=2e-6)
