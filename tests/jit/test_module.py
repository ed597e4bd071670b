"""to_static on nn.Modules: parameters as program inputs, train/eval programs, model patterns."""
import numpy as np

import d2s
from d2s import nn, optim
from d2s.jit import InputSpec, StaticFunction, to_static

from jit_helpers import check_module


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        if self.training:
            h = h * 0.5
        else:
            h = h + 1.0
        return h.tanh()


def test_to_static_returns_the_same_module_with_a_static_forward():
    m = Gate()
    assert to_static(m) is m
    assert isinstance(m.forward, StaticFunction)
    m(d2s.randn(2, 4))
    assert len(m.forward.programs) == 1
    assert [n for n, _ in m.named_parameters()] == ["fc.weight", "fc.bias"]
    assert set(m.state_dict()) == {"fc.weight", "fc.bias"}


def test_parameters_are_program_params_not_constants():
    m = to_static(Gate())
    prog = m.forward.get_program(InputSpec([None, 4]))
    assert len(prog.params) == 2
    assert not prog.constants
    shapes = sorted(prog.block.lookup(n).type.shape for n in prog.params)
    assert shapes == [(4,), (4, 4)]


def test_if_self_training_in_both_modes_matches_eager():
    x = d2s.randn(3, 4)
    check_module(Gate, x, train=True)
    check_module(Gate, x, train=False)


def test_train_and_eval_get_separate_programs():
    m = to_static(Gate())
    x = d2s.randn(2, 4)
    a = m(x)
    m.eval()
    b = m(x)
    m.train()
    c = m(x)
    assert len(m.forward.programs) == 2
    np.testing.assert_allclose(a.numpy(), c.numpy())
    assert not np.allclose(a.numpy(), b.numpy())


def test_optimizer_step_is_seen_by_the_next_call():
    d2s.manual_seed(3)
    eager = Gate()
    static = to_static(Gate())
    static.load_state_dict(eager.state_dict())
    opt_e = optim.SGD(eager.parameters(), lr=0.5)
    opt_s = optim.SGD(static.parameters(), lr=0.5)
    x = d2s.randn(5, 4)
    for _ in range(3):
        for model, opt in ((eager, opt_e), (static, opt_s)):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
        np.testing.assert_allclose(static(x).numpy(), eager(x).numpy(), rtol=1e-5, atol=1e-6)
    assert len(static.forward.programs) == 1


def test_loading_new_weights_changes_the_result():
    m = to_static(Gate()).eval()
    x = d2s.randn(2, 4)
    before = m(x).numpy()
    state = {k: v * 0.0 for k, v in m.state_dict().items()}
    m.load_state_dict(state)
    np.testing.assert_allclose(m(x).numpy(), np.tanh(np.ones((2, 4))), rtol=1e-6)
    assert not np.allclose(before, m(x).numpy())



def test_replacing_a_parameter_object_is_seen_by_the_next_call():
    # regression: programs kept reading the Parameter found when they were built
    d2s.manual_seed(0)
    lin = nn.Linear(3, 2)
    m = to_static(lin)
    x = d2s.randn(4, 3)
    m(x)
    for w in (np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)):
        lin.weight = nn.Parameter(d2s.tensor(w))
        np.testing.assert_allclose(m(x).numpy(), x.numpy() @ w.T + lin.bias.numpy(), rtol=1e-6)
        m(x).sum().backward()
        np.testing.assert_allclose(lin.weight.grad.numpy(), np.tile(x.numpy().sum(0), (2, 1)), rtol=1e-6)
    assert len(m.forward.programs) == 1  # the stale programs were dropped, not kept

