"""Memory layouts in programs (d2s/layouts.py): a reshape, flatten, view or contiguous of a
value shares its elements in a program exactly when it does eagerly and in PyTorch, which
depends on how the value is laid out (element-wise results keep their inputs' order); where the
program cannot tell, a write through it is refused at the user's line."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s.jit import InputSpec, to_static
from d2s_runtime.ops import OPS
from torch_parity import Case

R = np.random.default_rng(3)
X = R.standard_normal((2, 3))
SQ = R.standard_normal((3, 3))


# ------------------------------------------------------------------ cases against PyTorch
# Each writes through a reshape-like result of a value and returns the value: it shows the
# write exactly where the reshape was a view.
def scaled_transpose_reshaped(t, x):
    z = x.t() * 1.0
    z.reshape(-1).add_(100)
    return z


def scaled_transpose_flattened(t, x):
    z = x.t() * 2.0
    z.flatten()[0] = 7.0
    return z


def cloned_transpose_reshaped(t, x):
    z = x.t().clone()
    z.reshape(-1).add_(1)
    return z


def activated_transpose_reshaped(t, x):
    z = x.t().relu()
    z.reshape(6).mul_(0)
    return z, x * 1


def sum_of_transposes_reshaped(t, x):
    z = x.t() + x.t()
    z.reshape(-1).add_(1)
    return z


def contiguous_then_viewed(t, x):
    z = x.t().contiguous()
    z.view(-1).add_(1)
    return z


def same_shape_reshape_of_a_transpose_result(t, x):
    z = x.t().exp()
    v = z.reshape(3, 2)  # the same shape: a view of any layout
    v.mul_(0)
    return z, v


def transposed_back(t, x):
    z = (x.t() * 3).t()  # row-major again
    z.reshape(-1).sub_(1)
    return z


def matmul_of_transposes_reshaped(t, x):
    z = x.t() @ x.t().t()  # a matmul's result is row-major
    z.reshape(-1).add_(1)
    return z


def sliced_then_scaled(t, x):
    z = x[:, ::2] * 2  # a strided input, a dense result
    z.reshape(-1).add_(1)
    return z


def written_in_a_tensor_if(t, x):
    z = x.t() * 2
    if x.sum() > 0:
        z.reshape(-1).add_(1)
    else:
        z.flatten().mul_(3)
    return z


def carried_through_a_tensor_loop(t, x):
    z = x.t() * 2
    while z.abs().sum() < 100:
        z = z * 2
    z.reshape(-1).add_(1)
    return z


def written_in_a_tensor_loop_body(t, x):
    z = x.t() * 1
    while z.abs().sum() < 100:
        z.reshape(-1).add_(1)
        z = z * 2
    return z


CASES = (scaled_transpose_reshaped, scaled_transpose_flattened, cloned_transpose_reshaped,
         activated_transpose_reshaped, sum_of_transposes_reshaped, contiguous_then_viewed,
         same_shape_reshape_of_a_transpose_result, transposed_back, matmul_of_transposes_reshaped,
         sliced_then_scaled)
_STATIC_SHAPES = "dynamic dims: a layout the program cannot tell is refused (test_unknown_layouts_...)"
TORCH_CASES = [Case(f.__name__, f, X, grad=False, dynamic=_STATIC_SHAPES) for f in CASES]
TORCH_CASES += [Case(f.__name__ + suffix, f, arg, grad=False, dynamic=_STATIC_SHAPES,
                     saved="converted only (the layout model is the builder's)", onnx="converted only")
                for f in (written_in_a_tensor_if, carried_through_a_tensor_loop, written_in_a_tensor_loop_body)
                for suffix, arg in (("", X), ("_other_side", -X))]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


# ------------------------------------------------------------------ gradients through the writes
def written_copy_in_a_loss(x, w):
    z = x.t() * w
    z.reshape(-1).mul_(0)  # a copy: z keeps its values and history
    v = (x * w.t()).reshape(-1)  # row-major: a view
    v.mul_(2)
    return (z * z).sum() + (x * w.t()).sum()


def test_gradients_through_layout_dependent_writes_equal_eager():
    w = R.standard_normal((3, 2))
    for n in range(3):
        xa = R.standard_normal((2, 3))
        xe, we = d2s.tensor(xa, requires_grad=True), d2s.tensor(w, requires_grad=True)
        xs, ws = d2s.tensor(xa, requires_grad=True), d2s.tensor(w, requires_grad=True)
        le, ls = written_copy_in_a_loss(xe, we), to_static(written_copy_in_a_loss)(xs, ws)
        le.backward()
        ls.backward()
        np.testing.assert_allclose(ls.numpy(), le.numpy(), rtol=1e-12)
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(ws.grad.numpy(), we.grad.numpy(), rtol=1e-12)


def mixed_layouts(x, y):
    z = x.t() + y  # numpy lays this out row-major (PyTorch: as x.t(); see d2s/layouts.py)
    z.reshape(-1).add_(1)
    w = x.t() * y.t().t()
    w.reshape(-1).mul_(0)
    return z, w


def test_mixed_input_layouts_follow_the_kernel_as_eagerly():
    for n in range(3):
        xa, ya = R.standard_normal((2, 3)), R.standard_normal((3, 2))
        want = mixed_layouts(d2s.tensor(xa), d2s.tensor(ya))
        got = to_static(mixed_layouts)(d2s.tensor(xa), d2s.tensor(ya))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())


# ------------------------------------------------------------------ inputs laid out by the caller
def writes_through_its_reshape(x):
    x.reshape(-1)[0] = 100.0
    return x * 1


@pytest.mark.parametrize("make", [lambda: d2s.tensor(np.arange(6.0).reshape(2, 3)).t(),
                                  lambda: d2s.tensor(np.arange(12.0).reshape(3, 4))[:, ::2],
                                  lambda: d2s.tensor(np.arange(6.0).reshape(3, 2))],
                         ids=["transposed", "strided", "row_major"])
def test_an_input_is_laid_out_as_the_callers_array(make):
    sf = to_static(writes_through_its_reshape)
    a, b = make(), make()
    np.testing.assert_array_equal(sf(b).numpy(), writes_through_its_reshape(a).numpy())
    np.testing.assert_array_equal(b.numpy(), a.numpy())  # the caller's tensor written as eagerly


def test_the_callers_layout_is_part_of_the_signature():
    sf = to_static(writes_through_its_reshape)
    for k in range(2):
        for make in (lambda: d2s.tensor(np.arange(6.0).reshape(3, 2)),
                     lambda: d2s.tensor(np.arange(6.0).reshape(2, 3)).t()):
            a, b = make(), make()
            np.testing.assert_array_equal(sf(b).numpy(), writes_through_its_reshape(a).numpy())
    assert len(sf.programs) == 2


# ------------------------------------------------------------------ where the program cannot tell
def chosen_by_a_tensor_if(x):
    if x.sum() > 0:
        z = x.t() * 2
    else:
        z = x.t().contiguous() * 3
    z.reshape(-1).add_(1)
    return z


def transposed_an_unknown_number_of_times(x):
    z = x * 1
    i = 0
    while i < (x.sum() > 0).long() * 2:
        z = z.t() * 1
        i += 1
    z.reshape(-1)[0] = -1.0
    return z


def reads_a_reshape_after_its_base_changed(x):
    z = x.t().softmax(-1) * 1  # a softmax of a transpose with dynamic dims: not modelled
    v = z.reshape(-1)
    z.add_(1)
    return v * 1


@pytest.mark.parametrize("fn", [chosen_by_a_tensor_if, transposed_an_unknown_number_of_times])
def test_a_layout_that_depends_on_the_data_refuses_the_write_at_the_users_line(fn):
    with pytest.raises(RuntimeError, match="memory layout the program cannot tell") as e:
        to_static(fn)(d2s.tensor(SQ))
    assert "test_layouts.py" in str(e.value) and "reshape" in str(e.value)


def test_unknown_layouts_of_dynamic_dims_refuse_the_write_or_the_stale_read():
    sf = to_static(reads_a_reshape_after_its_base_changed, input_spec=[InputSpec([None, None], "float64")])
    with pytest.raises(RuntimeError, match="memory layout the program cannot tell"):
        sf(d2s.tensor(SQ))
    static_sf = to_static(reads_a_reshape_after_its_base_changed)  # static sizes: learnt exactly
    np.testing.assert_array_equal(static_sf(d2s.tensor(SQ)).numpy(),
                                  reads_a_reshape_after_its_base_changed(d2s.tensor(SQ)).numpy())


def asks_is_contiguous(x):
    z = x.t().softmax(-1) * 1
    return z * 2 if z.is_contiguous() else z * 3


def test_is_contiguous_of_an_unknown_layout_raises_and_of_a_known_one_answers():
    with pytest.raises(RuntimeError, match="is_contiguous"):
        to_static(asks_is_contiguous, input_spec=[InputSpec([None, None], "float64")])(d2s.tensor(SQ))
    np.testing.assert_array_equal(to_static(asks_is_contiguous)(d2s.tensor(SQ)).numpy(),
                                  asks_is_contiguous(d2s.tensor(SQ)).numpy())


def views_a_transposed_result(x):
    return (x.t() + 1).view(-1)


def test_view_of_a_layout_it_cannot_view_raises_as_pytorch():
    for fn in (views_a_transposed_result, to_static(views_a_transposed_result)):
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            fn(d2s.tensor(X))
    assert views_a_transposed_result(d2s.tensor(X).t()).shape == (6,)  # (the transpose of a transpose)


# ------------------------------------------------------------------ the model against the kernels
@pytest.mark.parametrize("rows", [5, 300])
def test_element_wise_kernels_keep_their_inputs_order_as_the_model_says(rows):
    """The model of an element-wise result on dims it shrinks (dynamic dims) is the order the
    kernel gives on full-size arrays (small, and large enough for kernels working in chunks):
    checked for every element-wise op of the registry."""
    x = np.ascontiguousarray(R.uniform(0.5, 2.0, (rows, 200))).T  # (200, rows), column-major
    with np.errstate(all="ignore"):
        assert _check_element_wise_models(x, rows) > 20


def _check_element_wise_models(x, rows):
    """How many element-wise ops' models were checked (asserting each)."""
    from d2s import layouts
    from d2s.static.builder import ProgramBuilder
    checked = 0
    for name, opdef in OPS.items():
        if not opdef.elementwise or opdef.random or opdef.effect or opdef.n_out != 1:
            continue
        try:
            want = opdef.kernel(np, x) if name not in ("where",) else None
        except Exception:  # noqa: BLE001 - an op of another arity
            try:
                want = opdef.kernel(np, x, x)
            except Exception:  # noqa: BLE001
                continue
        if want is None or not isinstance(want, np.ndarray) or want.shape != x.shape:
            continue
        arity = 1 if _takes_one(opdef, x) else 2
        with ProgramBuilder() as b:
            s = b.add_input([None, rows], str(x.dtype), layout=layouts.input_layout(x, (None, rows)))
            outs = layouts.result_layouts(opdef, [s] * arity, {}, [opdef.infer(*[s._var.type] * arity)],
                                          lambda t: b.layouts.get(t._var.name))
        got_c = outs is None or layouts.is_row_major(outs[0])
        assert got_c == bool(want.flags.c_contiguous), name
        checked += 1
    return checked


