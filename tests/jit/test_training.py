"""Training through ``d2s.jit.to_static`` equals eager training, written as user code.

Each test builds the same float64 model twice (eager and converted, same weights), runs a few
forward/backward/optimizer steps on inputs that take every branch, and compares the loss, every
parameter's ``.grad`` (its value, and whether it is ``None``), the inputs' ``.grad`` and the
parameters after each step. The split forward/backward (``d2s.static.partial_eval``) and the
per-call used flags (``d2s.static.reach``) are what runs under the converted calls.
"""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import nn, optim
from d2s_runtime.device import to_host

# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py)
pytestmark = pytest.mark.usefixtures("device")

RTOL, ATOL = 1e-9, 1e-11


# ------------------------------------------------------------------ harness
def _pair(factory):
    """(eager model, converted model) with the same float64 weights."""
    d2s.manual_seed(0)
    eager = factory().double()
    static = factory().double()
    static.load_state_dict(eager.state_dict())
    return eager, d2s.jit.to_static(static)


def _t(a, requires_grad=False):
    a = np.asarray(a)
    return d2s.tensor(a.copy(), dtype=str(a.dtype), requires_grad=requires_grad)


def _close(got, want, what=""):
    assert (got is None) == (want is None), f"{what}: got {got!r}, want {want!r}"
    if want is not None:
        got = got.numpy() if hasattr(got, "numpy") else got
        want = want.numpy() if hasattr(want, "numpy") else want
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


def _check_params(eager, static, what=""):
    for (name, pe), (_, ps) in zip(eager.named_parameters(), static.named_parameters()):
        _close(ps.grad, pe.grad, f"{what} grad of {name}")
        _close(ps.detach(), pe.detach(), f"{what} value of {name}")


def _train(factory, batches, loss_fn=None, opt="adam", seed=None, grad_inputs=True):
    """Train eager and converted copies side by side on ``batches`` (tuples of arrays; the first
    is a float input that requires grad when ``grad_inputs``) and compare after every step."""
    eager, static = _pair(factory)
    loss_fn = loss_fn or (lambda out, *args: out.sum() if not isinstance(out, tuple) else out[0].sum())
    make = {"adam": lambda ps: optim.Adam(ps, lr=0.05),
            "sgd": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)}[opt]
    opts = [make(list(m.parameters())) for m in (eager, static)]
    for step, batch in enumerate(batches):
        results = []
        for m, o in zip((eager, static), opts):
            o.zero_grad()
            args = [_t(a, requires_grad=(k == 0 and grad_inputs and np.asarray(a).dtype.kind == "f"))
                    for k, a in enumerate(batch)]
            if seed is not None:
                d2s.manual_seed(seed + step)
            out = m(*args)
            loss = loss_fn(out, *args)
            loss.backward()
            results.append((float(loss), args[0].grad))
        (le, gxe), (ls, gxs) = results
        assert ls == pytest.approx(le, rel=1e-10, abs=1e-12), f"step {step}"
        _close(gxs, gxe, f"step {step} input grad")
        _check_params(eager, static, f"step {step} before the update:")
        for o in opts:
            o.step()
        _check_params(eager, static, f"step {step} after the update:")
    return eager, static


RNG = np.random.default_rng(7)


def _randn(*shape, scale=1.0, shift=0.0):
    return RNG.standard_normal(shape) * scale + shift


# ------------------------------------------------------------------ models
class BranchyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.pos, self.neg = nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 3), nn.Linear(8, 3)

    def forward(self, x):
        h = F.relu(self.l1(x))
        if x.mean() > 0:
            h = F.tanh(self.l2(h))
            out = self.pos(h)
        else:
            out = self.neg(h)
        return out


MLP_BATCHES = [(_randn(5, 4, shift=1.0),), (_randn(5, 4, shift=-1.0),), (_randn(5, 4, shift=1.0),),
               (_randn(5, 4, shift=-1.0),)]


