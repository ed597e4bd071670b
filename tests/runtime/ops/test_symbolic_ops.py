"""Shape rules of every op: ``build_program`` on InputSpecs gives output TensorTypes equal to
the eager result's (unknown dims stay ``None``), the program runs to the eager values, and
gradient rules build static backward ops too."""
import numpy as np
import pytest

import d2s
from d2s.ops.nn import conv2d, dropout, embedding, max_pool2d, scatter_add
from d2s.static import InputSpec, build_program
from d2s_runtime.executor import Executor

N = 3  # the size an unknown (None) dim takes when the program runs
RNG = np.random.default_rng(1)
IDX = np.array([[0, 2, 1], [1, 1, 0], [2, 0, 0]])


def _data(shape, dtype):
    shape = tuple(N if d is None else d for d in shape)
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if dtype.startswith("int"):
        return RNG.integers(1, 4, size=shape).astype(dtype)
    return RNG.uniform(0.5, 2.0, size=shape).astype(dtype)


def S(*shape, dtype="float32"):
    return (shape, dtype)


# name, function, input specs (None = unknown), expected output shapes of the program
CASES = [
    ("add", lambda a, b: a + b, [S(None, 4), S(4)], [(None, 4)]),
    ("add_scalar", lambda a: a + 1, [S(None, 4)], [(None, 4)]),
    ("radd_int", lambda a: 2 * a, [S(None, 2, dtype="int32")], [(None, 2)]),
    ("sub_promote", lambda a, b: a - b, [S(None, 1, dtype="int32"), S(1, 5, dtype="float64")], [(None, 5)]),
    ("mul_bcast", lambda a, b: a * b, [S(None, 1, 3), S(2, 1)], [(None, 2, 3)]),
    ("div_int", lambda a, b: a / b, [S(None, dtype="int64"), S(None, dtype="int64")], [(None,)]),
    ("floordiv_mod", lambda a: (a // 2, a % 3), [S(None, 3, dtype="int64")], [(None, 3), (None, 3)]),
    ("pow", lambda a: a ** 2, [S(None, 3)], [(None, 3)]),
    ("unary", lambda a: (-a, d2s.exp(a), d2s.log(a), d2s.sqrt(a), d2s.sin(a), d2s.cos(a), d2s.tanh(a),
                         d2s.sigmoid(a), d2s.relu(a), d2s.abs(a)), [S(None, 2)], [(None, 2)] * 10),
    ("unary_int", lambda a: (d2s.exp(a), d2s.sigmoid(a), -a, d2s.abs(a)), [S(None, dtype="int32")], [(None,)] * 4),
    ("unary_bool", lambda a: (d2s.exp(a), ~a), [S(2, None, dtype="bool")], [(2, None)] * 2),
    ("maxmin", lambda a, b: (d2s.maximum(a, b), d2s.minimum(a, 0.5)), [S(None, 3), S(3)], [(None, 3)] * 2),
    ("compare", lambda a, b: (a < b, a == 1, a >= b), [S(None, 3), S(None, 3)], [(None, 3)] * 3),
    ("logic", lambda a, b: (a & b, a | b, a ^ b, ~a), [S(None, dtype="bool"), S(None, dtype="bool")], [(None,)] * 4),
    ("where", lambda c, a: d2s.where(c, a, 0.0), [S(None, 1, dtype="bool"), S(4)], [(None, 4)]),
    ("clip", lambda a: d2s.clip(a, 0.7, 1.5), [S(None, 3)], [(None, 3)]),
    ("matmul", lambda a, b: a @ b, [S(None, 4), S(4, 5)], [(None, 5)]),
    ("matmul_batch", lambda a, b: d2s.matmul(a, b), [S(None, 2, 4), S(4,)], [(None, 2)]),
    ("matmul_vec", lambda a, b: a @ b, [S(4,), S(None, 4, 2)], [(None, 2)]),
    ("sum", lambda a: (d2s.sum(a), d2s.sum(a, axis=1), d2s.sum(a, axis=0, keepdims=True)), [S(None, 4)],
     [(), (None,), (1, 4)]),
    ("sum_int", lambda a: d2s.sum(a, axis=1), [S(None, 4, dtype="int32")], [(None,)]),
    ("sum_bool", lambda a: d2s.sum(a), [S(None, 4, dtype="bool")], [()]),
    ("mean_max_min_prod", lambda a: (d2s.mean(a, 0), d2s.amax(a, -1), d2s.amin(a, (0, 1)), d2s.prod(a, 1, True)),
     [S(None, 4, 2)], [(4, 2), (None, 4), (2,), (None, 1, 2)]),
    ("mean_int", lambda a: d2s.mean(a, axis=0, dtype=d2s.float32), [S(None, 2, dtype="int64")], [(2,)]),
    ("argmax", lambda a: (d2s.argmax(a, axis=1), d2s.argmin(a), d2s.argmax(a, 0, keepdims=True)), [S(None, 4)],
     [(None,), (), (1, 4)]),
    ("reshape", lambda a: d2s.reshape(a, [-1, 2]), [S(None, 4)], [(None, 2)]),
    ("reshape_known", lambda a: a.reshape(2, -1), [S(3, 4)], [(2, 6)]),
    ("transpose", lambda a: (d2s.transpose(a), a.T, d2s.transpose(a, 0, 2), d2s.permute(a, 1, 2, 0)),
     [S(None, 2, 3)], [(3, 2, None), (3, 2, None), (3, 2, None), (2, 3, None)]),
    ("squeeze_unsqueeze", lambda a: (d2s.squeeze(a, 1), d2s.unsqueeze(a, 0), d2s.squeeze(a)), [S(None, 1, 3)],
     [(None, 3), (1, None, 1, 3), (None, 3)]),
    ("broadcast_to", lambda a: d2s.broadcast_to(a, (2, 3, 4)), [S(3, 1)], [(2, 3, 4)]),
    ("flatten", lambda a: (d2s.flatten(a, 1), a.flatten()), [S(None, 2, 3)], [(None, 6), (None,)]),
    ("concat", lambda a, b: d2s.concat([a, b], axis=0), [S(None, 3), S(2, 3)], [(None, 3)]),
    ("concat_axis1", lambda a, b: d2s.concat([a, b], axis=1), [S(None, 3), S(None, 2)], [(None, 5)]),
    ("stack", lambda a, b: d2s.stack([a, b], axis=1), [S(None, 3), S(None, 3)], [(None, 2, 3)]),
    ("split", lambda a: d2s.split(a, [1, 2], axis=1), [S(None, 3)], [(None, 1), (None, 2)]),
    ("cast", lambda a: (d2s.cast(a, "int32"), a.cast(d2s.bool), a.cast("float64")), [S(None, 2)], [(None, 2)] * 3),
    ("getitem", lambda a: (a[0], a[:, 1:], a[..., None], a[:, 0]), [S(None, 4)], [(4,), (None, 3), (None, 4, 1), (None,)]),
    ("getitem_known", lambda a: a[1:3, ::2], [S(4, 5)], [(2, 3)]),
    ("getitem_mask", lambda a: a[a > 1.0], [S(None, 4)], [(None,)]),
    ("getitem_index", lambda a, i: a[i], [S(5, 2), S(None, dtype="int64")], [(None, 2)]),
    ("softmax", lambda a: (d2s.softmax(a, 1), d2s.log_softmax(a, 0)), [S(None, 4)], [(None, 4)] * 2),
    ("softmax_int", lambda a: d2s.softmax(a), [S(None, 4, dtype="int32")], [(None, 4)]),
    ("logsumexp", lambda a: (d2s.logsumexp(a), d2s.logsumexp(a, 1), d2s.logsumexp(a, 0, keepdims=True)),
     [S(None, 4)], [(), (None,), (1, 4)]),
    ("cumsum", lambda a, b: (d2s.cumsum(a, 1), d2s.cumsum(b, 0)), [S(None, 4), S(None, dtype="bool")],
     [(None, 4), (None,)]),
    ("gather", lambda a, i: d2s.gather(a, 1, i), [S(None, 4), S(None, 2, dtype="int64")], [(None, 2)]),
    ("scatter_add", lambda a, i, s: scatter_add(a, 1, i, s), [S(None, 4), S(None, 3, dtype="int64"), S(None, 3)],
     [(None, 4)]),
    ("one_hot", lambda i: d2s.one_hot(i, 5), [S(None, 2, dtype="int64")], [(None, 2, 5)]),
    ("conv2d", lambda x, w: conv2d(x, w, stride=2, padding=1), [S(None, 3, 8, 7), S(4, 3, 3, 3)], [(None, 4, 4, 4)]),
    ("conv2d_bias", lambda x, w, b: conv2d(x, w, b), [S(None, 2, None, 5), S(3, 2, 2, 2), S(3)], [(None, 3, None, 4)]),
    ("max_pool2d", lambda x: (max_pool2d(x, 2), max_pool2d(x, 3, 1, 1)), [S(None, 2, 6, 5)],
     [(None, 2, 3, 2), (None, 2, 6, 5)]),
    ("embedding", lambda i, w: embedding(i, w), [S(None, 2, dtype="int64"), S(3, 4)], [(None, 2, 4)]),
    ("like", lambda a: (d2s.zeros_like(a), d2s.ones_like(a, dtype="int32"), d2s.full_like(a, 2.5)), [S(None, 3)],
     [(None, 3)] * 3),
    ("creation", lambda a: (a, d2s.zeros(2, 3), d2s.arange(4), d2s.eye(2, 3), d2s.linspace(0, 1, 3),
                            d2s.full((2,), 7), d2s.ones(2, dtype="bool")), [S(None)],
     [(None,), (2, 3), (4,), (2, 3), (3,), (2,), (2,)]),
]


def _check_types(prog, outs, expected):
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    types = [prog.var(n).type for n in prog.outputs]
    assert len(types) == len(outs) == len(expected)
    for t, e, want in zip(types, outs, expected):
        assert t.dtype == str(e.dtype), (t, e.dtype)
        assert t.shape == tuple(want), (t, want)
        assert len(t.shape) == e.ndim and all(s is None or s == d for s, d in zip(t.shape, e.shape)), (t, e.shape)


def _inputs(specs):
    arrays = [_data(shape, dtype) for shape, dtype in specs]
    for k, (shape, dtype) in enumerate(specs):
        if dtype == "int64":  # valid indices for gather/embedding/getitem
            arrays[k] = IDX[:arrays[k].shape[0], :arrays[k].shape[1]] if arrays[k].ndim == 2 else IDX[0, :arrays[k].shape[0]]
    return arrays


@pytest.mark.parametrize("name,fn,specs,expected", CASES, ids=[c[0] for c in CASES])
def test_shape_rule_matches_eager(name, fn, specs, expected):
    arrays = _inputs(specs)
    eager = fn(*[d2s.tensor(a) for a in arrays])
    prog = build_program(fn, *[InputSpec(shape, dtype) for shape, dtype in specs])
    prog.verify()
    _check_types(prog, eager, expected)
    # the same program with every dim known gives exactly the eager shapes (a mask's count
    # of selected elements stays unknown)
    known = build_program(fn, *[InputSpec(a.shape, str(a.dtype)) for a in arrays])
    eager_shapes = [e.shape for e in (eager if isinstance(eager, (tuple, list)) else [eager])]
    _check_types(known, eager, [(None,)] if name == "getitem_mask" else eager_shapes)
    # and running it gives the eager values
    got = Executor(prog).run(*arrays)
    for g, e in zip(got, eager if isinstance(eager, (tuple, list)) else [eager]):
        assert np.asarray(g).dtype == e.numpy().dtype
        np.testing.assert_allclose(np.asarray(g), e.numpy(), rtol=1e-5, atol=1e-6)


GRAD_CASES = [
    ("softmax", lambda x: d2s.sum(d2s.softmax(x, 1) * d2s.tensor(np.arange(4.0))), (None, 4)),
    ("log_softmax", lambda x: d2s.sum(d2s.log_softmax(x, 0) ** 2), (None, 4)),
    ("logsumexp", lambda x: d2s.sum(d2s.logsumexp(x, 1)), (None, 4)),
    ("cumsum", lambda x: d2s.sum(d2s.cumsum(x, 1) ** 2), (None, 4)),
    ("gather", lambda x: d2s.sum(d2s.gather(x, 1, IDX[:, :2]) ** 2), (3, 4)),
    ("conv2d", lambda x: d2s.sum(conv2d(x, np.ones((2, 2, 3, 3), np.float32), padding=1) ** 2), (None, 2, 5, 5)),
    ("max_pool2d", lambda x: d2s.sum(max_pool2d(x, 2) ** 2), (None, 2, 4, 4)),
    ("concat_unknown", lambda x: d2s.sum(d2s.concat([x, x * x, x[:1]], axis=0) ** 2), (None, 4)),
    ("matmul_mean", lambda x: d2s.mean(x @ d2s.tensor(np.ones((4, 2), np.float32))), (None, 4)),
]


@pytest.mark.parametrize("name,loss,shape", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_static_backward_matches_eager(name, loss, shape):
    """Gradient rules run on symbolic tensors: d2s.grad inside build_program gives a program
    whose gradient output equals the eager gradient."""
    x_np = _data(shape, "float32")

    def fn(x):
        x.requires_grad = True
        (g,) = d2s.grad(loss(x), [x])
        return g

    prog = build_program(fn, InputSpec(shape, "float32"))
    prog.verify()
    assert prog.var(prog.outputs[0]).type.shape == tuple(shape)
    x = d2s.tensor(x_np, requires_grad=True)
    loss(x).backward()
    (got,) = Executor(prog).run(x_np)
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_shape_errors_name_op_and_shapes():
    with pytest.raises(ValueError, match=r"add: shapes \(\?, 4\) and \(3,\) cannot be broadcast"):
        build_program(lambda a, b: a + b, InputSpec([None, 4]), InputSpec([3]))
    with pytest.raises(ValueError, match=r"matmul: shapes \(\?, 4\) and \(3, 2\) do not align"):
        build_program(lambda a, b: a @ b, InputSpec([None, 4]), InputSpec([3, 2]))
    with pytest.raises(ValueError, match=r"conv2d: input \(\?, 3, 8, 8\) has 3 channels"):
        build_program(lambda x, w: conv2d(x, w), InputSpec([None, 3, 8, 8]), InputSpec([4, 2, 3, 3]))
    with pytest.raises(ValueError, match="gather: index needs as many dims"):
        build_program(lambda x, i: d2s.gather(x, 0, i), InputSpec([None, 4]), InputSpec([2], "int64"))
    with pytest.raises(ValueError, match="one_hot: needs an integer"):
        build_program(lambda i: d2s.one_hot(i, 3), InputSpec([None]))
    with pytest.raises(ValueError, match="one_hot: num_classes must be given"):
        build_program(lambda i: d2s.one_hot(i), InputSpec([None], "int64"))


def test_dropout_in_a_program_draws_like_eager():
    """dropout_mask is a random op: in a program it draws from the same seeded generator."""
    x = np.ones((4, 6), np.float32)
    prog = build_program(lambda t: dropout(t, 0.5), InputSpec([None, 6]))
    prog.verify()
    assert prog.var(prog.outputs[0]).type.shape == (None, 6)
    assert any(op.type == "dropout_mask" for op in prog.global_block().ops)
    d2s.manual_seed(11)
    eager = dropout(d2s.tensor(x), 0.5).numpy()
    d2s.manual_seed(11)
    (got,) = Executor(prog).run(x)
    np.testing.assert_array_equal(got, eager)
    assert set(np.unique(got)) <= {0.0, 2.0}


def test_like_ops_ignore_the_values_of_their_input():
    """zeros_like/ones_like of a tensor holding inf or nan stay exact in programs too."""
    prog = build_program(lambda a: (d2s.zeros_like(a), d2s.ones_like(a)), InputSpec([None]))
    zeros, ones = Executor(prog).run(np.array([np.inf, -np.inf, np.nan, 1.0], np.float32))
    np.testing.assert_array_equal(zeros, np.zeros(4, np.float32))
    np.testing.assert_array_equal(ones, np.ones(4, np.float32))