def _takes_one(opdef, x):
    try:
        opdef.kernel(np, x)
        return True
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.parametrize("name", sorted(__import__("d2s.layouts").layouts.ROW_MAJOR_RESULTS))
def test_ops_taken_for_row_major_give_row_major_results(name):
    a = np.ones((4, 3, 5)).transpose(1, 0, 2)  # (3, 4, 5), batch dim not leading
    b = np.ones((5, 6)).T.copy().T  # (5, 6), column-major
    for x, y in ((a, b), (a[:, ::2], b), (np.ones((5, 3)).T, np.ones((2, 5, 4))[:, :, ::2])):
        try:
            out = OPS[name].kernel(np, x, y)
        except TypeError:  # a unary op
            out = OPS[name].kernel(np, x)
        assert out.flags.c_contiguous


def reshaped_to_a_dynamic_dim_and_written(x):
    b = x.shape[0]
    y = x * 1
    y.reshape(b, -1)[0] = 0.0  # row-major: a view, whose dims are known only when the program runs
    return y, y.reshape(b, 2, -1) * 1


def heads_of_a_split(x):
    b, t, c = x.size()
    q, k, v = (x * 1).split(4, dim=2)
    return q.view(b, t, 2, 2).transpose(1, 2) * 1  # a slice viewed with its last dim split, as PyTorch allows


