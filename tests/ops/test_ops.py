"""Every tensor function of API §1: values against numpy (all dtypes, promotion, scalars and
numpy inputs) and gradients against float64 finite differences (``d2s.autograd.gradcheck``)."""
import numpy as np
import pytest

import d2s

# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py)
pytestmark = pytest.mark.usefixtures("device")
from references import conv2d_ref, max_pool2d_ref
from d2s.autograd import GradcheckError, gradcheck
from d2s.ops.nn import conv2d, dropout, embedding, max_pool2d, scatter_add

RNG = np.random.default_rng(0)


def rnd(*shape, dtype=np.float64, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def pos(*shape):
    return rnd(*shape, lo=0.5, hi=2.0)


def d2s_dtype(*dtypes, floating=False):
    """d2s promotion (see d2s_runtime.dtypes.result_type): NumPy's, except that integers and
    bools meeting floats give the float dtype present, and float-valued ops give float32."""
    names = [np.dtype(d).name for d in dtypes]
    floats = [d for d in names if d.startswith("float")]
    out = ("float64" if "float64" in floats else "float32") if floats else np.result_type(*names).name
    return ("float32" if not out.startswith("float") else out) if floating else out


def check(out, ref, rtol=1e-5, atol=1e-6):
    """out (a d2s tensor) equals numpy's ref in value, shape and dtype."""
    ref = np.asarray(ref)
    assert isinstance(out, d2s.Tensor)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    assert out.dtype == ref.dtype.name, (out.dtype, ref.dtype)
    np.testing.assert_allclose(out.numpy(), ref, rtol=rtol, atol=atol)


# ------------------------------------------------------------------ values: element-wise
UNARY = [
    ("neg", np.negative), ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sin", np.sin),
    ("cos", np.cos), ("tanh", np.tanh), ("abs", np.abs),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("relu", lambda x: np.maximum(x, 0).astype(x.dtype)),
]


@pytest.mark.parametrize("name,ref", UNARY)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_float_values(name, ref, dtype):
    x = pos(3, 4).astype(dtype) if name in ("log", "sqrt") else rnd(3, 4, dtype=dtype)
    check(getattr(d2s, name)(d2s.tensor(x)), ref(x), rtol=1e-5)
    check(getattr(d2s.tensor(x), name)(), ref(x), rtol=1e-5)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_unary_float_ops_on_ints_and_bools_give_float32(name, dtype):
    x = np.array([[1, 2], [3, 1]]).astype(dtype)
    ref = dict(UNARY)[name](x.astype(np.float32))
    check(getattr(d2s, name)(d2s.tensor(x)), ref)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_preserving_unary(dtype):
    x = np.array([[-3, 2], [0, -1]], dtype=dtype)
    check(d2s.neg(d2s.tensor(x)), -x)
    check(d2s.abs(d2s.tensor(x)), np.abs(x))
    check(d2s.relu(d2s.tensor(x)), np.maximum(x, 0).astype(dtype))
    check(-d2s.tensor(x), -x)


BINARY = [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.true_divide),
    ("maximum", np.maximum), ("minimum", np.minimum), ("pow", np.power),
]


@pytest.mark.parametrize("name,ref", BINARY)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (2, 3))])
def test_binary_values_broadcast(name, ref, shapes):
    a, b = pos(*shapes[0]), pos(*shapes[1])
    check(getattr(d2s, name)(d2s.tensor(a), d2s.tensor(b)), ref(a, b))


@pytest.mark.parametrize("da,db", [("float32", "float64"), ("int32", "int64"), ("int64", "float32"),
                                   ("bool", "int32"), ("int32", "float32"), ("bool", "float64")])
@pytest.mark.parametrize("name,ref", [("add", np.add), ("mul", np.multiply), ("sub", np.subtract),
                                      ("div", np.true_divide), ("maximum", np.maximum)])