class ClassDecorated(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    @to_static
    def forward(self, x):
        return self.fc(x).sigmoid()


def test_forward_decorated_in_the_class_body():
    a, b = ClassDecorated(), ClassDecorated()
    x = d2s.randn(4, 3)
    np.testing.assert_allclose(a(x).numpy(), a.forward.eager(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(b(x).numpy(), b.forward.eager(x).numpy(), rtol=1e-6)
    assert len(a.forward.programs) == 1 and len(b.forward.programs) == 1
    check_module(ClassDecorated, x)


class Stack(nn.Module):
    """A Python loop over a ModuleList (unrolled)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).relu() + x
        return x


def test_python_loop_over_module_list():
    check_module(Stack, d2s.randn(2, 4))


class RepeatBlock(nn.Module):
    """A submodule called in a loop whose trip count is a tensor."""

    def __init__(self):
        super().__init__()
        self.block = nn.Linear(4, 4)

    def forward(self, x, n):
        i = 0
        while i < n:
            x = self.block(x).tanh()
            i = i + 1
        return x


def test_submodule_called_in_a_tensor_loop():
    x = d2s.randn(2, 4)
    for n in (0, 1, 3):
        check_module(RepeatBlock, x, d2s.tensor(n))


class EarlyStopRNN(nn.Module):
    """An RNN cell unrolled over a sequence, stopping when the state saturates."""

    def __init__(self):
        super().__init__()
        self.cell = nn.RNNCell(3, 5)
        self.head = nn.Linear(5, 1)

    def forward(self, seq, threshold):
        h = d2s.zeros(seq.shape[1], 5)
        i = 0
        while i < seq.shape[0] and h.abs().mean() < threshold:
            h = self.cell(seq[i], h)
            i = i + 1
        return self.head(h)


def test_rnn_with_data_dependent_early_stop():
    d2s.manual_seed(5)
    seq = d2s.randn(6, 2, 3) * 2.0
    for threshold in (0.0, 0.3, 10.0):  # stops at once, part way, runs the whole sequence
        check_module(EarlyStopRNN, seq, d2s.tensor(threshold))


class RowRNN(nn.Module):
    """Iterating over a tensor's rows, breaking out on a tensor condition."""

    def __init__(self):
        super().__init__()
        self.cell = nn.RNNCell(3, 4)

    def forward(self, seq):
        h = d2s.zeros(1, 4)
        for x in seq:
            h = self.cell(x.reshape([1, 3]), h)
            if h.sum() > 1.0:
                break
        return h


def test_for_over_tensor_rows_with_break():
    d2s.manual_seed(6)
    for scale in (0.1, 3.0):
        check_module(RowRNN, d2s.randn(5, 3) * scale)


class GreedyDecoder(nn.Module):
    EOS = 3

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6, 4)
        self.cell = nn.GRUCell(4, 8)
        self.proj = nn.Linear(8, 6)

    def forward(self, h, max_len=6):
        tok = d2s.zeros([1], dtype="int64")
        score = d2s.zeros([1])
        done = False
        step = 0
        while not done and step < max_len:
            h = self.cell(self.emb(tok), h)
            logits = self.proj(h)
            tok = logits.argmax(axis=-1)
            score = score + logits.max(-1).values
            done = (tok == self.EOS).all()
            step = step + 1
        return score, h


def test_greedy_decode_loop():
    d2s.manual_seed(7)
    for scale in (0.1, 1.0, 5.0):
        check_module(GreedyDecoder, d2s.randn(1, 8) * scale)
    check_module(GreedyDecoder, d2s.randn(1, 8), 0)  # max_len 0: no step at all


class Branchy(nn.Module):
    """A model branching on an input statistic."""

    def __init__(self):
        super().__init__()
        self.small = nn.Linear(4, 2)
        self.large = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    def forward(self, x):
        if x.abs().mean() > 1.0:
            y = self.large(x)
        else:
            y = self.small(x)
        return y


def test_branch_on_input_statistic_both_ways():
    d2s.manual_seed(8)
    x = d2s.randn(3, 4)
    check_module(Branchy, x * 0.1)
    check_module(Branchy, x * 5.0)


def test_module_with_input_spec_serves_every_batch_size():
    m = to_static(Branchy(), input_spec=[InputSpec([None, 4])])
    ref = Branchy()
    ref.load_state_dict(m.state_dict())
    for n in (1, 4, 9):
        x = d2s.randn(n, 4) * (0.1 if n % 2 else 4.0)
        np.testing.assert_allclose(m(x).numpy(), ref(x).numpy(), rtol=1e-5, atol=1e-6)
    assert len(m.forward.programs) == 1


class RemembersState(nn.Module):
    """Assigns tensors to attributes in forward (as RNNs keeping their last state do)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.history = []

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            self.last = y * 2.0
        else:
            self.last = y - 1.0
        self.stats = {"mean": y.mean(), "pair": (y, y * 3.0)}
        self.history.append(y.sum())
        return y


def test_tensors_assigned_to_module_attributes_get_each_calls_values():
    d2s.manual_seed(0)
    eager = RemembersState()
    static = to_static(RemembersState())
    static.load_state_dict(eager.state_dict())
    for v in ([[1.0, 2.0, 3.0]], [[-3.0, -1.0, -2.0]], [[0.5, -0.5, 2.0]]):
        x = d2s.tensor(v)
        eager.history.clear()
        static.history.clear()
        eo, so = eager(x), static(x)
        np.testing.assert_allclose(so.numpy(), eo.numpy(), rtol=1e-5)
        # concrete values (never symbolic tensors left over from the build), equal to eager's
        np.testing.assert_allclose(static.last.numpy(), eager.last.numpy(), rtol=1e-5)
        np.testing.assert_allclose(static.stats["pair"][1].numpy(), eager.stats["pair"][1].numpy(), rtol=1e-5)
        np.testing.assert_allclose(static.stats["mean"].numpy(), eager.stats["mean"].numpy(), rtol=1e-5)
        assert len(static.history) == 1
        np.testing.assert_allclose(static.history[0].numpy(), eager.history[0].numpy(), rtol=1e-5)
    assert len(static.forward.programs) == 1
    # the attribute values are differentiable like the returned ones
    for m in (eager, static):
        m.lin.weight.grad = None
        m(d2s.tensor([[1.0, -2.0, 0.5]]))
        (m.last * m.last).sum().backward()
    np.testing.assert_allclose(static.lin.weight.grad.numpy(), eager.lin.weight.grad.numpy(), rtol=1e-4)


def test_deepcopy_of_a_static_module_is_an_independent_static_module():
    # regression: copy.deepcopy failed on the StaticFunction (and would have shared its programs)
    import copy
    d2s.manual_seed(0)
    m = to_static(nn.Linear(2, 3))
    x = d2s.randn(4, 2)
    before = m(x).numpy()
    m2 = copy.deepcopy(m)
    assert isinstance(m2.forward, StaticFunction) and m2.forward._instance is m2
    with d2s.no_grad():
        m2.weight._data[...] = 0.0
    np.testing.assert_allclose(m2(x).numpy(), np.broadcast_to(m2.bias.numpy(), (4, 3)), rtol=1e-6)
    np.testing.assert_allclose(m(x).numpy(), before, rtol=1e-6)
    m2(x).sum().backward()
    assert m2.weight.grad is not None and m.weight.grad is None
