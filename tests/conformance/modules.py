"""nn modules with data-dependent forward passes: gates, ModuleList/Sequential loops,
recurrent cells over a tensor-length loop, early exit, training flag, parameter use on one
branch only (whose .grad must stay None as in eager)."""
import d2s
from d2s import nn
import d2s.nn.functional as F

from .harness import T, module_case

d2s.manual_seed(7)
X4 = d2s.randn(2, 4)
XS = d2s.randn(3, 2, 4)
N0, N2, N3 = T(0), T(2), T(3)


class GatedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.gate, self.out = nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 2)

    def forward(self, x):
        h = F.relu(self.fc(x))
        if h.mean() > 0.2:
            h = d2s.tanh(self.gate(h)) + h
        return self.out(h)


module_case(X4, X4 * 10.0, X4 * -10.0)(GatedMLP)


class LayerStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x, depth):
        for i, layer in enumerate(self.layers):
            if i >= depth:
                break
            x = d2s.tanh(layer(x))
        return x


module_case((X4, 0), (X4, 2), (X4, 3))(LayerStack)


class RecurrentSum(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.RNNCell(4, 3)

    def forward(self, xs, n):
        h = d2s.zeros([2, 3])
        for t in range(n):
            h = self.cell(xs[t], h)
        return h


module_case((XS, N0), (XS, N2), (XS, N3))(RecurrentSum)


class EarlyExit(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        for block in self.blocks:
            x = d2s.tanh(block(x))
            if x.abs().mean() < 0.3:
                return self.head(x)
        return self.head(x) * 2.0


module_case(X4, X4 * 0.01, X4 * 5.0)(EarlyExit)


class BranchOnlyParameter(nn.Module):
    """``extra`` is used only when the input is large: eagerly its .grad stays None otherwise."""

    def __init__(self):
        super().__init__()
        self.base, self.extra = nn.Linear(4, 2), nn.Linear(4, 2)

    def forward(self, x):
        y = self.base(x)
        if x.abs().max() > 5.0:
            y = y + self.extra(x)
        return y


module_case(X4 * 10.0, X4 * 0.1)(BranchOnlyParameter)


class SequentialWithFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
        self.norm = nn.LayerNorm(2)

    def forward(self, x, normalize=True):
        y = self.net(x)
        if normalize:
            y = self.norm(y)
        return y


module_case((X4,), (X4, False))(SequentialWithFlag)


class DropoutInEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.drop = nn.Linear(4, 4), nn.Dropout(0.5)
        self.eval()

    def forward(self, x):
        y = self.drop(self.fc(x))
        if self.training:
            y = y * 0.0
        return y


module_case(X4)(DropoutInEval)


class GRUUntilSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(4, 4)

    def forward(self, x):
        h = x
        steps = 0
        while h.abs().max() > 0.5 and steps < 4:
            h = self.cell(x, h) * 0.5
            steps += 1
        return h, steps


module_case(X4, X4 * 0.01)(GRUUntilSmall)


class HeadsByName(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "reg": nn.Linear(4, 1)})

    def forward(self, x, task):
        return self.heads[task](x)


module_case((X4, "cls"), (X4, "reg"))(HeadsByName)


class CollectHiddenStates(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, n):
        states = []
        for _ in range(n):
            x = d2s.tanh(self.fc(x))
            states.append(x)
        return d2s.stack(states).mean(axis=0)


module_case((X4, N2), (X4, N3))(CollectHiddenStates)


class EmbeddingBag(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 3)

    def forward(self, ids):
        e = self.emb(ids)
        if ids.max() > 5:
            return e.sum(axis=0)
        return e.mean(axis=0)


module_case(T([1, 7, 2]), T([0, 1, 2]))(EmbeddingBag)


class ResidualWhile(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, n):
        i = 0
        while i < n:
            x = x + 0.1 * self.fc(x)
            i += 1
        return x


module_case((X4, N0), (X4, N3), (X4, 2))(ResidualWhile)


class AttributeCounterModel(nn.Module):
    """A Python attribute mutated in forward: both copies must see the same count."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        y = self.fc(x)
        if y.sum() > 0:
            y = y * 2.0
        return y, self.calls


module_case(X4, X4 * -1.0, grads=False)(AttributeCounterModel)


class RunningMean(nn.Module):
    """A plain tensor attribute updated in forward (a running statistic), under a tensor if."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.running = d2s.zeros([4])

    def forward(self, x):
        y = self.fc(x)
        if y.mean() > 0:
            self.running = self.running * 0.9 + y.mean(axis=0) * 0.1
        else:
            self.running = self.running * 0.5
        return y + self.running


module_case(X4, X4 * -3.0, X4, grads=False)(RunningMean)


class BufferUpdatedEachCall(nn.Module):
    """A registered buffer reassigned in every forward (a running statistic)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("running", d2s.zeros([4]))

    def forward(self, x):
        y = self.fc(x)
        self.running = self.running * 0.5 + y.mean(axis=0)
        return y + self.running


module_case(X4, X4, X4, X4, grads=False)(BufferUpdatedEachCall)