def test_binary_dtype_promotion(name, ref, da, db):
    a = np.array([[1, 0, 3]]).astype(da)
    b = np.array([[2], [1]]).astype(db)
    if name == "sub" and "bool" in (da, db):  # PyTorch refuses `-` with any bool operand
        with pytest.raises((TypeError, ValueError), match="bool"):
            d2s.sub(d2s.tensor(a), d2s.tensor(b))
        return
    target = d2s_dtype(da, db, floating=name == "div")
    check(getattr(d2s, name)(d2s.tensor(a), d2s.tensor(b)), ref(a.astype(target), b.astype(target)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_python_scalars_are_weak(dtype):
    """A Python scalar does not widen a tensor's dtype (NumPy 2 / PyTorch rule)."""
    x = np.array([1, 2, 3], dtype=dtype)
    t = d2s.tensor(x)
    check(t + 2, x + 2)
    check(2 * t, 2 * x)
    check(t - 1, x - 1)
    check(1 - t, 1 - x)
    f = x if dtype.startswith("float") else x.astype(np.float32)
    check(t * 2.5, f * 2.5)  # a Python float makes int tensors float32, as in PyTorch
    check(t ** 2, x ** 2)
    check(t / 2, f / 2)


def test_functions_accept_python_scalars_lists_and_numpy():
    check(d2s.exp(1.0), np.exp(np.float32(1.0)))  # a Python float is float32
    check(d2s.add(1, 2), np.int64(3))
    check(d2s.sqrt([1.0, 4.0]), np.array([1.0, 2.0], dtype=np.float32))
    a = rnd(2, 3)
    check(d2s.mul(a, 2.0), a * 2.0)  # a numpy array keeps float64
    check(d2s.matmul(a, a.T), a @ a.T)
    check(d2s.sum(a, axis=1), a.sum(1))
    check(d2s.reshape(a, [3, 2]), a.reshape(3, 2))
    check(d2s.transpose(a), a.T)
    check(d2s.flatten(a), a.reshape(-1))
    check(d2s.where(a > 0, a, 0.0), np.where(a > 0, a, 0.0))
    check(d2s.softmax(a, axis=0), np.exp(a) / np.exp(a).sum(0))
    check(d2s.concat([a, a], axis=0), np.concatenate([a, a]))
    check(d2s.stack([a, np.zeros((2, 3))], axis=1), np.stack([a, np.zeros((2, 3))], axis=1))
    check(d2s.transpose([[1, 2, 3]], 0, 1), np.array([[1], [2], [3]]))
    check(d2s.split([1.0, 2.0, 3.0], 2)[1], np.array([3.0], dtype=np.float32))
    check(d2s.clip(a, -0.5, np.full(3, 0.2)), np.clip(a, -0.5, 0.2))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_floordiv_mod(dtype):
    a = np.array([[7, -7, 5]], dtype=dtype)
    b = np.array([[2], [3]], dtype=dtype)
    check(d2s.tensor(a) // d2s.tensor(b), a // b)
    check(d2s.tensor(a) % d2s.tensor(b), a % b)
    check(d2s.tensor(a) % 4, a % 4)


def test_comparisons_and_logic():
    a, b = np.array([1, 2, 3, 4]), np.array([4, 2, 1, 4])
    ta, tb = d2s.tensor(a), d2s.tensor(b)
    for out, ref in [(ta < tb, a < b), (ta <= tb, a <= b), (ta > tb, a > b), (ta >= tb, a >= b),
                     (ta == tb, a == b), (ta != tb, a != b), (ta > 2, a > 2), (ta == 2.0, a == 2.0)]:
        check(out, ref)
    p, q = a > 1, b > 1
    tp, tq = d2s.tensor(p), d2s.tensor(q)
    check(tp & tq, p & q)
    check(tp | tq, p | q)
    check(tp ^ tq, p ^ q)
    check(~tp, ~p)
    check(tp & True, p & True)
    check(d2s.logical_and(tp, tq), p & q)
    check(d2s.logical_not(tp), ~p)


def test_bitwise_on_floats_is_a_clear_error():
    with pytest.raises(ValueError, match="bitwise_and"):
        d2s.tensor([1.0]) & d2s.tensor([2.0])


def test_where_clip_pow_values():
    c = np.array([[True, False, True]])
    a, b = rnd(2, 3), rnd(2, 1)
    check(d2s.where(d2s.tensor(c), d2s.tensor(a), d2s.tensor(b)), np.where(c, a, b))
    check(d2s.where(d2s.tensor(c), 1, 0), np.where(c, 1, 0))
    check(d2s.clip(d2s.tensor(a), -0.5, 0.5), np.clip(a, -0.5, 0.5))
    check(d2s.clip(d2s.tensor(a), min=0.0), np.clip(a, 0.0, None))
    check(d2s.tensor(a).clip(max=0.1), np.clip(a, None, 0.1))
    i = np.array([1, 2, 3])
    check(d2s.clip(d2s.tensor(i), 2, 2), np.clip(i, 2, 2))
    check(d2s.pow(d2s.tensor(i), 2), i ** 2)
    check(2 ** d2s.tensor(i), 2 ** i)


# ------------------------------------------------------------------ values: reductions
# max/min with a dim give (values, indices) as in PyTorch (tests/ops/test_reduce.py); amax/amin are numpy's max/min
REDUCE = [("sum", np.sum), ("mean", np.mean), ("amax", np.max), ("amin", np.min), ("prod", np.prod)]


@pytest.mark.parametrize("name,ref", REDUCE)
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, ref, axis, keepdims):
    x = rnd(2, 3, 4)
    check(getattr(d2s, name)(d2s.tensor(x), axis=axis, keepdims=keepdims), ref(x, axis=axis, keepdims=keepdims))
    check(getattr(d2s.tensor(x), name)(axis=axis, keepdims=keepdims), ref(x, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_reduction_dtypes(dtype):
    x = np.array([[1, 0, 3], [2, 2, 1]]).astype(dtype)
    t = d2s.tensor(x)
    check(d2s.sum(t), np.sum(x, dtype=np.int64))
    check(d2s.sum(t, axis=0), np.sum(x, axis=0, dtype=np.int64))
    check(d2s.mean(t, axis=1, dtype="float32"), np.mean(x, axis=1).astype(np.float32))
    check(d2s.amax(t, axis=1), np.max(x, axis=1))
    check(d2s.min(t), np.min(x))
    check(d2s.prod(t, axis=0), np.prod(x, axis=0, dtype=np.int64))


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin(axis, keepdims):
    x = rnd(3, 5)
    check(d2s.argmax(d2s.tensor(x), axis=axis, keepdims=keepdims), np.argmax(x, axis=axis, keepdims=keepdims))
    check(d2s.tensor(x).argmin(axis=axis, keepdims=keepdims), np.argmin(x, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_values(axis, keepdims):
    x = rnd(3, 4)
    ref = np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))
    check(d2s.logsumexp(d2s.tensor(x), axis=axis, keepdims=keepdims), ref)


# ------------------------------------------------------------------ values: softmax family, stable
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_log_softmax_values(axis, dtype):
    x = rnd(3, 4, dtype=dtype)
    e = np.exp(x - x.max(axis, keepdims=True))
    sm = e / e.sum(axis, keepdims=True)
    check(d2s.softmax(d2s.tensor(x), axis), sm.astype(dtype))
    check(d2s.tensor(x).log_softmax(axis), np.log(sm).astype(dtype))


def test_softmax_family_is_stable_for_huge_inputs():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]], dtype=np.float32)
    shifted = x - x.max(1, keepdims=True)
    sm = np.exp(shifted) / np.exp(shifted).sum(1, keepdims=True)
    out = d2s.softmax(d2s.tensor(x), axis=1).numpy()
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, sm, rtol=1e-5)
    np.testing.assert_allclose(d2s.log_softmax(d2s.tensor(x), 1).numpy(), np.log(sm), rtol=1e-5)
    lse = d2s.logsumexp(d2s.tensor(x), axis=1).numpy()
    np.testing.assert_allclose(lse, x.max(1) + np.log(np.exp(shifted).sum(1)), rtol=1e-6)
    assert d2s.logsumexp(d2s.tensor([-np.inf, -np.inf])).item() == -np.inf