@pytest.mark.parametrize("opt", ["adam", "sgd"])
def test_mlp_with_branches_every_step(opt):
    _train(BranchyMLP, MLP_BATCHES, loss_fn=lambda out, x: (out ** 2).mean(), opt=opt)


def test_mlp_inputs_without_grad():
    _train(BranchyMLP, MLP_BATCHES, grad_inputs=False)


def test_mlp_cross_entropy_with_integer_targets():
    batches = [(b[0], RNG.integers(0, 3, size=5)) for b in MLP_BATCHES]

    class WithTarget(BranchyMLP):
        def forward(self, x, y):
            return F.cross_entropy(super().forward(x), y)

    _train(WithTarget, batches, loss_fn=lambda out, *a: out)


# an Elman RNN: a Python for over a Python range, and a tensor while of 0, 1, several trips
class ElmanFor(nn.Module):
    def __init__(self):
        super().__init__()
        self.wx, self.wh, self.out = nn.Linear(3, 5), nn.Linear(5, 5, bias=False), nn.Linear(5, 2)

    def forward(self, x):
        h = d2s.zeros([x.shape[0], 5], dtype="float64")
        for t in range(x.shape[1]):
            h = d2s.tanh(self.wx(x[:, t]) + self.wh(h))
        return self.out(h)


class ElmanWhile(nn.Module):
    def __init__(self):
        super().__init__()
        self.wx, self.wh, self.out = nn.Linear(3, 5), nn.Linear(5, 5, bias=False), nn.Linear(5, 2)

    def forward(self, x, n):
        h = F.tanh(self.wx(x))
        i = d2s.tensor(0)
        while i < n:
            h = d2s.tanh(self.wx(x) + self.wh(h))
            i = i + 1
        return self.out(h)


def test_elman_rnn_python_for():
    _train(ElmanFor, [(_randn(2, 4, 3),), (_randn(2, 4, 3),), (_randn(2, 4, 3),)])


@pytest.mark.parametrize("trips", [[0, 1, 3], [3, 0, 0], [1, 2, 0, 4]])
def test_elman_rnn_tensor_while(trips):
    # with zero trips wh is not used: its .grad stays None, and Adam leaves it alone
    _train(ElmanWhile, [(_randn(2, 3), np.array(n)) for n in trips])


@pytest.mark.parametrize("cell", ["gru", "rnn"])
def test_gru_and_rnn_cells_over_a_sequence(cell):
    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.GRUCell(3, 4) if cell == "gru" else nn.RNNCell(3, 4)
            self.head = nn.Linear(4, 1)

        def forward(self, x):
            h = d2s.zeros([x.shape[1], 4], dtype="float64")
            for t in range(x.shape[0]):
                h = self.cell(x[t], h)
            return self.head(h)

    _train(Seq, [(_randn(3, 2, 3),), (_randn(3, 2, 3),), (_randn(3, 2, 3),)], opt="sgd")