@pytest.mark.parametrize("fn, shape", [(reshaped_to_a_dynamic_dim_and_written, (3, 4)),
                                       (heads_of_a_split, (2, 3, 12))], ids=["written", "split_heads"])
def test_reshapes_to_dynamic_dims_share_as_eagerly(fn, shape):
    sf = to_static(fn, input_spec=[InputSpec([None] * (len(shape) - 1) + [shape[-1]], "float64")])
    for n in (1, 3):
        a = R.standard_normal((n,) + shape[1:])
        want, got = fn(d2s.tensor(a)), sf(d2s.tensor(a))
        for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def scanned_carry_written(t, x):
    z = x.t() * 1

    def body(c, r):
        c2 = c * r.sum()
        c2.reshape(-1).add_(1)  # the carry keeps x.t()'s layout on every step: a copy
        return c2, c2.sum()

    z, ys = t.scan(body, z, x * 0.5) if hasattr(t, "scan") else _torch_scan(body, z, x * 0.5)
    z.reshape(-1).add_(1)
    return z, ys


def _torch_scan(body, c, xs):
    ys = []
    for r in xs:
        c, y = body(c, r)
        ys.append(y)
    return c, __import__("torch").stack(ys)


TORCH_CASES += [Case("scanned_carry_written" + suffix, scanned_carry_written, arg, grad=False,
                     dynamic=_STATIC_SHAPES, saved="converted only", onnx="converted only")
                for suffix, arg in (("", X), ("_other_side", -X))]