def test_softmax_family_on_ints_computes_in_float32():
    x = np.array([1, 2, 3])
    e = np.exp(x.astype(np.float32) - np.float32(3.0))
    check(d2s.softmax(d2s.tensor(x)), e / e.sum())
    check(d2s.log_softmax(d2s.tensor(x)), np.log(e / e.sum()))
    check(d2s.logsumexp(d2s.tensor(x)), np.log(np.exp(x.astype(np.float32)).sum()))


# ------------------------------------------------------------------ values: cumsum, gather, one_hot
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_values(dtype, axis):
    x = (rnd(3, 4) > 0).astype(dtype) if dtype == "bool" else (rnd(3, 4) * 3).astype(dtype)
    ref = np.cumsum(x, axis=axis, dtype=np.int64 if dtype in ("bool", "int32") else None)
    check(d2s.cumsum(d2s.tensor(x), axis), ref)
    check(d2s.tensor(x).cumsum(axis), ref)


@pytest.mark.parametrize("axis", [0, 1])
def test_gather_matches_take_along_axis(axis):
    x = rnd(3, 4)
    idx = RNG.integers(0, x.shape[axis], size=(5, 4) if axis == 0 else (3, 6))
    check(d2s.gather(d2s.tensor(x), axis, d2s.tensor(idx)), np.take_along_axis(x, idx, axis))
    check(d2s.tensor(x).gather(axis, idx), np.take_along_axis(x, idx, axis))


def test_gather_reads_a_corner_like_torch():
    x = np.arange(12).reshape(3, 4)
    idx = np.array([[2, 0], [1, 1]])
    check(d2s.gather(x, 1, idx), np.take_along_axis(x[:2, :], idx, 1))


