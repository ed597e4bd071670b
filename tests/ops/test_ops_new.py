"""The ops added for converted real-world code: pad, unstack, chunk, cat, add_n, identity,
shape, numel, randint with tensor bounds, d2s.print, nn.ModuleDict. Each is checked eagerly
against NumPy, inside programs (to_static vs eager, dynamic dims too), for gradients
(gradcheck in float64) and for ONNX export or its clear refusal."""
import numpy as np
import pytest

import d2s

# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py)
pytestmark = pytest.mark.usefixtures("device")
import d2s.nn.functional as F
from d2s import nn
from d2s.autograd import gradcheck
from d2s.static import InputSpec, build_program
from d2s_runtime import Executor

RNG = np.random.default_rng(7)


def f32(*shape):
    return d2s.tensor(RNG.uniform(-2, 2, size=shape).astype("float32"))


def f64(*shape):
    return d2s.tensor(RNG.uniform(-2, 2, size=shape), dtype="float64", requires_grad=True)


def same(got, want):
    """Tensors equal in values, dtype and shape; Python values equal and of the same type."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            same(g, w)
        return
    if isinstance(want, d2s.Tensor):
        assert isinstance(got, d2s.Tensor), (got, want)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert got.shape == want.shape, (got.shape, want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
        return
    assert type(got) is type(want) and got == want, (got, want)


def run_program(fn, args, dynamic=False):
    """fn's outputs computed by a program built from specs of ``args`` (dim 0 unknown when
    ``dynamic``), run by the runtime executor."""
    specs = [InputSpec([None if dynamic and i == 0 else d for i, d in enumerate(a.shape)], str(a.dtype))
             for a in args]
    prog = build_program(fn, *specs)
    prog.verify()
    return Executor(prog).run(*[a.numpy() for a in args])


# ------------------------------------------------------------------ pad
NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap",
           "edge": "edge", "wrap": "wrap"}


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular", "edge", "wrap"])
@pytest.mark.parametrize("pad,np_pad", [((1, 2), [(0, 0), (1, 2)]), ((0, 1, 2, 0), [(2, 0), (0, 1)]),
                                        ([(1, 1), (0, 3)], [(1, 1), (0, 3)])])
def test_pad_matches_numpy(mode, pad, np_pad):
    x = f32(3, 4)
    kw = {"constant_values": 0.5} if mode == "constant" else {}
    want = np.pad(x.numpy(), np_pad, mode=NP_MODE[mode], **kw)
    got = d2s.pad(x, pad, mode=mode, value=0.5) if mode == "constant" else d2s.pad(x, pad, mode=mode)
    assert got.dtype == d2s.float32
    np.testing.assert_array_equal(got.numpy(), want)
    # nn.functional.pad is the same function under PyTorch's name
    np.testing.assert_array_equal(F.pad(x, pad, mode=mode, value=0.5).numpy(), got.numpy())


def test_pad_keeps_int_dtype_and_fills():
    x = d2s.tensor([[1, 2], [3, 4]])
    got = d2s.pad(x, (1, 0), value=9)
    assert got.dtype == d2s.int64
    np.testing.assert_array_equal(got.numpy(), np.pad(x.numpy(), [(0, 0), (1, 0)], constant_values=9))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradcheck(mode):
    x = f64(3, 4)
    assert gradcheck(lambda a: d2s.pad(a, (1, 2, 2, 1), mode=mode) * d2s.arange(7, dtype="float64"), [x])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_second_order(mode):
    # pad's gradient is pad_grad, whose gradient is pad again: hessian-vector products work
    x = f64(2, 3)
    w = d2s.tensor(RNG.uniform(size=(4, 6)))

    def f(a):
        y = d2s.pad(a, (2, 1, 1, 1), mode=mode) if mode != "reflect" else d2s.pad(a, (1, 2, 1, 1), mode=mode)
        return (y * y * w).sum()

    def grad_of_f(a):
        if a.requires_grad:
            return d2s.grad(f(a), a, create_graph=True)[0]
        # finite differences call this on plain tensors under no_grad: differentiate a leaf copy
        with d2s.enable_grad():
            b = a.detach().requires_grad_()
            return d2s.grad(f(b), b)[0].detach()

    assert grad_of_f(x).shape == x.shape
    assert gradcheck(grad_of_f, [x])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_in_program_with_dynamic_dims(mode):
    def fn(a):
        return d2s.pad(a, (1, 2, 1, 0), mode=mode) * 2

    for n in (2, 5):
        x = f32(n, 4)
        got, = run_program(fn, [x], dynamic=True)
        np.testing.assert_array_equal(got, fn(x).numpy())


def test_pad_static_gradient_matches_eager():
    @d2s.jit.to_static
    def fn(a):
        return (d2s.pad(a, (2, 1), mode="reflect") ** 2).sum()

    x = f32(3, 4).requires_grad_()
    fn(x).backward()
    x2 = d2s.tensor(x.numpy(), requires_grad=True)
    (d2s.pad(x2, (2, 1), mode="reflect") ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("call,msg", [
    (lambda x: d2s.pad(x, (1, 2, 3)), "even number"),
    (lambda x: d2s.pad(x, (1, 1, 1, 1, 1, 1)), "at most 2 per dim"),
    (lambda x: d2s.pad(x, [(1, 1)]), "one pair per dim"),
    (lambda x: d2s.pad(x, (-5, 1)), "crops more than dim"),
    (lambda x: d2s.pad(x, (4, 0), mode="reflect"), "must be smaller than dim"),
    (lambda x: d2s.pad(x, (5, 0), mode="circular"), "at most dim"),
    (lambda x: d2s.pad(x, (1, 1), mode="symmetric"), "unknown mode"),
])
def test_pad_errors_are_clear(call, msg):
    with pytest.raises(ValueError, match=msg):
        call(f32(3, 4))


def test_pad_error_in_program_names_the_op():
    with pytest.raises(ValueError, match="pad: reflect padding"):
        build_program(lambda a: d2s.pad(a, (3, 3), mode="reflect"), InputSpec([2, 3]))


# ------------------------------------------------------------------ unstack, chunk, cat, add_n
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack_matches_numpy_and_inverts_stack(axis):
    x = f32(3, 4)
    parts = d2s.unstack(x, axis)
    assert isinstance(parts, tuple) and len(parts) == x.shape[axis]
    for k, p in enumerate(parts):
        np.testing.assert_array_equal(p.numpy(), np.take(x.numpy(), k, axis=axis))
    np.testing.assert_array_equal(d2s.stack(list(parts), axis).numpy(), x.numpy())


def test_unstack_gradcheck_and_program():
    x = f64(3, 2)
    assert gradcheck(lambda a: d2s.stack([p * (k + 1) for k, p in enumerate(d2s.unstack(a, 1))]), [x])
    fn = lambda a: tuple(p * (k + 1) for k, p in enumerate(d2s.unstack(a)))  # noqa: E731
    y = f32(3, 2)
    for got, want in zip(run_program(fn, [y]), fn(y)):
        np.testing.assert_array_equal(got, want.numpy())


def test_unstack_unknown_dim_is_a_clear_error():
    with pytest.raises(ValueError, match="unstack: dim 0 .* only known when the program runs"):
        build_program(lambda a: d2s.unstack(a)[0], InputSpec([None, 3]))
    assert d2s.unstack(d2s.zeros([0, 2])) == ()


@pytest.mark.parametrize("n,chunks", [(10, 3), (9, 3), (4, 6), (1, 1), (7, 2)])
def test_chunk_follows_torch_sizes(n, chunks):
    x = d2s.arange(n)
    parts = d2s.chunk(x, chunks)
    size = -(-n // chunks)
    want = [list(range(n))[i:i + size] for i in range(0, n, size)]
    assert [p.tolist() for p in parts] == want
    assert all(p.dtype == d2s.int64 for p in parts)


def test_chunk_axis_gradcheck_and_errors():
    x = f64(2, 5)
    assert gradcheck(lambda a: d2s.concat([c * (k + 1) for k, c in enumerate(d2s.chunk(a, 2, axis=1))], 1), [x])
    with pytest.raises(ValueError, match="positive"):
        d2s.chunk(x, 0)
    with pytest.raises(ValueError, match="only known when the program runs"):
        build_program(lambda a: d2s.chunk(a, 2)[0], InputSpec([None, 3]))


def test_cat_is_concat_and_converts():
    a, b = f32(2, 3), f32(1, 3)
    same(d2s.cat([a, b]), d2s.concat([a, b]))
    same(d2s.cat((a, b), axis=0), d2s.concat([a, b], 0))

    @d2s.jit.to_static
    def fn(x, n):
        parts = []
        for i in range(n):
            parts.append(x * i)
        return d2s.cat(parts, 0)

    got = fn(a, d2s.tensor(3))
    want = fn.eager(a, d2s.tensor(3))
    same(got, want)


def test_add_n():
    xs = [f32(2, 3) for _ in range(4)]
    want = xs[0] + xs[1] + xs[2] + xs[3]
    same(d2s.add_n(xs), want)
    same(d2s.add_n(xs[:1]), xs[0])
    assert d2s.add_n(xs[:1]) is not xs[0]
    same(d2s.add_n([d2s.tensor([1, 2], dtype="int32"), d2s.tensor([3, 4], dtype="int32")]),
         d2s.tensor([4, 6], dtype="int32"))
    ws = [f64(3) for _ in range(3)]
    assert gradcheck(lambda a, b, c: d2s.add_n([a, b * 2, c * c]), ws)
    with pytest.raises(ValueError, match="at least one"):
        d2s.add_n([])
    got, = run_program(lambda a, b: d2s.add_n([a, b, a]), xs[:2], dynamic=True)
    np.testing.assert_allclose(got, (xs[0] + xs[1] + xs[0]).numpy(), rtol=1e-6)


# ------------------------------------------------------------------ identity, shape, numel
def test_identity_copies_and_passes_gradients():
    x = f32(3)
    y = d2s.identity(x)
    same(y, x)
    y[0] = 100.0
    assert x[0].item() != 100.0  # a copy, as tf.identity's result is a new tensor
    assert gradcheck(lambda a: d2s.identity(a) * a, [f64(4)])
    got, = run_program(lambda a: d2s.identity(a) + 1, [x], dynamic=True)
    np.testing.assert_allclose(got, x.numpy() + 1)


def test_shape_eager_and_in_programs():
    x = f32(3, 4)
    same(d2s.shape(x), d2s.tensor([3, 4]))
    same(d2s.shape(d2s.tensor(2.0)), d2s.tensor(np.zeros(0, dtype="int64")))
    for n in (2, 5):
        y = f32(n, 4)
        got, = run_program(lambda a: d2s.shape(a) * 2, [y], dynamic=True)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, [2 * n, 8])

    @d2s.jit.to_static
    def fn(a):
        s = d2s.shape(a)
        return s, s[0] + 1, d2s.zeros([a.shape[0]]).sum()

    for n in (1, 3):
        same(fn(f32(n, 2)), fn.eager(f32(n, 2)))


def test_numel_and_size():
    x = f32(3, 4)
    assert d2s.numel(x) == 12 and isinstance(d2s.numel(x), int)
    assert x.numel() == 12 and x.size() == (3, 4) and x.size(1) == 4
    assert d2s.numel(np.zeros((2, 5))) == 10

    @d2s.jit.to_static(input_spec=[InputSpec([None, 4])])
    def fn(a):
        return a.sum() / a.numel(), a.size(0) * 2, d2s.numel(a)

    for n in (1, 3):
        y = f32(n, 4)
        got, want = fn(y), fn.eager(y)
        np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-6)
        assert int(got[1]) == want[1] and int(got[2]) == want[2]


# ------------------------------------------------------------------ randint with tensor bounds
def test_randint_tensor_bounds_eager_and_in_programs():
    @d2s.jit.to_static
    def fn(lo, hi):
        return d2s.randint(lo, hi, size=[200])

    for lo, hi in ((0, 3), (5, 9), (-4, -1)):
        d2s.manual_seed(11)
        got = fn(d2s.tensor(lo), d2s.tensor(hi))
        d2s.manual_seed(11)
        want = d2s.randint(d2s.tensor(lo), d2s.tensor(hi), size=[200])
        same(got, want)  # the same generator and draws as eager
        assert got.numpy().min() >= lo and got.numpy().max() < hi
    assert len(fn.programs) == 1  # the bounds are program inputs, not baked-in constants
    d2s.manual_seed(3)
    a, b = fn(d2s.tensor(0), d2s.tensor(1000)), fn(d2s.tensor(0), d2s.tensor(1000))
    assert not np.array_equal(a.numpy(), b.numpy())  # a fresh draw on every call


def test_randint_tensor_bounds_dtype_and_bad_bounds():
    @d2s.jit.to_static
    def fn(hi):
        return d2s.randint(hi, size=(2, 3), dtype="int32")

    out = fn(d2s.tensor(4))
    assert out.dtype == d2s.int32 and out.shape == (2, 3)
    with pytest.raises(Exception, match="low .* must be less than high"):
        fn(d2s.tensor(0))
    with pytest.raises(ValueError, match="high"):
        d2s.randint(d2s.tensor(0), d2s.tensor(0), size=[2])


# ------------------------------------------------------------------ d2s.print
def test_d2s_print_prints_on_every_call(capsys):
    @d2s.jit.to_static
    def fn(x, n):
        d2s.print("x =", x, "n =", n)
        d2s.print("constant line", 3, sep="|")
        print("python print of a Python value")   # a print op too, in converted code (issue 27)
        if x.sum() > 0:
            d2s.print("positive")
        return x * 2

    x = d2s.tensor([1.0, 2.0])
    fn.eager(x, 3)
    eager = capsys.readouterr().out
    assert eager == ("x = [1. 2.] n = 3\nconstant line|3\npython print of a Python value\npositive\n")
    fn(x, 3)
    first = capsys.readouterr().out
    assert first == eager  # nothing printed while the program was built
    fn(x, 3)
    fn(-x, 3)
    again = capsys.readouterr().out
    # d2s.print and Python's print lines run on every call, in eager's order
    assert again == eager + "x = [-1. -2.] n = 3\nconstant line|3\npython print of a Python value\n"


def test_d2s_print_inside_tensor_loop(capsys):
    @d2s.jit.to_static
    def fn(n):
        i = 0
        while i < n:
            d2s.print("step", i)
            i += 1
        return i

    fn(d2s.tensor(2))
    capsys.readouterr()
    fn(d2s.tensor(3))
    assert capsys.readouterr().out == "step 0\nstep 1\nstep 2\n"


# ------------------------------------------------------------------ ONNX refusals
def test_onnx_refuses_print_and_random_bounds_clearly(tmp_path):
    pytest.importorskip("onnx")
    from d2s.onnx import ExportError, program_to_onnx
    prog = build_program(lambda a: (d2s.print("a", a), a * 2)[1], InputSpec([3]))
    with pytest.raises(ExportError, match="'print'.*ONNX has no print"):
        program_to_onnx(prog)
    prog = build_program(lambda n: d2s.randint(n, size=[3]), InputSpec([], "int64"))
    with pytest.raises(ExportError, match="'randint_dyn'.*random draws"):
        program_to_onnx(prog)


# ------------------------------------------------------------------ nn.ModuleDict
class _Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 2), "b": nn.Linear(3, 2)})
        self.heads["c"] = nn.Linear(3, 2)

    def forward(self, x, which):
        out = self.heads[which](x)
        for name in self.heads:
            if x.sum() > 0:
                out = out + self.heads[name](x) * 0.5
        return out


def test_module_dict_registers_and_behaves_like_a_dict():
    d2s.manual_seed(0)
    m = _Heads()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["heads.a.weight", "heads.a.bias", "heads.b.weight", "heads.b.bias",
                     "heads.c.weight", "heads.c.bias"]
    md = m.heads
    assert list(md) == ["a", "b", "c"] and md.keys() == ["a", "b", "c"] and len(md) == 3
    assert "b" in md and "z" not in md
    assert [k for k, _ in md.items()] == ["a", "b", "c"] and md.values()[0] is md["a"]
    popped = md.pop("b")
    assert isinstance(popped, nn.Linear) and list(md) == ["a", "c"]
    del md["a"]
    md.update([("x", nn.ReLU())])
    assert list(md) == ["c", "x"]
    sd = m.state_dict()
    assert set(sd) == {"heads.c.weight", "heads.c.bias"}
    md.clear()
    assert len(md) == 0 and list(m.parameters()) == []
    with pytest.raises(KeyError, match="clashes"):
        md["keys"] = nn.ReLU()
    with pytest.raises(TypeError, match="strings"):
        md[1] = nn.ReLU()
    with pytest.raises(TypeError, match="nn.Module"):
        md["y"] = 3
    with pytest.raises(NotImplementedError):
        md(1)


def test_module_dict_in_to_static_with_gradients():
    d2s.manual_seed(0)
    m = _Heads()
    static = d2s.jit.to_static(_Heads())
    static.load_state_dict(m.state_dict())
    for xs in ([[1.0, 2.0, 0.5]], [[-1.0, -2.0, 0.5]]):
        for which in ("a", "c"):
            x = d2s.tensor(xs)
            want = m(x, which)
            got = static(x, which)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
            m.zero_grad()
            static.zero_grad()
            want.sum().backward()
            got.sum().backward()
            for (n1, p1), (n2, p2) in zip(m.named_parameters(), static.named_parameters()):
                assert n1 == n2
                if p1.grad is None:
                    assert p2.grad is None or not np.any(p2.grad.numpy()), n1
                else:
                    np.testing.assert_allclose(p2.grad.numpy(), p1.grad.numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ composites through ONNX and trace
def test_composite_ops_export_to_onnx():
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from d2s.onnx import program_to_onnx

    def fn(a, b):
        rows = d2s.unstack(a, 1)
        parts = d2s.chunk(b, 2, axis=1)
        return d2s.add_n([rows[0], rows[2], parts[1].sum(axis=1)]), d2s.cat(list(parts)[::-1], 1), d2s.numel(a)

    x, y = f32(4, 3), f32(4, 3)
    prog = build_program(fn, InputSpec([None, 3]), InputSpec([None, 3]))
    model, ins, outs = program_to_onnx(prog)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (4, 2):
        x, y = f32(n, 3), f32(n, 3)
        want = Executor(prog).run(x.numpy(), y.numpy())
        got = sess.run(outs, dict(zip(ins, [x.numpy(), y.numpy()])))
        for g, w, e in zip(got, want, fn(x, y)):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6)
            np.testing.assert_allclose(w, np.asarray(e.numpy() if isinstance(e, d2s.Tensor) else e), rtol=1e-6)


def test_chunk_in_a_program():
    fn = lambda a: tuple(c * (k + 1) for k, c in enumerate(d2s.chunk(a, 3, axis=1)))  # noqa: E731
    x = f32(2, 7)
    for got, want in zip(run_program(fn, [x], dynamic=True), fn(x)):
        np.testing.assert_array_equal(got, want.numpy())


def test_randint_tensor_bounds_under_trace_are_inputs():
    def fn(lo, hi):
        return d2s.randint(lo, hi, size=[100])

    traced = d2s.jit.trace(fn, (d2s.tensor(0), d2s.tensor(2)))
    out = traced(d2s.tensor(10), d2s.tensor(12))
    assert out.numpy().min() >= 10 and out.numpy().max() < 12


def test_d2s_print_under_trace_prints_every_call(capsys):
    def fn(x):
        d2s.print("sum", x.sum())
        return x + 1

    traced = d2s.jit.trace(fn, (d2s.tensor([1.0, 2.0]),))
    capsys.readouterr()
    traced(d2s.tensor([3.0, 4.0]))
    assert capsys.readouterr().out == "sum 7.0\n"


def test_new_ops_survive_save_load_and_passes(tmp_path):
    import d2s_runtime

    @d2s.jit.to_static
    def fn(x, hi):
        y = d2s.pad(x, (1, 1), mode="reflect") + d2s.identity(x).sum()
        return y * d2s.cast(d2s.shape(x)[1], "float32"), d2s.randint(hi, size=[3])

    spec = [InputSpec([None, 3]), InputSpec([], "int64")]
    d2s.jit.save(fn, str(tmp_path / "m"), input_spec=spec)
    runner = d2s_runtime.load(str(tmp_path / "m"))
    x = f32(2, 3)
    got = runner(x.numpy(), np.asarray(4))
    want = fn.eager(x, d2s.tensor(4))
    np.testing.assert_allclose(got[0], want[0].numpy(), rtol=1e-6)
    assert got[1].shape == (3,) and got[1].min() >= 0 and got[1].max() < 4
    prog = d2s.passes.optimize(fn.get_program(*spec))
    prog.verify()
    out = Executor(prog).run(x.numpy(), np.asarray(4))
    np.testing.assert_allclose(out[0], want[0].numpy(), rtol=1e-6)


def test_backward_does_not_print_again(capsys):
    # the backward program recomputes the forward; the forward's prints belong to the call
    @d2s.jit.to_static
    def fn(x, n):
        i = 0
        while i < n:
            d2s.print("step", i)
            x = x * 2
            i += 1
        if x.sum() > 0:
            print("positive", x.sum())   # Python's print of a tensor: the same print op
        return x.sum()

    for v in (1.0, -1.0):
        x = d2s.tensor([v, 2 * v], requires_grad=True)
        y = fn(x, d2s.tensor(2))
        forward = capsys.readouterr().out
        y.backward()
        assert capsys.readouterr().out == ""
        x2 = d2s.tensor([v, 2 * v], requires_grad=True)
        fn.eager(x2, d2s.tensor(2)).backward()
        eager = capsys.readouterr().out
        assert forward.startswith("step 0\nstep 1\n") and eager.startswith("step 0\nstep 1\n")
        assert ("positive" in forward) == ("positive" in eager) == (v > 0)
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy())
