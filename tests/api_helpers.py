"""Shared by the API conformance tests (``test_api*.py`` in tests/ and its subfolders, one file per
section of API.md): ``close``, the input ``X``, and the function and module that to_static, trace,
save and the command line convert (to_static converts source, so they live at module level)."""
import numpy as np

import d2s
from d2s import nn


def close(t, ref, rtol=1e-5, atol=1e-6):
    got = t.numpy() if isinstance(t, d2s.Tensor) else np.asarray(t)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


def branchy(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y


class LoopNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 4)
        self.l2 = nn.Linear(4, 2)

    def forward(self, x, steps=2):
        h = self.l1(x)
        i = 0
        while h.sum() > 0 and i < steps:
            h = d2s.tanh(h) * 0.5
            i += 1
        if self.training:
            h = h * 2.0
        return self.l2(h)


X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)