def test_scatter_add_accumulates_repeats():
    base = np.zeros((2, 4))
    idx = np.array([[1, 1, 3], [0, 2, 0]])
    src = np.arange(6.0).reshape(2, 3)
    ref = base.copy()
    for i in range(2):
        for j in range(3):
            ref[i, idx[i, j]] += src[i, j]
    check(scatter_add(base, 1, idx, src), ref)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_one_hot(dtype):
    x = np.array([[0, 2], [1, 3]], dtype=dtype)
    check(d2s.one_hot(d2s.tensor(x), 5), np.eye(5, dtype=np.int64)[x])
    check(d2s.one_hot(x), np.eye(4, dtype=np.int64)[x])
    with pytest.raises(ValueError, match="one_hot"):
        d2s.one_hot(d2s.tensor([0, 7]), 5)
    with pytest.raises(ValueError, match="one_hot"):
        d2s.one_hot(d2s.tensor([0.0]), 3)


# ------------------------------------------------------------------ values: linalg and shapes
@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul_values(sa, sb):
    a, b = rnd(*sa), rnd(*sb)
    check(d2s.matmul(d2s.tensor(a), d2s.tensor(b)), a @ b)
    check(d2s.tensor(a) @ d2s.tensor(b), a.astype(np.float32) @ b)


def test_matmul_dtypes():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.ones((3, 2), dtype=np.float32)
    check(d2s.tensor(a) @ d2s.tensor(b), a.astype(np.float32) @ b)
    check(d2s.tensor(a) @ d2s.tensor(a.T), a @ a.T)


def test_shape_functions():
    x = rnd(2, 3, 4)
    t = d2s.tensor(x)
    check(d2s.reshape(t, [4, -1]), x.reshape(4, -1))
    check(t.reshape(6, 4), x.reshape(6, 4))
    check(d2s.transpose(t), x.transpose())
    check(d2s.transpose(t, 0, 2), x.swapaxes(0, 2))
    check(d2s.permute(t, 2, 0, 1), x.transpose(2, 0, 1))
    check(t.permute([1, 2, 0]), x.transpose(1, 2, 0))
    check(t.T, x.T)
    check(d2s.unsqueeze(t, 1), x[:, None])
    check(d2s.unsqueeze(t, -1), x[..., None])
    check(d2s.squeeze(d2s.tensor(x[:, None, :, None])), x)
    check(d2s.squeeze(d2s.tensor(x[:, None]), 1), x)
    check(d2s.broadcast_to(d2s.tensor(x[:, :1]), (5, 2, 3, 4)), np.broadcast_to(x[:, :1], (5, 2, 3, 4)))
    check(d2s.flatten(t), x.reshape(-1))
    check(d2s.flatten(t, 1), x.reshape(2, -1))
    check(t.flatten(0, 1), x.reshape(6, 4))
    check(d2s.concat([t, t], axis=1), np.concatenate([x, x], 1))
    check(d2s.concat([t, d2s.tensor(x[:1])], axis=0), np.concatenate([x, x[:1]], 0))
    check(d2s.stack([t, t, t], axis=-1), np.stack([x, x, x], -1))
    parts = d2s.split(t, 2, axis=2)
    for p, r in zip(parts, np.split(x, 2, axis=2)):
        check(p, r)
    parts = d2s.split(t, [1, 2], axis=1)
    for p, r in zip(parts, np.split(x, [1], axis=1)):
        check(p, r)
    assert len(d2s.split(d2s.tensor(np.arange(5)), 2)) == 3


def test_concat_promotes_dtypes():
    a, b = np.array([1, 2], dtype=np.int32), np.array([0.5], dtype=np.float32)
    check(d2s.concat([d2s.tensor(a), d2s.tensor(b)]), np.concatenate([a.astype(np.float32), b]))


@pytest.mark.parametrize("src", ["float32", "float64", "int32", "int64", "bool"])
@pytest.mark.parametrize("dst", ["float32", "float64", "int32", "int64", "bool"])
def test_cast(src, dst):
    x = np.array([0, 1, 2, 0]).astype(src)
    check(d2s.cast(d2s.tensor(x), dst), x.astype(dst))
    check(d2s.tensor(x).cast(getattr(d2s, dst)), x.astype(dst))


# ------------------------------------------------------------------ values: layer primitives
@pytest.mark.parametrize("stride,padding", [(1, 0), (2, 1), (1, 2), (3, 0)])
def test_conv2d_values(stride, padding):
    x, w, b = rnd(2, 3, 7, 6), rnd(4, 3, 3, 2), rnd(4)
    ref = conv2d_ref(x, w, stride=stride, padding=padding)
    check(conv2d(x, w, stride=stride, padding=padding), ref)
    check(conv2d(d2s.tensor(x), d2s.tensor(w), d2s.tensor(b), stride, padding), ref + b[:, None, None])


