"""The public contract of API.md §3 (nn), checked the way a user would use it, against numpy
references and hand-derived values."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import nn

from api_helpers import close


RNG = np.random.default_rng(0)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.w = nn.Parameter(d2s.ones(4))
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def forward(self, x):
        h = self.act(self.l1(x))
        for b in self.blocks:
            h = b(h)
        return h * self.w


class TestNN:
    def test_module_registration_and_state(self):
        m = _Net()
        names = sorted(n for n, _ in m.named_parameters())
        assert names == sorted(["w", "l1.weight", "l1.bias", "blocks.0.weight", "blocks.0.bias",
                                "blocks.1.weight", "blocks.1.bias"])
        assert len(list(m.parameters())) == 7
        assert [type(c).__name__ for c in m.children()] == ["Linear", "ReLU", "ModuleList"]
        assert sorted(m.state_dict()) == names
        assert m.training and m.eval() is m and not m.training and not m.blocks[0].training
        m.train()
        assert m.blocks[1].training
        m2 = _Net()
        m2.load_state_dict(m.state_dict())
        x = d2s.randn(2, 3)
        close(m2(x), m(x).numpy())
        assert m(x.numpy()).shape == (2, 4)

    def test_layers_shapes_and_values(self):
        lin = nn.Linear(3, 4)
        assert lin.weight.shape == (4, 3) and lin.bias.shape == (4,)
        x = d2s.randn(5, 3)
        close(lin(x), x.numpy() @ lin.weight.numpy().T + lin.bias.numpy(), atol=1e-5)
        close(F.linear(x, lin.weight, lin.bias), lin(x).numpy())
        seq = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        assert seq(x).shape == (5, 1) and len(seq) == 3 and isinstance(seq[1], nn.Tanh)
        v = np.array([-1.0, 0.0, 2.0], np.float32)
        close(nn.Sigmoid()(v), 1 / (1 + np.exp(-v)))
        close(nn.GELU()(v), [-0.158655, 0.0, 1.954500], atol=2e-3)  # erf- or tanh-GELU
        assert nn.Dropout(0.5).eval()(d2s.ones(4)).numpy().tolist() == [1.0] * 4
        d2s.manual_seed(0)
        dv = nn.Dropout(0.5)(d2s.ones(2000)).numpy()
        assert set(np.unique(dv)) <= {0.0, 2.0} and 0.4 < (dv == 0).mean() < 0.6
        h = RNG.standard_normal((2, 5)).astype(np.float32)
        ref = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
        close(nn.LayerNorm(5)(h), ref, atol=1e-5)
        emb = nn.Embedding(10, 3)
        close(emb(d2s.tensor([[1, 2], [3, 4]])), emb.weight.numpy()[[[1, 2], [3, 4]]])
        conv = nn.Conv2d(3, 8, 3, stride=1, padding=1)
        assert conv.weight.shape == (8, 3, 3, 3) and conv(d2s.randn(2, 3, 8, 8)).shape == (2, 8, 8, 8)
        img = RNG.standard_normal((1, 1, 4, 4)).astype(np.float32)
        close(nn.MaxPool2d(2)(img), img.reshape(1, 1, 2, 2, 2, 2).max(axis=(3, 5)))
        assert nn.Flatten()(d2s.randn(2, 3, 4)).shape == (2, 12)
        assert nn.RNNCell(3, 5)(d2s.randn(2, 3), d2s.zeros(2, 5)).shape == (2, 5)
        assert nn.GRUCell(3, 5)(d2s.randn(2, 3), d2s.zeros(2, 5)).shape == (2, 5)

    def test_conv2d_matches_direct_formula(self):
        x = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
        w = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
        ref = np.zeros((1, 3, 3, 3), np.float32)
        for o in range(3):
            for i in range(3):
                for j in range(3):
                    ref[0, o, i, j] = (x[0, :, i:i + 3, j:j + 3] * w[o]).sum()
        close(F.conv2d(x, w), ref, rtol=1e-4, atol=1e-4)

    def test_losses(self):
        assert nn.MSELoss()(d2s.tensor([1.0, 2.0]), d2s.tensor([0.0, 0.0])).item() == pytest.approx(2.5)
        assert F.mse_loss(d2s.tensor([1.0, 2.0]), d2s.tensor([0.0, 0.0])).item() == pytest.approx(2.5)
        logits = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]], np.float32)
        y = np.array([2, 0])
        ref = np.mean(np.log(np.exp(logits).sum(1)) - logits[[0, 1], y])
        assert nn.CrossEntropyLoss()(d2s.tensor(logits), d2s.tensor(y)).item() == pytest.approx(ref, rel=1e-5)
        assert F.cross_entropy(d2s.tensor(logits), d2s.tensor(y)).item() == pytest.approx(ref, rel=1e-5)

    def test_functional_forms_exist(self):
        for name in ("linear", "relu", "tanh", "sigmoid", "gelu", "dropout", "layer_norm", "embedding",
                     "conv2d", "max_pool2d", "flatten", "mse_loss", "cross_entropy"):
            assert callable(getattr(F, name)), name
