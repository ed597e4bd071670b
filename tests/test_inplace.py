"""The in-place surface with PyTorch semantics: values, shared storage, version-counter errors,
leaf errors, optimizers; and in converted functions (rebinding, refusals, buffer writes)."""
import numpy as np
import pytest

import d2s
from d2s import nn, optim

import torch_parity
from jit_helpers import check
from torch_parity import Case

VALUES = [[1.0, -2.0, 3.0], [0.5, 0.25, -4.0], [0.0, 7.0, -1.5]]

CASES = [  # (method call on t, numpy reference on a)
    (lambda t: t.add_(2.0), lambda a: a + 2.0),
    (lambda t: t.add_(d2s.tensor([1.0, 2.0, 3.0]), alpha=0.5), lambda a: a + 0.5 * np.array([1, 2, 3])),
    (lambda t: t.sub_(1.5), lambda a: a - 1.5),
    (lambda t: t.sub_(d2s.tensor([1.0, 2.0, 3.0]), alpha=2), lambda a: a - 2 * np.array([1, 2, 3])),
    (lambda t: t.mul_(d2s.tensor([2.0, 0.0, -1.0])), lambda a: a * np.array([2, 0, -1])),
    (lambda t: t.div_(4.0), lambda a: a / 4.0),
    (lambda t: t.zero_(), lambda a: np.zeros_like(a)),
    (lambda t: t.fill_(2.5), lambda a: np.full_like(a, 2.5)),
    (lambda t: t.copy_(d2s.tensor([9.0])), lambda a: np.full_like(a, 9.0)),
    (lambda t: t.clamp_(-1.0, 2.0), lambda a: np.clip(a, -1.0, 2.0)),
    (lambda t: t.clamp_(min=0.0), lambda a: np.maximum(a, 0.0)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_methods_write_into_the_same_tensor_and_its_storage(case):
    call, ref = CASES[case]
    for v in VALUES:
        t = d2s.tensor(v)
        view = t.data
        arr = t.numpy()
        out = call(t)
        assert out is t
        expected = ref(np.array(v, np.float32)).astype(np.float32)
        np.testing.assert_allclose(t.numpy(), expected, rtol=1e-6)
        np.testing.assert_allclose(view.numpy(), expected, rtol=1e-6)  # .data shares storage
        assert t.numpy() is arr or np.shares_memory(t.numpy(), arr)
        assert t._version == 1


def test_augmented_operators_mutate():
    for v in VALUES:
        a = np.array(v, np.float32)
        t = d2s.tensor(v)
        alias = t
        t += 1.0
        t -= d2s.tensor([0.5, 0.5, 0.5])
        t *= 3.0
        t /= 2.0
        assert t is alias
        np.testing.assert_allclose(alias.numpy(), (a + 1.0 - 0.5) * 3.0 / 2.0, rtol=1e-6)
        assert t._version == 4


def _aug_through_aliases(t, i):
    """Every augmented operator writes its tensor in place: another name for it, and a view of
    it, see the write (without __ifloordiv__ & co, Python rebinds the name to a new tensor)."""
    a, c, e = i * 1, i * 1, i * 1
    b, d, f, row = a, c, e, a[1]
    b //= 2
    d %= 3
    f **= 2
    m, n, o = i > 0, i > 0, i > 0
    m2, n2, o2 = m, n, o
    m2 &= i < 2
    n2 |= i < -3
    o2 ^= i < 2
    return a, c, e, row, m, n, o


_FORMS = [(name, {"clamp_": (0.0, 1.0), "clamp_max_": (0.3,), "clamp_min_": (0.3,), "clip_": (0.0, 1.0), "fill_": (2.0,),
                  "xlogy_": (2.0,), "threshold_": (0.3, -5.0)}.get(name, ()))
          for name in ("abs_", "acos_", "asin_", "atan_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_",
                       "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_",
                       "log1p_", "log_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_",
                       "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_",
                       "zero_", "selu_", "celu_", "threshold_")]


def test_every_functional_inplace_form_writes_its_first_argument():
    for name in d2s._inplace.FUNCTIONAL_FORMS + ("selu_", "celu_", "threshold_", "rrelu_"):
        assert callable(getattr(d2s, name)) and name in dir(d2s)
    t = d2s.tensor([[-1.0, 4.0]])
    assert d2s.relu_(t) is t and t.tolist() == [[0.0, 4.0]]
    assert d2s.sqrt_(t) is t and t.tolist() == [[0.0, 2.0]]
    assert d2s.index_put_(t, (d2s.tensor([0]),), d2s.tensor(7.0)) is t and t.tolist() == [[7.0, 7.0]]


TORCH_CASES = [
    Case("augmented_operators_write_in_place", _aug_through_aliases, np.arange(12).reshape(3, 4) - 5),
    Case("relu_and_div_rounding_mode", lambda t, x, i: ((x * 1).relu_(), (i * 1).div_(3, rounding_mode="floor"),
                                                        (i * 1).div_(3, rounding_mode="trunc"), (x * 1).div_(2.0)),
         np.array([[-1.5, 0.0, 2.0]]), np.array([[-7, 5, 8]])),
    # torch.relu_(x) and the other top-level in-place forms: the method on the first argument
    Case("functional_inplace_forms", lambda t, x: [(lambda y: (getattr(t, name)(y, *args), y)[1])(x * 1)
                                                   for name, args in _FORMS], np.array([[0.5, -0.75], [2.0, 0.25]]),
         onnx="onnxruntime has no float64 kernel of ONNX's Acos, Asin, Atan, Tan, Sinh, Cosh and Erf "
              "(tests/ops/test_pointwise.py exports them in float32)"),
    # an integer result of a wider or signed dtype is written into an integer tensor, wrapping
    # (PyTorch refuses only float into integer or bool, and numbers into bool)
    Case("integer_results_wrap_into_the_target", lambda t, u, i8, w: (u.clone().add_(w.int()), u.clone().__iadd__(w),
                                                                      i8.clone().mul_(w.short() * 50), u.clone().bitwise_or_(-w),
                                                                      u.clone().copy_(w * 100)),
         np.array([250, 2], np.uint8), np.array([1, 2], np.int8), np.array([10, -3])),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_dtype_and_shape_rules():
    i = d2s.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast"):
        i += 0.5
    i += 3
    assert i.dtype == d2s.int64 and i.tolist() == [4, 5]
    f = d2s.zeros(3)
    with pytest.raises(RuntimeError, match="does not match the shape"):
        f += d2s.ones(2, 3)
    d = d2s.zeros(3, dtype="float64")
    d += d2s.ones(3)  # float32 into float64: fine
    assert d.dtype == d2s.float64


def test_leaf_requiring_grad_refuses_outside_no_grad():
    p = d2s.tensor([1.0, 2.0], requires_grad=True)
    for op in (lambda: p.add_(1), lambda: p.zero_(), lambda: p.__isub__(1.0)):
        with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
            op()
    same = p
    with d2s.no_grad():
        p -= 0.5
        p.mul_(2.0)
    assert p is same and p.requires_grad and p.is_leaf
    np.testing.assert_allclose(p.numpy(), [1.0, 3.0])


def test_modified_output_saved_for_backward_raises():
    x = d2s.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*ExpBackward0.*version 1"):
        y.sum().backward()


def test_modified_input_saved_for_backward_raises():
    x = d2s.tensor([0.5, 1.0], requires_grad=True)
    a = x * 2.0
    b = a * a           # mul saves a
    a.mul_(3.0)
    with pytest.raises(RuntimeError, match="input 0 of MulBackward0.*expected version 0"):
        b.sum().backward()


def test_detach_shares_the_version_counter_but_data_does_not():
    x = d2s.tensor([0.5, 1.0], requires_grad=True)
    y = x.sigmoid()
    y.detach().zero_()
    with pytest.raises(RuntimeError, match="SigmoidBackward0"):
        y.sum().backward()
    y = x.sigmoid()
    y.data.fill_(0.25)  # PyTorch's .data: autograd does not see it
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.25 * 0.75] * 2)


def test_unsaved_inputs_may_change():
    x = d2s.tensor([0.5, 1.0], requires_grad=True)
    a = x * 2.0
    b = a + 1.0         # add reads no values for its gradient
    a.add_(5.0)
    b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def _fd(f, x, eps=1e-6):
    x = np.array(x, np.float64)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _chain(x, w):
    y = x * 2.0
    y.add_(w, alpha=3.0)
    y.mul_(x)
    y.clamp_(max=50.0)
    y /= 2.0
    return y.sum()


def test_recorded_in_place_gradients_match_finite_differences():
    for v in VALUES:
        w0 = [0.3, -0.2, 0.1]
        x = d2s.tensor(v, dtype="float64", requires_grad=True)
        w = d2s.tensor(w0, dtype="float64", requires_grad=True)
        _chain(x, w).backward()
        fx = _fd(lambda a: _chain(d2s.tensor(a), d2s.tensor(w0, dtype="float64")).item(), v)
        fw = _fd(lambda a: _chain(d2s.tensor(v, dtype="float64"), d2s.tensor(a)).item(), w0)
        np.testing.assert_allclose(x.grad.numpy(), fx, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), fw, rtol=1e-5, atol=1e-6)


