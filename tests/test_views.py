"""Views as PyTorch's (d2s/views.py): an in-place op on a view writes its base, values and
autograd history alike, eagerly, converted (to_static, also under tensor ifs and loops and for
module buffers) and traced; the refusals and version checks are PyTorch's."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s import nn
from torch_parity import Case

R = np.random.default_rng(0)
X = R.standard_normal((3, 4))
V = R.standard_normal(4)
NEG = -np.abs(R.standard_normal((3, 4)))  # the other side of the tensor ifs below


# ------------------------------------------------------------------ cases against PyTorch
# Each builds a tensor from its input, writes through views, and returns values: gradients
# (float64, w.r.t. the input) then check the autograd history the writes leave.
def row_mul(t, x):
    y = x * 1
    v = y[0]
    v.mul_(3)
    return y


def column_zero(t, x):
    y = x * 1
    y[:, 1].zero_()
    return y


def flat_fill(t, x):
    y = x * 1
    y.view(-1)[:2].fill_(5)
    return y


def transposed_row(t, x):
    y = x * 1
    y.transpose(0, 1)[0].mul_(2)
    return y


def sibling_views_see_the_write(t, x):
    y = x * 2
    w = y[:, 1]
    v = y[0]
    v.mul_(3)
    return w * 1, v * 1, y


def view_of_a_view(t, x):
    y = x + 0
    a = y[1:]
    b = a[:, :2]
    b.add_(x[0, :2])
    return y, a.sum(0)


def copy_into_a_buffer(t, x):
    out = t.zeros(3, 4, dtype=x.dtype)
    out[0].copy_(x[1])
    out[:, 2].copy_(x[:, 0] * 2)
    return out


def setitem_on_a_view(t, x):
    y = x * 1
    v = y[1]
    v[2] = 7.0
    v[0] = x[0, 0] * 3
    return y


def base_written_after_the_view(t, x):
    y = x * 1
    v = y[0]
    y.mul_(2)
    return v * 1, y


def unsqueeze_reshape_element(t, x):
    y = x * 1
    y.unsqueeze(0)[0, 1].sub_(1)
    y.reshape(12)[5:7].mul_(x[2, :2])
    y[None][0][2, 3].add_(10)
    return y


def elements(t, x):
    y = x * 1
    y[1, 2].mul_(5)
    y[0][3].fill_(-1)
    return y


def augmented_through_a_view(t, x):
    y = x * 1
    v = y[:, 1:3]
    v += x[:, :2]
    v *= 2
    return y


def strided_and_clamped(t, x):
    y = x.exp() * 1
    y[::2, 1::2].clamp_(max=1.5)
    y[-1].sub_(y[0] * 0.5)
    return y


def written_by_a_tensor_if(t, x):
    y = x * 1
    v = y[0]
    if x.sum() > 0:
        v.mul_(3)
    else:
        y[:, 1].zero_()
    return y, v * 1


def python_loop_of_rows(t, x):
    y = x * 1
    for i in range(3):
        y[i].mul_(i + 1)
    return y


def tensor_loop_of_rows(t, x):
    y = x * 1
    n = (x > 0).sum()
    i = 0
    while i < n:
        y[i % 3].add_(x[0])
        i += 1
    return y


def tensor_loop_over_a_flat_view(t, x):
    y = x * 1
    v = y.view(-1)
    n = (x > 0).sum()
    i = 0
    while i < n:
        v[i].mul_(2)
        i += 1
    return y


def view_chosen_by_a_tensor_if(t, x):
    y = x * 1
    v = y[1]
    if x.sum() > 0:
        v = y[2]
    v.add_(100)
    return y


def if_inside_a_loop(t, x):
    y = x * 1
    w = y[:, 0]
    for k in range(2):
        if y.sum() > k:
            y[k].mul_(2)
    return y, w * 1


def diagonal_writes(t, x):
    y = x * 1
    y.diagonal().mul_(x[0, :3])
    y.diagonal(1)[0] = 5.0
    y.diagonal(-1).zero_()
    return y


_CONVERTED = "converted only (no ONNX/saved form needed to check view semantics)"
TORCH_CASES = [Case(f.__name__, f, X) for f in (
    row_mul, column_zero, flat_fill, transposed_row, sibling_views_see_the_write, view_of_a_view,
    copy_into_a_buffer, setitem_on_a_view, base_written_after_the_view, unsqueeze_reshape_element, elements,
    augmented_through_a_view, strided_and_clamped, python_loop_of_rows)]
TORCH_CASES += [Case(f.__name__ + suffix, f, arg, saved=_CONVERTED, onnx=_CONVERTED)
                for f in (written_by_a_tensor_if, tensor_loop_of_rows, tensor_loop_over_a_flat_view,
                          view_chosen_by_a_tensor_if, if_inside_a_loop)
                for suffix, arg in (("", X), ("_other_side", NEG))]


# detach() and .data share the tensor's elements: a write through either shows in the tensor
# (and a write into the tensor in them), eagerly and converted; autograd does not see the write,
# so the tensor keeps its history (in a program through ``detached_write``, see views.detached).
def detach_write(t, x):
    y = x * 1
    d = y.detach()
    d[0, 0] = 100.0
    y.data[1] = 5.0
    y[1:].detach().mul_(2)
    return y, d


def detach_sees_a_later_write(t, x):
    y = x * 1
    d = y.detach()
    y.add_(1)
    return d


def detach_written_in_a_tensor_if(t, x):
    y = x * 1
    if x.sum() > 0:
        y.detach()[0] = 3.0
    else:
        y.data.zero_()
    return y


def detach_write_then_used(t, x):
    y = x * 2
    y.detach().add_(1)
    y.data.mul_(0.5)
    return (y * x).sum(), y


def detach_write_of_a_row_then_used(t, x):
    y = x * 3
    y[1].detach().clamp_(max=0.5)
    y.data[0, :2] = 3.0
    return y * x


TORCH_CASES += [Case(f.__name__ + suffix, f, arg)
                for f in (detach_write, detach_sees_a_later_write, detach_written_in_a_tensor_if,
                          detach_write_then_used, detach_write_of_a_row_then_used)
                for suffix, arg in (("", X), ("_other_side", NEG))]


# d2s.diagonal (a view op, written back by diagonal_scatter) is another family's: the case runs
# where d2s has it
TORCH_CASES.append(Case("diagonal_writes", diagonal_writes, X, saved=_CONVERTED, onnx=_CONVERTED))


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    if case.name == "diagonal_writes" and not hasattr(d2s.Tensor, "diagonal"):
        pytest.skip("d2s.Tensor.diagonal is not in this tree")
    torch_parity.check(case, __name__)


# ------------------------------------------------------------------ history and versions
def _x(a=X):
    return d2s.tensor(a, requires_grad=True)


def test_the_base_takes_the_history_of_the_write():
    x = _x()
    y = x * 1
    v = y[0]
    v.mul_(3)
    assert v._view.root is y and y.grad_fn is not None and y.grad_fn.name() == "SetitemBackward0"
    y.sum().backward()
    want = np.ones((3, 4))
    want[0] = 3
    np.testing.assert_allclose(x.grad.numpy(), want)


def test_retain_graph_twice_accumulates():
    x = _x()
    y = x * 1
    y[:, 1].mul_(4)
    loss = (y * y).sum()
    loss.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_a_backward_needing_an_overwritten_value_raises():
    # PyTorch: y * y saved y, which the write through y[0] changed
    x = _x()
    y = x * 1
    z = y * y
    y[0].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    # a saved view of the same base too (one version counter per base)
    x = _x()
    y = x * 1
    v = y[1]
    z = v * v
    y[0].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_a_write_nothing_reads_back_is_fine():
    # exp saves its output, not y; y[0] * 3.0 reads y[0] for no gradient (as PyTorch saves it)
    x = _x()
    y = x * 1
    z = y.exp()
    y[0] = y[0] * 3.0
    (z.sum() + y.sum()).backward()
    want = np.exp(X) + 1
    want[0] += 2
    np.testing.assert_allclose(x.grad.numpy(), want)


# ------------------------------------------------------------------ PyTorch's refusals
def test_a_view_of_a_leaf_requiring_grad_is_refused_outside_no_grad():
    w = d2s.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    for write in (lambda: w[0].mul_(2), lambda: w.T[1].zero_(), lambda: w.view(-1)[:1].fill_(0)):
        with pytest.raises(RuntimeError, match="view of a leaf tensor"):
            write()
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w[0] = 3.0
    with d2s.no_grad():
        w[0].mul_(2)
        w[1, 1] = 0.0
    np.testing.assert_allclose(w.detach().numpy(), [[2.0, 4.0], [3.0, 0.0]])


def test_a_view_made_under_no_grad_is_refused_with_grad_on():
    y = _x() * 1
    with d2s.no_grad():
        v = y[0]
    with pytest.raises(RuntimeError, match="created in no_grad mode"):
        v.mul_(2)
    with d2s.no_grad():
        v.mul_(2)  # both inside no_grad: allowed, untracked
    np.testing.assert_allclose(y.detach().numpy()[0], 2 * X[0])


def test_an_expanded_tensor_is_refused():
    a = d2s.zeros(1, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        a.expand(2, 3).add_(1)


def test_indexing_with_a_tensor_copies_as_in_pytorch():
    y = d2s.tensor(X.copy())
    v = y[d2s.tensor(1)]
    v.mul_(0)
    np.testing.assert_allclose(y.numpy(), X)
    y[1].mul_(0)  # an int index is a view
    assert (y.numpy()[1] == 0).all()


# ------------------------------------------------------------------ without autograd
def test_pieces_of_split_write_their_base():
    y = d2s.zeros(3, 4)
    a, b = y.split([1, 2], 0)
    a.fill_(1)
    b[:, 0].fill_(2)
    np.testing.assert_allclose(y.numpy(), [[1, 1, 1, 1], [2, 0, 0, 0], [2, 0, 0, 0]])


def test_dtype_shorthands_return_the_tensor_itself():
    y = d2s.tensor(X)
    assert y.double() is y
    z = y.float()  # a new tensor: an in-place update of it leaves y alone
    z.mul_(0)
    np.testing.assert_allclose(y.numpy(), X)


# ------------------------------------------------------------------ converted and traced
class Buffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", d2s.zeros(3, 4))
        self.register_buffer("steps", d2s.zeros(3))
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.buf[0] = x[0]
        self.buf[:, 1].add_(x.sum(1))
        r = self.buf[2]
        if x.sum() > 0:
            r.mul_(2)
            self.steps[0] += 1
        else:
            self.steps[1].add_(1)
        return self.lin(x) + self.buf


def test_module_buffers_written_through_views_are_written_back():
    d2s.manual_seed(0)
    eager, static = Buffers(), Buffers()
    static.load_state_dict(eager.state_dict())
    buf = static.buf
    d2s.jit.to_static(static)
    for k in range(4):
        x = d2s.randn(3, 4) * (1 if k % 2 else -1)
        np.testing.assert_allclose(static(x).detach().numpy(), eager(x).detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(static.buf.numpy(), eager.buf.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(static.steps.numpy(), eager.steps.numpy())
    assert static.buf is buf and not buf.is_symbolic and len(static.forward.programs) == 1


def writes_its_input(x):
    x[0].mul_(2)
    x.view(-1)[1:3].zero_()
    return x.sum()


def test_a_write_through_a_view_of_an_input_reaches_the_caller():
    a, b = d2s.tensor(X.copy()), d2s.tensor(X.copy())
    want, got = writes_its_input(a), d2s.jit.to_static(writes_its_input)(b)
    np.testing.assert_allclose(got.numpy(), want.numpy())
    np.testing.assert_allclose(b.numpy(), a.numpy())


def reshapes_and_writes(x):
    y = x * 1
    y[:, 0].mul_(3)
    y.transpose(0, 1)[1].add_(1)
    v = y.reshape(-1)  # contiguous: a view, also after the writes above
    v[0] = 100.0
    return y


def test_dynamic_dims_and_trace_equal_eager():
    sf = d2s.jit.to_static(reshapes_and_writes, input_spec=[d2s.jit.InputSpec([None, 4], "float64")])
    tf = d2s.jit.trace(reshapes_and_writes, (d2s.tensor(X),))
    for n in (1, 3, 5):
        x = d2s.tensor(R.standard_normal((n, 4)))
        want = reshapes_and_writes(x).numpy()
        np.testing.assert_allclose(sf(x).numpy(), want)
        if n == 3:
            np.testing.assert_allclose(tf(x).numpy(), want)


def strided_then_reshaped(x):
    y = x * 1
    v = y[:, :2].reshape(-1)  # a copy (non-contiguous), in numpy as in PyTorch
    v.mul_(0)
    return y


def test_a_reshape_that_copies_does_not_write_back_in_programs_either():
    x = d2s.tensor(X)
    np.testing.assert_allclose(d2s.jit.to_static(strided_then_reshaped)(x).numpy(), X)
    np.testing.assert_allclose(strided_then_reshaped(x).numpy(), X)


def rebinds_a_view_in_a_tensor_loop(x, write):
    y = x * 1
    v = y[0]
    n = (x > 0).sum() % 3
    i = 0
    while i < n:
        v = y[i]
        v.mul_(2)  # a write inside the body is followed
        i += 1
    out = v * 1  # and so is reading it after the loop
    if write:
        v.add_(100)  # which row this writes depends on the trip count: refused in a program
    return y, out


def test_a_view_bound_in_a_tensor_loop_is_read_but_not_written_after_it():
    static = d2s.jit.to_static(rebinds_a_view_in_a_tensor_loop)
    for a in (X, NEG, np.abs(X)):
        x = d2s.tensor(a)
        for want, got in zip(rebinds_a_view_in_a_tensor_loop(x, False), static(x, False)):
            np.testing.assert_allclose(got.numpy(), want.numpy())
    with pytest.raises(RuntimeError, match=r"(?s)tensor loop binds to a view.*test_views.py"):
        static(d2s.tensor(X), True)


def binds_a_view_in_one_branch(x, write):
    y = x * 1
    if x.sum() > 0:
        v = y[0]
    else:
        v = x[1] * 3  # not a view
    out = v * 1
    if write:
        v.add_(1)  # writes y on one branch only: refused in a program
    return y, out


def test_a_view_bound_in_one_branch_is_read_but_not_written_after_the_if():
    static = d2s.jit.to_static(binds_a_view_in_one_branch)
    for a in (X, NEG):
        x = d2s.tensor(a)
        for want, got in zip(binds_a_view_in_one_branch(x, False), static(x, False)):
            np.testing.assert_allclose(got.numpy(), want.numpy())
    with pytest.raises(RuntimeError, match="tensor `if` binds to a view of another in one branch"):
        static(d2s.tensor(X), True)


class _DetachedBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", d2s.zeros(2))

    def forward(self, x):
        self.count.detach().add_(1)
        self.count.data.mul_(2)
        return x + self.count


def test_a_buffer_written_through_detach_or_data_is_written_back_after_each_call():
    eager, conv = _DetachedBuffer(), _DetachedBuffer()
    static = d2s.jit.to_static(conv)
    for _ in range(3):
        want, got = eager(d2s.ones(2)), static(d2s.ones(2))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(conv.count.numpy(), [14.0, 14.0])
    np.testing.assert_array_equal(eager.count.numpy(), [14.0, 14.0])


class _ClampsThroughData(nn.Module):
    """A forward writing its activations through .data and .detach() (a clamp, a reset of one
    entry under a tensor if, a Python loop of row updates): autograd does not see the writes,
    so gradients flow through the activations' own history."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(d2s.tensor([[1.0, -2.0, 3.0, 0.5]]))

    def forward(self, x):
        h = x * self.w
        h.data.clamp_(max=2.5)
        if h.sum() > 0:
            h.detach()[0] = 1.5
        else:
            h.detach().mul_(2)
        for i in range(2):
            h.detach()[i].add_(1)
        return (h * self.w).sum()