@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 1, 1), (3, 2, 0), (2, 2, 1)])
def test_max_pool2d_values(k, s, p):
    x = rnd(2, 3, 7, 6, dtype=np.float32)
    check(max_pool2d(d2s.tensor(x), k, s, p), max_pool2d_ref(x, k, k if s is None else s, p))


def test_dropout_mask_and_scaling():
    d2s.manual_seed(3)
    x = d2s.ones(1000, 10)
    y = dropout(x, 0.3, training=True).numpy()
    kept = y != 0
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.7)}
    assert 0.6 < kept.mean() < 0.8
    assert dropout(x, 0.3, training=False) is x
    assert np.all(dropout(x, 1.0).numpy() == 0)
    d2s.manual_seed(3)
    np.testing.assert_array_equal(dropout(x, 0.3).numpy(), y)


def test_embedding_values():
    w = rnd(10, 4)
    ids = np.array([[1, 3, 3], [0, 9, 2]])
    check(embedding(d2s.tensor(ids), d2s.tensor(w)), w[ids])


# ------------------------------------------------------------------ gradients: finite differences
def _gc(f, *inputs, **kw):
    assert gradcheck(f, inputs, **kw)


GRAD_UNARY = [
    ("neg", rnd), ("exp", rnd), ("log", pos), ("sqrt", pos), ("sin", rnd), ("cos", rnd),
    ("tanh", rnd), ("sigmoid", rnd), ("relu", rnd), ("abs", rnd),
]


@pytest.mark.parametrize("name,make", GRAD_UNARY)
def test_grad_unary(name, make):
    _gc(getattr(d2s, name), make(3, 4))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum", "pow"])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (2, 3)),
                                    ((2, 3), ())])
def test_grad_binary_broadcasting(name, shapes):
    a, b = pos(*shapes[0]), pos(*shapes[1])
    _gc(getattr(d2s, name), a, b)


def test_grad_mod():
    # keep a / b away from integers, where a % b jumps
    a = np.array([[2.3, -1.7, 5.2]])
    b = np.array([[0.9], [1.6]])
    _gc(d2s.mod, a, b)
    _gc(lambda a: a % 1.5, a)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow"])
def test_grad_binary_with_python_scalars(name):
    f = getattr(d2s, name)
    _gc(lambda x: f(x, 1.5), pos(3))
    _gc(lambda x: f(2.0, x), pos(3))


def test_grad_with_list_and_numpy_operands(device):
    _gc(lambda a: d2s.concat([a, [[1.0, 2.0]]], axis=0) * 2.0, rnd(2, 2))
    if device == "cpu":  # a numpy array meeting a device's tensor is refused (tests/test_strict_device.py)
        _gc(lambda a: d2s.stack([np.ones(3), a]).sin(), rnd(3))
    _gc(lambda a: d2s.where([True, False, True], a, [0.0, 1.0, 2.0]), rnd(3))
    _gc(lambda a: d2s.matmul([[1.0, 2.0, 3.0]], a), rnd(3, 2))


def test_grad_operators():
    _gc(lambda a, b: ((a + b) * a - b / a + a ** 2) @ (-b).T, pos(2, 3), pos(2, 3))


def test_grad_clip_where():
    x = rnd(4, 5)
    _gc(lambda x: d2s.clip(x, -0.5, 0.7), x)
    _gc(lambda x, hi: d2s.clip(x, -0.5, hi), x, rnd(5))
    _gc(lambda x: d2s.clip(x, min=0.1), x)
    c = d2s.tensor(rnd(4, 1) > 0)
    _gc(lambda a, b: d2s.where(c, a, b), rnd(4, 5), rnd(1, 5))
    _gc(lambda a: d2s.where(a > 0, a, 0.0), x)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "prod", "logsumexp"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (1, True), ((0, 2), False), (-1, True)])
def test_grad_reductions(name, axis, keepdims):
    _gc(lambda x: getattr(d2s, name)(x, axis=axis, keepdims=keepdims), pos(2, 3, 4))


def test_grad_prod_with_zeros():
    x = pos(3, 4)
    x[0, 1] = 0.0
    x[2, 0] = x[2, 3] = 0.0
    _gc(lambda x: d2s.prod(x, axis=1), x)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3))])
def test_grad_matmul(sa, sb):
    _gc(d2s.matmul, rnd(*sa), rnd(*sb))