def test_copy_and_fill_pass_gradients_to_the_source_only():
    v = d2s.tensor([1.0, 2.0], requires_grad=True)
    x = d2s.tensor([5.0, 6.0], requires_grad=True)
    z = x * 1.0
    z.copy_(v * 3.0)
    (z * z).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), 2 * 9 * v.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0])


def _mlp():
    d2s.manual_seed(3)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def test_manual_sgd_with_in_place_updates_equals_optimizer():
    x, y = d2s.randn(16, 4), d2s.randn(16, 1)
    a, b = _mlp(), _mlp()
    opt = optim.SGD(b.parameters(), lr=0.1)
    for _ in range(3):
        ((a(x) - y) ** 2).mean().backward()
        with d2s.no_grad():
            for p in a.parameters():
                p -= 0.1 * p.grad
                p.grad.zero_()
        opt.zero_grad()
        ((b(x) - y) ** 2).mean().backward()
        opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in a.parameters())


def test_optimizer_step_bumps_versions():
    w = nn.Parameter(d2s.tensor([1.0, 2.0]))
    opt = optim.Adam([w], lr=0.01)
    x = d2s.tensor([3.0, 4.0], requires_grad=True)
    (x * w).sum().backward()
    out2 = (x * w).sum()  # mul saves w for x's gradient
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out2.backward()