def test_conv_maxpool():
    class Conv(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.pool, self.fc = nn.Conv2d(2, 3, 3, padding=1), nn.MaxPool2d(2), nn.Linear(12, 2)

        def forward(self, x):
            h = self.pool(F.relu(self.conv(x)))
            return self.fc(h.reshape([x.shape[0], -1]))

    _train(Conv, [(_randn(2, 2, 4, 4),), (_randn(2, 2, 4, 4),)])


class DropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.drop, self.l2 = nn.Linear(6, 16), nn.Dropout(0.4), nn.Linear(16, 2)

    def forward(self, x):
        h = self.drop(F.relu(self.l1(x)))
        if h.sum() > 3.0:
            h = self.drop(h)
        return self.l2(h)


def test_dropout_train_mode_same_seed_same_grads():
    batches = [(_randn(8, 6, shift=s),) for s in (1.0, -0.5, 1.0, 0.2)]
    _train(DropNet, batches, seed=11)


def test_dropout_eval_mode():
    def factory():
        m = DropNet()
        m.eval()
        return m

    _train(factory, [(_randn(8, 6, shift=s),) for s in (1.0, -0.5)])


def test_layernorm_and_embedding_with_integer_input():
    class Tok(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.norm, self.fc = nn.Embedding(10, 6), nn.LayerNorm(6), nn.Linear(6, 2)

        def forward(self, ids):
            h = self.norm(self.emb(ids))
            if ids.max() > 6:
                h = h * 2.0
            return self.fc(h).mean(axis=1)

    # only the rows of the embedding that were looked up change; the rest stay (Adam too)
    batches = [(RNG.integers(0, 10, size=(2, 4)),), (np.array([[0, 1, 2, 3], [1, 1, 2, 2]]),),
               (np.array([[9, 9, 8, 7], [0, 0, 0, 0]]),)]
    _train(Tok, batches)


def test_module_writes_tensors_to_attributes():
    class Stateful(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.last = None

        def forward(self, x):
            h = self.fc(x)
            self.last = h.detach()
            self.hidden = h  # keeps its graph: the user may backprop through it later
            if h.sum() > 0:
                return h.relu()
            return h * 0.5

    eager, static = _train(Stateful, [(_randn(2, 3, shift=1),), (_randn(2, 3, shift=-1),)])
    _close(static.last, eager.last)
    assert static.last.requires_grad is False
    # backward through the tensor written to the attribute
    x = _randn(2, 3)
    for m in (eager, static):
        for p in m.parameters():
            p.grad = None
        m(_t(x))
        (m.hidden ** 2).sum().backward()
    _check_params(eager, static, "through the attribute")


class MultiOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(3, 2), nn.Linear(3, 2), nn.Linear(3, 2)

    def forward(self, x):
        ha, hb, hc = self.a(x), self.b(x), self.c(x)
        return {"a": ha, "b": (hb, hb.argmax(axis=1)), "c": hc, "n": (x > 0).sum(), "flag": hc.sum() > 0}


def test_dict_and_tuple_outputs_with_non_float_leaves_and_an_unused_output():
    # the loss uses a and b only: c's parameters get no gradient (None), as eagerly
    def loss_fn(out, x):
        assert out["b"][1].dtype == d2s.int64 and out["flag"].dtype == d2s.bool
        return (out["a"] * out["b"][0]).sum() + out["n"].double() * out["a"].mean()

    _train(MultiOut, [(_randn(4, 3),), (_randn(4, 3),)], loss_fn=loss_fn)


def test_loss_from_several_outputs_of_a_converted_function():
    w1 = d2s.tensor(_randn(3, 3), requires_grad=True)
    w2 = d2s.tensor(_randn(3), requires_grad=True)

    def f(x):
        y = x @ w1
        if y.sum() > 0:
            z = y * w2
        else:
            z = y - w2
        return y, z, z.detach() * 3

    static = d2s.jit.to_static(f)
    for x in (_randn(2, 3, shift=2), _randn(2, 3, shift=-2)):
        got = []
        for fn in (f, static):
            w1.grad = w2.grad = None
            xt = _t(x, requires_grad=True)
            y, z, c = fn(xt)
            assert not c.requires_grad
            (y.sum() * 2 + (z * c).mean()).backward()
            got.append((xt.grad, w1.grad, w2.grad))
        for a, b in zip(*got):
            _close(b, a)


def test_retain_graph_then_second_backward():
    eager, static = _pair(BranchyMLP)
    for x in (MLP_BATCHES[0][0], MLP_BATCHES[1][0]):
        for m in (eager, static):
            for p in m.parameters():
                p.grad = None
            loss = (m(_t(x)) ** 2).sum()
            loss.backward(retain_graph=True)
            loss.backward()  # accumulates a second, equal gradient
        _check_params(eager, static, "retain_graph")
    # without retain_graph the second backward raises, as eagerly
    loss = static(_t(MLP_BATCHES[0][0])).sum()
    loss.backward()
    with pytest.raises(RuntimeError):
        loss.backward()


@pytest.mark.parametrize("x", [MLP_BATCHES[0][0], MLP_BATCHES[1][0]])
def test_create_graph_double_backward(x):
    eager, static = _pair(BranchyMLP)
    got = []
    for m in (eager, static):
        for p in m.parameters():
            p.grad = None
        xt = _t(x, requires_grad=True)
        out = (d2s.tanh(m(xt)) ** 2).sum()
        (gx,) = d2s.grad(out, xt, create_graph=True)
        (gx ** 2).sum().backward()  # a gradient penalty
        got.append((gx.detach(), xt.grad, [p.grad for p in m.parameters()]))
    (ge, gxe, pe), (gs, gxs, ps) = got
    _close(gs, ge)
    _close(gxs, gxe)
    for a, b in zip(ps, pe):
        _close(a, b)


def test_gradient_accumulation_over_two_calls_before_a_step():
    eager, static = _pair(BranchyMLP)
    opts = [optim.SGD(list(m.parameters()), lr=0.1, momentum=0.9) for m in (eager, static)]
    for k in range(0, 4, 2):
        for m, o in zip((eager, static), opts):
            o.zero_grad()
            for x in (MLP_BATCHES[k][0], MLP_BATCHES[k + 1][0]):  # both branches accumulate
                (m(_t(x)) ** 2).mean().backward()
        _check_params(eager, static, "accumulated")
        for o in opts:
            o.step()
        _check_params(eager, static, "stepped")


def test_to_static_under_no_grad_keeps_nothing():
    eager, static = _pair(BranchyMLP)
    x = _t(MLP_BATCHES[0][0], requires_grad=True)
    with d2s.no_grad():
        out = static(x)
        want = eager(x)
    assert out.grad_fn is None and not out.requires_grad
    _close(out, want)
    (entry,) = static.forward.concrete_programs
    assert not entry._trainers  # no training forward ran, no residuals kept
    out = static(x)  # then with grad: a node, and training works
    assert out.grad_fn is not None
    out.sum().backward()


def test_input_requiring_grad_only_some_inputs():
    w = d2s.tensor(_randn(3), requires_grad=True)

    def f(a, b, k):
        if k > 1:
            return (a * w + b).sum()
        return (a * b).sum()

    static = d2s.jit.to_static(f)
    for k in (0, 2):
        for req in ((True, False), (False, True), (True, True), (False, False)):
            got = []
            av, bv = _randn(3), _randn(3)
            for fn in (f, static):
                w.grad = None
                a2, b2 = _t(av, req[0]), _t(bv, req[1])
                out = fn(a2, b2, d2s.tensor(k))
                if not out.requires_grad:  # k == 0 with neither input requiring grad
                    with pytest.raises(RuntimeError, match="does not require grad"):
                        out.backward()
                else:
                    out.backward()
                got.append((out.requires_grad, a2.grad, b2.grad, w.grad))
            assert got[1][0] == got[0][0]
            got = [g[1:] for g in got]
            for g, e in zip(got[1], got[0]):
                _close(g, e, f"k={k} req={req}")


# ------------------------------------------------------------------ params used in nested control flow
class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.d = (nn.Linear(3, 3) for _ in range(4))

    def forward(self, x, n):
        h = x
        if x.sum() > 0:
            if x[0, 0] > 0.5:
                h = self.a(h)
            else:
                h = self.b(h)
        i = d2s.tensor(0)
        while i < n:
            h = d2s.tanh(self.c(h))
            i = i + 1
        return self.d(h)


NESTED_BATCHES = [(np.full((2, 3), v) + _randn(2, 3, scale=0.01), np.array(n))
                  for v, n in ((1.0, 0), (0.2, 2), (-1.0, 1), (1.0, 3), (-1.0, 0))]


@pytest.mark.parametrize("opt", ["adam", "sgd"])
def test_params_in_nested_conds_and_a_while_body(opt):
    _train(Nested, NESTED_BATCHES, opt=opt)


def test_params_inside_scan():
    class Scanned(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell, self.unused = nn.Linear(3, 3), nn.Linear(3, 3)

        def forward(self, xs):
            def step(h, x):
                h = d2s.tanh(self.cell(x) + h)
                return h, h.sum()

            h, ys = d2s.scan(step, d2s.zeros([3], dtype="float64"), xs)
            return h.sum() + ys.mean()

    _train(Scanned, [(_randn(4, 3),), (_randn(2, 3),)], loss_fn=lambda out, x: out)


def test_save_load_then_fine_tune(tmp_path):
    eager, static = _pair(BranchyMLP)
    spec = [d2s.jit.InputSpec([None, 4], dtype="float64", name="x")]
    d2s.jit.save(static, str(tmp_path / "m"), input_spec=spec)
    loaded = d2s.jit.load(str(tmp_path / "m"))
    assert len(loaded.parameters()) == len(list(eager.parameters()))
    opts = [optim.Adam(list(eager.parameters()), lr=0.05), optim.Adam(loaded.parameters(), lr=0.05)]
    by_value = {}
    for (name, p) in eager.named_parameters():
        match = [q for q in loaded.parameters() if q.shape == p.shape and np.array_equal(q.numpy(), p.numpy())]
        assert len(match) == 1, name
        by_value[name] = match[0]
    for x, in MLP_BATCHES:
        for fn, o in ((eager, opts[0]), (loaded, opts[1])):
            o.zero_grad()
            xt = _t(x, requires_grad=True)
            loss = (fn(xt) ** 2).mean()
            loss.backward()
        for name, p in eager.named_parameters():
            _close(by_value[name].grad, p.grad, name)
        for o in opts:
            o.step()
        for name, p in eager.named_parameters():
            _close(by_value[name].detach(), p.detach(), name)


# ------------------------------------------------------------------ more user patterns
def _fn_grads(fn, args, targets, loss_fn=lambda out: out.sum()):
    """(loss, output requires_grad, [grad of each target]) of one forward/backward of ``fn``."""
    for t in targets:
        t.grad = None
    out = fn(*args)
    req = out.requires_grad if hasattr(out, "requires_grad") else None
    loss = loss_fn(out)
    if not loss.requires_grad:
        return float(loss), req, [None for _ in targets]
    loss.backward()
    return float(loss), req, [None if t.grad is None else t.grad.numpy().copy() for t in targets]


def _same_fn_training(fn, arg_sets, targets, loss_fn=lambda out: out.sum(), calls=3):
    static = d2s.jit.to_static(fn)
    for args in arg_sets:
        want = _fn_grads(fn, args(), targets, loss_fn)
        for _ in range(calls):  # first call, optimized programs, cached trainer
            got = _fn_grads(static, args(), targets, loss_fn)
            assert got[0] == pytest.approx(want[0], rel=1e-12, abs=1e-14)
            assert got[1] == want[1], "output requires_grad"
            for g, e in zip(got[2], want[2]):
                _close(g, e)


W = [d2s.tensor(_randn(3), requires_grad=True) for _ in range(4)]


@pytest.fixture(autouse=True)
def _weights_on_the_device(device):
    """``W`` (made at import, on the CPU) lives on the test's device."""
    for w in W:
        w._data = d2s.tensor(to_host(w._data), device=device)._data
        w.grad = None


def test_output_requires_grad_only_on_the_branch_that_reads_a_parameter():
    def f(x):
        if x.sum() > 0:
            return x * W[0]
        return x * 2.0

    _same_fn_training(f, [lambda: (_t([1.0, 2.0, 3.0]),), lambda: (_t([-1.0, 2.0, -3.0]),)], W,
                      loss_fn=lambda out: out.sum() if out.requires_grad else out.sum().detach())


def test_parameter_only_inside_a_while_body_and_a_nested_cond():
    def f(x, n):
        i = d2s.tensor(0)
        while i < n:
            if x.sum() > 0:
                x = x * W[0]
            else:
                x = x + W[1]
            i = i + 1
        return (x * W[2]).sum()

    sets = [lambda n=n, s=s: (_t(s * np.array([0.5, 0.2, 0.3])), d2s.tensor(n)) for n in (0, 1, 3) for s in (1, -1)]
    _same_fn_training(f, sets, W)


def test_break_in_a_tensor_while():
    def f(x):
        i = d2s.tensor(0)
        while i < 5:
            x = d2s.tanh(x * W[0] + W[1])
            if x.sum() > 0.5:
                break
            i = i + 1
        return (x * W[3]).sum()

    _same_fn_training(f, [lambda: (_t(v),) for v in ([2.0, 1.0, 1.0], [-1.0, 0.1, 0.2], [0.1, 0.1, 0.1])], W)


def test_dropout_inside_a_while_and_a_scan_same_seed():
    def f(x, n):
        h = x * W[0]
        i = d2s.tensor(0)
        while i < n:
            h = F.dropout(d2s.tanh(h * W[1]), 0.3, True)
            i = i + 1

        def step(c, xt):
            c = F.dropout(c * W[2] + xt, 0.2, True)
            return c, c.sum()

        c, ys = d2s.scan(step, h, d2s.stack([h, h * 2.0]))
        return c.sum() + ys.sum()

    def args(n):
        def make():
            d2s.manual_seed(4)
            return _t(np.linspace(0.5, 1.5, 3)), d2s.tensor(n)
        return make

    _same_fn_training(f, [args(0), args(1), args(3)], W)


def test_non_leaf_input_requiring_grad_and_hooks():
    seen = []

    def f(x):
        return d2s.tanh(x * W[0]).sum()

    static = d2s.jit.to_static(f)
    grads = []
    for fn in (f, static, static):
        for w in W:
            w.grad = None
        a = _t([0.3, -0.2, 0.9], requires_grad=True)
        x = a * 2.0  # computed eagerly before the call
        x.retain_grad()
        h = W[0].register_hook(lambda g: seen.append(g.numpy().copy()))
        fn(x).backward()
        h.remove()
        grads.append((a.grad, x.grad, W[0].grad))
    for got in grads[1:]:
        for g, e in zip(got, grads[0]):
            _close(g, e)
    assert len(seen) == 3
    for s in seen[1:]:
        np.testing.assert_allclose(s, seen[0], rtol=1e-12)


def test_two_calls_alive_then_one_backward_of_their_sum():
    eager, static = _pair(BranchyMLP)
    for m in (eager, static):
        l1 = (m(_t(MLP_BATCHES[0][0])) ** 2).sum()
        l2 = (m(_t(MLP_BATCHES[1][0])) ** 2).sum()
        (l1 + 0.5 * l2).backward()
    _check_params(eager, static)


def test_same_output_returned_twice_and_an_input_returned_as_is():
    def f(x):
        y = x * W[0]
        return y, y, x

    def loss(out):
        return (out[0] * 2).sum() + out[1].sum() + (out[2] ** 2).sum()

    _same_fn_training(f, [lambda: (_t([1.0, 2.0, 3.0], requires_grad=True),)], W, loss_fn=loss)


def test_freezing_a_layer_between_steps():
    eager, static = _pair(BranchyMLP)
    opts = [optim.SGD(list(m.parameters()), lr=0.1, momentum=0.9) for m in (eager, static)]
    for step, (x,) in enumerate(MLP_BATCHES):
        for m in (eager, static):
            for p in m.l1.parameters():
                p.requires_grad = step % 2 == 0
        for m, o in zip((eager, static), opts):
            o.zero_grad()
            (m(_t(x)) ** 2).mean().backward()
        _check_params(eager, static, f"step {step}")
        for o in opts:
            o.step()
        _check_params(eager, static, f"step {step} stepped")


def test_train_eval_switch_with_dropout():
    eager, static = _pair(DropNet)
    for step, mode in enumerate(("train", "eval", "train")):
        for m in (eager, static):
            getattr(m, mode)()
            for p in m.parameters():
                p.grad = None
            d2s.manual_seed(step)
            m(_t(MLP_X6[step])).sum().backward()
        _check_params(eager, static, mode)


MLP_X6 = [_randn(4, 6, shift=0.5) for _ in range(3)]


def test_d2s_grad_with_respect_to_some_parameters_only():
    eager, static = _pair(BranchyMLP)
    for x, in MLP_BATCHES[:2]:
        got = []
        for m in (eager, static):
            loss = (m(_t(x)) ** 2).sum()
            got.append(d2s.grad(loss, [m.l1.weight, m.neg.bias], allow_unused=True))
        for g, e in zip(got[1], got[0]):
            _close(g, e)
        assert all(p.grad is None for p in static.parameters())


def test_in_place_writes_inside_the_converted_forward():
    def f(x):
        h = x * W[0]
        h[0] = h[1].clone() * W[1][0]  # (h[1] is a view of h: PyTorch refuses to save it, then write h)
        if h.sum() > 0:
            h[2] = 0.0
        return (h * h).sum()

    _same_fn_training(f, [lambda: (_t([1.0, 2.0, 3.0], requires_grad=True),),
                          lambda: (_t([-1.0, -2.0, -3.0], requires_grad=True),)], W)


def test_batch_size_change_builds_a_new_program_and_trains():
    _train(BranchyMLP, [(_randn(5, 4, shift=1.0),), (_randn(3, 4, shift=-1.0),), (_randn(1, 4, shift=1.0),),
                        (_randn(5, 4, shift=-1.0),)])


def test_same_tensor_passed_twice_and_an_input_the_function_ignores():
    def f(a, b, c):
        if a.sum() > 0:
            return (a * b * W[0]).sum()
        return (a * W[1]).sum()

    static = d2s.jit.to_static(f)
    for v in ([1.0, 2.0, 0.5], [-1.0, -2.0, 0.5]):
        got = []
        for fn in (f, static, static):
            for w in W:
                w.grad = None
            x = _t(v, requires_grad=True)
            c = _t([3.0, 1.0, 2.0], requires_grad=True)
            fn(x, x, c).backward()
            got.append((x.grad, c.grad, W[0].grad, W[1].grad))
        for g in got[1:]:
            for a, b in zip(g, got[0]):
                _close(a, b)


def test_weight_shared_by_two_calls_of_one_layer_in_a_loop_with_hvp():
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x, n):
            i = d2s.tensor(0)
            while i < n:
                x = d2s.tanh(self.fc(x))
                i = i + 1
            return (self.fc(x) ** 2).sum()

    eager, static = _pair(Shared)
    for n in (0, 2):
        got = []
        for m in (eager, static):
            for p in m.parameters():
                p.grad = None
            loss = m(_t(SHARED_X), d2s.tensor(n))
            gw, = d2s.grad(loss, m.fc.weight, create_graph=True)
            (gw * d2s.tensor(SHARED_V)).sum().backward()  # a Hessian-vector product into .grad
            got.append([p.grad for p in m.parameters()])
        for a, b in zip(*got):
            _close(b, a)


SHARED_X, SHARED_V = _randn(2, 3), _randn(3, 3)


def test_loaded_model_with_a_branch_keeps_unused_grads_none(tmp_path):
    eager, static = _pair(BranchyMLP)
    d2s.jit.save(static, str(tmp_path / "m"), input_spec=[d2s.jit.InputSpec([None, 4], dtype="float64")])
    loaded = d2s.jit.load(str(tmp_path / "m"))
    for x, in MLP_BATCHES[:2]:
        for p in list(eager.parameters()) + loaded.parameters():
            p.grad = None
        eager(_t(x)).sum().backward()
        loaded(_t(x)).sum().backward()
        want = sorted((p.grad is None, p.shape) for p in eager.parameters())
        got = sorted((p.grad is None, p.shape) for p in loaded.parameters())
        assert got == want


def test_input_spec_with_a_dynamic_batch_trains_like_eager():
    spec = [d2s.jit.InputSpec([None, 4], dtype="float64")]

    d2s.manual_seed(0)
    eager = BranchyMLP().double()
    static = BranchyMLP().double()
    static.load_state_dict(eager.state_dict())
    static = d2s.jit.to_static(static, input_spec=spec)
    opts = [optim.Adam(list(m.parameters()), lr=0.05) for m in (eager, static)]
    for step, x in enumerate((_randn(5, 4, shift=1), _randn(2, 4, shift=-1), _randn(7, 4, shift=1))):
        for m, o in zip((eager, static), opts):
            o.zero_grad()
            (m(_t(x)) ** 2).mean().backward()
        _check_params(eager, static, f"step {step}")
        for o in opts:
            o.step()


def test_method_of_a_plain_class_converted():
    class Scorer:
        def __init__(self):
            self.w = nn.Parameter(d2s.tensor(_randn(3)))
            self.v = nn.Parameter(d2s.tensor(_randn(3)))

        def score(self, x):
            if (x * self.w).sum() > 0:
                return (x * self.w).sum()
            return (x * self.v).sum() * 2.0

    eager, conv = Scorer(), Scorer()
    conv.w, conv.v = nn.Parameter(d2s.tensor(eager.w.numpy())), nn.Parameter(d2s.tensor(eager.v.numpy()))
    conv.score = d2s.jit.to_static(conv.score)
    for x in (eager.w.numpy(), -eager.w.numpy()):
        for obj in (eager, conv):
            obj.w.grad = obj.v.grad = None
            obj.score(_t(x)).backward()
        _close(conv.w.grad, eager.w.grad)
        _close(conv.v.grad, eager.v.grad)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner, self.c = BranchyMLP(), nn.Linear(3, 1)

    def forward(self, x):
        h = self.inner(x)
        i = d2s.tensor(0)
        while i < 2:
            h = d2s.tanh(h)
            i = i + 1
        return self.c(h)


@pytest.mark.parametrize("outer_too", [False, True])
def test_converting_a_submodule_in_place_keeps_parameter_order_and_trains(outer_too):
    def factory():
        m = Outer()
        names = [n for n, _ in m.named_parameters()]
        m.inner = d2s.jit.to_static(m.inner)  # replaces the submodule by its converted self
        assert [n for n, _ in m.named_parameters()] == names
        return m

    eager = Outer().double()
    conv = factory().double()
    conv.load_state_dict(eager.state_dict())
    if outer_too:
        conv = d2s.jit.to_static(conv)
    opts = [optim.Adam(list(m.parameters()), lr=0.05) for m in (eager, conv)]
    for step, (x,) in enumerate(MLP_BATCHES):
        for m, o in zip((eager, conv), opts):
            o.zero_grad()
            (m(_t(x)) ** 2).mean().backward()
        _check_params(eager, conv, f"step {step}")
        for o in opts:
            o.step()
        _check_params(eager, conv, f"step {step} stepped")


def test_detached_output_of_a_program_with_dropout_under_a_branch_does_not_require_grad():
    # such a program trains through the eager replay (no per-call flags): the output that only
    # a detached value reaches still does not require grad
    def f(x):
        h = x * W[0]
        if h.sum() > 0:
            h = F.dropout(h, 0.5, True)
        return h, h.detach() * 2.0, (x > 0).sum()

    static = d2s.jit.to_static(f)
    for v in ([1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]):
        got = []
        for fn in (f, static):
            W[0].grad = None
            d2s.manual_seed(2)
            x = _t(v, requires_grad=True)
            h, c, n = fn(x)
            assert c.requires_grad is False and n.requires_grad is False
            (h * c).sum().backward()
            got.append((x.grad, W[0].grad))
        for g, e in zip(*got):
            _close(e, g)


def test_while_collecting_outputs_in_a_list_and_a_growing_carry():
    def f(x, n):
        outs = []
        h = x
        acc = x[:1] * W[3][0]
        i = d2s.tensor(0)
        while i < n:
            h = d2s.tanh(h * W[0] + W[1])
            outs.append(h * W[2])
            acc = d2s.concat([acc, h[:1]])  # a carry that grows each iteration
            i = i + 1
        outs.append(h)
        return (d2s.stack(outs) ** 2).sum() + acc.sum()

    sets = [lambda n=n: (_t(np.linspace(-0.5, 0.5, 3), requires_grad=True), d2s.tensor(n)) for n in (0, 1, 3)]
    _same_fn_training(f, sets, W)