def test_grad_shape_functions():
    x = rnd(2, 3, 4)
    w = d2s.tensor(rnd(4, 3, 2))
    _gc(lambda x: d2s.reshape(x, [4, -1]) * d2s.tensor(np.arange(6.0)), x)
    _gc(lambda x: d2s.transpose(x, 0, 2) * w, x)
    _gc(lambda x: d2s.permute(x, 2, 0, 1).sin(), x)
    _gc(lambda x: d2s.unsqueeze(x, 1).exp(), x)
    _gc(lambda x: d2s.squeeze(d2s.unsqueeze(x, 0), 0).exp(), x)
    _gc(lambda x: d2s.broadcast_to(x[:, :1], (5, 2, 1, 4)).sin(), x)
    _gc(lambda x: d2s.flatten(x, 1).cos(), x)
    _gc(lambda a, b: d2s.concat([a, b, a], axis=1).sin(), rnd(2, 3), rnd(2, 2))
    from d2s.dispatch import apply  # split_like: concat's gradient when sizes are unknown
    _gc(lambda a: tuple(p.sin() for p in apply("split_like", a, d2s.zeros(2, 1), d2s.zeros(2, 2), axis=1)),
        rnd(2, 3))
    _gc(lambda a, b: d2s.stack([a, b], axis=1).sin(), rnd(2, 3), rnd(2, 3))
    _gc(lambda x: tuple(p.sin() for p in d2s.split(x, [1, 3], axis=2)), x)
    # float32 in the middle: a coarser step and tolerance
    _gc(lambda x: d2s.cast(x, "float32").cast("float64").sin(), x, eps=1e-2, atol=1e-4)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_grad_softmax_family(axis):
    x = rnd(3, 4)
    w = d2s.tensor(rnd(3, 4))
    _gc(lambda x: d2s.softmax(x, axis) * w, x)
    _gc(lambda x: d2s.log_softmax(x, axis) * w, x)


@pytest.mark.parametrize("axis", [0, 1])
def test_grad_cumsum_gather(axis):
    x, w = rnd(3, 4), d2s.tensor(rnd(3, 4))
    _gc(lambda x: d2s.cumsum(x, axis) * w, x)
    idx = d2s.tensor(RNG.integers(0, x.shape[axis], size=(5, 4) if axis == 0 else (3, 6)))
    _gc(lambda x: d2s.gather(x, axis, idx), x)
    _gc(lambda x: d2s.gather(x, axis, idx[:2, :2]), x)


def test_grad_scatter_add():
    idx = np.array([[1, 1, 3], [0, 2, 0]])
    _gc(lambda b, s: scatter_add(b, 1, idx, s), rnd(2, 4), rnd(2, 3))


def test_grad_getitem_setitem():
    x = rnd(4, 5)
    mask = d2s.tensor(rnd(4, 5) > 0)
    _gc(lambda x: x[1:3, ::2], x)
    _gc(lambda x: x[None, ..., 2], x)
    _gc(lambda x: x[d2s.tensor([0, 0, 3])], x)  # repeated rows accumulate
    _gc(lambda x: x[mask], x)

    def f(x, v):
        y = x * 1.0
        y[1:3, 0] = v
        return y.sin()
    _gc(f, x, rnd(2))


@pytest.mark.parametrize("stride,padding", [(1, 0), (2, 1), (1, 2)])
def test_grad_conv2d(stride, padding):
    _gc(lambda x, w, b: conv2d(x, w, b, stride, padding), rnd(2, 2, 5, 4), rnd(3, 2, 3, 2), rnd(3))


def test_grad_conv2d_second_order():
    """conv2d's gradient primitives have gradient rules too, so double backward works."""
    w = rnd(3, 2, 2, 2)

    x0 = rnd(1, 2, 4, 4)

    def grad_x(x):  # d/dx of (d loss/dx): through conv2d_grad_input and conv2d
        with d2s.enable_grad():
            x = x if x.requires_grad else d2s.tensor(x.numpy(), requires_grad=True)
            y = conv2d(x, w, stride=2, padding=1)
            (gx,) = d2s.grad(d2s.sum(y * y), [x], create_graph=True)
        return gx

    _gc(grad_x, x0)

    def grad_w(wt):  # d/dw of (d loss/dx) and of (d loss/dw): every grad primitive
        with d2s.enable_grad():
            x = d2s.tensor(x0, requires_grad=True)
            wt = wt if wt.requires_grad else d2s.tensor(wt.numpy(), requires_grad=True)
            y = conv2d(x, wt, padding=1)
            gx, gw = d2s.grad(d2s.sum(y.sin()), [x, wt], create_graph=True)
        return gx, gw

    _gc(grad_w, w)