# ------------------------------------------------------------------ converted functions
def branches_and_loops(x):
    y = x * 1.0
    if x.sum() > 0:
        y.add_(1.0)
    else:
        y.mul_(3.0)
    z = y * 2.0
    z += x
    i = 0
    while i < x.shape[0] + d2s.tensor(0):
        z.sub_(0.5)
        i += 1
    w = z.clone()
    w.clamp_(min=0.0)
    u = w.add_(1.0)  # the result of an in-place call is the tensor itself
    return y, z, w, u


def test_converted_in_place_updates_equal_eager():
    sf = d2s.jit.to_static(branches_and_loops)
    for v in VALUES + [[-1.0, -2.0, -3.0]]:
        check(branches_and_loops, d2s.tensor(v), static=sf)


def writes_input(x):
    x += 1.0
    return x


def writes_input_method(x):
    x.mul_(2.0)
    return x


def test_in_place_on_an_input_reaches_the_callers_tensor():
    for fn in (writes_input, writes_input_method):
        a, b = d2s.tensor([1.0, -2.0]), d2s.tensor([1.0, -2.0])
        want, got = fn(a), d2s.jit.to_static(fn)(b)
        np.testing.assert_allclose(got.numpy(), want.numpy())
        np.testing.assert_allclose(b.numpy(), a.numpy())


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.register_buffer("count", d2s.zeros([]))
        self.register_buffer("total", d2s.zeros(2))

    def forward(self, x):
        self.count += 1
        self.total.add_(x.sum(axis=0))
        return self.fc(x) * self.count


def test_module_buffers_updated_in_place_are_written_back():
    d2s.manual_seed(0)
    eager, static = Counter(), Counter()
    static.load_state_dict(eager.state_dict())
    count_obj = static.count
    d2s.jit.to_static(static)
    for k in range(3):
        x = d2s.randn(3, 2)
        np.testing.assert_allclose(static(x).numpy(), eager(x).numpy(), rtol=1e-5)
        np.testing.assert_allclose(static.count.numpy(), eager.count.numpy())
        np.testing.assert_allclose(static.total.numpy(), eager.total.numpy(), rtol=1e-5)
    assert static.count is count_obj and "count" in static.state_dict()
    assert len(static.forward.programs) == 1


class WritesParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        with d2s.no_grad():
            self.fc.weight.mul_(0.5)
        return self.fc(x)


def test_in_place_on_a_parameter_is_refused():
    with pytest.raises(RuntimeError, match="in-place update of a parameter"):
        d2s.jit.to_static(WritesParameter())(d2s.ones(1, 2))


def traced_updates(x):
    y = x * 2.0
    y.add_(1.0)
    y *= x
    z = y.clone()
    z.clamp_(max=5.0)
    return y, z


def test_traced_in_place_updates_equal_eager():
    tf = d2s.jit.trace(traced_updates, (d2s.tensor(VALUES[0]),))
    for v in VALUES:
        for e, s in zip(traced_updates(d2s.tensor(v)), tf(d2s.tensor(v))):
            np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-6)


def test_traced_in_place_on_an_input_is_refused():
    with pytest.raises(RuntimeError, match="an input of the traced function"):
        d2s.jit.trace(writes_input_method, (d2s.ones(2),))


def test_updating_a_parameter_seen_through_a_view_raises():
    """x @ W.T saves the transpose, a view of W: an optimizer step on W before backward must
    not silently give the gradient for the new W (PyTorch's views share the version counter)."""
    d2s.manual_seed(0)
    lin = nn.Linear(3, 2)
    opt = optim.SGD(lin.parameters(), lr=0.1)
    x = d2s.randn(4, 3, requires_grad=True)
    lin(x).sum().backward()
    out = lin(x).sum()
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_in_place_on_a_view_of_a_leaf_requiring_grad_is_refused():
    w = d2s.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf tensor"):
        w.T.add_(1.0)
    np.testing.assert_allclose(w.detach().numpy(), [[1.0, 2.0], [3.0, 4.0]])
    d = w.detach()
    d.add_(1.0)  # a detached tensor may change (and w with it, as in PyTorch)
    np.testing.assert_allclose(w.detach().numpy(), [[2.0, 3.0], [4.0, 5.0]])
