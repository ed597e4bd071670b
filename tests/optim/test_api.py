"""The public contract of API.md §3 (optim): SGD and Adam steps against PyTorch's formulas."""
import numpy as np

import d2s
from d2s import nn, optim

from api_helpers import close


class TestOptim:
    def test_sgd_momentum_matches_torch(self):
        p = nn.Parameter(d2s.tensor([1.0]))
        o = optim.SGD([p], lr=0.1, momentum=0.9)
        for _ in range(2):
            o.zero_grad()
            (p * p).sum().backward()
            o.step()
        close(p, [0.46])   # torch: v1=2, p=0.8; g=1.6, v2=3.4, p=0.46
        assert "state" in o.state_dict() or o.state_dict()

    def test_adam_first_steps_match_torch(self):
        p = nn.Parameter(d2s.tensor([1.0, -2.0]))
        o = optim.Adam([p], lr=0.1)
        for _ in range(2):
            o.zero_grad()
            (p * p).sum().backward()
            o.step()
        w, m, v = np.array([1.0, -2.0]), 0.0, 0.0
        for t in (1, 2):  # torch.optim.Adam, written out
            g = 2 * w
            m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            w = w - 0.1 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        close(p, w, atol=1e-6)
        o.zero_grad()
        assert p.grad is None or np.all(p.grad.numpy() == 0)
        assert isinstance(o.state_dict(), dict)
        optim.Adam(nn.Linear(2, 2).parameters(), lr=1e-2, betas=(0.8, 0.9), eps=1e-6)