@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 1, 1), (2, 2, 1)])
def test_grad_max_pool2d(k, s, p):
    # distinct values so the max of every window is unique (finite differences need that)
    x = RNG.permutation(2 * 2 * 5 * 4).reshape(2, 2, 5, 4) / 10.0
    _gc(lambda x: max_pool2d(x, k, s, p), x)


def test_grad_dropout_and_embedding():
    d2s.manual_seed(1)
    x = rnd(20, 5)

    def f(x):
        d2s.manual_seed(7)  # the same mask on every evaluation
        return dropout(x, 0.4)
    _gc(f, x)
    ids = np.array([[1, 3, 3], [0, 4, 2]])
    _gc(lambda w: embedding(ids, w), rnd(5, 3))


def test_gradcheck_reports_the_worst_entry():
    with pytest.raises(GradcheckError, match=r"input 0 at index \(1,\).*analytic 3 vs numeric 4"):
        gradcheck(lambda x: d2s.sin(x * 0) + 3 * x + d2s.stop_gradient(x) * d2s.tensor([0.0, 1.0]),
                  (np.zeros(2),))
    assert gradcheck(lambda x: x * 2, d2s.tensor([1.0, 2.0]))


def _grad_of(f, w):
    """x -> d/dx sum(f(x) * w), built with create_graph so it can be differentiated again."""
    def g(x):
        with d2s.enable_grad():
            x = x if x.requires_grad else d2s.tensor(x.numpy(), requires_grad=True)
            (gx,) = d2s.grad(d2s.sum(f(x) * w), [x], create_graph=True)
        return gx
    return g


SECOND_ORDER = [
    ("exp_log_sqrt", lambda x: d2s.exp(x) * d2s.log(x) + d2s.sqrt(x)),
    ("trig", lambda x: d2s.sin(x) * d2s.cos(x) + d2s.tanh(x) + d2s.sigmoid(x)),
    ("div_pow", lambda x: x ** 3 / (x + 1.0) + 2.0 ** x),
    ("matmul", lambda x: x @ x.T),
    ("softmax", lambda x: d2s.softmax(x, 1)),
    ("log_softmax", lambda x: d2s.log_softmax(x, 0)),
    ("logsumexp", lambda x: d2s.logsumexp(x, 1, keepdims=True)),
    ("reductions", lambda x: d2s.prod(x, 1, keepdims=True) + d2s.mean(x * x, 0) + d2s.amax(x * x, 1, True)
     + d2s.max(x * x, 0).values),
    ("cumsum_gather", lambda x: d2s.gather(d2s.cumsum(x * x, 1), 1, np.array([[0, 2], [1, 1], [2, 0]]))),
    ("getitem", lambda x: (x * x)[d2s.tensor([0, 2, 2])][:, 1:]),
    ("shapes", lambda x: d2s.concat([x, d2s.transpose(x * x)[:3, :3]], 1)[:, :3].reshape(9) ** 2),
]


@pytest.mark.parametrize("name,f", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_second_order_gradients(name, f):
    """Rules are written in d2s ops, so their own gradients are right too."""
    x = pos(3, 3)
    y = f(d2s.tensor(x))
    w = d2s.tensor(RNG.uniform(-1, 1, size=y.shape))
    _gc(_grad_of(f, w), x)


# ------------------------------------------------------------------ PyTorch-semantics regressions
@pytest.mark.parametrize("fn", ["sum", "mean", "amax", "amin", "prod", "logsumexp"])
@pytest.mark.parametrize("axis", [0, -1])
def test_reductions_of_0d_tensor_take_axis_0_and_minus_1(fn, axis):
    f = getattr(d2s, fn)
    x = d2s.tensor(np.float64(1.5), requires_grad=True)
    y = f(x, axis=axis)
    assert y.shape == () and y.item() == pytest.approx(1.5 if fn != "logsumexp" else 1.5)
    assert f(x, axis=axis, keepdims=True).shape == ()
    y.backward()
    assert x.grad.item() == pytest.approx(1.0)
    assert d2s.argmax(x, axis=axis).item() == 0 and d2s.argmin(x, axis=axis, keepdims=True).item() == 0


def test_clip_of_int_tensor_with_float_bounds_gives_float32():
    out = d2s.clip(d2s.tensor([1, 5, -3]), 0.5, 3.5)
    assert out.dtype == "float32"
    np.testing.assert_array_equal(out.numpy(), np.array([1.0, 3.5, 0.5], np.float32))
    assert d2s.clip(d2s.tensor([1, 5]), 0, 3).dtype == "int64"


@pytest.mark.parametrize("a, b, dtype", [(1.0, 0.0, "float32"), (1, 0.5, "float32"), (1, 0, "int64"),
                                         (True, False, "bool")])
def test_where_with_two_python_scalars_takes_d2s_defaults(a, b, dtype):
    c = np.array([True, False, True])
    out = d2s.where(d2s.tensor(c), a, b)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), np.where(c, a, b).astype(dtype))
    assert d2s.where(d2s.tensor([1, 0]), a, b).dtype == dtype  # an int condition too