@pytest.mark.parametrize("backend", ["python", "native"])
def test_writes_through_detach_keep_the_gradients_of_eager(backend):
    for xa in (X, NEG, X[::-1] * 3):
        eager, static = _ClampsThroughData(), _ClampsThroughData()
        d2s.jit.to_static(static, backend=backend)
        xe, xs = d2s.tensor(xa, requires_grad=True), d2s.tensor(xa, requires_grad=True)
        le, ls = eager(xe), static(xs)
        le.backward()
        ls.backward()
        np.testing.assert_allclose(ls.numpy(), le.numpy(), rtol=1e-12)
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(static.w.grad.numpy(), eager.w.grad.numpy(), rtol=1e-6)
        assert xs.grad.numpy().any()  # (the gradient through the written activations is not lost)


def _ellipsis_views(x, z):
    y = x * 1.0
    w = y[..., 0]
    w.div_(2.0)
    y[0, ...].add_(z[0])
    v = y[..., 1:]
    if z.sum() > 0:
        v.mul_(3.0)
    return y, v


def test_writes_through_ellipsis_views_reach_the_base_in_converted_code():
    """``y[..., 0]`` in a program: the view's layout was computed with a second Ellipsis, which
    numpy refuses, so the program took the view for a copy and dropped the write (a fuzzer of
    in-place ops on views, converted against eager, found it)."""
    static = d2s.jit.to_static(_ellipsis_views)
    rng = np.random.default_rng(0)
    for sign in (1.0, -1.0, 1.0):  # both branches; the third call runs the optimized program
        x = d2s.tensor(rng.standard_normal((3, 4)).astype("float32"))
        z = d2s.tensor((sign * np.abs(rng.standard_normal((3, 4)))).astype("float32"))
        for got, want in zip(static(x, z), _ellipsis_views(x, z)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