def test_clip_with_tensor_bounds_gives_the_whole_gradient_to_x_at_a_tie():
    # torch.clamp: x gets 1 where lo <= x <= hi, a bound gets 1 where it is the result
    x = d2s.tensor([-1.0, 0.0, 0.5, 1.0, 2.0], dtype="float64", requires_grad=True)
    lo = d2s.tensor([0.0] * 5, dtype="float64", requires_grad=True)
    hi = d2s.tensor([1.0] * 5, dtype="float64", requires_grad=True)
    out = d2s.clip(x, lo, hi)
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0, 0.5, 1.0, 1.0])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(lo.grad.numpy(), [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(hi.grad.numpy(), [0, 0, 0, 0, 1])
    nan = d2s.clip(d2s.tensor([np.nan, 3.0]), d2s.zeros(2), 1.0).numpy()
    assert np.isnan(nan[0]) and nan[1] == 1.0


def test_expand_minus_one_keeps_the_dim():
    x = d2s.tensor(rnd(3, 1), requires_grad=True)
    out = x.expand(2, -1, 4)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(x.numpy(), (2, 3, 4)))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 1), 8.0))
    assert x.expand([-1, 5]).shape == (3, 5)


def test_squeeze_of_an_axis_whose_size_is_not_1_leaves_it():
    x = d2s.ones(1, 3, 1)
    assert x.squeeze(1).shape == (1, 3, 1)
    assert d2s.squeeze(x, (0, 1)).shape == (3, 1)
    assert x.squeeze(-1).shape == (1, 3)


def test_concat_and_stack_accept_python_scalars_and_lists():
    out = d2s.stack([d2s.tensor(1.0), 2.0, np.float32(3.0)])
    assert out.dtype == "float32" and out.tolist() == [1.0, 2.0, 3.0]
    out = d2s.concat([d2s.tensor([1, 2]), [3]])
    assert out.dtype == "int64" and out.tolist() == [1, 2, 3]
    assert d2s.flatten([[1.0, 2.0], [3.0, 4.0]]).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_comparing_a_tensor_with_none_gives_python_bools():
    t = d2s.ones(2)
    assert (t == None) is False  # noqa: E711 - the point of the test
    assert (t != None) is True  # noqa: E711
    assert t not in [None]
    np.testing.assert_array_equal((t == 1.0).numpy(), [True, True])


def test_broadcast_to_a_shape_with_dynamic_dims():
    from d2s.static import InputSpec, build_program
    from d2s_runtime import Executor

    def f(x, b):
        return d2s.broadcast_to(b, x.shape) * x, d2s.broadcast_to(b > 0, [x.shape[0], 2, 3])

    exe = Executor(build_program(f, InputSpec([None, 3]), InputSpec([3])))
    b = rnd(3)
    for n in (1, 4):
        x = rnd(n, 3)
        got, mask = exe.run(x, b)
        np.testing.assert_allclose(got, np.broadcast_to(b, (n, 3)) * x, rtol=1e-6)
        np.testing.assert_array_equal(mask, np.broadcast_to(b > 0, (n, 2, 3)))

    @d2s.jit.to_static
    def g(x, b):
        return (d2s.broadcast_to(b, [x.shape[0], 3]) * x).sum()

    x, b_eager, b_static = rnd(5, 3), d2s.tensor(b, requires_grad=True), d2s.tensor(b, requires_grad=True)
    (d2s.broadcast_to(b_eager, (5, 3)) * d2s.tensor(x)).sum().backward()
    g(d2s.tensor(x), b_static).backward()
    np.testing.assert_allclose(b_static.grad.numpy(), b_eager.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b_eager.grad.numpy(), x.sum(0), rtol=1e-5)


def test_broadcast_to_a_dynamic_shape_rejects_what_cannot_broadcast():
    from d2s.static import InputSpec, build_program
    with pytest.raises(ValueError, match=r"broadcast_to: shape \[5\] does not broadcast to \[\?, 1\]"):
        build_program(lambda x: d2s.broadcast_to(d2s.ones(5), [x.shape[0], 1]), InputSpec([None, 3]))
    with pytest.raises(ValueError, match="target needs at least 2 dims"):
        build_program(lambda x: d2s.broadcast_to(d2s.ones(2, 3), [x.shape[0]]), InputSpec([None, 3]))
